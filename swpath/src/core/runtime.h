/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The run-time settings: every setting a worker reads that can change while
 * it runs, in one immutable snapshot. The control thread builds a new one
 * for each change (control/publish.c, sp_runtime_publish), publishes it
 * with one atomic store and retires the old one under RCU; a worker loads
 * the pointer once per loop and hands it down, so no setting is read from
 * anywhere else on the packet path.
 */
#ifndef SP_RUNTIME_H
#define SP_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "core/types.h"

/* Addresses the NAT owns: proxy ARP on outside links, hairpinning. */
struct sp_range {
	uint32_t lo;
	uint32_t hi;
};

struct sp_runtime {
	uint32_t timeout_ms[SP_TO_MAX];
	uint8_t filtering[SP_PI_MAX];
	uint32_t ports_per_host;
	uint32_t sessions_per_host;
	uint32_t reuse_ms;
	/* ICMP errors (dataplane/icmp_gen.h): this worker's share of the rate */
	uint32_t icmp_rate;             /* errors per second per worker */
	uint32_t icmp_burst;            /* per worker */
	uint8_t icmp_on_exhaustion;
	/* Offload mode (`offload after_packets N`, 1..255): a session is
	 * announced on the session stream at its N-th translated packet
	 * (core/nat.h, sp_nat_count_packet), so a flow of fewer packets never
	 * costs the switch a write. */
	uint8_t after_packets;
	/* Offload's learn mode (`offload learn on`, core/learn.h): the
	 * switch learns sessions from the tag on their translated packets.
	 * lease_class: the switch's timeout class each timeout kind is tagged
	 * with (SP_LEARN_NONE: that kind is never tagged); class_ms: each
	 * class's lease, what a session tagged with it adds to its idle
	 * timeout; longest_class: the class of the longest lease (a session
	 * taken over from a predecessor gets it), or SP_LEARN_NONE. */
	bool learn;
	uint8_t lease_class[SP_TO_MAX];
	uint8_t longest_class;
	uint32_t class_ms[SP_LEARN_CLASSES];
	/* learn mode's quiet period (control/learn_quiet.h): no port is
	 * handed out, new flows that need one are refused */
	bool learn_quiet;
	uint32_t n_owned;
	struct sp_range owned[];        /* sorted, disjoint */
};

/* Whether a host-order address is NAT-owned (binary search). Every packet
 * from a link asks it of its source (IN-IP-5): one that is outside the span
 * of every owned range, as nearly all are, is answered by two compares. */
static inline bool
sp_rt_owned(const struct sp_runtime *rt, uint32_t addr)
{
	uint32_t lo = 0, hi = rt->n_owned;

	if (hi == 0 || addr < rt->owned[0].lo || addr > rt->owned[hi - 1].hi)
		return false;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (addr < rt->owned[mid].lo)
			hi = mid;
		else if (addr > rt->owned[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

#endif /* SP_RUNTIME_H */
