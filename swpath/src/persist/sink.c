/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's NAT core observer (sink.h): what each session event means for
 * the state file and the stream, and the mapping events' ring. On the
 * worker, never blocking: a full ring drops the record and counts it.
 */
#include <rte_branch_prediction.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "persist/session_store.h"
#include "persist/session_stream.h"
#include "persist/sink.h"

static void
on_session(void *ctx, const struct sp_session *s, uint32_t sidx,
	   enum sp_session_event ev, uint32_t now)
{
	struct sp_worker *w = ctx;

	switch (ev) {
	case SP_SESSION_OPENED:
	case SP_SESSION_OFFLOAD:
		/* a successor must know it, and not expire what the switch
		 * still forwards */
		sp_store_put(w, sidx, s);
		break;
	case SP_SESSION_ANNOUNCED:
		sp_stream_push(w, s, SP_STREAM_OPENED, 0, now);
		break;
	case SP_SESSION_STATE:
		sp_stream_push(w, s, SP_STREAM_STATE, 0, now);
		/* a successor times it out as what it is now */
		sp_store_put(w, sidx, s);
		break;
	case SP_SESSION_EXPIRED:
	case SP_SESSION_DELETED:
		sp_stream_push(w, s, SP_STREAM_CLOSED,
			       ev == SP_SESSION_EXPIRED ? SP_STREAM_EXPIRED :
							  SP_STREAM_DELETED,
			       now);
		sp_store_end(w, sidx);
		break;
	}
}

static void
on_held(void *ctx, const struct sp_session *s, uint32_t end, uint32_t now)
{
	const struct sp_store_hold hold = {
		.ext_addr = be32toh(s->ext_addr),
		.ext_port = be16toh(s->ext_port),
		.proto = s->proto,
		.end = end,
	};

	/* a successor must not hand the port out before end either */
	sp_store_hold(ctx, &hold, now);
}

static void
on_event(void *ctx, const struct sp_event *ev)
{
	struct sp_worker *w = ctx;
	struct sp_event copy;

	if (w->event_ring == NULL)
		return;
	copy = *ev;                     /* the ring takes no const */
	if (unlikely(rte_ring_sp_enqueue_elem(w->event_ring, &copy,
					      sizeof(copy)) != 0))
		SP_INC(w, events_dropped);
}

struct sp_nat_observer
sp_sink_observer(struct sp_worker *w)
{
	return (struct sp_nat_observer){
		.session = on_session, .event = on_event, .held = on_held,
		.ctx = w,
		.listening = &w->listening,
		/* who needs what: as on_session's switch */
		.session_when = {
			[SP_SESSION_OPENED] = SP_LISTEN_STORE,
			[SP_SESSION_ANNOUNCED] = SP_LISTEN_STREAM,
			[SP_SESSION_STATE] = SP_LISTEN_STORE | SP_LISTEN_STREAM,
			[SP_SESSION_OFFLOAD] = SP_LISTEN_STORE,
			[SP_SESSION_EXPIRED] = SP_LISTEN_STORE | SP_LISTEN_STREAM,
			[SP_SESSION_DELETED] = SP_LISTEN_STORE | SP_LISTEN_STREAM,
		},
		.events_when = SP_LISTEN_EVENTS,
		.held_when = SP_LISTEN_STORE,
		.session_events_when = SP_LISTEN_IPFIX_SESSIONS,
	};
}
