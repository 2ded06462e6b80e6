/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A pipeline's register arrays, read in place: counters (indirect ones and
 * the direct ones p4c-dpdk indexes by entry id) are register arrays the
 * data plane adds to, and the idle-timeout scan reads every session's
 * counter a few times a second. rte_swx_ctl_pipeline_regarray_read looks
 * the array up by name on every call (a strcmp walk); this is one load.
 */
#ifndef SWX_ARRAYS_H
#define SWX_ARRAYS_H

#include <stdint.h>

struct rte_swx_pipeline;

/* Register array id's words (size of them in *size), or NULL. The data
 * plane writes them; a reader sees each word whole (aligned 64-bit). */
const volatile uint64_t *swx_regarray(struct rte_swx_pipeline *p, uint32_t id, uint32_t *size);

#endif /* SWX_ARRAYS_H */
