/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packet parsing and rewriting (swpath/src/packet.h, icmp_error.h):
 * incremental checksum updates against a full recomputation on random
 * packets, the drop rules for malformed packets, and ICMP error
 * translation.
 */
#include <string.h>

#include "sp_test_util.h"

#include <rte_ip.h>

#include "dataplane/icmp_error.h"
#include "dataplane/icmp_gen.h"
#include "dataplane/open_hist.h"
#include "dataplane/packet.h"

#define BUF_SIZE 2048

struct frame {
	struct rte_mbuf m;
	uint8_t buf[BUF_SIZE] __rte_aligned(64);
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* A random port other than 0, which the parser refuses (IN-L4-1). */
static rte_be16_t
rand_port(void)
{
	rte_be16_t port;

	do
		port = (rte_be16_t)sp_test_rand(&rng);
	while (port == 0);
	return port;
}

static struct rte_mbuf *
frame_mbuf(struct frame *f, uint16_t len)
{
	memset(&f->m, 0, sizeof(f->m));
	f->m.buf_addr = f->buf;
	f->m.data_off = 0;
	f->m.data_len = len;
	f->m.pkt_len = len;
	f->m.nb_segs = 1;
	return &f->m;
}

/* Ethernet + IPv4 (+ options of ihl_extra words) + L4 with checksums. */
static uint16_t
build(uint8_t *buf, uint8_t proto, unsigned ihl_extra, unsigned payload,
      bool udp_zero)
{
	struct rte_ether_hdr *eth = (void *)buf;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	unsigned ihl = 20 + 4 * ihl_extra;
	uint8_t *l4 = (uint8_t *)ip + ihl;
	unsigned l4_len;

	memset(buf, 0, BUF_SIZE);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = (uint8_t)(0x40 | (ihl / 4));
	ip->time_to_live = (uint8_t)(2 + sp_test_rand(&rng) % 250);
	ip->next_proto_id = proto;
	ip->src_addr = (rte_be32_t)sp_test_rand(&rng);
	ip->dst_addr = (rte_be32_t)sp_test_rand(&rng);
	ip->packet_id = (rte_be16_t)sp_test_rand(&rng);
	memset(ip + 1, 1, ihl - 20); /* NOP options */
	switch (proto) {
	case IPPROTO_TCP: {
		struct rte_tcp_hdr *tcp = (void *)l4;

		l4_len = sizeof(*tcp) + payload;
		tcp->src_port = rand_port();
		tcp->dst_port = rand_port();
		tcp->data_off = 5 << 4;
		tcp->tcp_flags = RTE_TCP_ACK_FLAG;
		break;
	}
	case IPPROTO_UDP: {
		struct rte_udp_hdr *udp = (void *)l4;

		l4_len = sizeof(*udp) + payload;
		udp->src_port = rand_port();
		udp->dst_port = rand_port();
		udp->dgram_len = rte_cpu_to_be_16((uint16_t)l4_len);
		break;
	}
	default: {
		struct rte_icmp_hdr *icmp = (void *)l4;

		l4_len = sizeof(*icmp) + payload;
		icmp->icmp_type = SP_ICMP_ECHO_REQUEST;
		icmp->icmp_ident = (rte_be16_t)sp_test_rand(&rng);
		icmp->icmp_seq_nb = (rte_be16_t)sp_test_rand(&rng);
		break;
	}
	}
	for (unsigned i = l4_len - payload; i < l4_len; i++)
		l4[i] = (uint8_t)sp_test_rand(&rng);
	ip->total_length = rte_cpu_to_be_16((uint16_t)(ihl + l4_len));
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	if (proto == IPPROTO_TCP)
		((struct rte_tcp_hdr *)l4)->cksum = rte_ipv4_udptcp_cksum(ip, l4);
	else if (proto == IPPROTO_UDP)
		((struct rte_udp_hdr *)l4)->dgram_cksum =
			udp_zero ? 0 : rte_ipv4_udptcp_cksum(ip, l4);
	else
		((struct rte_icmp_hdr *)l4)->icmp_cksum =
			(uint16_t)~rte_raw_cksum(l4, l4_len);
	return (uint16_t)(sizeof(*eth) + ihl + l4_len);
}

static void
assert_checksums(const struct sp_pkt *p, bool udp_zero)
{
	assert_int_equal(rte_raw_cksum(p->ip, (size_t)(p->l4 - (uint8_t *)p->ip)),
			 0xffff);
	switch (p->proto) {
	case IPPROTO_TCP:
		assert_int_equal(rte_ipv4_udptcp_cksum_verify(p->ip, p->l4), 0);
		break;
	case IPPROTO_UDP:
		if (udp_zero)
			assert_int_equal(((struct rte_udp_hdr *)p->l4)->dgram_cksum, 0);
		else
			assert_int_equal(rte_ipv4_udptcp_cksum_verify(p->ip, p->l4), 0);
		break;
	default:
		assert_int_equal(rte_raw_cksum(p->l4, p->l4_len), 0xffff);
	}
}

static void
test_rfc1624_example(void **state)
{
	(void)state;
	/* RFC 1624 sec. 4: HC 0xDD2F, m 0x5555 -> m' 0x3285 gives 0x0000 */
	assert_int_equal(sp_cksum_adjust16(0xdd2f, 0x5555, 0x3285), 0x0000);
	assert_int_equal(sp_cksum_adjust16(0x1234, 0xabcd, 0xabcd), 0x1234);
}

static void
test_incremental_vs_full(void **state)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP };
	struct frame f;

	(void)state;
	for (unsigned i = 0; i < 20000; i++) {
		uint8_t proto = protos[i % 3];
		bool udp_zero = proto == IPPROTO_UDP && (i / 3) % 4 == 0;
		uint16_t len = build(f.buf, proto, (unsigned)(sp_test_rand(&rng) % 4),
				     (unsigned)(sp_test_rand(&rng) % 300), udp_zero);
		struct rte_mbuf *m = frame_mbuf(&f, len);
		struct sp_flow_key key;
		struct sp_pkt p = { 0 };
		uint8_t ttl;
		rte_be32_t addr = (rte_be32_t)sp_test_rand(&rng);
		rte_be16_t port = rand_port();

		assert_int_equal(sp_parse(m, &p, &key), SP_PKT_FLOW);
		assert_checksums(&p, udp_zero);
		ttl = p.ip->time_to_live;
		sp_ttl_decrement(p.ip);
		assert_int_equal(p.ip->time_to_live, ttl - 1);
		if (i & 1) {
			sp_rewrite_src(&p, addr, port);
			assert_int_equal(p.ip->src_addr, addr);
		} else {
			sp_rewrite_dst(&p, addr, port);
			assert_int_equal(p.ip->dst_addr, addr);
		}
		assert_checksums(&p, udp_zero);
		/* and the parser sees the new tuple */
		assert_int_equal(sp_parse(m, &p, &key), SP_PKT_FLOW);
		if (i & 1)
			assert_int_equal(key.sport, port);
		else
			assert_int_equal(key.dport, port);
	}
}

static void
test_udp_checksum_never_becomes_zero(void **state)
{
	struct frame f;
	unsigned zeros = 0;

	(void)state;
	/* search rewrites whose result would be 0x0000: sent as 0xffff */
	for (unsigned i = 0; i < 200000 && zeros < 3; i++) {
		uint16_t len = build(f.buf, IPPROTO_UDP, 0, 8, false);
		struct sp_flow_key key;
		struct sp_pkt p = { 0 };
		struct rte_udp_hdr *udp;

		assert_int_equal(sp_parse(frame_mbuf(&f, len), &p, &key), SP_PKT_FLOW);
		udp = (void *)p.l4;
		/* a new port that brings the one's complement sum to 0xffff,
		 * i.e. a computed checksum of 0, which UDP must send as 0xffff */
		{
			uint32_t sum = (uint16_t)~udp->dgram_cksum;

			sum += (uint16_t)~udp->src_port;
			sum = sp_cksum_fold(sum);
			sp_rewrite_src(&p, p.ip->src_addr,
				       (rte_be16_t)(0xffff - sum));
		}
		if (udp->dgram_cksum == 0xffff)
			zeros++;
		assert_int_not_equal(udp->dgram_cksum, 0);
		assert_checksums(&p, false);
	}
	assert_true(zeros > 0);
}

static int
parse_frame(struct frame *f, uint16_t len)
{
	struct sp_flow_key key;
	struct sp_pkt p = { 0 };

	return sp_parse(frame_mbuf(f, len), &p, &key);
}

static void
fix_ip_cksum(struct frame *f)
{
	struct rte_ipv4_hdr *ip = (void *)(f->buf + sizeof(struct rte_ether_hdr));

	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
}

static void
test_parse_drops(void **state)
{
	struct frame f;
	struct rte_ipv4_hdr *ip = (void *)(f.buf + sizeof(struct rte_ether_hdr));
	uint16_t len;

	(void)state;
	len = build(f.buf, IPPROTO_UDP, 0, 10, false);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	assert_int_equal(parse_frame(&f, 10), -SP_CNT_drop_truncated);
	assert_int_equal(parse_frame(&f, 30), -SP_CNT_drop_truncated);
	/* IP total length beyond the frame */
	assert_int_equal(parse_frame(&f, len - 1), -SP_CNT_drop_truncated);
	/* Ethernet padding after the IP packet is fine */
	assert_int_equal(parse_frame(&f, len + 6), SP_PKT_FLOW);
	/* IPv6 ethertype */
	((struct rte_ether_hdr *)f.buf)->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV6);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_not_ipv4);
	((struct rte_ether_hdr *)f.buf)->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
	assert_int_equal(parse_frame(&f, len), SP_PKT_ARP);
	((struct rte_ether_hdr *)f.buf)->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	/* bad version, bad header length */
	ip->version_ihl = 0x65;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	ip->version_ihl = 0x44;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	ip->version_ihl = 0x45;
	/* bad header checksum */
	ip->hdr_checksum ^= 0x0101;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_bad_checksum);
	fix_ip_cksum(&f);
	/* fragments: the first (MF) is a flow packet, whose UDP length may
	 * cover more than it holds; a later one (offset) has no L4 header */
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_MF_FLAG);
	((struct rte_udp_hdr *)(ip + 1))->dgram_len = RTE_BE16(1000);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	((struct rte_udp_hdr *)(ip + 1))->dgram_len = RTE_BE16(18);
	ip->fragment_offset = RTE_BE16(100);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FRAGMENT);
	/* RFC 1858: a TCP fragment at offset 8 bytes would rewrite the flags */
	ip->next_proto_id = IPPROTO_TCP;
	ip->fragment_offset = RTE_BE16(1);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_frag_overlap);
	ip->fragment_offset = RTE_BE16(2);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FRAGMENT);
	/* a later fragment of a protocol NAT cannot map */
	ip->next_proto_id = 47;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_OTHER);
	ip->next_proto_id = IPPROTO_UDP;
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_DF_FLAG);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	/* UDP length larger than the IP payload */
	((struct rte_udp_hdr *)(ip + 1))->dgram_len = RTE_BE16(1000);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	/* L4 headers cut short by the IP total length */
	len = build(f.buf, IPPROTO_TCP, 0, 0, false);
	ip->total_length = RTE_BE16(20 + 19);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_truncated);
	len = build(f.buf, IPPROTO_ICMP, 0, 0, false);
	ip->total_length = RTE_BE16(20 + 7);
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_truncated);
	/* other protocols are classified, not flows */
	len = build(f.buf, 47, 0, 16, false);
	assert_int_equal(parse_frame(&f, len), SP_PKT_OTHER);
	/* multi-segment packets */
	len = build(f.buf, IPPROTO_UDP, 0, 10, false);
	frame_mbuf(&f, len)->nb_segs = 2;
	{
		struct sp_flow_key key;
		struct sp_pkt p = { 0 };

		assert_int_equal(sp_parse(&f.m, &p, &key), -SP_CNT_drop_multiseg);
	}
}

/* IN-TCP-1, IN-TCP-2, IN-L4-1: data offset, flag combinations, port 0. */
/* Sets the IP total length (L4 bytes after a 20-byte header) and the
 * fragment field, and fixes the header checksum. */
static void
set_fragment(struct frame *f, unsigned l4_len, uint16_t frag)
{
	struct rte_ipv4_hdr *ip = (void *)(f->buf + sizeof(struct rte_ether_hdr));

	ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + l4_len));
	ip->fragment_offset = rte_cpu_to_be_16(frag);
	fix_ip_cksum(f);
}

/* IN-IP-9 (RFC 1858 sec. 3, RFC 3128): a first fragment too short for its
 * whole transport header, and a fragment past 65,535 bytes, are dropped
 * under drop_frag_overlap; the same lengths unfragmented are truncated. */
static void
test_parse_fragment_limits(void **state)
{
	static const struct {
		uint8_t proto;
		unsigned header;
	} l4[] = {{IPPROTO_TCP, 20}, {IPPROTO_UDP, 8}, {IPPROTO_ICMP, 8}};
	struct frame f;
	uint16_t len;

	(void)state;
	for (unsigned i = 0; i < RTE_DIM(l4); i++) {
		len = build(f.buf, l4[i].proto, 0, 40, false);
		set_fragment(&f, l4[i].header + 40, RTE_IPV4_HDR_MF_FLAG);
		assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
		for (unsigned cut = 0; cut < l4[i].header; cut += 4) {
			set_fragment(&f, cut, RTE_IPV4_HDR_MF_FLAG);
			assert_int_equal(parse_frame(&f, len),
					 -SP_CNT_drop_frag_overlap);
			set_fragment(&f, cut, 0);
			assert_int_equal(parse_frame(&f, len),
					 -SP_CNT_drop_truncated);
		}
		/* with its 20-byte header, a datagram of 65,535 bytes, then
		 * one byte more (65,504 + 12 + 20), and the ping of death */
		set_fragment(&f, 11, 8188);
		assert_int_equal(parse_frame(&f, len), SP_PKT_FRAGMENT);
		set_fragment(&f, 12, 8188);
		assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_frag_overlap);
		set_fragment(&f, 8, 8191);
		assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_frag_overlap);
		set_fragment(&f, 40, 8190 | RTE_IPV4_HDR_MF_FLAG);
		assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_frag_overlap);
	}
	/* TCP: options that do not fit the first fragment cut the header too */
	len = build(f.buf, IPPROTO_TCP, 0, 40, false);
	f.buf[sizeof(struct rte_ether_hdr) + 20 + 12] = 15 << 4; /* 60 bytes */
	set_fragment(&f, 48, RTE_IPV4_HDR_MF_FLAG);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_frag_overlap);
	set_fragment(&f, 48, 0);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
}

static void
test_parse_tcp_udp_fields(void **state)
{
	/* after ECE, CWR and PSH are masked: what a TCP peer sends */
	static const uint8_t valid[] = { 0x02, 0x22, 0x12, 0x04, 0x14,
					 0x11, 0x31, 0x10, 0x30 };
	struct frame f;
	struct rte_ipv4_hdr *ip = (void *)(f.buf + sizeof(struct rte_ether_hdr));
	struct rte_tcp_hdr *tcp = (void *)(ip + 1);
	struct rte_udp_hdr *udp = (void *)(ip + 1);
	unsigned n_valid = 0;
	uint16_t len;

	(void)state;
	len = build(f.buf, IPPROTO_TCP, 0, 12, false);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	/* data offset below 5 words, or past the 32-byte segment */
	for (unsigned doff = 0; doff < 16; doff++) {
		tcp->data_off = (uint8_t)(doff << 4);
		assert_int_equal(parse_frame(&f, len),
				 doff >= 5 && doff <= 8 ? SP_PKT_FLOW :
							  -SP_CNT_drop_malformed);
	}
	tcp->data_off = 5 << 4;
	/* every one of the 256 flag bytes: valid ones pass with any of
	 * PSH, ECE and CWR, and exactly those */
	for (unsigned flags = 0; flags < 256; flags++) {
		bool ok = false;

		for (unsigned i = 0; i < RTE_DIM(valid); i++)
			ok |= (flags & 0x37u) == valid[i];
		n_valid += ok;
		tcp->tcp_flags = (uint8_t)flags;
		assert_int_equal(parse_frame(&f, len),
				 ok ? SP_PKT_FLOW : -SP_CNT_drop_bad_tcp_flags);
	}
	assert_int_equal(n_valid, RTE_DIM(valid) * 8);
	tcp->tcp_flags = 0x03; /* SYN+FIN */
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_bad_tcp_flags);
	tcp->tcp_flags = RTE_TCP_SYN_FLAG;
	tcp->src_port = 0;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_port_zero);
	tcp->src_port = RTE_BE16(1);
	tcp->dst_port = 0;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_port_zero);
	len = build(f.buf, IPPROTO_UDP, 0, 4, false);
	udp->dst_port = 0;
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_port_zero);
	udp->dst_port = RTE_BE16(53);
	/* UDP length below its own header */
	for (uint16_t l = 0; l < 8; l++) {
		udp->dgram_len = rte_cpu_to_be_16(l);
		assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	}
	udp->dgram_len = RTE_BE16(12);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
}

static void
test_parse_options(void **state)
{
	struct frame f;
	struct rte_ipv4_hdr *ip = (void *)(f.buf + sizeof(struct rte_ether_hdr));
	uint8_t *opt = (uint8_t *)(ip + 1);
	struct sp_flow_key key;
	struct sp_pkt p = { 0 };
	uint16_t len;

	(void)state;
	/* NOP options are carried: the ports come from after them */
	len = build(f.buf, IPPROTO_UDP, 2, 10, false);
	assert_int_equal(sp_parse(frame_mbuf(&f, len), &p, &key), SP_PKT_FLOW);
	assert_ptr_equal(p.l4, opt + 8);
	assert_int_equal(key.sport, ((struct rte_udp_hdr *)(opt + 8))->src_port);
	/* record route (7) is allowed */
	opt[0] = 7; opt[1] = 7; opt[2] = 4;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	/* loose and strict source route are dropped */
	opt[0] = 131;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_ip_options);
	opt[0] = 137;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_ip_options);
	/* an option running past the header, or of length < 2 */
	opt[0] = 7; opt[1] = 9;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	opt[1] = 1;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), -SP_CNT_drop_malformed);
	/* end of list stops the scan */
	opt[0] = 0; opt[1] = 1;
	fix_ip_cksum(&f);
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
}

static void
test_parse_icmp(void **state)
{
	struct frame f;
	struct rte_ipv4_hdr *ip = (void *)(f.buf + sizeof(struct rte_ether_hdr));
	struct rte_icmp_hdr *icmp = (void *)(ip + 1);
	struct sp_flow_key key;
	struct sp_pkt p = { 0 };
	uint16_t len = build(f.buf, IPPROTO_ICMP, 0, 20, false);

	(void)state;
	assert_int_equal(sp_parse(frame_mbuf(&f, len), &p, &key), SP_PKT_FLOW);
	assert_int_equal(key.sport, icmp->icmp_ident);
	assert_int_equal(key.dport, icmp->icmp_ident);
	assert_int_equal(key.proto, IPPROTO_ICMP);
	icmp->icmp_type = SP_ICMP_ECHO_REPLY;
	assert_int_equal(parse_frame(&f, len), SP_PKT_FLOW);
	for (uint8_t t = 0; t < 20; t++) {
		int expect = (t == 0 || t == 8) ? SP_PKT_FLOW :
			     (t == 3 || t == 4 || t == 11 || t == 12) ?
			     SP_PKT_ICMP_ERROR : SP_PKT_OTHER;

		icmp->icmp_type = t;
		assert_int_equal(parse_frame(&f, len), expect);
	}
}

/*
 * An ICMP error quoting a whole translated UDP datagram: after translating
 * the quote back, the inner IP and UDP checksums and the outer ICMP
 * checksum are all valid.
 */
/* The key of the replies to the packet an error quotes (q): q reversed, an
 * echo's identifier as both ports; none if the error does not go back to
 * q's source. */
static void
check_quoted_key(struct sp_pkt *p, const uint8_t *quoted, uint8_t proto)
{
	const struct rte_ipv4_hdr *q = (const void *)quoted;
	const uint8_t *q4 = quoted + sizeof(*q);
	struct sp_icmp_inner in = { 0 };
	struct sp_flow_key key = { 0 };
	rte_be16_t q_sport, q_dport;

	memcpy(&q_sport, proto == IPPROTO_ICMP ? q4 + 4 : q4, 2);
	memcpy(&q_dport, proto == IPPROTO_ICMP ? q4 + 4 : q4 + 2, 2);
	assert_int_equal(sp_icmp_quoted_key(p, &in, &key), 0);
	assert_int_equal(key.proto, proto);
	assert_int_equal(key.src, q->dst_addr);
	assert_int_equal(key.dst, q->src_addr);
	assert_int_equal(key.sport, q_dport);
	assert_int_equal(key.dport, q_sport);
	p->ip->dst_addr ^= RTE_BE32(1);
	assert_int_equal(sp_icmp_quoted_key(p, &in, &key),
			 -SP_CNT_drop_icmp_error);
	p->ip->dst_addr ^= RTE_BE32(1);
}

static void
test_icmp_error_rewrite(void **state)
{
	struct frame f, inner;
	(void)state;

	for (unsigned i = 0; i < 2000; i++) {
		uint8_t proto = i % 3 == 0 ? IPPROTO_UDP :
				i % 3 == 1 ? IPPROTO_TCP : IPPROTO_ICMP;
		uint16_t ilen = build(inner.buf, proto, 0,
				      (unsigned)(sp_test_rand(&rng) % 40), false);
		uint16_t quoted = (uint16_t)(ilen - sizeof(struct rte_ether_hdr));
		uint16_t len;
		struct rte_ipv4_hdr *ip;
		struct rte_icmp_hdr *icmp;
		struct sp_flow_key key;
		struct sp_icmp_inner in = { 0 };
		struct sp_pkt p = { 0 };
		rte_be32_t addr = (rte_be32_t)sp_test_rand(&rng);
		rte_be16_t port = (rte_be16_t)sp_test_rand(&rng);

		/* quote all, or (for TCP sometimes) only 8 bytes of L4 */
		if (proto == IPPROTO_TCP && (i & 4))
			quoted = 20 + 8;
		memset(f.buf, 0, sizeof(f.buf));
		((struct rte_ether_hdr *)f.buf)->ether_type =
			RTE_BE16(RTE_ETHER_TYPE_IPV4);
		ip = (void *)(f.buf + sizeof(struct rte_ether_hdr));
		ip->version_ihl = 0x45;
		ip->time_to_live = 64;
		ip->next_proto_id = IPPROTO_ICMP;
		ip->src_addr = (rte_be32_t)sp_test_rand(&rng);
		ip->dst_addr = ((struct rte_ipv4_hdr *)(inner.buf + 14))->src_addr;
		icmp = (void *)(ip + 1);
		icmp->icmp_type = SP_ICMP_DEST_UNREACH;
		icmp->icmp_code = 3;
		memcpy(icmp + 1, inner.buf + sizeof(struct rte_ether_hdr), quoted);
		ip->total_length = rte_cpu_to_be_16((uint16_t)(20 + 8 + quoted));
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		icmp->icmp_cksum = (uint16_t)~rte_raw_cksum(icmp, 8 + quoted);
		len = (uint16_t)(14 + 20 + 8 + quoted);

		assert_int_equal(sp_parse(frame_mbuf(&f, len), &p, &key),
				 SP_PKT_ICMP_ERROR);
		check_quoted_key(&p, inner.buf + sizeof(struct rte_ether_hdr),
				 proto);
		assert_int_equal(sp_icmp_inner(&p, &in), 0);
		sp_inner_rewrite(&in, 1, addr, sp_inner_sport(&in),
				 port);
		p.ip->hdr_checksum = sp_cksum_adjust32(p.ip->hdr_checksum,
						       p.ip->dst_addr, addr);
		p.ip->dst_addr = addr;
		sp_ttl_decrement(p.ip);
		sp_icmp_recompute(&p);
		assert_int_equal(rte_raw_cksum(p.ip, 20), 0xffff);
		assert_int_equal(rte_raw_cksum(p.l4, p.l4_len), 0xffff);
		assert_int_equal(rte_raw_cksum(in.ip, 20), 0xffff);
		assert_int_equal(in.ip->src_addr, addr);
		assert_int_equal(*sp_inner_sport(&in), port);
		if (quoted == ilen - 14) {
			/* the whole inner packet: its L4 checksum must hold */
			if (proto == IPPROTO_ICMP)
				assert_int_equal(rte_raw_cksum(in.l4, quoted - 20),
						 0xffff);
			else
				assert_int_equal(rte_ipv4_udptcp_cksum_verify(in.ip,
									      in.l4),
						 0);
		}
	}
}

static void
test_icmp_error_truncated(void **state)
{
	struct frame f;
	struct sp_flow_key key;
	struct sp_icmp_inner in = { 0 };
	struct sp_pkt p = { 0 };
	uint16_t len = build(f.buf, IPPROTO_ICMP, 0, 20, false);
	struct rte_ipv4_hdr *ip = (void *)(f.buf + 14);
	struct rte_icmp_hdr *icmp = (void *)(ip + 1);
	struct rte_ipv4_hdr *q = (void *)(icmp + 1);

	(void)state;
	icmp->icmp_type = SP_ICMP_TIME_EXCEEDED;
	/* 20 bytes quoted: a header but no ports */
	memset(q, 0, 20);
	q->version_ihl = 0x45;
	q->next_proto_id = IPPROTO_UDP;
	assert_int_equal(sp_parse(frame_mbuf(&f, len), &p, &key), SP_PKT_ICMP_ERROR);
	assert_int_equal(sp_icmp_inner(&p, &in), -SP_CNT_drop_truncated);
	q->version_ihl = 0x55;
	assert_int_equal(sp_icmp_inner(&p, &in), -SP_CNT_drop_malformed);
	q->version_ihl = 0x45;
	q->next_proto_id = 47;
	p.l4_len = 8 + 28;
	assert_int_equal(sp_icmp_inner(&p, &in), -SP_CNT_drop_unsupported);
}

/* A UDP frame of `payload` bytes in f, 128 bytes into the buffer (headroom). */
static struct rte_mbuf *
headroom_frame(struct frame *f, unsigned payload, uint8_t **orig)
{
	static uint8_t tmp[BUF_SIZE];
	uint16_t len = build(tmp, IPPROTO_UDP, 0, payload, false);
	struct rte_ether_hdr *eth = (void *)tmp;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	struct rte_mbuf *m;

	eth->src_addr.addr_bytes[5] = 0x10;
	eth->dst_addr.addr_bytes[5] = 0x01;
	ip->src_addr = RTE_BE32(0x0a00000a); /* 10.0.0.10 */
	ip->dst_addr = RTE_BE32(0xc633640a); /* 198.51.100.10, not multicast */
	ip->hdr_checksum = 0;
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	m = frame_mbuf(f, len);
	m->data_off = 128;
	memcpy(f->buf + 128, tmp, len);
	*orig = tmp;
	return m;
}

/* icmp_gen.c: the error's bytes, its checksums and the quote (RFC 792, 1191,
 * 1812 sec. 4.3.2.3: at most 576 bytes). */
static void
test_icmp_gen_build(void **state)
{
	static struct frame f;
	uint8_t *orig;
	struct rte_mbuf *m = headroom_frame(&f, 1400, &orig);
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_icmp_hdr *icmp;

	(void)state;
	assert_true(sp_icmp_error_allowed(m));
	assert_int_equal(sp_icmp_error_build(m, RTE_BE32(0x0a000001), 3, 4,
					     1400, 7), 0);
	assert_int_equal(rte_pktmbuf_data_len(m), 14 + 576);
	eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	assert_int_equal(eth->dst_addr.addr_bytes[5], 0x10);
	assert_int_equal(eth->src_addr.addr_bytes[5], 0x01);
	assert_int_equal(eth->ether_type, RTE_BE16(RTE_ETHER_TYPE_IPV4));
	ip = (void *)(eth + 1);
	assert_int_equal(rte_raw_cksum(ip, 20), 0xffff);
	assert_int_equal(ip->version_ihl, 0x45);
	assert_int_equal(ip->type_of_service, 0xc0);
	assert_int_equal(rte_be_to_cpu_16(ip->total_length), 576);
	assert_int_equal(rte_be_to_cpu_16(ip->packet_id), 7);
	assert_int_equal(ip->fragment_offset, 0);
	assert_int_equal(ip->time_to_live, 64);
	assert_int_equal(ip->next_proto_id, IPPROTO_ICMP);
	assert_int_equal(ip->src_addr, RTE_BE32(0x0a000001));
	assert_int_equal(ip->dst_addr, RTE_BE32(0x0a00000a));
	icmp = (void *)(ip + 1);
	assert_int_equal(rte_raw_cksum(icmp, 556), 0xffff);
	assert_int_equal(icmp->icmp_type, 3);
	assert_int_equal(icmp->icmp_code, 4);
	assert_int_equal(icmp->icmp_ident, 0);
	assert_int_equal(rte_be_to_cpu_16(icmp->icmp_seq_nb), 1400);
	/* the packet as it arrived, cut to 548 bytes */
	assert_memory_equal(icmp + 1, orig + 14, 548);

	/* a small one is quoted whole, and frame padding is not */
	m = headroom_frame(&f, 4, &orig);
	m->data_len = (uint16_t)(m->data_len + 10);
	m->pkt_len = m->data_len;
	assert_int_equal(sp_icmp_error_build(m, RTE_BE32(0x0a000001), 11, 0,
					     0, 8), 0);
	assert_int_equal(rte_pktmbuf_data_len(m), 14 + 28 + 20 + 8 + 4);
	icmp = rte_pktmbuf_mtod_offset(m, struct rte_icmp_hdr *, 34);
	assert_int_equal(rte_raw_cksum(icmp, 8 + 32), 0xffff);
	assert_int_equal(icmp->icmp_seq_nb, 0);
	assert_memory_equal(icmp + 1, orig + 14, 32);

	/* no headroom for the headers: refused, untouched (an even offset, as
	 * a PMD's: Ethernet headers are 2-byte aligned) */
	m = headroom_frame(&f, 4, &orig);
	m->data_off = 26;
	memcpy(f.buf + 26, orig, m->data_len);
	assert_int_equal(sp_icmp_error_build(m, RTE_BE32(0x0a000001), 11, 0,
					     0, 8), -1);
	assert_memory_equal(f.buf + 26, orig, m->data_len);
}

/* RFC 1812 sec. 4.3.2.7: the packets no error may answer. */
static void
test_icmp_gen_exclusions(void **state)
{
	static struct frame f;
	uint8_t *orig;
	struct rte_mbuf *m;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	uint8_t *l4;

	(void)state;
#define FRESH() \
	do { \
		m = headroom_frame(&f, 20, &orig); \
		eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *); \
		ip = (void *)(eth + 1); \
		l4 = (uint8_t *)(ip + 1); \
	} while (0)
	FRESH();
	assert_true(sp_icmp_error_allowed(m));
	eth->dst_addr.addr_bytes[0] = 0x01; /* multicast */
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	memset(&eth->dst_addr, 0xff, 6);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->dst_addr = RTE_BE32(0xe00000fb); /* 224.0.0.251 */
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->dst_addr = RTE_BE32(0xffffffff);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->src_addr = 0;
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->src_addr = RTE_BE32(0x7f000001);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->src_addr = RTE_BE32(0xe0010203);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->src_addr = RTE_BE32(0xfa010203);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->fragment_offset = RTE_BE16(3);
	assert_false(sp_icmp_error_allowed(m));
	FRESH();
	ip->fragment_offset = RTE_BE16(RTE_IPV4_HDR_MF_FLAG); /* first */
	assert_true(sp_icmp_error_allowed(m));
	FRESH();
	ip->next_proto_id = IPPROTO_ICMP;
	for (unsigned type = 0; type < 20; type++) {
		l4[0] = (uint8_t)type;
		assert_int_equal(sp_icmp_error_allowed(m),
				 !(type == 3 || type == 4 || type == 5 ||
				   type == 11 || type == 12));
	}
#undef FRESH
}

/* open_hist.h: a bound is inclusive (Prometheus' le), the bounds are the
 * TSC's cycles of their nanoseconds, and the sum is kept in cycles. */
static void
test_open_hist_buckets(void **state)
{
	uint64_t bound[SP_OPEN_HIST_N];
	struct sp_open_hist h = { 0 };

	(void)state;
	sp_open_hist_init(bound, 2000000000ull); /* 2 GHz: 2 cycles a ns */
	assert_int_equal(bound[0], 500);                     /* 250 ns */
	assert_int_equal(bound[SP_OPEN_HIST_N - 1], 2000000); /* 1 ms */
	sp_open_hist_observe(&h, bound, 500);           /* on the first bound */
	sp_open_hist_observe(&h, bound, 501);           /* just over it */
	sp_open_hist_observe(&h, bound, 2000001);       /* over every bound */
	assert_int_equal(h.count[0], 1);
	assert_int_equal(h.count[1], 1);
	assert_int_equal(h.count[SP_OPEN_HIST_N], 1);
	assert_int_equal(h.sum_tsc, 500 + 501 + 2000001);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc1624_example),
		cmocka_unit_test(test_open_hist_buckets),
		cmocka_unit_test(test_incremental_vs_full),
		cmocka_unit_test(test_udp_checksum_never_becomes_zero),
		cmocka_unit_test(test_parse_drops),
		cmocka_unit_test(test_parse_fragment_limits),
		cmocka_unit_test(test_parse_tcp_udp_fields),
		cmocka_unit_test(test_parse_options),
		cmocka_unit_test(test_parse_icmp),
		cmocka_unit_test(test_icmp_error_rewrite),
		cmocka_unit_test(test_icmp_error_truncated),
		cmocka_unit_test(test_icmp_gen_build),
		cmocka_unit_test(test_icmp_gen_exclusions),
	};

	return SP_RUN_TESTS(tests, NULL, NULL);
}
