/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mapping created / deleted events (RFC 6888 REQ-12), `logging events ...`.
 *
 * A worker does no I/O: it pushes a fixed-size record into its own
 * single-producer ring (persist/sink.c), and the control thread (main lcore) drains every ring
 * once per control round and writes one line per record to a file or to
 * syslog. A full ring drops the record and counts it (events_dropped); a
 * worker never waits for the log.
 *
 * The line is the controller's (controller/quicknat/events.py, README
 * "[logging]"): UTC time, the event, protocol, internal and external
 * address:port, and never the destination:
 *   2026-01-31T12:00:00Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001
 * One mapping is one created and one deleted line, however many sessions it
 * carried (the core emits them where core.py calls on_mapping,
 * core/observer.h; persist/sink.c puts them in the worker's ring).
 *
 * A host that reaches its per-host limit is one line, the first time a new
 * flow is refused for it since the host last closed a session:
 *   2026-01-31T12:00:00Z quota exceeded sessions_per_host 10.0.0.7 4096
 */
#ifndef SP_EVENTS_H
#define SP_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/observer.h"              /* struct sp_event */

/* Where mapping events go (RFC 6888 REQ-12; `logging events ...`). */
enum sp_event_sink {
	SP_EVENTS_NONE = 0,
	SP_EVENTS_SYSLOG = 1,
	SP_EVENTS_FILE = 2,
};

/* The event file's path, its NUL included. */
#define SP_PATH_MAX 256

/* Records per worker ring: 10 ms of control round at 1.6 M mappings/s. */
#define SP_EVENT_RING_SIZE 16384
/* The longest line: time, words, two endpoints, newline. */
#define SP_EVENT_LINE_MAX 96

struct rte_ring;

/* -- control thread ---------------------------------------------------------- */

/* Whether a record is a line of the log (mappings, quotas) rather than an
 * IPFIX-only event (sessions, exhaustion). */
bool sp_event_has_line(const struct sp_event *ev);

/*
 * The line of a record (without newline) for an event at wall-clock second
 * `when`. Returns its length.
 */
int sp_event_format(const struct sp_event *ev, time_t when, char *buf,
		    size_t len);

/*
 * Chooses where lines go, at start-up: opens path for appending (file) or
 * the daemon facility of syslog. Returns 0, or -1 with a message in err.
 */
int sp_events_configure(uint8_t sink, const char *path, char *err,
			size_t errlen);

/* Whether workers need event rings (a sink other than none). */
bool sp_events_enabled(void);

/* A worker's ring (one producer: the worker, one consumer: control). */
struct rte_ring *sp_events_ring_create(unsigned worker, int socket);

/*
 * Writes what a ring holds. now_ms is the workers' clock and wall the real
 * time at the same instant: a record's time is wall minus its age. Returns
 * the number of records taken.
 */
unsigned sp_events_write(struct rte_ring *ring, uint32_t now_ms,
			 const struct timespec *wall);

/* Every worker's ring, now; then the file is flushed. One control round. */
void sp_events_drain(void);

/* Asks the next drain to reopen the file (SIGHUP, after logrotate moved it).
 * Async-signal-safe. */
void sp_events_reopen(void);

/*
 * At exit, after the workers stopped: a "deleted" event for every mapping
 * still open, so that a log reader sees each mapping end (RFC 6888 REQ-12
 * logs its life; a restart ends them all).
 */
void sp_events_mappings_closed(void);

/* Closes the file or syslog (at exit, after the last drain). */
void sp_events_close(void);

#endif /* SP_EVENTS_H */
