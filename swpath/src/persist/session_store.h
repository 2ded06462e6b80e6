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
 * Only the session records are kept: mappings, bindings and indexes are
 * functions of them. What is lost: resting ports (a port released just
 * before the restart may be handed out again at once), held fragments, and
 * after a crash the sessions' last_seen: each adopted session then gets a
 * full idle timeout from the restart (never an early expiry).
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

#endif /* SP_SESSION_STORE_H */
