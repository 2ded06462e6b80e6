/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start-up after the EAL: shared tables, the dispatch mode, the mbuf pool,
 * the workers and their queues, the ports; and the reverse at exit. Each
 * step returns 0 or -1 with one line in err.
 */
#ifndef SP_SETUP_H
#define SP_SETUP_H

#include <stddef.h>

/*
 * Before any command: no port mapped to an interface, and the configuration
 * defaults of docs/nat-behavior.md sec. 9 (timeouts, address-dependent filtering)
 * and of [icmp], as the Python config model has them.
 */
void sp_setup_defaults(void);
/* QNS, RCU, neighbour table, message ring, mbuf dynfield. */
int sp_setup_core(char *err, size_t errlen);
/* RSS in the NIC or in software (needs the interfaces); sp.rss. */
int sp_setup_dispatch(char *err, size_t errlen);
/* The packet buffers, and without hugepages the heap they and the session
 * tables come from (memory.h). */
int sp_setup_mempool(char *err, size_t errlen);
int sp_setup_workers(char *err, size_t errlen);
int sp_setup_ports(char *err, size_t errlen);
/* Stops and closes the interfaces' DPDK ports, started or not: what a
 * start-up failure releases before rte_eal_cleanup() (a PMD frees its
 * pcap dumpers and sockets only on close: without it, ASan reports them). */
void sp_ports_close(void);
void sp_teardown(void);

#endif /* SP_SETUP_H */
