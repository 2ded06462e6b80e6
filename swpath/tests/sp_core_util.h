/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the tests of swpath's NAT core (core/): pools as `pool` makes
 * them, on DPDK's heap as the application's are.
 */
#ifndef SP_CORE_UTIL_H
#define SP_CORE_UTIL_H

#include <stdio.h>

#include "core/allocator.h"
#include "dataplane/sp.h"

/* A pool with the default policy (parity kept, port not), or NULL with the
 * reason on stderr. */
static inline struct sp_pool *
sp_test_pool(const char *name, const struct sp_prefix *pfx, unsigned n,
	     uint16_t lo, uint16_t hi, const struct sp_rss *rss, unsigned nw)
{
	char err[256];
	struct sp_pool *pool = sp_pool_create(&(struct sp_pool_params){
		.name = name, .prefixes = pfx, .n_prefixes = n,
		.port_min = lo, .port_max = hi,
		.policy = { .preserve_parity = true }, .rss = rss,
		.n_workers = nw, .env = &sp_dpdk_env,
	}, err, sizeof(err));

	if (pool == NULL)
		fprintf(stderr, "sp_test_pool: %s\n", err);
	return pool;
}

/* What a core told its observer (core/observer.h), in order: the tests'
 * view of the state file, the stream and the event log. */
#define SP_TEST_HEARD_MAX 4096

struct sp_test_heard {
	unsigned n_events;
	struct sp_event events[SP_TEST_HEARD_MAX];
	unsigned n_sessions;
	struct {
		enum sp_session_event ev;
		uint32_t sidx;
		uint32_t id;
		uint32_t time;
	} sessions[SP_TEST_HEARD_MAX];
	unsigned n_held;
	struct {
		uint32_t ext_addr;      /* network order, as the session */
		uint16_t ext_port;
		uint8_t proto;
		uint32_t end;
	} held[SP_TEST_HEARD_MAX];
};

static inline void
sp_test_heard_session(void *ctx, const struct sp_session *s, uint32_t sidx,
		      enum sp_session_event ev, uint32_t now)
{
	struct sp_test_heard *h = ctx;

	if (h->n_sessions == SP_TEST_HEARD_MAX)
		return;
	h->sessions[h->n_sessions].ev = ev;
	h->sessions[h->n_sessions].sidx = sidx;
	h->sessions[h->n_sessions].id = s->id;
	h->sessions[h->n_sessions].time = now;
	h->n_sessions++;
}

static inline void
sp_test_heard_event(void *ctx, const struct sp_event *ev)
{
	struct sp_test_heard *h = ctx;

	if (h->n_events < SP_TEST_HEARD_MAX)
		h->events[h->n_events++] = *ev;
}

static inline void
sp_test_heard_held(void *ctx, const struct sp_session *s, uint32_t end,
		   uint32_t now)
{
	struct sp_test_heard *h = ctx;

	(void)now;
	if (h->n_held == SP_TEST_HEARD_MAX)
		return;
	h->held[h->n_held].ext_addr = s->ext_addr;
	h->held[h->n_held].ext_port = s->ext_port;
	h->held[h->n_held].proto = s->proto;
	h->held[h->n_held].end = end;
	h->n_held++;
}

static inline struct sp_nat_observer
sp_test_observer(struct sp_test_heard *h)
{
	return (struct sp_nat_observer){
		.session = sp_test_heard_session,
		.event = sp_test_heard_event, .held = sp_test_heard_held,
		.ctx = h,
	};
}

/* How many session events of kind ev were heard. */
static inline unsigned
sp_test_heard_count(const struct sp_test_heard *h, enum sp_session_event ev)
{
	unsigned n = 0;

	for (unsigned i = 0; i < h->n_sessions; i++)
		n += h->sessions[i].ev == ev;
	return n;
}

/* A worker's NAT as the application makes one, on DPDK's heap, reading
 * sp's rules and pools, reporting to heard (NULL: nobody listens). */
static inline int
sp_test_nat_init(struct sp_nat *nat, unsigned worker, unsigned n_workers,
		 uint32_t max_sessions, uint64_t *counters, uint32_t now,
		 struct sp_test_heard *heard)
{
	return sp_nat_init(nat, &(struct sp_nat_params){
		.worker = worker, .n_workers = n_workers,
		.max_sessions = max_sessions, .counters = counters,
		.socket = SP_SOCKET_ANY, .now_ms = now, .env = &sp_dpdk_env,
		.shared = sp_nat_shared(),
		.observer = heard != NULL ? sp_test_observer(heard) :
					    (struct sp_nat_observer){ 0 },
	});
}

#endif /* SP_CORE_UTIL_H */
