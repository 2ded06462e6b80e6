/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sessions a successor takes over: swpath restarts and upgrades that keep
 * established flows (docs/swpath.md, "Restarts and upgrades").
 *
 * With --state FILE, each worker keeps a copy of its session records in a
 * file of named shared memory (tmpfs: /dev/shm or /run), one 64-byte record
 * per session slot, at the slot's own index. A worker writes a record when
 * the session opens, closes, changes TCP phase or is offloaded: never per
 * packet, so the packet path pays nothing and a new flow one cache line.
 * Each write is bracketed by the record's seq (odd while written), so a
 * process killed in the middle of one leaves a record the successor can
 * tell is torn and discard. A clean exit writes every live record once more
 * with its last_seen and marks the file clean.
 *
 * At start, before the workers run, swpath reads the file a predecessor
 * left, checks its header (layout version, record size, the same boot) and
 * adopts every record that is still valid under its own configuration
 * (core/adopt.h, sp_nat_adopt: the rule, the pool, the port, the worker
 * that owns it, no conflict), re-creating mappings, host counts and port bindings from the
 * sessions, so a port of an adopted session is never handed out again. The
 * rest are discarded, counted and logged with the reason. Then it writes its
 * own file beside the old one and renames it over it. An exclusive flock
 * keeps a second live process off a file in use.
 *
 * Besides the sessions, each worker keeps its port holds: in learn mode a
 * session the switch learned and an operator deleted leaves its port held
 * until the switch's lease ends (core/lifecycle.c), and the successor must
 * hold it as long (RFC 4787 REQ-3: no two flows on one external endpoint).
 * A worker writes a hold as it begins, into a record whose hold is over;
 * one that finds none marks its holds incomplete, and the successor then
 * keeps learn mode's quiet period (control/learn_quiet.h) instead.
 *
 * Mappings, bindings and indexes are functions of the sessions and holds.
 * What is lost: resting ports (a port released just before the restart may
 * be handed out again at once), held fragments, and after a crash the
 * sessions' last_seen: each adopted session then gets a full idle timeout
 * from the restart (never an early expiry).
 *
 * This is VPP nat44-ed's and conntrackd's idea (state kept outside the
 * process that forwards) in the simplest form that survives kill -9.
 */
#ifndef SP_SESSION_STORE_H
#define SP_SESSION_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/session.h"
#include "dataplane/sp.h"

/*
 * Adopts the sessions of the predecessor's file at path (if there is one and
 * it is valid) into the workers' tables, then makes the file this process's
 * own. Called once, after the workers' tables and the runtime exist and
 * before the workers run. Returns 0, or -1 with a message (the file cannot
 * be made, or another process holds it).
 */
int sp_store_open(const char *path, char *err, size_t errlen);

/*
 * After the workers stopped: every live session written with its last_seen
 * and the file marked clean, for the successor; then unmapped and unlocked.
 */
void sp_store_close(void);

/* Whether sessions are kept (--state). */
bool sp_store_enabled(void);

/* A port held until a lease's end (learn mode), as the file keeps it. */
struct sp_store_hold {
	uint32_t seq;           /* odd while written */
	uint32_t ext_addr;      /* host order */
	uint16_t ext_port;      /* ICMP: the identifier */
	uint8_t proto;          /* 0: never written */
	uint8_t pad;
	uint32_t end;           /* the writer's clock (sp_now_ms) */
};

/* A worker's holds in the file: a cache line, then n records. */
struct sp_store_holds {
	uint32_t n;
	uint32_t next;          /* where the next write looks first */
	uint32_t lost;          /* 1: a hold found no record to go in */
	uint32_t pad[13];
	struct sp_store_hold rec[];
};

/* -- the worker's side ----------------------------------------------------- */

/* Copies session s, slot sidx of worker w, to its stored record. */
static inline void
sp_store_put(struct sp_worker *w, uint32_t sidx, const struct sp_session *s)
{
	struct sp_session *r;
	uint32_t seq;

	if (w->store == NULL)
		return;
	r = &w->store[sidx];
	seq = r->seq | 1;               /* odd: being written */
	__atomic_store_n(&r->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(r, s, offsetof(struct sp_session, seq));
	r->id = s->id;
	__atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELEASE);
}

/* Marks slot sidx's stored record free: its session ended. */
static inline void
sp_store_end(struct sp_worker *w, uint32_t sidx)
{
	struct sp_session *r;
	uint32_t seq;

	if (w->store == NULL)
		return;
	r = &w->store[sidx];
	seq = r->seq | 1;
	__atomic_store_n(&r->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	r->proto = 0;
	__atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELEASE);
}

/*
 * Learn mode: hold's endpoint (its ext_addr, ext_port, proto) is held until
 * its end (the observer's held(); its seq is this function's). Not on the
 * packet path: an operator's delete. Looks for a record whose hold is over
 * from where the last write stopped; with none left, marks this worker's
 * holds lost and writes no more.
 */
void sp_store_hold(struct sp_worker *w, const struct sp_store_hold *hold,
		   uint32_t now);

#endif /* SP_SESSION_STORE_H */
