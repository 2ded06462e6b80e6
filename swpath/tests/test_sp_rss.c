/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RSS design (swpath/src/core/rss.h, core/allocator.c): the tabulated Toeplitz
 * hash equals rte_softrss, each pool (address, port) belongs to exactly one
 * worker, and every port a worker allocates gets its reply, hashed as the NIC
 * hashes it (destination address and port, through the RETA), on that
 * worker's queue. Also the software dispatcher's choice per packet.
 */
#include <string.h>

#include "sp_test_util.h"

#include <rte_ip.h>
#include <rte_thash.h>

#include "core/allocator.h"
#include "core/rss.h"
#include "dataplane/dispatch.h"
#include "dataplane/packet.h"
#include "dataplane/sp.h"
#include "sp_core_util.h"

static uint64_t rng = 0x1234567887654321ull;

/* What a NIC computes for an outside packet: Toeplitz over dst || dport. */
static unsigned
nic_queue_outside(const struct sp_rss *rss, uint32_t dst, uint16_t dport)
{
	uint32_t tuple[2] = { dst, (uint32_t)dport << 16 };
	uint32_t h = rte_softrss(tuple, 2, rss->key);

	return rss->reta[h & rss->reta_mask];
}

static unsigned
nic_queue_inside(const struct sp_rss *rss, uint32_t src)
{
	uint32_t tuple[1] = { src };

	return rss->reta[rte_softrss(tuple, 1, rss->key) & rss->reta_mask];
}

static void
test_key_sanity(void **state)
{
	/* Microsoft's RSS verification suite, IPv4 without ports:
	 * 66.9.149.187 -> 161.142.100.80 hashes to 0x323e8fc2. */
	uint32_t tuple[2] = { 0x420995bb, 0xa18e6450 };

	(void)state;
	assert_int_equal(rte_softrss(tuple, 2, sp_rss_default_key), 0x323e8fc2);
}

static void
test_tables_equal_softrss(void **state)
{
	struct sp_rss rss;

	(void)state;
	sp_rss_init(&rss, sp_rss_default_key, 128, 4);
	for (unsigned i = 0; i < 100000; i++) {
		uint32_t addr = (uint32_t)sp_test_rand(&rng);
		uint16_t port = (uint16_t)sp_test_rand(&rng);
		uint32_t t1[1] = { addr };
		uint32_t t2[2] = { addr, (uint32_t)port << 16 };

		assert_int_equal(sp_rss_hash_addr(&rss, addr),
				 rte_softrss(t1, 1, rss.key));
		assert_int_equal(sp_rss_hash_addr(&rss, addr) ^
					 sp_rss_hash_port(&rss, port),
				 rte_softrss(t2, 2, rss.key));
		assert_int_equal(sp_owner_outside(&rss, addr, port),
				 nic_queue_outside(&rss, addr, port));
		assert_int_equal(sp_owner_inside(&rss, addr),
				 nic_queue_inside(&rss, addr));
	}
}

static void
test_reta(void **state)
{
	struct sp_rss rss;

	(void)state;
	sp_rss_init(&rss, sp_rss_default_key, 512, 3);
	assert_int_equal(rss.reta_mask, 511);
	for (unsigned i = 0; i < 512; i++)
		assert_int_equal(rss.reta[i], i % 3);
	/* a bad size falls back to 128 */
	sp_rss_init(&rss, sp_rss_default_key, 100, 2);
	assert_int_equal(rss.reta_mask, 127);
}

/* Every (address, port) of a pool is in exactly one worker's list, the one
 * the NIC sends its replies to. */
static void
test_pool_partition(void **state)
{
	static const unsigned workers[] = { 1, 2, 3, 4, 5, 8 };
	struct sp_prefix pfx[2] = {
		{ .addr = 0xcb007100, .len = 29 },      /* 203.0.113.0/29 */
		{ .addr = 0xc6336409, .len = 32 },      /* 198.51.100.9 */
	};

	(void)state;
	for (unsigned k = 0; k < RTE_DIM(workers); k++) {
		unsigned nw = workers[k];
		struct sp_rss rss;
		struct sp_pool *pool;

		sp_rss_init(&rss, sp_rss_default_key, 128, nw);
		pool = sp_test_pool("p", pfx, 2, 1024, 65535, &rss, nw);
		assert_non_null(pool);
		assert_int_equal(pool->n_addrs, 9);
		for (uint32_t a = 0; a < pool->n_addrs; a++) {
			static uint8_t seen[65536];
			uint32_t total = 0;

			memset(seen, 0, sizeof(seen));
			for (unsigned w = 0; w < nw; w++) {
				const struct sp_pool_space *s =
					&pool->space[w * pool->n_addrs + a];

				for (uint32_t i = 0; i < s->n; i++) {
					uint16_t port = s->ports[i];

					assert_true(port >= 1024);
					assert_int_equal(seen[port], 0);
					seen[port] = 1;
					assert_int_equal(nic_queue_outside(&rss,
									   pool->addrs[a],
									   port),
							 w);
					if (i > 0)
						assert_true(port > s->ports[i - 1]);
				}
				total += s->n;
				/* a fair share: within 10% of range / workers */
				assert_true(s->n * 10 > (64512 / nw) * 9);
				/* of both parities, so parity preservation (RFC
				 * 4787 REQ-4) has ports on every worker */
				assert_true(s->size[0][1] * 10 > s->n * 4 &&
					    s->size[0][0] * 10 > s->n * 4);
				assert_int_equal(s->n_low, 0);
			}
			assert_int_equal(total, 64512);
		}
		sp_pool_free(pool);
	}
}

/* The property the design rests on: what worker w allocates, the NIC
 * brings back to w. Hosts are the ones the inside hash gives to w. */
static void
test_allocations_come_back(void **state)
{
	static const unsigned workers[] = { 2, 3, 4, 7 };
	struct sp_prefix pfx = { .addr = 0xcb007100, .len = 28 };

	(void)state;
	for (unsigned k = 0; k < RTE_DIM(workers); k++) {
		unsigned nw = workers[k];
		struct sp_rss rss;
		struct sp_pool *pool;

		sp_rss_init(&rss, sp_rss_default_key, 128, nw);
		pool = sp_test_pool("p", &pfx, 1, 1024, 65535, &rss, nw);
		assert_non_null(pool);
		for (unsigned w = 0; w < nw; w++) {
			struct sp_alloc_ctx ctx;
			unsigned done = 0;

			assert_int_equal(sp_alloc_ctx_init(&ctx, &sp_dpdk_env, w,
							   8192, SOCKET_ID_ANY),
					 0);
			for (uint32_t host = 0x0a000000; done < 3000; host++) {
				struct sp_alloc a;

				if (nic_queue_inside(&rss, host) != w)
					continue;
				for (unsigned pi = 0; pi < SP_PI_MAX; pi++) {
					struct sp_alloc_req req = {
						.int_addr = host,
						.int_port = (uint16_t)(40000 + done),
						.pi = (uint8_t)pi, .now_ms = 1000,
						.reuse_ms = 120000,
					};

					assert_int_equal(sp_pool_allocate(pool, &ctx,
									  &req, &a),
							 0);
					assert_int_equal(nic_queue_outside(&rss, a.addr,
									   a.port),
							 w);
					done++;
				}
			}
			sp_alloc_ctx_free(&ctx);
		}
		sp_pool_free(pool);
	}
}

static uint16_t
packet(uint8_t *buf, uint8_t proto, uint32_t src, uint32_t dst, uint16_t sport,
       uint16_t dport)
{
	struct rte_ether_hdr *eth = (void *)buf;
	struct rte_ipv4_hdr *ip = (void *)(eth + 1);
	uint8_t *l4 = (uint8_t *)(ip + 1);

	memset(buf, 0, 128);
	eth->ether_type = RTE_BE16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = 0x45;
	ip->next_proto_id = proto;
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	ip->total_length = RTE_BE16(20 + 8);
	if (proto == IPPROTO_ICMP) {
		l4[0] = SP_ICMP_ECHO_REPLY;
		*(rte_be16_t *)(l4 + 4) = rte_cpu_to_be_16(sport);
	} else {
		*(rte_be16_t *)l4 = rte_cpu_to_be_16(sport);
		*(rte_be16_t *)(l4 + 2) = rte_cpu_to_be_16(dport);
	}
	return 14 + 20 + 8;
}

static void
test_dispatch_owner(void **state)
{
	uint8_t buf[256];
	struct rte_mbuf m;

	(void)state;
	memset(&sp, 0, sizeof(sp));
	sp.n_workers = 4;
	sp_rss_init(&sp.rss, sp_rss_default_key, 128, 4);
	sp.n_ifaces = 2;
	sp.ifaces[0].zone = SP_ZONE_INSIDE;
	sp.ifaces[1].zone = SP_ZONE_OUTSIDE;
	memset(&m, 0, sizeof(m));
	m.buf_addr = buf;
	m.nb_segs = 1;
	for (unsigned i = 0; i < 2000; i++) {
		uint32_t a = (uint32_t)sp_test_rand(&rng);
		uint32_t b = (uint32_t)sp_test_rand(&rng);
		uint16_t p = (uint16_t)sp_test_rand(&rng);
		uint16_t q = (uint16_t)sp_test_rand(&rng);
		uint8_t proto = i % 3 == 0 ? IPPROTO_TCP :
				i % 3 == 1 ? IPPROTO_UDP : IPPROTO_ICMP;

		m.data_len = packet(buf, proto, a, b, p, q);
		/* inside: source address only, every protocol */
		assert_int_equal(sp_dispatch_owner(&m, 0), nic_queue_inside(&sp.rss, a));
		/* outside: destination and port (ICMP: the identifier) */
		assert_int_equal(sp_dispatch_owner(&m, 1),
				 nic_queue_outside(&sp.rss, b,
						   proto == IPPROTO_ICMP ? p : q));
	}
	/* an ICMP error goes where the packet it quotes came from */
	{
		uint8_t inner[128];
		uint8_t *l4 = buf + 14 + 20;
		struct rte_ipv4_hdr *ip = (void *)(buf + 14);

		packet(buf, IPPROTO_ICMP, 0x01020304, 0xcb007101, 0, 0);
		packet(inner, IPPROTO_UDP, 0xcb007101, 0x08080808, 40000, 53);
		l4[0] = SP_ICMP_DEST_UNREACH;
		memcpy(l4 + 8, inner + 14, 28);
		ip->total_length = RTE_BE16(20 + 8 + 28);
		m.data_len = 14 + 20 + 8 + 28;
		assert_int_equal(sp_dispatch_owner(&m, 1),
				 nic_queue_outside(&sp.rss, 0xcb007101, 40000));
		/* a fragment, or an ARP frame, stays with worker 0 */
		ip->fragment_offset = RTE_BE16(10);
		assert_int_equal(sp_dispatch_owner(&m, 1), 0);
		((struct rte_ether_hdr *)buf)->ether_type = RTE_BE16(RTE_ETHER_TYPE_ARP);
		assert_int_equal(sp_dispatch_owner(&m, 0), 0);
	}
}

static int
setup(void **state)
{
	(void)state;
	return sp_test_eal_init("test_sp_rss") < 0 ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_sanity),
		cmocka_unit_test(test_tables_equal_softrss),
		cmocka_unit_test(test_reta),
		cmocka_unit_test(test_pool_partition),
		cmocka_unit_test(test_allocations_come_back),
		cmocka_unit_test(test_dispatch_owner),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
