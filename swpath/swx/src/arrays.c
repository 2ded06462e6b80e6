/* SPDX-License-Identifier: Apache-2.0 */
#include <rte_swx_pipeline.h>

#include <rte_swx_pipeline_internal.h>

#include "arrays.h"

const volatile uint64_t *
swx_regarray(struct rte_swx_pipeline *p, uint32_t id, uint32_t *size)
{
	struct rte_swx_ctl_pipeline_info info;

	if (rte_swx_ctl_pipeline_info_get(p, &info) != 0 || id >= info.n_regarrays)
		return NULL;
	*size = p->regarray_runtime[id].size_mask + 1;
	return p->regarray_runtime[id].regarray;
}
