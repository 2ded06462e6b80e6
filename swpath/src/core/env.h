/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the NAT core asks of the platform it runs on: memory for its tables
 * and random numbers. The core includes no DPDK header (docs/swpath.md,
 * "Source tour"); swpath hands it DPDK's (dataplane/sp.c, sp_dpdk_env): the
 * tables land on the worker's NUMA node, on hugepages or on the heap of
 * transparent huge pages control/memory.h makes, and `--seed` makes the
 * random port choice of a run reproducible (rte_srand). Called at set-up and
 * on new flows, never per packet.
 */
#ifndef SP_ENV_H
#define SP_ENV_H

#include <stddef.h>
#include <stdint.h>

/* The core's tables are cache-line aligned (a session is one line). */
#define SP_CACHE_LINE 64
/* Any NUMA node (DPDK's SOCKET_ID_ANY). */
#define SP_SOCKET_ANY (-1)

struct sp_env {
	/* size bytes, zeroed, aligned to a cache line, on NUMA node socket
	 * (or SP_SOCKET_ANY); NULL when there is no such memory. name is
	 * for the platform's accounting. */
	void *(*zalloc)(const char *name, size_t size, int socket);
	void (*free)(void *p);
	uint64_t (*random)(void);               /* uniform over 64 bits */
	uint64_t (*random_below)(uint64_t n);   /* uniform in [0, n), n > 0 */
};

#endif /* SP_ENV_H */
