/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>

#include "core/hash_index.h"

static uint32_t *
hix_array(const struct sp_env *env, const char *name, uint32_t n, int socket)
{
	size_t bytes = (size_t)(n ? n : 1) * sizeof(uint32_t);
	uint32_t *a = env->zalloc(name, bytes, socket);

	/* SP_HIX_NONE everywhere: also touches every page now, not on the
	 * fast path (without hugepages memory is faulted in page by page) */
	if (a != NULL)
		memset(a, 0xff, bytes);
	return a;
}

/* The smallest power of two >= n (n <= 2^31). */
static uint32_t
pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

int
sp_hix_init(struct sp_hix *ix, const struct sp_env *env, const char *name,
	    uint32_t records, uint32_t min_buckets, bool doubly, int socket)
{
	uint32_t buckets = pow2_at_least(min_buckets > 8 ? min_buckets : 8);

	memset(ix, 0, sizeof(*ix));
	ix->seed = env->random();
	ix->mask = buckets - 1;
	ix->head = hix_array(env, name, buckets, socket);
	ix->next = hix_array(env, name, records, socket);
	if (doubly)
		ix->prev = hix_array(env, name, records, socket);
	if (ix->head == NULL || ix->next == NULL ||
	    (doubly && ix->prev == NULL)) {
		sp_hix_free(ix, env);
		return -ENOMEM;
	}
	return 0;
}

void
sp_hix_free(struct sp_hix *ix, const struct sp_env *env)
{
	env->free(ix->head);
	env->free(ix->next);
	env->free(ix->prev);
	memset(ix, 0, sizeof(*ix));
}
