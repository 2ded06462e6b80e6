/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NAT events to collectors, beside the line log: RFC 5424 syslog and IPFIX
 * (RFC 7011, RFC 8158 elements) over UDP, to `logging ... syslog_server A:P
 * ipfix_collector A:P`. The same bytes as the controller's
 * (controller/quicknat/event_export.py and ipfix.py, where the formats are
 * described; docs/ipfix.md); APP-NAME quicknat-swpath, the observation
 * domain and natInstanceID the logging command names. IPFIX records wait
 * for a full message or the flush interval. Control thread only.
 */
#ifndef SP_EVENT_EXPORT_H
#define SP_EVENT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "persist/events.h"

/* "a.b.c.d:port" or "" (off) for each; refuses a malformed address.
 * domain: the IPFIX observation domain, instance: natInstanceID, sessions:
 * session records too (with a collector). */
int sp_export_configure(const char *syslog_server, const char *ipfix_collector,
			uint32_t domain, uint32_t instance, bool sessions,
			char *err, size_t errlen);
bool sp_export_enabled(void);
/* Whether the workers must tell sessions opened and closed. */
bool sp_export_sessions(void);

/* One event at wall-clock time_ms; text is its line-log text (no time). */
void sp_export_event(const struct sp_event *ev, uint64_t time_ms,
		     const char *text);

/* Sends the IPFIX records gathered: with force, now; else once the oldest
 * has waited the flush interval (each control round asks). */
void sp_export_flush(bool force);

void sp_export_close(void);

/* Datagrams that could not be sent (the collector's socket is never waited
 * for). */
uint64_t sp_export_failed(void);

#endif /* SP_EVENT_EXPORT_H */
