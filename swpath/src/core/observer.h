/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the NAT core tells the layers above it, and nothing more: a
 * session's life (opened, announced, its TCP phase, its offload state,
 * closed and why) and the mapping and quota events of RFC 6888 REQ-12. The
 * core calls the observer a worker gave it at those moments only, never
 * per packet (but for the one packet that announces a session), and knows
 * nothing of what is done with them: persist/sink.c feeds the state file,
 * the session stream and the event log from them; tests record them.
 */
#ifndef SP_OBSERVER_H
#define SP_OBSERVER_H

#include <stdint.h>

#include "core/session.h"

enum sp_session_event {
	SP_SESSION_OPENED = 0,    /* a new session (or one handed back) */
	/* the stream's "opened": at once, or at its after_packets-th
	 * packet (core/runtime.h); a session is announced once */
	SP_SESSION_ANNOUNCED = 1,
	SP_SESSION_STATE = 2,     /* a TCP session's phase changed */
	SP_SESSION_OFFLOAD = 3,   /* the switch took it, reported it idle,
				   * or gave it back */
	SP_SESSION_EXPIRED = 4,   /* closing: its idle timeout */
	SP_SESSION_DELETED = 5,   /* closing: an operator's sessions delete|flush */
};
#define SP_SESSION_EVENTS 6       /* how many: the observer's session_when */

/*
 * Mapping and quota events (RFC 6888 REQ-12; persist/events.h writes them
 * as the controller's lines). One mapping is one created and one deleted
 * event, however many sessions it carried, fired where core.py calls
 * on_mapping; never per session, never for DNAT, never the remote.
 */
enum sp_event_type {
	SP_EVENT_CREATED = 0,
	SP_EVENT_DELETED = 1,
	/* A host reached its limit (RFC 6888 REQ-4/5; RFC 8158's "quota
	 * exceeded" event): int_addr is the host, ext_addr the limit. One per
	 * episode: until the host closes a session. */
	SP_EVENT_QUOTA_PORTS = 2,
	SP_EVENT_QUOTA_SESSIONS = 3,
	/* IPFIX only (RFC 8158; persist/event_export.c), never a log line: */
	/* a session opened or closed, with its remote (rem_*), while the
	 * observer's session_events_when is heard (`ipfix_sessions true`) */
	SP_EVENT_SESSION_OPENED = 4,
	SP_EVENT_SESSION_CLOSED = 5,
	/* a new flow found no port: ext_addr the pool address out of ports of
	 * proto (this worker's share of it), int_addr the natPoolID ([[pool]]
	 * order from 1; 0 for an SNAT rule's own address); and, when every
	 * address of a configured pool is, the pool (ext_addr 0). Once per
	 * episode: until a port of that address is released. */
	SP_EVENT_PORTS_EXHAUSTED = 6,
	SP_EVENT_ADDRESSES_EXHAUSTED = 7,
};

struct sp_event {
	uint32_t time_ms;       /* the workers' clock */
	uint32_t int_addr;      /* host order */
	uint32_t ext_addr;      /* host order */
	uint32_t rem_addr;      /* host order; session events */
	uint16_t int_port;      /* ICMP: identifier */
	uint16_t ext_port;
	uint16_t rem_port;
	uint8_t proto;
	uint8_t type;           /* enum sp_event_type */
};

struct sp_nat_observer {
	/* s is the session as it is now: for EXPIRED and DELETED, before it
	 * is freed; sidx its slot in the worker's table. */
	void (*session)(void *ctx, const struct sp_session *s, uint32_t sidx,
			enum sp_session_event ev, uint32_t now);
	void (*event)(void *ctx, const struct sp_event *ev);
	/* Learn mode: an operator deleted session s, which the switch learned
	 * under a lease it does not give back: s's external endpoint is handed
	 * out to no flow before end (lifecycle.c). Called while *listening &
	 * held_when, before session() hears DELETED. */
	void (*held)(void *ctx, const struct sp_session *s, uint32_t end,
		     uint32_t now);
	void *ctx;
	/*
	 * Whether anyone listens now, read (relaxed) before each call: a
	 * worker with no state file, no stream subscriber and no event log
	 * pays a load and a test per new session, not the calls. session() is
	 * called for ev while *listening & session_when[ev], event() while
	 * *listening & events_when; the listeners set and clear their bits
	 * (persist/sink.c). NULL: every call is made.
	 */
	const uint32_t *listening;
	uint32_t session_when[SP_SESSION_EVENTS];
	uint32_t events_when;
	uint32_t held_when;
	/* event() for SP_EVENT_SESSION_*: while *listening & this (0: never,
	 * whatever listening says) */
	uint32_t session_events_when;
};

#endif /* SP_OBSERVER_H */
