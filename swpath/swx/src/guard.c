/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>
#include <rte_swx_pipeline.h>

#include <rte_swx_pipeline_internal.h>

#include "guard.h"
#include "util/count.h"

#define ETHER_HDR 14
#define VLAN_TAG 4
#define IPV4_MIN_HDR 20
#define ARP_ETH_IPV4 28
/* Zero-filled up to this many bytes from the frame's start: more than the
 * program's longest header stack before its lengths are checked. */
#define GUARD_FILL 128

struct guard {
	rte_swx_port_in_pkt_rx_t rx;	/* the port's own */
	void *obj;
	struct swx_guard_stats stats;
	uint64_t *drops;		/* the program's count of them, or NULL */
};

/* Whether the frame holds what its Ethernet, 802.1Q and IPv4 or ARP
 * headers say it does. */
static int
frame_whole(const uint8_t *f, uint32_t len)
{
	uint32_t l2 = ETHER_HDR;
	uint16_t type;

	if (len < ETHER_HDR)
		return 0;
	type = (uint16_t)(f[12] << 8 | f[13]);
	if (type == 0x8100) {
		if (len < ETHER_HDR + VLAN_TAG)
			return 0;
		l2 += VLAN_TAG;
		type = (uint16_t)(f[16] << 8 | f[17]);
	}
	if (type == 0x0806)
		return len >= l2 + ARP_ETH_IPV4;
	if (type != 0x0800)
		return 1;
	if (len < l2 + IPV4_MIN_HDR)
		return 0;
	/* total length (bytes 2..3 of the IPv4 header) within the frame;
	 * below the header itself is the program's to refuse */
	return (uint32_t)(f[l2 + 2] << 8 | f[l2 + 3]) <= len - l2;
}

static int
guard_rx(void *port, struct rte_swx_pkt *pkt)
{
	struct guard *g = port;

	while (g->rx(g->obj, pkt)) {
		uint8_t *f = &pkt->pkt[pkt->offset];
		struct rte_mbuf *m = pkt->handle;

		if (frame_whole(f, pkt->length)) {
			if (pkt->length < GUARD_FILL) {
				uint32_t room = rte_pktmbuf_tailroom(m);
				uint32_t fill = GUARD_FILL - pkt->length;

				memset(f + pkt->length, 0, fill < room ? fill : room);
			}
			SP_COUNT_ADD(g->stats.packets, 1);
			return 1;
		}
		SP_COUNT_ADD(g->stats.truncated, 1);
		if (g->drops != NULL)	/* a register array this thread writes */
			SP_COUNT_ADD(*g->drops, 1);
		rte_pktmbuf_free(m);
	}
	return 0;
}

int
swx_guard_install(struct rte_swx_pipeline *p)
{
	for (uint32_t i = 1; i < p->n_ports_in; i++) {
		struct guard *g = calloc(1, sizeof(*g));

		if (g == NULL)
			return -1;
		g->rx = p->in[i].pkt_rx;
		g->obj = p->in[i].obj;
		p->in[i].pkt_rx = guard_rx;
		p->in[i].obj = g;
	}
	return 0;
}

int
swx_guard_count_into(struct rte_swx_pipeline *p, uint32_t regarray_id, uint32_t index)
{
	struct rte_swx_ctl_pipeline_info info;
	struct regarray_runtime *r;

	if (rte_swx_ctl_pipeline_info_get(p, &info) != 0 || regarray_id >= info.n_regarrays)
		return -1;
	r = &p->regarray_runtime[regarray_id];
	if (index > r->size_mask)
		return -1;
	for (uint32_t i = 1; i < p->n_ports_in; i++)
		if (p->in[i].pkt_rx == guard_rx)
			((struct guard *)p->in[i].obj)->drops = &r->regarray[index];
	return 0;
}

void
swx_guard_stats(struct rte_swx_pipeline *p, uint32_t port, struct swx_guard_stats *out)
{
	const struct swx_guard_stats *s;

	memset(out, 0, sizeof(*out));
	if (port < 1 || port >= p->n_ports_in || p->in[port].pkt_rx != guard_rx)
		return;
	/* the pipeline thread counts them as it goes (util/count.h) */
	s = &((const struct guard *)p->in[port].obj)->stats;
	out->packets = __atomic_load_n(&s->packets, __ATOMIC_RELAXED);
	out->truncated = __atomic_load_n(&s->truncated, __ATOMIC_RELAXED);
}

void
swx_guard_free(struct rte_swx_pipeline *p)
{
	for (uint32_t i = 1; i < p->n_ports_in; i++) {
		struct guard *g = p->in[i].obj;

		if (p->in[i].pkt_rx != guard_rx)
			continue;
		p->in[i].pkt_rx = g->rx;
		p->in[i].obj = g->obj;
		free(g);
	}
}
