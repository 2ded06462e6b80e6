/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pipeline threads: each runs one pipeline (its own queue of every
 * port) on an EAL worker lcore, as DPDK's pipeline example does, with two
 * additions. It flushes its output ports when a round brought in less than
 * a burst, so a lone packet is not held in a half-full TX burst; and, with
 * idle_sleep_us, it sleeps that long after such a round, so a lightly
 * loaded switch does not hold a whole core (swpath's --idle-sleep-us, the
 * same rule: under full load it never sleeps).
 */
#ifndef SWX_RUNNER_H
#define SWX_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

struct rte_swx_pipeline;

struct swx_runner {
	struct rte_swx_pipeline *p;
	unsigned lcore;
	uint32_t idle_sleep_us;
	uint32_t n_ports_in;
	bool stop;	/* atomic: set by the control thread */
	bool running;	/* atomic: read by commits (tables.h: swx_tables_watch) */
};

/* Starts r on its lcore. 0, or -1. */
int swx_runner_start(struct swx_runner *r);
/* Stops r and waits for its lcore. */
void swx_runner_stop(struct swx_runner *r);

#endif /* SWX_RUNNER_H */
