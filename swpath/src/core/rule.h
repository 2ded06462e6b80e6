/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a rule does, packed into qns_rule.user (QNS stores one word per
 * rule, so a lookup needs no second table): SNAT to a pool by index, or
 * DNAT to an address or a prefix of the rule's length, with or without a
 * new port. The control thread packs it (`rule add`); the core unpacks it.
 */
#ifndef SP_RULE_H
#define SP_RULE_H

#include <stdint.h>

#include "core/types.h"
#include "qns.h"

/* What a rule does, packed into qns_rule.user. */
#define SP_ACT_SNAT 1ull
#define SP_ACT_DNAT 2ull
#define SP_ACT_KIND(u) ((u) >> 62)
#define SP_ACT_POOL(u) ((uint16_t)((u) & 0xffff))
#define SP_ACT_TO(u) ((uint32_t)((u) & 0xffffffff))
#define SP_ACT_HAS_TO_PORT(u) (((u) >> 32) & 1)
#define SP_ACT_TO_PORT(u) ((uint16_t)(((u) >> 33) & 0xffff))
#define SP_ACT_TO_LEN(u) ((uint8_t)(((u) >> 49) & 0x3f))

static inline uint64_t
sp_act_snat(uint16_t pool)
{
	return SP_ACT_SNAT << 62 | pool;
}

static inline uint64_t
sp_act_dnat(uint32_t to, uint8_t to_len, int has_port, uint16_t port)
{
	return SP_ACT_DNAT << 62 | (uint64_t)(to_len & 0x3f) << 49 |
	       (uint64_t)port << 33 | (uint64_t)(has_port ? 1 : 0) << 32 | to;
}

/* Where a DNAT rule sends (dst, dport), host order: one address, or 1:1 by
 * prefix; its port, or the packet's. */
static inline void
sp_dnat_target(const struct qns_rule *rule, uint32_t dst, uint16_t dport,
	       uint32_t *int_addr, uint16_t *int_port)
{
	uint64_t u = rule->user;

	*int_addr = SP_ACT_TO(u) |
		    (SP_ACT_TO_LEN(u) < 32 ? dst & ~sp_prefix_mask(rule->plen) : 0);
	*int_port = SP_ACT_HAS_TO_PORT(u) ? SP_ACT_TO_PORT(u) : dport;
}

#endif /* SP_RULE_H */
