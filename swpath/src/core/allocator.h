/* SPDX-License-Identifier: Apache-2.0 */
/*
 * External address and port allocation, the semantics of
 * controller/quicknat/nat/allocator.py, split by worker:
 *
 * - Each (address, port) of a pool belongs to exactly one worker: the one its
 *   reply hashes to (rss.h). A worker's allocator hands out only its own
 *   ports, so a pool's port space is partitioned and no state is shared.
 * - Paired pooling (RFC 4787 REQ-2): an internal address keeps one external
 *   address while it holds any port of the pool; a new one takes the address
 *   with the fewest bound hosts (on this worker), candidates[internal % n].
 * - Ports per protocol, never two internal endpoints on one (REQ-3).
 * - Port classes kept apart (REQ-3): an internal port below 1024 gets one of
 *   the pool's ports below 1024 if its range has any (else an ordinary one);
 *   an internal port from 1024 up never gets one below 1024. A full class
 *   fails the flow (-ENOSPC) rather than spill into the other.
 * - preserve_parity (REQ-4): only ports of the internal port's parity.
 * - preserve_port: the internal port itself if this worker owns it and it is
 *   free or has rested; a port another worker owns cannot be handed out
 *   here (its replies would reach that worker), so such a flow gets the
 *   usual random choice. With one worker every port of the range is owned.
 * - Random start, then the next free candidate (RFC 6056 algorithm 1).
 *   ICMP identifiers follow the same rules as ports (allocator.py does too).
 * - Per-host port quota; exhaustion fails the new flow only (RFC 6888).
 * - A released port rests reuse_ms before it is handed out again while other
 *   ports are free; when only resting ports are left the longest-rested is.
 * - A port released under a lease (sp_pool_release's hold_ms: learn mode,
 *   a session the switch learned and an operator deleted) is never handed
 *   out before the lease ends, not even when it is the last port: the
 *   switch may still translate with it (RFC 4787 REQ-3, RFC 6888 REQ-9:
 *   no two flows on one external endpoint), so exhaustion fails the flow.
 *
 * Pools are created by the control thread and never freed while workers run;
 * everything a worker writes (port states, bindings, host counts) is its own.
 */
#ifndef SP_ALLOCATOR_H
#define SP_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/env.h"
#include "core/hash_index.h"
#include "core/rss.h"
#include "core/types.h"

#define SP_MAX_POOLS 256
#define SP_POOL_MAX_PREFIXES 64

#define SP_PORT_FREE 0u
#define SP_PORT_USED UINT32_MAX
#define SP_WELL_KNOWN_PORT_MAX 1023u
/* The longest lease a port is held under: `offload lease`'s maximum, one
 * day. A state up to this far in the future is a lease's end; one further
 * is a release time in the past that the 32-bit clock wrapped over (after
 * about 48.7 days: a port left resting that long looks leased for at most
 * a day, the price of the one 32-bit word per port). */
#define SP_LEASE_MAX_MS 86400000u

/*
 * The ports of one pool address that one worker owns. Ascending, so the
 * well-known ones are the first n_low; counts per [well-known][parity] let a
 * full class fail in O(1) instead of a scan.
 */
struct sp_pool_space {
	const uint16_t *ports;          /* ascending */
	uint32_t n;                     /* number of ports owned */
	uint32_t n_low;                 /* of them below 1024: ports[0, n_low) */
	uint32_t hosts;                 /* inside hosts bound to the address */
	uint32_t size[2][2];            /* owned, [well-known][parity] */
	uint32_t used[SP_PI_MAX][2][2]; /* in use, [protocol][well-known][parity] */
	/* per port: SP_PORT_FREE, SP_PORT_USED, or the release time (ms) */
	uint32_t *state[SP_PI_MAX];     /* or a lease's end, in the future */
	/* 1 << protocol index: a flow found no port here since one was last
	 * released (an RFC 8158 "ports exhausted" episode, told once) */
	uint8_t exhausted;
};

struct sp_pool {
	char name[SP_NAME_MAX];
	uint16_t index;
	uint16_t port_min;
	uint16_t port_max;
	uint8_t internal;               /* made for an SNAT 'to' address */
	struct sp_port_policy policy;
	unsigned n_workers;
	const struct sp_env *env;       /* its memory's */
	uint32_t n_addrs;
	uint32_t *addrs;                /* host order */
	uint32_t n_prefixes;
	struct sp_prefix *prefixes;     /* as configured */
	uint16_t *port_lists;           /* per RETA class and worker */
	struct sp_pool_space *space;    /* [worker * n_addrs + address] */
};

/* A worker's paired-pooling bindings: (internal address, pool). */
struct sp_binding {
	uint32_t int_addr;
	uint32_t addr_idx;
	uint32_t held;                  /* ports held, all protocols */
	uint32_t next_free;
	uint16_t pool;
};

struct sp_alloc_ctx {
	const struct sp_env *env;       /* memory, and the random start */
	unsigned worker;
	uint32_t cap;
	uint32_t free_head;
	uint32_t n;
	struct sp_hix index;            /* (internal address, pool) -> binding */
	struct sp_binding *b;
};

/* One allocated external endpoint and where its state lives. */
struct sp_alloc {
	uint32_t addr;                  /* host order */
	uint16_t port;
	uint16_t pool;
	uint32_t addr_idx;
	uint32_t slot;                  /* index in the space's port list */
};

/* What a new flow asks of sp_pool_allocate. */
struct sp_alloc_req {
	uint32_t int_addr;              /* host order */
	uint16_t int_port;              /* host order; the ICMP identifier */
	uint8_t pi;                     /* enum sp_proto_index */
	uint32_t quota;                 /* ports per host; 0 = no limit */
	uint32_t now_ms;
	uint32_t reuse_ms;              /* how long a released port rests */
};

/* What a pool is made of (`pool ...`, or an SNAT `to` address). */
struct sp_pool_params {
	const char *name;
	const struct sp_prefix *prefixes;
	unsigned n_prefixes;
	uint16_t port_min, port_max;
	struct sp_port_policy policy;
	uint8_t internal;               /* made for an SNAT 'to' address */
	const struct sp_rss *rss;       /* the partition of its ports */
	unsigned n_workers;
	const struct sp_env *env;
};

/*
 * Builds a pool for p->n_workers workers, split by the RSS partition of
 * p->rss (each worker's own ports, per address class). Returns NULL with a
 * message in err (too big for memory, ...).
 */
struct sp_pool *sp_pool_create(const struct sp_pool_params *p, char *err,
			       size_t errlen);
void sp_pool_free(struct sp_pool *pool);

/* Bytes of memory a pool takes (for messages and docs). */
size_t sp_pool_memory(const struct sp_pool *pool);

int sp_alloc_ctx_init(struct sp_alloc_ctx *ctx, const struct sp_env *env,
		      unsigned worker, uint32_t capacity, int socket);
void sp_alloc_ctx_free(struct sp_alloc_ctx *ctx);

/*
 * Allocates an external endpoint for req's internal endpoint on ctx's
 * worker. Returns 0, -EDQUOT (per-host quota), -ENOSPC (no port of its
 * class and parity left on the host's address: out's addr and addr_idx
 * name it), -ENOMEM (binding table full).
 */
int sp_pool_allocate(struct sp_pool *pool, struct sp_alloc_ctx *ctx,
		     const struct sp_alloc_req *req, struct sp_alloc *out);

/*
 * After -ENOSPC: marks the address's share on ctx's worker out of ports of
 * protocol index pi. Returns false when it was already (the episode is
 * told), else true and in *all_out whether every address of the pool now
 * is (RFC 8158's "addresses exhausted"). A release ends the episode.
 */
bool sp_pool_mark_exhausted(struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
			    unsigned pi, uint32_t addr_idx, bool *all_out);

/* Releases what sp_pool_allocate returned; the port starts resting at
 * now_ms + hold_ms, and is never handed out before then (hold_ms: the
 * lease the switch may still hold it under, at most SP_LEASE_MAX_MS; 0: an
 * ordinary release). */
void sp_pool_release(struct sp_pool *pool, struct sp_alloc_ctx *ctx,
		     unsigned pi, uint32_t int_addr, const struct sp_alloc *a,
		     uint32_t now_ms, uint32_t hold_ms);

/*
 * Holds port (addr, port) of protocol index pi until until_ms, as
 * sp_pool_release with a hold would have left it: a port a predecessor
 * released under a lease (learn mode), read from the state file
 * (persist/session_store.h). A later lease already on it stays. Returns 0,
 * -ERANGE (not a port of this pool that ctx's worker owns) or -EEXIST (in
 * use: its mapping keeps it, and the hold goes on the mapping).
 */
int sp_pool_hold(struct sp_pool *pool, const struct sp_alloc_ctx *ctx,
		 unsigned pi, uint32_t addr, uint16_t port, uint32_t until_ms,
		 uint32_t now_ms);

/*
 * Takes the one endpoint (addr, port) for int_addr, as sp_pool_allocate
 * would have handed it out: a session a restarted swpath adopts
 * (session_store.h), whose port must never be handed out again. Returns 0,
 * -ERANGE (not a port of this pool that ctx's worker owns), -EEXIST (in use,
 * or int_addr is paired with another of the pool's addresses: RFC 4787
 * REQ-2), -ENOMEM (binding table full). No quota: the port was granted.
 */
int sp_pool_claim(struct sp_pool *pool, struct sp_alloc_ctx *ctx, unsigned pi,
		  uint32_t int_addr, uint32_t addr, uint16_t port,
		  struct sp_alloc *out);

/* Ports held by int_addr in pool on ctx's worker (the quota's count). */
uint32_t sp_pool_ports_held(const struct sp_alloc_ctx *ctx, uint16_t pool,
			    uint32_t int_addr);

#endif /* SP_ALLOCATOR_H */
