/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Offload's learn mode (docs/swpath.md, "Learn mode"; docs/offload.md): the
 * switch learns both directions of a session from the translated packet a
 * slow-path instance sends back, so no one writes a table entry per flow.
 * Such a packet carries the learn tag between its 802.1Q header (whose
 * EtherType then says SP_LEARN_ETHERTYPE) and its IPv4 header:
 *
 *   eth | 802.1Q (VID, type 0x88B5) | learn tag (16 bytes) | IPv4 ...
 *
 * The tag is the packet's 5-tuple before translation, the switch's timeout
 * class its entries are learned under, and which side was rewritten; the
 * switch reads the translated side from the packet itself and strips the
 * tag. This header says what the tag holds and which sessions get one; the
 * data path puts it on the packet (dataplane/learn.h). Plain C, no DPDK.
 */
#ifndef SP_LEARN_H
#define SP_LEARN_H

#include <stdbool.h>
#include <stdint.h>

#include "contract/p4_constants.h"
#include "core/runtime.h"
#include "core/session.h"

/* The tag's EtherType (IEEE Std 802's "Local Experimental EtherType 1":
 * ours between the instance and the switch, which strips the tag, so it
 * never reaches a link beyond it), its length and its direction flag (0:
 * inside to outside, the source rewritten; set: outside to inside, the
 * destination rewritten) are the P4 program's (p4src/include/define.p4,
 * generated into contract/p4_constants.h). */
#define SP_LEARN_ETHERTYPE P4_ETHERTYPE_LEARN
#define SP_LEARN_DIR_OUT2IN P4_LEARN_FLAG_OUT2IN

/* The learn tag as it is on the wire (network byte order; the P4 program's
 * parser reads exactly this layout). */
struct sp_learn_tag {
	sp_be32_t orig_src;     /* the packet's source before translation */
	sp_be32_t orig_dst;     /* its destination before translation */
	sp_be16_t orig_sport;   /* ICMP echo: the identifier before */
	sp_be16_t orig_dport;   /* ICMP echo: the identifier before, again */
	uint8_t lease;          /* the switch's timeout class, 0..7 */
	uint8_t flags;          /* SP_LEARN_DIR_OUT2IN */
	sp_be16_t eth_type;     /* the next header's: IPv4, 0x0800 */
} __attribute__((packed));

_Static_assert(sizeof(struct sp_learn_tag) == P4_LEARN_TAG_BYTES,
	       "the learn tag is the P4 program's learn_t");

/* Why a translated packet in learn mode leaves without a tag. */
enum sp_learn_skip {
	SP_LEARN_TAG = 0,       /* it gets one */
	SP_LEARN_OFF,           /* not learn mode */
	SP_LEARN_NOT_LEARNABLE, /* learn mode, but the switch must not learn it */
};

/*
 * Whether a translated packet of session s gets a learn tag, and under which
 * class (*cls). Learnable: a session whose translation rewrites one side
 * only (SNAT, DNAT), of TCP, UDP or ICMP echo (the only sessions there are),
 * for a packet that is neither a fragment (frag: the switch reads no port
 * of a later one, and the first alone would teach it ports the rest cannot
 * match) nor a RST (which does not refresh the session, RFC 7857 sec. 2.2:
 * a lease it started could outlive the session's timer), and whose kind has
 * a lease. Not a hairpin (both sides rewritten, in two passes through the
 * switch), nor what passes to or from a peer instance (peer: its peer VIDs).
 * ICMP errors never come here: they are translated by the session they
 * quote (dataplane/in2out.c, out2in.c), never tagged.
 */
static inline enum sp_learn_skip
sp_learn_class(const struct sp_runtime *rt, const struct sp_session *s,
	       bool frag, bool rst, bool peer, uint8_t *cls)
{
	uint8_t c;

	if (__builtin_expect(!rt->learn, 1))
		return SP_LEARN_OFF;
	c = rt->lease_class[sp_session_kind(s)];
	if (c == SP_LEARN_NONE || frag || rst || peer ||
	    (s->flags & SP_SESS_HAIRPIN))
		return SP_LEARN_NOT_LEARNABLE;
	*cls = c;
	return SP_LEARN_TAG;
}

/* Session s was tagged with class cls: it keeps the longest lease it was
 * ever tagged with (a shorter one later does not end an earlier entry). */
static inline void
sp_learn_record(const struct sp_runtime *rt, struct sp_session *s,
		uint8_t cls)
{
	if (s->lease == 0 || rt->class_ms[cls] > rt->class_ms[s->lease - 1])
		s->lease = (uint8_t)(cls + 1);
}

/*
 * The lease a session taken over from a predecessor (the state file, or
 * handed back) starts with: the longest there is, in learn mode, unless it
 * is a hairpin. Its records are written at its open and phase changes, not
 * at each tag, so what it was tagged with last is not known: the longest
 * lease is the one that is surely long enough.
 */
static inline uint8_t
sp_learn_lease_adopted(const struct sp_runtime *rt,
		       const struct sp_session *s)
{
	if (!rt->learn || rt->longest_class == SP_LEARN_NONE ||
	    (s->flags & SP_SESS_HAIRPIN))
		return 0;
	return (uint8_t)(rt->longest_class + 1);
}

#endif /* SP_LEARN_H */
