/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offload's learn mode (core/learn.h, dataplane/learn.h): the learn tag's
 * bytes on a translated frame as the switch reads them (an SNAT TCP packet,
 * a UDP DNAT request and reply, an ICMP echo), the packets that get none,
 * the headroom, and the idle timeout a tagged session gets (T + L) in the
 * NAT core's timer wheel, without and with learn mode.
 */
#include <stdlib.h>
#include <string.h>

#include "sp_test_util.h"
#include "sp_core_util.h"

#include <rte_ip.h>

#include "control/cmd.h"
#include "control/control.h"
#include "control/learn_quiet.h"
#include "control/publish.h"
#include "control/setup.h"
#include "core/adopt.h"
#include "core/learn.h"
#include "core/lifecycle.h"
#include "core/nat.h"
#include "core/rule.h"
#include "dataplane/dispatch.h"
#include "dataplane/learn.h"
#include "dataplane/packet.h"
#include "persist/session_store.h"
#include "qns.h"

#define HEADROOM 128
#define BUF_SIZE 2048
#define T0 1000u

struct frame {
	struct rte_mbuf m;
	uint8_t buf[BUF_SIZE] __rte_aligned(64);
};

/* -- frames ------------------------------------------------------------- */

/* An Ethernet + IPv4 + L4 frame with valid checksums at data_off room,
 * parsed into *p. ports: TCP/UDP source and destination; ICMP echo
 * request: the identifier in sport. */
static struct rte_mbuf *
frame(struct frame *f, uint16_t room, uint8_t proto, uint32_t src,
      uint16_t sport, uint32_t dst, uint16_t dport, uint8_t tcp_flags,
      struct sp_pkt *p)
{
	/* an odd headroom starts the buffer a byte in: the headers stay 2-byte
	 * aligned, as a PMD leaves them (UBSan checks member accesses) */
	uint8_t *base = f->buf + (room & 1);
	uint8_t *b = base + room;
	struct rte_ether_hdr *eth = (void *)b;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	uint8_t *l4 = (uint8_t *)(ip + 1);
	uint16_t l4_len = proto == IPPROTO_TCP ? 20 : 8;
	struct sp_flow_key key;

	memset(f, 0, sizeof(*f));
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = 0x45;
	ip->time_to_live = 64;
	ip->next_proto_id = proto;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + l4_len));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	if (proto == IPPROTO_TCP) {
		struct rte_tcp_hdr *tcp = (void *)l4;

		tcp->src_port = rte_cpu_to_be_16(sport);
		tcp->dst_port = rte_cpu_to_be_16(dport);
		tcp->data_off = 5 << 4;
		tcp->tcp_flags = tcp_flags;
		tcp->cksum = rte_ipv4_udptcp_cksum(ip, l4);
	} else if (proto == IPPROTO_UDP) {
		struct rte_udp_hdr *udp = (void *)l4;

		udp->src_port = rte_cpu_to_be_16(sport);
		udp->dst_port = rte_cpu_to_be_16(dport);
		udp->dgram_len = rte_cpu_to_be_16(l4_len);
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, l4);
	} else {
		struct rte_icmp_hdr *icmp = (void *)l4;

		icmp->icmp_type = SP_ICMP_ECHO_REQUEST;
		icmp->icmp_ident = rte_cpu_to_be_16(sport);
		icmp->icmp_seq_nb = RTE_BE16(7);
		icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(l4, l4_len);
	}
	f->m.buf_addr = base;
	f->m.buf_len = (uint16_t)(BUF_SIZE - (room & 1));
	f->m.data_off = room;
	f->m.data_len = f->m.pkt_len = (uint16_t)(14 + 20 + l4_len);
	f->m.nb_segs = 1;
	rte_mbuf_refcnt_set(&f->m, 1);
	assert_int_equal(sp_parse(&f->m, p, &key), SP_PKT_FLOW);
	return &f->m;
}

/* The runtime of an instance in learn mode: UDP and both TCP kinds tagged
 * (TCP transitory 120 s in class 3, established 300 s in class 4, UDP
 * shares class 3), ICMP only when icmp_class is a class. */
static struct sp_runtime *
learn_runtime(bool learn, uint8_t icmp_class)
{
	struct sp_runtime *r = calloc(1, sizeof(*r));

	r->timeout_ms[SP_TO_UDP] = 300000;
	r->timeout_ms[SP_TO_TCP_EST] = 7440000;
	r->timeout_ms[SP_TO_TCP_TRANS] = 240000;
	r->timeout_ms[SP_TO_ICMP] = 60000;
	r->after_packets = 1;
	r->learn = learn;
	memset(r->lease_class, SP_LEARN_NONE, sizeof(r->lease_class));
	r->longest_class = SP_LEARN_NONE;
	if (!learn)
		return r;
	r->lease_class[SP_TO_UDP] = 3;
	r->lease_class[SP_TO_TCP_TRANS] = 3;
	r->lease_class[SP_TO_TCP_EST] = 4;
	r->lease_class[SP_TO_ICMP] = icmp_class;
	r->class_ms[3] = 120000;
	r->class_ms[4] = 300000;
	if (icmp_class < SP_LEARN_CLASSES)
		r->class_ms[icmp_class] = 10000;
	r->longest_class = 4;
	return r;
}

/* What translate() does for a tagged packet (fastpath.c): the decision,
 * the capture before the rewrite, the rewrite, the tag; then what sp_tx()
 * does, the 802.1Q header of VID vid. */
static void
translate_tagged(const struct sp_runtime *r, struct sp_session *s,
		 struct rte_mbuf **m, struct sp_pkt *p, unsigned dir,
		 uint16_t vid)
{
	struct sp_learn_tag t;
	uint8_t cls = SP_LEARN_NONE;

	assert_int_equal(sp_learn_class(r, s, false, false, false, &cls),
			 SP_LEARN_TAG);
	sp_learn_capture(p, dir, cls, &t);
	if (dir == SP_DIR_IN2OUT)
		sp_rewrite_src(p, s->ext_addr, s->ext_port);
	else
		sp_rewrite_dst(p, s->int_addr, s->int_port);
	assert_int_equal(sp_learn_push(*m, p, &t), 0);
	sp_learn_record(r, s, t.lease);
	assert_ptr_equal(p->eth, rte_pktmbuf_mtod(*m, void *));
	(*m)->vlan_tci = vid;
	assert_int_equal(rte_vlan_insert(m), 0);
}

static uint32_t
be32_at(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	       (uint32_t)b[2] << 8 | b[3];
}

static uint16_t
be16_at(const uint8_t *b)
{
	return (uint16_t)(b[0] << 8 | b[1]);
}

/* The frame as the switch reads it: 802.1Q with vid and type 0x88B5, the
 * tag (orig tuple, lease class, flags, 0x0800), then IPv4 with valid
 * checksums, its header and L4 returned. */
static const uint8_t *
check_tagged(struct rte_mbuf *m, uint16_t vid, uint32_t src, uint32_t dst,
	     uint16_t sport, uint16_t dport, uint8_t lease, uint8_t flags)
{
	const uint8_t *b = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct rte_ipv4_hdr *ip = (const void *)(b + 18 + 16);
	const uint8_t *l4 = (const uint8_t *)(ip + 1);

	assert_int_equal(be16_at(b + 12), 0x8100);
	assert_int_equal(be16_at(b + 14) & 0xfff, vid);
	assert_int_equal(be16_at(b + 16), 0x88B5);
	assert_int_equal(be32_at(b + 18), src);
	assert_int_equal(be32_at(b + 22), dst);
	assert_int_equal(be16_at(b + 26), sport);
	assert_int_equal(be16_at(b + 28), dport);
	assert_int_equal(b[30], lease);
	assert_int_equal(b[31], flags);
	assert_int_equal(be16_at(b + 32), 0x0800);
	assert_int_equal(ip->version_ihl, 0x45);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	if (ip->next_proto_id == IPPROTO_ICMP)
		assert_int_equal(rte_raw_cksum(l4, 8), 0xffff);
	else
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(ip, l4), 0);
	assert_int_equal(rte_pktmbuf_data_len(m),
			 18 + 16 + rte_be_to_cpu_16(ip->total_length));
	return (const uint8_t *)ip;
}

/* -- the tag ------------------------------------------------------------- */

/* An SNAT session's SYN, 10.0.0.2:40000 -> 198.51.100.10:443 out as
 * 203.0.113.1:1024: the tag has the inside tuple, TCP transitory's class,
 * direction 0; the packet leaves with the translated source. */
static void
test_tag_snat_tcp(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session s = {
		.proto = IPPROTO_TCP, .origin = SP_ORIGIN_SNAT,
		.int_addr = RTE_BE32(0x0a000002), .int_port = RTE_BE16(40000),
		.ext_addr = RTE_BE32(0xcb007101), .ext_port = RTE_BE16(1024),
		.rem_addr = RTE_BE32(0xc633640a), .rem_port = RTE_BE16(443),
	};
	struct frame f;
	struct sp_pkt p;
	struct rte_mbuf *m = frame(&f, HEADROOM, IPPROTO_TCP, 0x0a000002,
				   40000, 0xc633640a, 443, RTE_TCP_SYN_FLAG, &p);
	const uint8_t *ip;

	(void)state;
	translate_tagged(r, &s, &m, &p, SP_DIR_IN2OUT, 2);
	ip = check_tagged(m, 2, 0x0a000002, 0xc633640a, 40000, 443, 3, 0);
	assert_int_equal(be32_at(ip + 12), 0xcb007101);
	assert_int_equal(be16_at(ip + 20), 1024);
	assert_int_equal(s.lease, 3 + 1);
	free(r);
}

/* A UDP DNAT session (203.0.113.11:53 -> server 10.0.0.5:53, client
 * 198.51.100.10:5000): its request is tagged direction 1 with the public
 * tuple, its reply direction 0 with the server's. */
static void
test_tag_udp_dnat(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session s = {
		.proto = IPPROTO_UDP, .origin = SP_ORIGIN_DNAT,
		.int_addr = RTE_BE32(0x0a000005), .int_port = RTE_BE16(53),
		.ext_addr = RTE_BE32(0xcb00710b), .ext_port = RTE_BE16(53),
		.rem_addr = RTE_BE32(0xc633640a), .rem_port = RTE_BE16(5000),
	};
	struct frame f;
	struct sp_pkt p;
	struct rte_mbuf *m = frame(&f, HEADROOM, IPPROTO_UDP, 0xc633640a, 5000,
				   0xcb00710b, 53, 0, &p);
	const uint8_t *ip;

	(void)state;
	translate_tagged(r, &s, &m, &p, SP_DIR_OUT2IN, 1);
	ip = check_tagged(m, 1, 0xc633640a, 0xcb00710b, 5000, 53, 3,
			  SP_LEARN_DIR_OUT2IN);
	assert_int_equal(be32_at(ip + 16), 0x0a000005);
	/* the reply */
	m = frame(&f, HEADROOM, IPPROTO_UDP, 0x0a000005, 53, 0xc633640a, 5000,
		  0, &p);
	translate_tagged(r, &s, &m, &p, SP_DIR_IN2OUT, 2);
	ip = check_tagged(m, 2, 0x0a000005, 0xc633640a, 53, 5000, 3, 0);
	assert_int_equal(be32_at(ip + 12), 0xcb00710b);
	free(r);
}

/* An ICMP echo request, identifier 0x1234 out as 0x0400: the identifier
 * before translation is both ports of the tag. */
static void
test_tag_icmp_echo(void **state)
{
	struct sp_runtime *r = learn_runtime(true, 0);
	struct sp_session s = {
		.proto = IPPROTO_ICMP, .origin = SP_ORIGIN_SNAT,
		.int_addr = RTE_BE32(0x0a000002), .int_port = RTE_BE16(0x1234),
		.ext_addr = RTE_BE32(0xcb007101), .ext_port = RTE_BE16(0x0400),
		.rem_addr = RTE_BE32(0x08080808), .rem_port = RTE_BE16(0x1234),
	};
	struct frame f;
	struct sp_pkt p;
	struct rte_mbuf *m = frame(&f, HEADROOM, IPPROTO_ICMP, 0x0a000002,
				   0x1234, 0x08080808, 0, 0, &p);
	const uint8_t *ip;

	(void)state;
	translate_tagged(r, &s, &m, &p, SP_DIR_IN2OUT, 2);
	ip = check_tagged(m, 2, 0x0a000002, 0x08080808, 0x1234, 0x1234, 0, 0);
	assert_int_equal(be16_at(ip + 20 + 4), 0x0400);
	free(r);
}

/* What must not be learned gets no tag: a hairpin, a fragment, a RST, a
 * peer's packet, a kind with no lease; nothing at all with learn mode off.
 * (ICMP errors never reach the decision: sp_slow_path.py checks them.) */
static void
test_not_learnable(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_runtime *off = learn_runtime(false, SP_LEARN_NONE);
	struct sp_session s = { .proto = IPPROTO_UDP };
	struct sp_session echo = { .proto = IPPROTO_ICMP };
	uint8_t cls = 99;

	(void)state;
	assert_int_equal(sp_learn_class(r, &s, false, false, false, &cls),
			 SP_LEARN_TAG);
	assert_int_equal(cls, 3);
	assert_int_equal(sp_learn_class(off, &s, false, false, false, &cls),
			 SP_LEARN_OFF);
	assert_int_equal(sp_learn_class(r, &s, true, false, false, &cls),
			 SP_LEARN_NOT_LEARNABLE);
	assert_int_equal(sp_learn_class(r, &s, false, true, false, &cls),
			 SP_LEARN_NOT_LEARNABLE);
	assert_int_equal(sp_learn_class(r, &s, false, false, true, &cls),
			 SP_LEARN_NOT_LEARNABLE);
	assert_int_equal(sp_learn_class(r, &echo, false, false, false, &cls),
			 SP_LEARN_NOT_LEARNABLE);
	s.flags = SP_SESS_HAIRPIN;
	assert_int_equal(sp_learn_class(r, &s, false, false, false, &cls),
			 SP_LEARN_NOT_LEARNABLE);
	free(r);
	free(off);
}

/* Without the headroom for the tag and the 802.1Q header the frame is left
 * as it was (it goes untagged, counted by the caller). */
static void
test_no_headroom(void **state)
{
	struct frame f;
	struct sp_pkt p;
	struct sp_learn_tag t;
	struct rte_mbuf *m = frame(&f, 19, IPPROTO_UDP, 0x0a000002, 5000,
				   0x08080808, 53, 0, &p);
	uint8_t before[64];

	(void)state;
	memcpy(before, rte_pktmbuf_mtod(m, void *), sizeof(before));
	sp_learn_capture(&p, SP_DIR_IN2OUT, 3, &t);
	assert_int_equal(sp_learn_push(m, &p, &t), -1);
	assert_int_equal(m->data_off, 19);
	assert_memory_equal(rte_pktmbuf_mtod(m, void *), before, sizeof(before));
	m = frame(&f, 20, IPPROTO_UDP, 0x0a000002, 5000, 0x08080808, 53, 0, &p);
	assert_int_equal(sp_learn_push(m, &p, &t), 0);
}

/* -- the timeout --------------------------------------------------------- */

static uint64_t counters[SP_CNT_MAX];
static struct sp_nat nat;
static struct sp_test_heard heard;

/* One pool 203.0.113.0/29, SNAT 10.0.0.0/24 to it; a NAT core reading rt. */
static int
setup_nat(void **state)
{
	struct sp_prefix pfx = { .addr = 0xcb007100, .len = 29 };
	struct qns_rule rule = {
		.id = 1, .prefix = 0x0a000000, .plen = 24, .kind = QNS_SNAT,
		.user = sp_act_snat(0),
	};

	(void)state;
	memset(&sp, 0, sizeof(sp));
	memset(counters, 0, sizeof(counters));
	memset(&heard, 0, sizeof(heard));
	sp.n_workers = 1;
	sp_rss_init(&sp.rss, sp_rss_default_key, 128, 1);
	sp.qns = qns_create(NULL);
	assert_int_equal(qns_add(sp.qns, &rule), 0);
	sp.pools[0] = sp_test_pool("public", &pfx, 1, 1024, 65535, &sp.rss, 1);
	assert_non_null(sp.pools[0]);
	sp.n_pools = 1;
	return sp_test_nat_init(&nat, 0, 1, 64, counters, T0, &heard);
}

static int
teardown_nat(void **state)
{
	(void)state;
	sp_nat_free(&nat);
	sp_pool_free(sp.pools[0]);
	qns_free(sp.qns);
	memset(&sp, 0, sizeof(sp));
	return 0;
}

static struct sp_session *
open_udp(const struct sp_runtime *r, uint32_t src, uint32_t now)
{
	struct sp_flow_key k = {
		.proto = IPPROTO_UDP, .src = rte_cpu_to_be_32(src),
		.dst = RTE_BE32(0x08080808), .sport = RTE_BE16(5000),
		.dport = RTE_BE16(53),
	};
	uint32_t sidx;
	unsigned owner;

	assert_int_equal(sp_nat_outbound(&nat, r, &k, 0, now, 1, &sidx, &owner),
			 SP_NAT_OK);
	return &nat.sessions[sidx];
}

/* Without learn mode a UDP session ends at its timeout T (300 s); in learn
 * mode, once tagged with a 120 s lease, not before T + L, and then. An
 * untagged one in learn mode (never sent to the switch with a tag) keeps T. */
static void
test_timeout_with_lease(void **state)
{
	struct sp_runtime *off = learn_runtime(false, SP_LEARN_NONE);
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session *a, *b;

	(void)state;
	a = open_udp(off, 0x0a000002, T0);
	assert_int_equal(sp_session_timeout_ms(off, a), 300000);
	assert_int_equal(sp_nat_age(&nat, off, T0 + 299000, 1000), 0);
	assert_int_equal(sp_nat_age(&nat, off, T0 + 301000, 1000), 1);

	a = open_udp(r, 0x0a000002, T0 + 400000);
	b = open_udp(r, 0x0a000003, T0 + 400000);
	sp_learn_record(r, a, 3);
	assert_int_equal(sp_session_timeout_ms(r, a), 300000 + 120000);
	assert_int_equal(sp_session_timeout_ms(r, b), 300000);
	assert_int_equal(sp_nat_age(&nat, r, T0 + 701000, 1000), 1);
	assert_int_equal(b->proto, 0);
	assert_int_equal(a->proto, IPPROTO_UDP);
	assert_int_equal(sp_nat_age(&nat, r, T0 + 819000, 1000), 0);
	assert_int_equal(sp_nat_age(&nat, r, T0 + 821000, 1000), 1);
	assert_int_equal(nat.n_sessions, 0);
	free(off);
	free(r);
}

/* A session keeps the longest lease it was tagged with; a successor takes
 * every learnable session over with the longest lease of all; learn mode
 * announces nothing on the stream (the switch learns, no one installs). */
static void
test_lease_kept_adopted_and_not_announced(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_runtime *off = learn_runtime(false, SP_LEARN_NONE);
	struct sp_session *a = open_udp(r, 0x0a000002, T0);
	struct sp_session hp = { .proto = IPPROTO_UDP, .flags = SP_SESS_HAIRPIN };

	(void)state;
	sp_learn_record(r, a, 4);
	sp_learn_record(r, a, 3);
	assert_int_equal(a->lease, 4 + 1);
	assert_int_equal(sp_session_timeout_ms(r, a), 300000 + 300000);
	assert_int_equal(sp_learn_lease_adopted(r, a), 4 + 1);
	assert_int_equal(sp_learn_lease_adopted(r, &hp), 0);
	assert_int_equal(sp_learn_lease_adopted(off, a), 0);
	assert_int_equal(sp_test_heard_count(&heard, SP_SESSION_OPENED), 1);
	assert_int_equal(sp_test_heard_count(&heard, SP_SESSION_ANNOUNCED), 0);
	sp_nat_count_packet(&nat, r, a, T0);
	r->after_packets = 2;
	sp_nat_count_packet(&nat, r, a, T0);
	sp_nat_count_packet(&nat, r, a, T0);
	assert_int_equal(sp_test_heard_count(&heard, SP_SESSION_ANNOUNCED), 0);
	/* the same session without learn mode is announced at its open */
	open_udp(off, 0x0a000003, T0);
	assert_int_equal(sp_test_heard_count(&heard, SP_SESSION_ANNOUNCED), 1);
	free(r);
	free(off);
}

/* The pool of setup_nat replaced by one of a single port (203.0.113.1:1024):
 * a port held under a lease is then the only one there is. */
static void
one_port_pool(void)
{
	struct sp_prefix pfx = { .addr = 0xcb007101, .len = 32 };

	sp_pool_free(sp.pools[0]);
	sp.pools[0] = sp_test_pool("public", &pfx, 1, 1024, 1024, &sp.rss, 1);
	assert_non_null(sp.pools[0]);
}

/* Opens a UDP flow from src, or returns the counter index it was refused
 * with (SP_NAT_OK: opened). */
static int
try_udp(const struct sp_runtime *r, uint32_t src, uint32_t now)
{
	struct sp_flow_key k = {
		.proto = IPPROTO_UDP, .src = rte_cpu_to_be_32(src),
		.dst = RTE_BE32(0x08080808), .sport = RTE_BE16(5000),
		.dport = RTE_BE16(53),
	};
	uint32_t sidx;
	unsigned owner;

	return sp_nat_outbound(&nat, r, &k, 0, now, 1, &sidx, &owner);
}

/* Learn mode: an operator's delete of a session the switch learned (tagged
 * with a 120 s lease at T0 + 1000) closes it at once, but its port stays
 * held until last tag + L: not handed out even as the only port of the
 * pool (the new flow fails, counted), handed out after. */
static void
test_deleted_leased_port_held(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session_filter all = { 0 };
	struct sp_session *a;
	uint16_t port;

	(void)state;
	one_port_pool();
	r->reuse_ms = 1000;
	a = open_udp(r, 0x0a000002, T0);
	a->last_seen = T0 + 1000;
	sp_learn_record(r, a, 3);
	port = a->ext_port;
	assert_int_equal(sp_nat_delete(&nat, r, &all, T0 + 2000), 1);
	assert_int_equal(nat.n_sessions, 0);
	assert_int_equal(nat.n_mappings, 0);
	assert_int_equal(counters[SP_CNT_sessions_deleted], 1);
	/* the observer heard the hold, for the state file */
	assert_int_equal(heard.n_held, 1);
	assert_int_equal(heard.held[0].ext_port, port);
	assert_int_equal(heard.held[0].proto, IPPROTO_UDP);
	assert_int_equal(heard.held[0].end, T0 + 1000 + 120000);
	/* long past the reuse time, one ms before the lease ends */
	assert_int_equal(try_udp(r, 0x0a000003, T0 + 1000 + 120000 - 1),
			 SP_CNT_drop_pool_exhausted);
	assert_int_equal(try_udp(r, 0x0a000002, T0 + 60000),
			 SP_CNT_drop_pool_exhausted);
	/* the lease over: the port rests reuse_ms, then is handed out */
	assert_int_equal(try_udp(r, 0x0a000003,
				 T0 + 1000 + 120000 + 1000), SP_NAT_OK);
	assert_int_equal(nat.n_sessions, 1);
	assert_int_equal(nat.sessions[0].ext_port, port);
	free(r);
}

/* The same without learn mode (or a session never tagged): the deleted
 * session's port is handed out as today, to the next flow once rested, and
 * as the longest-rested when it is the only one. */
static void
test_deleted_port_without_lease(void **state)
{
	struct sp_runtime *off = learn_runtime(false, SP_LEARN_NONE);
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session_filter all = { 0 };

	(void)state;
	one_port_pool();
	off->reuse_ms = r->reuse_ms = 60000;
	open_udp(off, 0x0a000002, T0);
	assert_int_equal(sp_nat_delete(&nat, off, &all, T0 + 1000), 1);
	assert_int_equal(try_udp(off, 0x0a000003, T0 + 2000), SP_NAT_OK);
	/* learn mode, the session never tagged: no lease, no hold */
	assert_int_equal(sp_nat_delete(&nat, r, &all, T0 + 3000), 1);
	assert_int_equal(try_udp(r, 0x0a000004, T0 + 4000), SP_NAT_OK);
	assert_int_equal(nat.n_sessions, 1);
	free(off);
	free(r);
}

/* A successor's hold of UDP (addr, port) until end, read at T0. */
static enum sp_adopt
adopt_udp_hold(uint32_t addr, uint16_t port, uint32_t end)
{
	return sp_nat_adopt_hold(&nat, IPPROTO_UDP, addr, port, end, T0);
}

/* A successor's side: a hold read from the state file (sp_nat_adopt_hold)
 * keeps a free port from every flow until its end, even as the pool's only
 * port; one over already holds nothing; a port of no pool is said so. */
static void
test_adopted_hold_on_a_free_port(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);

	(void)state;
	one_port_pool();
	r->reuse_ms = 1000;
	assert_int_equal(adopt_udp_hold(0xcb007101, 1024, T0 + 50000),
			 SP_ADOPT_OK);
	assert_int_equal(try_udp(r, 0x0a000002, T0 + 50000 - 1),
			 SP_CNT_drop_pool_exhausted);
	/* a port the pool does not have, an address it does not have */
	assert_int_equal(adopt_udp_hold(0xcb007101, 1025, T0 + 50000),
			 SP_ADOPT_PORT);
	assert_int_equal(adopt_udp_hold(0xcb007102, 1024, T0 + 50000),
			 SP_ADOPT_PORT);
	assert_int_equal(try_udp(r, 0x0a000002, T0 + 50000), SP_NAT_OK);
	assert_int_equal(nat.sessions[0].ext_port, htobe16(1024));
	free(r);
}

/* A hold of a port an adopted session's mapping keeps goes on the mapping:
 * when its last session ends (here, deleted with no lease of its own) the
 * port is held until the adopted hold's end, not released to rest. An
 * earlier hold never shortens a later one. */
static void
test_adopted_hold_on_a_mapping(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_session_filter all = { 0 };

	(void)state;
	one_port_pool();
	r->reuse_ms = 1000;
	open_udp(r, 0x0a000002, T0);
	assert_int_equal(adopt_udp_hold(0xcb007101, 1024, T0 + 60000),
			 SP_ADOPT_OK);
	assert_int_equal(adopt_udp_hold(0xcb007101, 1024, T0 + 30000),
			 SP_ADOPT_OK);
	assert_int_equal(sp_nat_delete(&nat, r, &all, T0 + 1000), 1);
	assert_int_equal(nat.n_mappings, 0);
	assert_int_equal(heard.n_held, 0);      /* never tagged: no hold */
	assert_int_equal(try_udp(r, 0x0a000003, T0 + 60000 - 1),
			 SP_CNT_drop_pool_exhausted);
	assert_int_equal(try_udp(r, 0x0a000003, T0 + 60000), SP_NAT_OK);
	free(r);
}

/* The state file's side of holds (persist/session_store.c): a worker
 * writes each into the next record whose hold is over, round the records;
 * with none left it marks its holds lost (the successor keeps the quiet
 * period) and writes no more, not even once a record frees up. */
static void
test_store_hold_records(void **state)
{
	static struct sp_worker w;
	uint64_t buf[(sizeof(struct sp_store_holds) +
		      2 * sizeof(struct sp_store_hold)) / 8] = { 0 };
	struct sp_store_holds *h = (struct sp_store_holds *)buf;
	struct sp_store_hold s = { .ext_addr = 0xcb007101, .ext_port = 1024,
				   .proto = IPPROTO_UDP };

	(void)state;
	w.store_holds = h;
	h->n = 2;
	s.end = T0 + 100;
	sp_store_hold(&w, &s, T0);
	s.end = T0 + 1000;
	sp_store_hold(&w, &s, T0);
	assert_int_equal(h->rec[0].end, T0 + 100);
	assert_int_equal(h->rec[0].ext_addr, 0xcb007101);
	assert_int_equal(h->rec[0].ext_port, 1024);
	assert_int_equal(h->rec[0].proto, IPPROTO_UDP);
	assert_int_equal(h->rec[0].seq, 2);     /* even: written whole */
	assert_int_equal(h->rec[1].end, T0 + 1000);
	/* the first is over: its record takes the next */
	s.end = T0 + 2000;
	sp_store_hold(&w, &s, T0 + 100);
	assert_int_equal(h->rec[0].end, T0 + 2000);
	assert_int_equal(h->rec[0].seq, 4);
	assert_int_equal(h->lost, 0);
	/* both live: lost, and no more writes */
	s.end = T0 + 3000;
	sp_store_hold(&w, &s, T0 + 200);
	assert_int_equal(h->lost, 1);
	s.end = T0 + 4000;
	sp_store_hold(&w, &s, T0 + 2500);
	assert_int_equal(h->rec[0].end, T0 + 2000);
	assert_int_equal(h->rec[1].end, T0 + 1000);
	w.store_holds = NULL;
}

/* Learn mode's quiet period: while the runtime says so no port is handed
 * out, a new flow is refused and counted learn_quiet_refused; a further
 * session of an existing mapping needs no port and opens; once it is over
 * the flow opens. */
static void
test_quiet_period_refuses_new_ports(void **state)
{
	struct sp_runtime *r = learn_runtime(true, SP_LEARN_NONE);
	struct sp_flow_key k = {
		.proto = IPPROTO_UDP, .src = RTE_BE32(0x0a000002),
		.dst = RTE_BE32(0x01010101), .sport = RTE_BE16(5000),
		.dport = RTE_BE16(53),
	};
	uint32_t sidx;
	unsigned owner;

	(void)state;
	open_udp(r, 0x0a000002, T0);
	r->learn_quiet = true;
	assert_int_equal(try_udp(r, 0x0a000003, T0 + 1),
			 SP_CNT_learn_quiet_refused);
	assert_int_equal(nat.n_mappings, 1);
	/* the mapping of 10.0.0.2:5000 exists: another remote needs no port */
	assert_int_equal(sp_nat_outbound(&nat, r, &k, 0, T0 + 2, 1, &sidx,
					 &owner), SP_NAT_OK);
	r->learn_quiet = false;
	assert_int_equal(try_udp(r, 0x0a000003, T0 + 3), SP_NAT_OK);
	assert_int_equal(nat.n_mappings, 2);
	free(r);
}

/* When it is on: learn mode with a lease, started without every session of
 * a predecessor, for the longest lease; never when every session was taken
 * over from --state, nor without learn mode. The runtime snapshot follows. */
static void
test_quiet_period_when(void **state)
{
	struct sp_runtime *r;

	(void)state;
	memset(&sp, 0, sizeof(sp));
	sp_setup_defaults();
	sp.n_workers = 1;
	assert_false(sp_learn_quiet_begin(T0));
	sp.learn = true;
	sp.class_s[1] = 30;
	sp.class_s[5] = 120;
	assert_true(sp_learn_quiet_begin(T0));
	r = sp_runtime_build();
	assert_true(r->learn_quiet);
	free(r);
	assert_false(sp_learn_quiet_over(T0 + 120000 - 1));
	assert_true(sp_learn_quiet_over(T0 + 120000));
	assert_false(sp_learn_quiet_over(T0 + 120001));
	r = sp_runtime_build();
	assert_false(r->learn_quiet);
	free(r);
	/* `offload fresh` (the switch's learner tables are new) ends it at once */
	assert_true(sp_learn_quiet_begin(T0));
	assert_true(sp_learn_quiet_end());
	assert_false(sp_learn_quiet_end());
	assert_false(sp_learn_quiet_over(T0 + 120000));
	r = sp_runtime_build();
	assert_false(r->learn_quiet);
	free(r);
	/* every session of the state file taken over: no quiet period */
	sp.state_whole = true;
	assert_false(sp_learn_quiet_begin(T0));
	r = sp_runtime_build();
	assert_false(r->learn_quiet);
	free(r);
	memset(&sp, 0, sizeof(sp));
}

/* Applies one start-up line; 0, or -1 with the message in err. */
static int
apply_line(const char *line, char *err, size_t errlen)
{
	struct sp_buf out = { 0 };
	struct sp_cmd cmd;
	int rc;

	if (sp_cmd_parse(line, &cmd, err, errlen) < 0)
		return -1;
	rc = sp_apply(&cmd, &out, err, errlen);
	sp_buf_free(&out);
	return rc;
}

/* The start-up lines as the runtime snapshot gets them: learn mode, each
 * kind's class, each class's lease, the longest; a class given two
 * different leases is refused (the switch has one timeout per class). */
static void
test_lease_commands(void **state)
{
	struct sp_runtime *r;
	struct sp_cmd cmd;
	char err[256];

	(void)state;
	memset(&sp, 0, sizeof(sp));
	sp_setup_defaults();
	sp.n_workers = 1;
	r = sp_runtime_build();
	assert_false(r->learn);
	assert_int_equal(r->lease_class[SP_TO_UDP], SP_LEARN_NONE);
	assert_int_equal(r->longest_class, SP_LEARN_NONE);
	free(r);
	assert_int_equal(apply_line("offload learn on", err, sizeof(err)), 0);
	assert_int_equal(apply_line("offload lease udp class 1 seconds 30", err,
				    sizeof(err)), 0);
	assert_int_equal(apply_line("offload lease tcp_transitory class 1 seconds 30",
				    err, sizeof(err)), 0);
	assert_int_equal(apply_line("offload lease tcp_established class 5 seconds 43200",
				    err, sizeof(err)), 0);
	assert_int_equal(apply_line("offload lease icmp class 1 seconds 10", err,
				    sizeof(err)), -1);
	assert_string_equal(err, "offload lease: class 1 is 30 seconds already, not 10");
	/* `offload fresh` is a run-time command, without arguments */
	assert_int_equal(sp_cmd_parse("offload fresh", &cmd, err, sizeof(err)), 0);
	assert_int_equal(cmd.verb, SP_CMD_OFFLOAD_FRESH);
	assert_int_equal(sp_cmd_parse("offload fresh now", &cmd, err, sizeof(err)), -1);
	r = sp_runtime_build();
	assert_true(r->learn);
	assert_int_equal(r->lease_class[SP_TO_UDP], 1);
	assert_int_equal(r->lease_class[SP_TO_TCP_TRANS], 1);
	assert_int_equal(r->lease_class[SP_TO_TCP_EST], 5);
	assert_int_equal(r->lease_class[SP_TO_ICMP], SP_LEARN_NONE);
	assert_int_equal(r->class_ms[1], 30000);
	assert_int_equal(r->class_ms[5], 43200000);
	assert_int_equal(r->longest_class, 5);
	free(r);
	memset(&sp, 0, sizeof(sp));
}

static int
setup(void **state)
{
	(void)state;
	return sp_test_eal_init("test_sp_learn") < 0 ? -1 : 0;
}

#define N(fn) cmocka_unit_test_setup_teardown(fn, setup_nat, teardown_nat)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tag_snat_tcp),
		cmocka_unit_test(test_tag_udp_dnat),
		cmocka_unit_test(test_tag_icmp_echo),
		cmocka_unit_test(test_not_learnable),
		cmocka_unit_test(test_no_headroom),
		cmocka_unit_test(test_lease_commands),
		N(test_timeout_with_lease),
		N(test_lease_kept_adopted_and_not_announced),
		N(test_deleted_leased_port_held),
		N(test_deleted_port_without_lease),
		N(test_adopted_hold_on_a_free_port),
		N(test_adopted_hold_on_a_mapping),
		cmocka_unit_test(test_store_hold_records),
		N(test_quiet_period_refuses_new_ports),
		cmocka_unit_test(test_quiet_period_when),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
