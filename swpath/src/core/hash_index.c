/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include <rte_common.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "core/hash_index.h"

static uint32_t *
hix_array(const char *name, uint32_t n, int socket)
{
	uint32_t *a = rte_malloc_socket(name, (size_t)(n ? n : 1) * sizeof(*a),
					RTE_CACHE_LINE_SIZE, socket);

	/* SP_HIX_NONE everywhere: also touches every page now, not on the
	 * fast path (without hugepages memory is faulted in page by page) */
	if (a != NULL)
		memset(a, 0xff, (size_t)(n ? n : 1) * sizeof(*a));
	return a;
}

int
sp_hix_init(struct sp_hix *ix, const char *name, uint32_t records,
	    uint32_t min_buckets, bool doubly, int socket)
{
	uint32_t buckets = rte_align32pow2(RTE_MAX(min_buckets, 8u));

	memset(ix, 0, sizeof(*ix));
	ix->seed = rte_rand();
	ix->mask = buckets - 1;
	ix->head = hix_array(name, buckets, socket);
	ix->next = hix_array(name, records, socket);
	if (doubly)
		ix->prev = hix_array(name, records, socket);
	if (ix->head == NULL || ix->next == NULL ||
	    (doubly && ix->prev == NULL)) {
		sp_hix_free(ix);
		return -ENOMEM;
	}
	return 0;
}

void
sp_hix_free(struct sp_hix *ix)
{
	rte_free(ix->head);
	rte_free(ix->next);
	rte_free(ix->prev);
	memset(ix, 0, sizeof(*ix));
}
