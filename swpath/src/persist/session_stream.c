/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread's half of the session event stream (session_stream.h):
 * the rings, the snapshot a subscription starts with, and the JSON lines.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include <rte_lcore.h>

#include "persist/session_json.h"
#include "persist/session_stream.h"

#define DRAIN_BURST 64

uint32_t sp_stream_subscribers;

static uint64_t dropped_seen;   /* stream_dropped at the last drain */

struct rte_ring *
sp_stream_ring_create(unsigned worker, int socket)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "sp_stream_%u", worker);
	return rte_ring_create_elem(name, sizeof(struct sp_stream_record),
				    SP_STREAM_RING_SIZE, socket,
				    RING_F_SP_ENQ | RING_F_SC_DEQ);
}

static const char *const type_names[] = { "opened", "state", "closed" };
static const char *const reason_names[] = { "expired", "deleted" };

void
sp_stream_format(const struct sp_stream_record *r, struct sp_buf *b)
{
	const struct sp_session s = {
		.int_addr = r->int_addr, .ext_addr = r->ext_addr,
		.rem_addr = r->rem_addr, .int_port = r->int_port,
		.ext_port = r->ext_port, .rem_port = r->rem_port,
		.proto = r->proto, .tcp = r->tcp, .origin = r->origin,
		.rule_id = r->rule_id, .id = r->id,
	};

	sp_buf_printf(b, "{\"event\": \"%s\", ",
		      type_names[r->type < 3 ? r->type : 0]);
	sp_json_session(b, &s, r->worker);
	if (r->type == SP_STREAM_CLOSED)
		sp_buf_printf(b, ", \"reason\": \"%s\"",
			      reason_names[r->reason < 2 ? r->reason : 0]);
	sp_buf_printf(b, "}\n");
}

static void
discard(void)
{
	struct sp_stream_record r[DRAIN_BURST];

	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct rte_ring *ring = sp.workers[w]->stream_ring;

		while (ring != NULL &&
		       rte_ring_sc_dequeue_burst_elem(ring, r, sizeof(r[0]),
						      DRAIN_BURST, NULL) != 0)
			;
	}
	dropped_seen = sp_counter_sum(SP_CNT_stream_dropped);
}

/* The workers' cores tell their sessions' events while one subscribes
 * (sink.c); before the snapshot, so nothing opens unseen in between. */
static void
stream_listen(bool on)
{
	for (unsigned w = 0; w < sp.n_workers; w++) {
		uint32_t *l = &sp.workers[w]->listening;

		if (on)
			__atomic_fetch_or(l, SP_LISTEN_STREAM, __ATOMIC_SEQ_CST);
		else
			__atomic_fetch_and(l, ~SP_LISTEN_STREAM,
					   __ATOMIC_SEQ_CST);
	}
}

void
sp_stream_subscribe(struct sp_buf *b)
{
	const struct sp_runtime *rt = sp_runtime_get();
	uint8_t after = rt->after_packets;
	unsigned n = 0;

	/* Records left from an earlier subscription describe sessions that
	 * may have closed unseen since: the first subscriber starts clean. */
	if (__atomic_load_n(&sp_stream_subscribers, __ATOMIC_SEQ_CST) == 0)
		discard();
	/* then: what opens from now on is pushed (and drained after the
	 * snapshot below) */
	__atomic_fetch_add(&sp_stream_subscribers, 1, __ATOMIC_SEQ_CST);
	stream_listen(true);
	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_nat *nat = &sp.workers[w]->nat;

		for (uint32_t i = 0; i < nat->max_sessions; i++) {
			struct sp_session s;

			/* not yet announced: its after_packets-th packet will;
			 * in learn mode none is (core/learn.h) */
			if (!sp_session_copy(&nat->sessions[i], &s) ||
			    (after > 1 && s.pkts < after) || rt->learn)
				continue;
			sp_buf_printf(b, "{\"event\": \"opened\", \"snapshot\": true, ");
			sp_json_session(b, &s, w);
			sp_buf_printf(b, "}\n");
			n++;
		}
	}
	sp_buf_printf(b, "{\"event\": \"synced\", \"sessions\": %u, \"run\": %" PRIu64 "}\n",
		      n, sp.run_id);
}

void
sp_stream_unsubscribe(void)
{
	if (__atomic_sub_fetch(&sp_stream_subscribers, 1, __ATOMIC_SEQ_CST) == 0)
		stream_listen(false);
}

unsigned
sp_stream_drain(struct sp_buf *b)
{
	struct sp_stream_record r[DRAIN_BURST];
	uint64_t dropped = sp_counter_sum(SP_CNT_stream_dropped);
	unsigned total = 0;

	if (dropped != dropped_seen) {
		sp_buf_printf(b, "{\"event\": \"lost\", \"records\": %llu}\n",
			      (unsigned long long)(dropped - dropped_seen));
		dropped_seen = dropped;
	}
	for (unsigned w = 0; w < sp.n_workers; w++) {
		struct rte_ring *ring;
		unsigned n;

		if (sp.workers[w] == NULL || (ring = sp.workers[w]->stream_ring) == NULL)
			continue;
		do {
			n = rte_ring_sc_dequeue_burst_elem(ring, r, sizeof(r[0]),
							   DRAIN_BURST, NULL);
			for (unsigned i = 0; i < n; i++)
				sp_stream_format(&r[i], b);
			total += n;
		} while (n == DRAIN_BURST);
	}
	return total;
}
