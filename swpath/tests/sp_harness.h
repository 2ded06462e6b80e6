/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An in-process quicknat-swpath without its worker loop, for the fuzzer and
 * the benchmark: the same start-up as main.c (commands, core tables, routes,
 * mempool, workers, ports) from a command text, on net_null ports, so that
 * a caller can push its own mbufs through sp_process_burst() on one thread.
 */
#ifndef SP_HARNESS_H
#define SP_HARNESS_H

#include <stddef.h>

#include "dataplane/sp.h"

/*
 * Starts the EAL (no shared config, one lcore per worker plus the main one,
 * all on the calling CPU set; mem_mb MB of ordinary pages with --no-huge, or,
 * when mem_mb is NULL, hugepages as a deployment runs, which must be
 * reserved), then the application from commands (lines of the swpath
 * command language). Returns 0, or -1 with a message on stderr.
 */
int sp_harness_init(const char *prog, const char *commands,
		    unsigned n_workers, uint32_t sessions, const char *mem_mb);

/* Stops ports and frees everything, then the EAL and its runtime dir. */
void sp_harness_fini(void);

/* Frees what the control thread would have consumed (messages, ARP). */
void sp_harness_control(void);

#endif /* SP_HARNESS_H */
