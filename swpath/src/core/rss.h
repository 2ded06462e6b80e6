/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which worker owns a packet: the Toeplitz hash of the fields the NIC is told
 * to hash, through the redirection table (RETA), exactly as a NIC does it.
 *
 *   inside ports:  hash(source address)                 RTE_ETH_RSS_L3_SRC_ONLY
 *   outside ports: hash(destination address, port)      L3_DST_ONLY | L4_DST_ONLY
 *
 * So all flows of one inside host land on one worker, and a reply lands on
 * the worker that owns its external (address, port). The allocator of worker
 * q hands out only (address, port) pairs that hash to q (allocator.c), which
 * makes every SNAT flow local to one worker in both directions.
 *
 * Since Toeplitz is linear over XOR, the hash of a tuple is the XOR of the
 * hashes of its bytes, and those are tabulated once (6 lookups per packet
 * instead of a loop over every set bit). The tables are DPDK's rte_softrss,
 * byte by byte, so bit for bit what the NIC computes: the data path fills
 * them (dataplane/dispatch.h, sp_rss_init), and the core only reads them, so
 * the allocator hands out the ports the NIC will bring back to the worker.
 * For ICMP echo the identifier stands in for the port, as RFC 5508 maps it.
 */
#ifndef SP_RSS_H
#define SP_RSS_H

#include <stdint.h>

#define SP_RSS_KEY_LEN 40
#define SP_RETA_MAX 512

struct sp_rss {
	/* Toeplitz hash of a tuple whose only non-zero byte is byte k = v. */
	uint32_t byte_hash[6][256];
	uint32_t reta_mask;     /* reta size - 1 (a power of two) */
	uint32_t n_queues;
	uint16_t reta[SP_RETA_MAX];
	uint8_t key[SP_RSS_KEY_LEN];
};

/* Hash of (addr) as the first 4 bytes of the tuple; addr in host order. */
static inline uint32_t
sp_rss_hash_addr(const struct sp_rss *rss, uint32_t addr)
{
	return rss->byte_hash[0][addr >> 24] ^
	       rss->byte_hash[1][(addr >> 16) & 0xff] ^
	       rss->byte_hash[2][(addr >> 8) & 0xff] ^
	       rss->byte_hash[3][addr & 0xff];
}

/* Hash contribution of a port at bytes 4-5 of the tuple; host order. */
static inline uint32_t
sp_rss_hash_port(const struct sp_rss *rss, uint16_t port)
{
	return rss->byte_hash[4][port >> 8] ^ rss->byte_hash[5][port & 0xff];
}

static inline unsigned
sp_rss_queue(const struct sp_rss *rss, uint32_t hash)
{
	return rss->reta[hash & rss->reta_mask];
}

/* Worker of a packet received on an inside port (source address). */
static inline unsigned
sp_owner_inside(const struct sp_rss *rss, uint32_t src)
{
	return sp_rss_queue(rss, sp_rss_hash_addr(rss, src));
}

/* Worker of a packet received on an outside port (destination, port). */
static inline unsigned
sp_owner_outside(const struct sp_rss *rss, uint32_t dst, uint16_t dport)
{
	return sp_rss_queue(rss, sp_rss_hash_addr(rss, dst) ^
				 sp_rss_hash_port(rss, dport));
}

#endif /* SP_RSS_H */
