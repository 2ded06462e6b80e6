/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session event stream: what a slow-path instance tells the controller's
 * offload manager (docs/offload.md), so that it installs the sessions swpath
 * opens into the switch and removes them when they close. A stream, not
 * polling: `subscribe sessions` on the control socket keeps the connection
 * open and receives one JSON line per event (docs/swpath-commands.md).
 *
 * A worker does no I/O: at a session's announcement (its open, or its
 * after_packets-th packet: core/runtime.h), its TCP state change and its
 * close it pushes a fixed-size record into its own single-producer ring,
 * only while someone subscribes (one relaxed load otherwise); the control
 * thread drains the rings every control round and writes the lines to every
 * subscriber. A full ring drops the record and counts it (stream_dropped);
 * subscribers are then told {"event": "lost"} and must resynchronise (a new
 * subscription starts with a snapshot). Nothing here is per packet: a TCP
 * segment pushes a record only when it changes the session's state.
 */
#ifndef SP_SESSION_STREAM_H
#define SP_SESSION_STREAM_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_branch_prediction.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "core/session.h"
#include "dataplane/sp.h"

/* Records per worker ring: 160 ms of control rounds at 100 k sessions/s. */
#define SP_STREAM_RING_SIZE 16384

enum sp_stream_type {
	SP_STREAM_OPENED = 0,
	SP_STREAM_STATE = 1,     /* a TCP session's state changed */
	SP_STREAM_CLOSED = 2,
};

enum sp_stream_reason {
	SP_STREAM_EXPIRED = 0,   /* its idle timeout */
	SP_STREAM_DELETED = 1,   /* an operator's sessions delete|flush */
};

struct sp_stream_record {
	uint32_t time_ms;        /* the workers' clock */
	uint32_t id;             /* the session's id (sessions listing) */
	uint32_t rule_id;
	rte_be32_t int_addr;
	rte_be32_t ext_addr;
	rte_be32_t rem_addr;
	rte_be16_t int_port;
	rte_be16_t ext_port;
	rte_be16_t rem_port;
	uint8_t proto;
	uint8_t type;            /* enum sp_stream_type */
	uint8_t tcp;             /* SP_TCP_* after the event */
	uint8_t origin;
	uint8_t reason;          /* enum sp_stream_reason (closed) */
	uint8_t worker;
};

/* Subscribers now; workers push only when it is not 0. */
extern uint32_t sp_stream_subscribers;

/* Worker side (persist/sink.c): a record for session s, if anyone
 * listens. Never blocks: a full ring counts stream_dropped. */
static inline void
sp_stream_push(struct sp_worker *w, const struct sp_session *s, uint8_t type,
	       uint8_t reason, uint32_t now)
{
	struct sp_stream_record r;

	if (likely(__atomic_load_n(&sp_stream_subscribers,
				   __ATOMIC_RELAXED) == 0) ||
	    w->stream_ring == NULL)
		return;
	r = (struct sp_stream_record){
		.time_ms = now, .id = s->id, .rule_id = s->rule_id,
		.int_addr = s->int_addr, .ext_addr = s->ext_addr,
		.rem_addr = s->rem_addr, .int_port = s->int_port,
		.ext_port = s->ext_port, .rem_port = s->rem_port,
		.proto = s->proto, .type = type, .tcp = s->tcp,
		.origin = s->origin, .reason = reason,
		.worker = (uint8_t)w->index,
	};
	if (unlikely(rte_ring_sp_enqueue_elem(w->stream_ring, &r,
					      sizeof(r)) != 0))
		SP_INC(w, stream_dropped);
}

/* -- control thread ---------------------------------------------------------- */

struct sp_buf;

/* A worker's ring (one producer: the worker, one consumer: control). */
struct rte_ring *sp_stream_ring_create(unsigned worker, int socket);

/* The line of a record (JSON, with newline) appended to b. */
void sp_stream_format(const struct sp_stream_record *r, struct sp_buf *b);

/*
 * A new subscriber: from now on workers push records; b gets every session
 * open now as an "opened" line with "snapshot": true, then {"event":
 * "synced"}. Records pushed meanwhile follow in later drains: a subscriber
 * may see a session opened twice, or closed without having seen it open,
 * and must take both as they are (the offload manager does).
 */
void sp_stream_subscribe(struct sp_buf *b);
void sp_stream_unsubscribe(void);

/*
 * Takes what every worker's ring holds, formatted once into b (to be
 * copied to each subscriber), with a "lost" line first when records were
 * dropped since the last drain. Returns the number of records.
 */
unsigned sp_stream_drain(struct sp_buf *b);

#endif /* SP_SESSION_STREAM_H */
