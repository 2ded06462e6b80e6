/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Answers of the control socket and telemetry, built in a growable buffer
 * (control thread only). Readers of worker state take no locks: sessions are
 * copied under their sequence count, counters are read relaxed.
 */
#ifndef SP_FORMAT_H
#define SP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "control/cmd.h"                /* struct sp_session_filter */

struct sp_buf {
	char *p;
	size_t len;
	size_t cap;
	/* when set, full 64 KB chunks go out through it as they are made */
	void (*sink)(struct sp_buf *b, void *arg);
	void *sink_arg;
};

/* Hands what is buffered to the sink (if any) and empties the buffer. */
void sp_buf_drain(struct sp_buf *b);

void sp_buf_printf(struct sp_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void sp_buf_free(struct sp_buf *b);
/* s as a JSON string, quotes included: ", \\ and control characters
 * escaped (RFC 8259 sec. 7), so an error that quotes user input stays JSON. */
void sp_buf_json_string(struct sp_buf *b, const char *s);

/* Words of the session JSON: origin (enum sp_origin) and TCP phase
 * (enum sp_tcp_phase) names, and "name": "a.b.c.d:port". */
extern const char *const sp_origin_names[];
extern const char *const sp_tcp_phase_names[];
void sp_format_endpoint(struct sp_buf *b, const char *name, uint32_t addr_be,
			uint16_t port_be);

struct sp_session;
/* A consistent copy of a live session slot (read under its sequence
 * count, as the worker may rewrite it), or 0 for a free or busy slot. */
int sp_session_copy(const struct sp_session *s, struct sp_session *out);

/* JSON list of session objects (the controller's status socket schema). */
void sp_format_sessions_json(struct sp_buf *b,
			     const struct sp_session_filter *f, uint32_t limit);
/* JSON object {"sessions": N, "counters": {...}, "lcores": [...]}. */
void sp_format_stats_json(struct sp_buf *b);
/* One `rule add ...` line per rule, by id. */
void sp_format_rules(struct sp_buf *b);

#endif /* SP_FORMAT_H */
