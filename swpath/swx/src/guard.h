/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a hardware parser knows and DPDK's SWX pipeline does not: how long
 * the frame is. SWX's extract takes a header's bytes whether or not the
 * frame holds them (rte_swx_pipeline_internal.h: no length check), and PNA
 * gives the program no packet length, so a P4 program on SWX cannot tell a
 * truncated datagram from a whole one. The guard sits between each ethdev
 * input port and the pipeline (it wraps the port's rx) and does what every
 * IPv4 input does (Linux: ip_rcv, InTruncatedPkts): an IPv4 frame shorter
 * than the total length its header gives, or too short for that header, is
 * dropped and counted (truncated); so is an ARP frame shorter than an
 * Ethernet/IPv4 ARP. And a frame shorter than the 64 bytes the parser may
 * read is zero-filled past its end in the buffer (not on the wire), so a
 * read past it finds zeros, never an earlier packet's bytes.
 */
#ifndef SWX_GUARD_H
#define SWX_GUARD_H

#include <stdint.h>

struct rte_swx_pipeline;

struct swx_guard_stats {
	uint64_t packets;	/* let through */
	uint64_t truncated;	/* dropped */
};

/* Wraps input ports 1.. (0 is the CPU port, the controller's packets) of p.
 * 0, or -1 (out of memory). */
int swx_guard_install(struct rte_swx_pipeline *p);
/* Counts each frame the guards drop in element index of register array
 * regarray_id too (where the program counts its parser's drops, so that
 * one counter holds every frame too short for its headers, as on a target
 * whose parser sees the frame's length). The guards run on the pipeline's
 * own thread, so the increment races no other writer. 0, or -1 for an
 * array or index the pipeline does not have. */
int swx_guard_count_into(struct rte_swx_pipeline *p, uint32_t regarray_id, uint32_t index);
/* Port port's counts (zero for a port without a guard). */
void swx_guard_stats(struct rte_swx_pipeline *p, uint32_t port, struct swx_guard_stats *out);
/* Frees the guards; before rte_swx_pipeline_free. */
void swx_guard_free(struct rte_swx_pipeline *p);

#endif /* SWX_GUARD_H */
