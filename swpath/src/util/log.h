/* SPDX-License-Identifier: Apache-2.0 */
/*
 * swpath's own messages and DPDK's, as text ("quicknat-swpath: ...") or, with
 * --log-format json, as one JSON object per line with the controller's keys:
 * {"time": "...Z", "level": "...", "process": "quicknat-swpath",
 *  "message": "..."} (DPDK's lines with level "dpdk").
 */
#ifndef SP_LOG_H
#define SP_LOG_H

#include <stdbool.h>
#include <stdio.h>

void sp_log_set_json(bool json);

/* One message at level "error", "warning" or "info", on stderr. */
void sp_log(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The stream DPDK logs to after start-up (rte_openlog_stream). */
FILE *sp_log_dpdk_stream(void);

#endif /* SP_LOG_H */
