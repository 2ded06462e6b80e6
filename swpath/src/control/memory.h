/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the packet buffers and the workers' session tables live.
 *
 * With hugepages, DPDK's heap on each worker's NUMA socket, as usual.
 *
 * Without them (--no-huge, the default on a fresh machine) DPDK's heap is a
 * memfd of 4 KiB pages. What a lookup reads at random (the session tables:
 * a worker sized for 64k sessions spreads them over ~3,300 such pages) and
 * what every packet touches (mbufs: a header and data line each, a page
 * apart) then cost a TLB miss each, far more than the TLB holds: 64k
 * established sessions ran at 13-15 Mpps, 21 on hugepages (docs/benchmarks.md).
 * So the buffers and tables come instead from a DPDK heap of our own, made
 * from anonymous memory with madvise(MADV_HUGEPAGE): transparent huge pages,
 * which Debian's default THP setting ("madvise") grants (VPP backs its heap
 * the same way). DPDK's external-memory API (rte_malloc_heap_create,
 * rte_malloc_heap_memory_add) makes it an ordinary heap: rte_malloc,
 * mempools and rings take its socket id. Where THP is off the pages are small,
 * as before. The memory is not pinned and has no IOVA: good for the virtual
 * devices (af_packet, pcap, ring, null, tap), while a real NIC's DMA needs
 * hugepages (docs/swpath.md), which then skip all this.
 *
 * The heap is sized for the mbufs and the configured sessions; pages are
 * faulted in as the tables are built (start-up), not on the packet path.
 */
#ifndef SP_MEMORY_H
#define SP_MEMORY_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes the heap when the EAL runs without hugepages (nothing otherwise),
 * for mbuf_bytes of packet buffers and the sessions of every worker.
 * Returns 0, or -1 with a message when the machine lacks the memory.
 */
int sp_memory_init(size_t mbuf_bytes, unsigned n_workers,
		   uint32_t sessions_per_worker, char *err, size_t errlen);

/* The socket id to allocate a worker's data on (numa: its NUMA socket). */
int sp_memory_socket(int numa);

/* Gives the heap back (after everything on it is freed). */
void sp_memory_fini(void);

#endif /* SP_MEMORY_H */
