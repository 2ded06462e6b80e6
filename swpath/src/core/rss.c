/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include <rte_common.h>
#include <rte_thash.h>

#include "core/rss.h"

const uint8_t sp_rss_default_key[SP_RSS_KEY_LEN] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
	0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
	0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
	0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
	0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

void
sp_rss_init(struct sp_rss *rss, const uint8_t *key, unsigned reta_size,
	    unsigned n_queues)
{
	memset(rss, 0, sizeof(*rss));
	memcpy(rss->key, key, SP_RSS_KEY_LEN);
	/*
	 * rte_softrss takes the tuple as 32-bit words in CPU order, first byte
	 * of the wire tuple in the most significant position.
	 */
	for (unsigned k = 0; k < 6; k++) {
		for (unsigned v = 0; v < 256; v++) {
			uint32_t tuple[2] = { 0, 0 };

			tuple[k / 4] = (uint32_t)v << (8 * (3 - k % 4));
			rss->byte_hash[k][v] = rte_softrss(tuple, 2, rss->key);
		}
	}
	if (reta_size == 0 || reta_size > SP_RETA_MAX ||
	    !rte_is_power_of_2(reta_size))
		reta_size = 128;
	if (n_queues == 0)
		n_queues = 1;
	rss->reta_mask = reta_size - 1;
	rss->n_queues = n_queues;
	for (unsigned i = 0; i < reta_size; i++)
		rss->reta[i] = (uint16_t)(i % n_queues);
}
