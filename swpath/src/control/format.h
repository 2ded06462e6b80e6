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

#include "core/session.h"                /* struct sp_session_filter */
#include "util/buf.h"

/* JSON list of session objects (the controller's status socket schema). */
void sp_format_sessions_json(struct sp_buf *b,
			     const struct sp_session_filter *f, uint32_t limit);
/* JSON object {"sessions": N, "counters": {...}, "lcores": [...]}. */
void sp_format_stats_json(struct sp_buf *b);
/* One `rule add ...` line per rule, by id. */
void sp_format_rules(struct sp_buf *b);

#endif /* SP_FORMAT_H */
