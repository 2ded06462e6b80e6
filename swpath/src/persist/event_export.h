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

#include "core/observer.h"              /* struct sp_event */

/* What `logging` says of the collectors (control.c fills it from the
 * command; the fields are the command's, swpath/spec/commands.toml). */
struct sp_export_config {
	const char *syslog_server;      /* "a.b.c.d:port" or "" (off) */
	const char *ipfix_collector;    /* "a.b.c.d:port" or "" (off) */
	/* The SD-ID's enterprise number, `nat@N` (RFC 5424 sec. 6.3.2, 7.2.2):
	 * the operator's own IANA number; RFC 5612's example, 32473, when the
	 * operator has none. */
	uint32_t syslog_enterprise;
	uint32_t ipfix_domain;          /* observation domain (RFC 7011 sec. 3.1) */
	uint32_t nat_instance;          /* natInstanceID (RFC 8158 sec. 4.1.1) */
	bool ipfix_sessions;            /* session records too (with a collector) */
};

/* Refuses a malformed collector address, keeping the exporter as it was. */
int sp_export_configure(const struct sp_export_config *c, char *err,
			size_t errlen);
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
