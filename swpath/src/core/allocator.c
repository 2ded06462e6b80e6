/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/allocator.h"
#include "core/counters.h"
#include "util/text.h"

#define SP_POOL_MAX_ADDRS (1u << 16)

static void
pool_release_memory(struct sp_pool *pool)
{
	const struct sp_env *env = pool->env;

	if (pool->space != NULL) {
		for (uint32_t i = 0; i < pool->n_workers * pool->n_addrs; i++)
			env->free(pool->space[i].state[0]);
	}
	env->free(pool->space);
	env->free(pool->port_lists);
	env->free(pool->addrs);
	env->free(pool->prefixes);
}

void
sp_pool_free(struct sp_pool *pool)
{
	if (pool == NULL)
		return;
	pool_release_memory(pool);
	pool->env->free(pool);
}

size_t
sp_pool_memory(const struct sp_pool *pool)
{
	size_t range = (size_t)pool->port_max - pool->port_min + 1;
	size_t bytes = sizeof(*pool) + pool->n_addrs * sizeof(uint32_t);

	bytes += (size_t)pool->n_workers * pool->n_addrs *
		 sizeof(struct sp_pool_space);
	/* 3 protocol states of 4 bytes per (address, port), plus the lists */
	bytes += (size_t)pool->n_addrs * range * SP_PI_MAX * sizeof(uint32_t);
	return bytes;
}

/* What allocation needs to know of a worker's port list besides the ports. */
struct port_shape {
	uint32_t n_low;
	uint32_t size[2][2];            /* [well-known][parity] */
};

static void
shape_of(const uint16_t *ports, uint32_t n, struct port_shape *shape)
{
	memset(shape, 0, sizeof(*shape));
	for (uint32_t i = 0; i < n; i++) {
		unsigned wk = ports[i] <= SP_WELL_KNOWN_PORT_MAX;

		shape->n_low += wk;
		shape->size[wk][ports[i] & 1]++;
	}
}

/*
 * The owned ports of an address depend only on its hash's RETA index bits
 * (its "class"): owner(a, p) = reta[(h(a) ^ h(p)) & mask]. Lists are built
 * once per class present in the pool and shared by its addresses.
 */
struct classes {
	int32_t slot[SP_RETA_MAX];      /* a class's lists, or -1: absent */
	uint32_t n;                     /* classes present */
	uint32_t *counts;               /* [slot * workers + worker]: ports */
};

static unsigned
port_owner(const struct sp_rss *rss, unsigned class, uint32_t port)
{
	return rss->reta[(class ^ sp_rss_hash_port(rss, (uint16_t)port)) &
			 rss->reta_mask];
}

static unsigned
address_class(const struct sp_rss *rss, uint32_t addr)
{
	return sp_rss_hash_addr(rss, addr) & rss->reta_mask;
}

/* Which classes the pool's addresses have, and how many ports of each
 * class every worker owns. */
static int
pool_count_classes(const struct sp_pool *pool, const struct sp_rss *rss,
		   struct classes *cl)
{
	unsigned nw = pool->n_workers;

	for (unsigned c = 0; c < SP_RETA_MAX; c++)
		cl->slot[c] = -1;
	cl->n = 0;
	for (uint32_t a = 0; a < pool->n_addrs; a++) {
		unsigned c = address_class(rss, pool->addrs[a]);

		if (cl->slot[c] < 0)
			cl->slot[c] = (int32_t)cl->n++;
	}
	cl->counts = calloc((size_t)cl->n * nw, sizeof(*cl->counts));
	if (cl->counts == NULL)
		return -ENOMEM;
	for (unsigned c = 0; c < SP_RETA_MAX; c++) {
		if (cl->slot[c] < 0)
			continue;
		for (uint32_t p = pool->port_min; p <= pool->port_max; p++) {
			unsigned q = port_owner(rss, c, p);

			if (q < nw)
				cl->counts[(uint32_t)cl->slot[c] * nw + q]++;
		}
	}
	return 0;
}

/* Class c's lists, one per worker, ascending, from *cursor on; then every
 * address of the class points its space at its worker's list. */
static void
pool_fill_class(struct sp_pool *pool, const struct sp_rss *rss,
		const struct classes *cl, unsigned c, uint16_t **cursor)
{
	unsigned nw = pool->n_workers;
	uint32_t slot = (uint32_t)cl->slot[c];
	uint16_t *start[SP_RETA_MAX];
	uint32_t fill[SP_RETA_MAX];
	struct port_shape shape[SP_RETA_MAX];

	for (unsigned q = 0; q < nw; q++) {
		start[q] = *cursor;
		fill[q] = 0;
		*cursor += cl->counts[slot * nw + q];
	}
	for (uint32_t p = pool->port_min; p <= pool->port_max; p++) {
		unsigned q = port_owner(rss, c, p);

		if (q < nw)
			start[q][fill[q]++] = (uint16_t)p;
	}
	for (unsigned q = 0; q < nw; q++)
		shape_of(start[q], fill[q], &shape[q]);
	for (uint32_t a = 0; a < pool->n_addrs; a++) {
		if (address_class(rss, pool->addrs[a]) != c)
			continue;
		for (unsigned q = 0; q < nw; q++) {
			struct sp_pool_space *s = &pool->space[q * pool->n_addrs + a];

			s->ports = start[q];
			s->n = fill[q];
			s->n_low = shape[q].n_low;
			memcpy(s->size, shape[q].size, sizeof(s->size));
		}
	}
}

/* Port states: one block per (worker, address), three protocols. */
static int
pool_alloc_states(struct sp_pool *pool)
{
	for (uint32_t i = 0; i < pool->n_workers * pool->n_addrs; i++) {
		struct sp_pool_space *s = &pool->space[i];
		uint32_t *block = pool->env->zalloc("sp_pool_state",
						    (size_t)(s->n ? s->n : 1) *
							    SP_PI_MAX *
							    sizeof(uint32_t),
						    SP_SOCKET_ANY);

		if (block == NULL)
			return -ENOMEM;
		for (unsigned pi = 0; pi < SP_PI_MAX; pi++)
			s->state[pi] = block + (size_t)pi * s->n;
	}
	return 0;
}

static int
pool_build_spaces(struct sp_pool *pool, const struct sp_rss *rss, char *err,
		  size_t errlen)
{
	uint32_t range = (uint32_t)pool->port_max - pool->port_min + 1;
	const struct sp_env *env = pool->env;
	struct classes cl;
	uint16_t *cursor;

	if (pool_count_classes(pool, rss, &cl) < 0)
		goto no_memory;
	pool->port_lists = env->zalloc("sp_pool_ports",
				       (size_t)cl.n * range * sizeof(uint16_t),
				       SP_SOCKET_ANY);
	pool->space = env->zalloc("sp_pool_space",
				  (size_t)pool->n_workers * pool->n_addrs *
					  sizeof(struct sp_pool_space),
				  SP_SOCKET_ANY);
	if (pool->port_lists == NULL || pool->space == NULL) {
		free(cl.counts);
		goto no_memory;
	}
	cursor = pool->port_lists;
	for (unsigned c = 0; c < SP_RETA_MAX; c++)
		if (cl.slot[c] >= 0)
			pool_fill_class(pool, rss, &cl, c, &cursor);
	free(cl.counts);
	if (pool_alloc_states(pool) < 0)
		return sp_fail(err, errlen,
			       "pool %s: not enough memory for the port states of %u addresses x %u ports (about %zu MB); give DPDK more memory (-m) or use a smaller pool",
			       pool->name, pool->n_addrs, range,
			       sp_pool_memory(pool) >> 20);
	return 0;
no_memory:
	return sp_fail(err, errlen,
		       "pool %s: not enough memory for %u addresses x %u ports",
		       pool->name, pool->n_addrs, range);
}

/* Every address of the prefixes, in order, host bits counted up. */
static int
pool_expand(struct sp_pool *pool, const struct sp_pool_params *p)
{
	const struct sp_env *env = pool->env;
	uint32_t n = 0;

	pool->addrs = env->zalloc("sp_pool_addrs",
				  (size_t)pool->n_addrs * sizeof(uint32_t),
				  SP_SOCKET_ANY);
	pool->prefixes = env->zalloc("sp_pool_prefixes",
				     p->n_prefixes * sizeof(*p->prefixes),
				     SP_SOCKET_ANY);
	if (pool->addrs == NULL || pool->prefixes == NULL)
		return -ENOMEM;
	memcpy(pool->prefixes, p->prefixes, p->n_prefixes * sizeof(*p->prefixes));
	for (unsigned i = 0; i < p->n_prefixes; i++)
		for (uint64_t off = 0; off < 1ull << (32 - p->prefixes[i].len); off++)
			pool->addrs[n++] = p->prefixes[i].addr + (uint32_t)off;
	return 0;
}

struct sp_pool *
sp_pool_create(const struct sp_pool_params *p, char *err, size_t errlen)
{
	struct sp_pool *pool;
	uint64_t n_addrs = 0;

	for (unsigned i = 0; i < p->n_prefixes; i++)
		n_addrs += 1ull << (32 - p->prefixes[i].len);
	if (n_addrs > SP_POOL_MAX_ADDRS) {
		sp_fail(err, errlen, "pool %s: %llu addresses; at most %u",
			p->name, (unsigned long long)n_addrs, SP_POOL_MAX_ADDRS);
		return NULL;
	}
	if (p->port_min == 0 || p->port_min > p->port_max) {
		sp_fail(err, errlen, "pool %s: bad port range", p->name);
		return NULL;
	}
	pool = p->env->zalloc("sp_pool", sizeof(*pool), SP_SOCKET_ANY);
	if (pool == NULL) {
		sp_fail(err, errlen, "pool %s: out of memory", p->name);
		return NULL;
	}
	snprintf(pool->name, sizeof(pool->name), "%s", p->name);
	pool->env = p->env;
	pool->policy = p->policy;
	pool->internal = p->internal;
	pool->port_min = p->port_min;
	pool->port_max = p->port_max;
	pool->n_workers = p->n_workers;
	pool->n_addrs = (uint32_t)n_addrs;
	pool->n_prefixes = p->n_prefixes;
	if (pool_expand(pool, p) < 0) {
		sp_fail(err, errlen, "pool %s: out of memory", p->name);
		sp_pool_free(pool);
		return NULL;
	}
	if (pool_build_spaces(pool, p->rss, err, errlen) < 0) {
		sp_pool_free(pool);
		return NULL;
	}
	return pool;
}

int
sp_alloc_ctx_init(struct sp_alloc_ctx *ctx, const struct sp_env *env,
		  unsigned worker, uint32_t capacity, int socket)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->env = env;
	ctx->worker = worker;
	ctx->cap = capacity;
	ctx->b = env->zalloc("sp_bindings", (size_t)capacity * sizeof(*ctx->b),
			     socket);
	if (ctx->b == NULL || sp_hix_init(&ctx->index, env, "sp_binding_ix",
					  capacity, capacity, false,
					  socket) < 0) {
		sp_alloc_ctx_free(ctx);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < capacity; i++)
		ctx->b[i].next_free = i + 1 < capacity ? i + 1 : UINT32_MAX;
	ctx->free_head = 0;
	return 0;
}

void
sp_alloc_ctx_free(struct sp_alloc_ctx *ctx)
{
	if (ctx->env == NULL)
		return;
	sp_hix_free(&ctx->index, ctx->env);
	ctx->env->free(ctx->b);
	ctx->b = NULL;
}

static uint32_t
binding_hash(const struct sp_alloc_ctx *ctx, uint16_t pool, uint32_t int_addr)
{
	return sp_hix_hash(&ctx->index, int_addr, pool);
}

static struct sp_binding *
binding_find(const struct sp_alloc_ctx *ctx, uint16_t pool, uint32_t int_addr,
	     uint32_t hash, int32_t *pos)
{
	*pos = -1;
	for (uint32_t i = sp_hix_first(&ctx->index, hash); i != SP_HIX_NONE;
	     i = sp_hix_next(&ctx->index, i)) {
		if (ctx->b[i].int_addr == int_addr && ctx->b[i].pool == pool) {
			*pos = (int32_t)i;
			return &ctx->b[i];
		}
	}
	return NULL;
}

uint32_t
sp_pool_ports_held(const struct sp_alloc_ctx *ctx, uint16_t pool,
		   uint32_t int_addr)
{
	int32_t pos;
	const struct sp_binding *b =
		binding_find(ctx, pool, int_addr,
			     binding_hash(ctx, pool, int_addr), &pos);

	return b == NULL ? 0 : b->held;
}

/* The paired address: the bound one, else the least loaded (allocator.py). */
static uint32_t
pool_pick_address(const struct sp_pool *pool, unsigned w, uint32_t int_addr)
{
	const struct sp_pool_space *row = &pool->space[w * pool->n_addrs];
	uint32_t least = UINT32_MAX, n_least = 0, pick;

	for (uint32_t a = 0; a < pool->n_addrs; a++) {
		if (row[a].hosts < least) {
			least = row[a].hosts;
			n_least = 1;
		} else if (row[a].hosts == least) {
			n_least++;
		}
	}
	pick = int_addr % n_least;
	for (uint32_t a = 0; a < pool->n_addrs; a++) {
		if (row[a].hosts != least)
			continue;
		if (pick-- == 0)
			return a;
	}
	return 0;
}

/*
 * The slots a flow may take: its port class, the first n_low slots (the
 * well-known ports) or the rest, and with preserve_parity its parity
 * (any = -1). The caller gets -ENOSPC at once when every one is in use.
 */
struct candidates {
	uint32_t lo, hi;                /* slots [lo, hi) */
	int parity;                     /* 0, 1, or -1 for any */
};

static int
pool_candidates(const struct sp_pool *pool, const struct sp_pool_space *s,
		const struct sp_alloc_req *req, struct candidates *c)
{
	unsigned wk = req->int_port <= SP_WELL_KNOWN_PORT_MAX &&
		      pool->port_min <= SP_WELL_KNOWN_PORT_MAX;
	const uint32_t *used = s->used[req->pi][wk];

	c->lo = wk ? 0 : s->n_low;
	c->hi = wk ? s->n_low : s->n;
	if (pool->policy.preserve_parity) {
		c->parity = req->int_port & 1;
		return used[c->parity] < s->size[wk][c->parity] ? 0 : -ENOSPC;
	}
	c->parity = -1;
	return used[0] + used[1] < s->size[wk][0] + s->size[wk][1] ? 0 : -ENOSPC;
}

/* Whether a released slot's state is a lease's end still to come (the
 * switch may translate with the port until then: allocator.h). */
static inline int
slot_leased(uint32_t st, uint32_t now)
{
	return st != SP_PORT_FREE && st != SP_PORT_USED &&
	       st - now - 1u < SP_LEASE_MAX_MS;
}

/* Whether a slot's port may be handed out now: free, or rested long enough. */
static inline int
slot_free(uint32_t st, uint32_t now, uint32_t reuse_ms)
{
	return st == SP_PORT_FREE ||
	       (st != SP_PORT_USED && !slot_leased(st, now) &&
		now - st >= reuse_ms);
}

/* The internal port's own slot if this worker owns it in c (binary search). */
static int
pool_find_port(const struct sp_pool_space *s, const struct candidates *c,
	       uint16_t port, uint32_t *slot)
{
	uint32_t lo = c->lo, hi = c->hi;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->ports[mid] < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == c->hi || s->ports[lo] != port)
		return 0;
	*slot = lo;
	return 1;
}

static int
pool_choose_port(const struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
		 struct sp_pool_space *s, const struct sp_alloc_req *req,
		 uint32_t *slot)
{
	const uint32_t *state = s->state[req->pi];
	uint32_t now = req->now_ms, start, n, oldest = UINT32_MAX, oldest_age = 0;
	struct candidates c;

	if (pool_candidates(pool, s, req, &c) < 0)
		return -ENOSPC;
	if (pool->policy.preserve_port &&
	    pool_find_port(s, &c, req->int_port, slot) &&
	    slot_free(state[*slot], now, req->reuse_ms))
		return 0;
	n = c.hi - c.lo;
	start = (uint32_t)ctx->env->random_below(n);
	/*
	 * RFC 6056 algorithm 1: a random start, then the next free candidate.
	 * A free port of the wrong parity costs one compare; with a pool mostly
	 * free the next candidate is a slot or two away, as without parity.
	 */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t j = c.lo + (start + i < n ? start + i : start + i - n);
		uint32_t st = state[j];

		if (st == SP_PORT_USED || slot_leased(st, now) ||
		    (c.parity >= 0 && (s->ports[j] & 1) != (unsigned)c.parity))
			continue;
		if (slot_free(st, now, req->reuse_ms)) {
			*slot = j;
			return 0;
		}
		if (oldest == UINT32_MAX || now - st > oldest_age) {
			oldest = j;
			oldest_age = now - st;
		}
	}
	/* Every candidate not in use is resting: reuse the longest-rested
	 * (never one under a lease: skipped above). */
	if (oldest == UINT32_MAX)
		return -ENOSPC;
	*slot = oldest;
	return 0;
}

/* The [well-known][parity] count a slot's port is kept in. */
static uint32_t *
used_count(struct sp_pool_space *s, unsigned pi, uint32_t slot)
{
	return &s->used[pi][slot < s->n_low][s->ports[slot] & 1];
}

/* A new binding of (pool, int_addr) to addr_idx (there is none), or NULL. */
static struct sp_binding *
binding_new(struct sp_pool *pool, struct sp_alloc_ctx *ctx, uint32_t int_addr,
	    uint32_t addr_idx, uint32_t hash)
{
	uint32_t i = ctx->free_head;
	struct sp_binding *b;

	if (i == UINT32_MAX)
		return NULL;
	sp_hix_insert(&ctx->index, i, hash);
	ctx->free_head = ctx->b[i].next_free;
	ctx->n++;
	b = &ctx->b[i];
	b->int_addr = int_addr;
	b->pool = pool->index;
	b->addr_idx = addr_idx;
	b->held = 0;
	pool->space[ctx->worker * pool->n_addrs + addr_idx].hosts++;
	return b;
}

/* Marks a slot in use by b's host and fills out. */
static void
slot_take(struct sp_pool *pool, struct sp_pool_space *s, struct sp_binding *b,
	  unsigned pi, uint32_t addr_idx, uint32_t slot, struct sp_alloc *out)
{
	b->held++;
	s->state[pi][slot] = SP_PORT_USED;
	SP_COUNT_ADD(*used_count(s, pi, slot), 1);
	out->addr = pool->addrs[addr_idx];
	out->port = s->ports[slot];
	out->pool = pool->index;
	out->addr_idx = addr_idx;
	out->slot = slot;
}

/* The index of addr in pool->addrs (prefixes expanded in order), or -1. */
static int64_t
pool_address_index(const struct sp_pool *pool, uint32_t addr)
{
	uint64_t base = 0;

	for (uint32_t i = 0; i < pool->n_prefixes; i++) {
		const struct sp_prefix *p = &pool->prefixes[i];
		uint64_t size = 1ull << (32 - p->len);

		if (addr >= p->addr && (uint64_t)addr - p->addr < size)
			return (int64_t)(base + (addr - p->addr));
		base += size;
	}
	return -1;
}

/* Where port (addr, port) of the pool lives on ctx's worker: false when
 * the address is not the pool's or the worker does not own the port. */
static bool
owned_slot(struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
	   uint32_t addr, uint16_t port, uint32_t *addr_idx,
	   struct sp_pool_space **space, uint32_t *slot)
{
	int64_t a = pool_address_index(pool, addr);
	struct candidates all;

	if (a < 0)
		return false;
	*addr_idx = (uint32_t)a;
	*space = &pool->space[ctx->worker * pool->n_addrs + *addr_idx];
	all = (struct candidates){ .lo = 0, .hi = (*space)->n, .parity = -1 };
	return pool_find_port(*space, &all, port, slot);
}

int
sp_pool_claim(struct sp_pool *pool, struct sp_alloc_ctx *ctx, unsigned pi,
	      uint32_t int_addr, uint32_t addr, uint16_t port,
	      struct sp_alloc *out)
{
	struct sp_pool_space *s;
	struct sp_binding *b;
	uint32_t a, slot, hash;
	int32_t pos;

	if (!owned_slot(pool, ctx, addr, port, &a, &s, &slot))
		return -ERANGE;
	if (s->state[pi][slot] == SP_PORT_USED)
		return -EEXIST;
	hash = binding_hash(ctx, pool->index, int_addr);
	b = binding_find(ctx, pool->index, int_addr, hash, &pos);
	if (b != NULL && b->addr_idx != a)
		return -EEXIST;
	if (b == NULL && (b = binding_new(pool, ctx, int_addr, a, hash)) == NULL)
		return -ENOMEM;
	slot_take(pool, s, b, pi, a, slot, out);
	return 0;
}

/* A state that is a time (never FREE nor USED). */
static uint32_t
as_time(uint32_t t)
{
	if (t == SP_PORT_FREE)
		return 1;
	return t == SP_PORT_USED ? SP_PORT_USED - 1 : t;
}

int
sp_pool_hold(struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
	     unsigned pi, uint32_t addr, uint16_t port, uint32_t until_ms,
	     uint32_t now_ms)
{
	struct sp_pool_space *s;
	uint32_t a, slot, st;

	if (!owned_slot(pool, ctx, addr, port, &a, &s, &slot))
		return -ERANGE;
	st = s->state[pi][slot];
	if (st == SP_PORT_USED)
		return -EEXIST;
	if ((int32_t)(until_ms - now_ms) <= 0)
		return 0;               /* over: nothing to hold */
	if (until_ms - now_ms > SP_LEASE_MAX_MS)
		until_ms = now_ms + SP_LEASE_MAX_MS;
	/* the later of two leases */
	if (!slot_leased(st, now_ms) || (int32_t)(until_ms - st) > 0)
		s->state[pi][slot] = as_time(until_ms);
	return 0;
}

int
sp_pool_allocate(struct sp_pool *pool, struct sp_alloc_ctx *ctx,
		 const struct sp_alloc_req *req, struct sp_alloc *out)
{
	uint32_t hash = binding_hash(ctx, pool->index, req->int_addr);
	struct sp_binding *b;
	struct sp_pool_space *s;
	uint32_t addr_idx, slot;
	int32_t pos;
	int rc;

	b = binding_find(ctx, pool->index, req->int_addr, hash, &pos);
	if (req->quota != 0 && b != NULL && b->held >= req->quota)
		return -EDQUOT;
	addr_idx = b != NULL ? b->addr_idx :
			       pool_pick_address(pool, ctx->worker, req->int_addr);
	s = &pool->space[ctx->worker * pool->n_addrs + addr_idx];
	rc = pool_choose_port(pool, ctx, s, req, &slot);
	if (rc < 0) {
		out->addr = pool->addrs[addr_idx];
		out->addr_idx = addr_idx;
		out->pool = pool->index;
		return rc;
	}
	if (b == NULL && (b = binding_new(pool, ctx, req->int_addr, addr_idx,
					  hash)) == NULL)
		return -ENOMEM;
	slot_take(pool, s, b, req->pi, addr_idx, slot, out);
	return 0;
}

bool
sp_pool_mark_exhausted(struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
			unsigned pi, uint32_t addr_idx, bool *all_out)
{
	struct sp_pool_space *mine = &pool->space[ctx->worker * pool->n_addrs];
	uint32_t out = 0;

	if (mine[addr_idx].exhausted & (1u << pi))
		return false;
	mine[addr_idx].exhausted |= (uint8_t)(1u << pi);
	for (uint32_t i = 0; i < pool->n_addrs; i++)
		out += (mine[i].exhausted >> pi) & 1u;
	*all_out = out == pool->n_addrs;
	return true;
}

void
sp_pool_release(struct sp_pool *pool, struct sp_alloc_ctx *ctx, unsigned pi,
		uint32_t int_addr, const struct sp_alloc *a, uint32_t now_ms,
		uint32_t hold_ms)
{
	struct sp_pool_space *s =
		&pool->space[ctx->worker * pool->n_addrs + a->addr_idx];
	uint32_t hash = binding_hash(ctx, pool->index, int_addr);
	struct sp_binding *b;
	int32_t pos;

	if (hold_ms > SP_LEASE_MAX_MS)
		hold_ms = SP_LEASE_MAX_MS;
	s->state[pi][a->slot] = as_time(now_ms + hold_ms);
	SP_COUNT_SUB(*used_count(s, pi, a->slot), 1);
	s->exhausted &= (uint8_t)~(1u << pi);   /* a port again: episode over */
	b = binding_find(ctx, pool->index, int_addr, hash, &pos);
	if (b == NULL)
		return;
	if (--b->held == 0) {
		sp_hix_remove(&ctx->index, (uint32_t)pos, hash);
		b->next_free = ctx->free_head;
		ctx->free_head = (uint32_t)pos;
		ctx->n--;
		s->hosts--;
	}
}
