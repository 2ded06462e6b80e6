/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Virtual reassembly of IPv4 fragments (RFC 4787 REQ-14: a NAT MUST
 * receive fragments in order and out of order; IN-IP-8 of
 * docs/nat-behavior.md), as VPP's ip4-sv-reass does: fragments are not
 * put back together. The first fragment carries the L4 ports; they are
 * remembered per datagram, (source, destination, protocol, IP ID), and
 * every later fragment of that datagram is translated with them (its
 * addresses only: the L4 checksum lives in the first fragment, whose
 * incremental update already covers the whole datagram). Fragments that
 * arrive before their first are held, a few per datagram, until it comes
 * or the datagram times out.
 *
 * Everything is bounded and per worker, with no allocation or lock: a
 * fixed table of datagrams (open addressing, a short probe), a cap on the
 * fragments held per datagram and per worker, and a cap on the datagrams
 * one source may have waiting for their first fragment (hashed counters:
 * sources that share a counter share the cap), so an orphan-fragment
 * flood from one source cannot take the table or the mbufs. What does not
 * fit is dropped and counted (drop_frag_limit); held fragments whose first
 * never came are freed by sp_frag_age (drop_frag_timeout).
 *
 * Not translated (dropped, drop_fragment): fragments of ICMP errors, of a
 * hairpinned session, of a datagram whose first fragment was refused.
 *
 * Overlaps (dropped, drop_frag_overlap; IN-IP-9 of docs/nat-behavior.md).
 * The NAT filters and maps on the first fragment's header; a fragment that
 * overlaps bytes already seen could replace that header (or anything else)
 * in the datagram the receiver puts together (RFC 1858 sec. 3.2, RFC 3128),
 * and a receiver's reassembly policy decides which copy wins. So, as Linux
 * since 4.19 (2018, inet_frag_queue_insert) and RFC 5722 for IPv6, each
 * datagram keeps the byte ranges it has seen (SP_FRAG_RANGES runs, merged
 * when they touch; no allocation) and the end its last fragment set:
 * - a fragment wholly inside bytes already seen (a duplicate, same content
 *   or not) is dropped and the datagram goes on: only the first copy ever
 *   leaves, so every receiver puts together what the NAT checked, and a
 *   duplicate the network made costs nothing (Linux drops it the same way);
 * - a fragment that overlaps partly, or whose end contradicts the end the
 *   datagram's last fragment set (a teardrop pair), kills the datagram: it
 *   is dropped, the fragments held for it are freed, and every later
 *   fragment of it is dropped until its slot's time is up (what left
 *   already cannot be recalled, and the receiver cannot complete it);
 * all counted drop_frag_overlap. The parser drops under the same counter a
 * fragment that reaches past 65,535 bytes, a first fragment too short for
 * its whole transport header and a TCP fragment at offset 8 bytes (RFC
 * 1858 sec. 3: both would let the flags travel apart from the ports).
 */
#ifndef SP_FRAG_H
#define SP_FRAG_H

#include <stdint.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>

#define SP_FRAG_SLOTS 1024      /* datagrams in flight per worker (2^n) */
#define SP_FRAG_PROBE 8         /* slots a datagram may land in */
#define SP_FRAG_HOLD 8          /* fragments held per datagram */
#define SP_FRAG_HELD_MAX 256    /* fragments held per worker in all */
#define SP_FRAG_SRC_SLOTS 256   /* per-source counters (hashed, 2^n) */
#define SP_FRAG_SRC_MAX 16      /* datagrams a source may have waiting */
#define SP_FRAG_TIMEOUT_MS 2000 /* a datagram's ports are kept this long */
#define SP_FRAG_AGE_BUDGET 16   /* slots sp_frag_age looks at per loop */
#define SP_FRAG_RANGES 8        /* runs of bytes seen per datagram */

struct sp_frag_key {
	rte_be32_t src;
	rte_be32_t dst;
	rte_be16_t id;
	uint8_t proto;
	uint8_t pad;
};

/* Where a fragment's data lies in its datagram's IP payload: bytes
 * [start, end), and whether it is the last (MF clear). */
struct sp_frag_span {
	uint16_t start;
	uint16_t end;
	uint8_t last;
};

struct sp_frag_range {
	uint16_t start, end;            /* bytes [start, end) of the payload */
};

struct sp_frag_dgram {
	struct sp_frag_key key;
	uint32_t expire;                /* ms; the slot is free when 0 */
	rte_be16_t sport, dport;        /* as in the flow key, once known */
	uint8_t have_first;
	uint8_t n_held;
	uint8_t counted;                /* in waiting[src_slot] */
	uint8_t dead;                   /* overlapped: its fragments are dropped */
	uint16_t src_slot;
	uint16_t last_end;              /* its last fragment's end; 0: not seen */
	uint16_t max_end;               /* the furthest byte seen */
	uint8_t n_ranges;
	struct sp_frag_range seen[SP_FRAG_RANGES];
	struct rte_mbuf *held[SP_FRAG_HOLD];
};

struct sp_frag {
	struct sp_frag_dgram d[SP_FRAG_SLOTS];
	uint16_t waiting[SP_FRAG_SRC_SLOTS]; /* datagrams without first, by source */
	uint32_t n_held;
	uint32_t n_live;                /* slots in use: none, no ageing walk */
	uint32_t sweep;                 /* next slot sp_frag_age looks at */
};

/* Results of sp_frag_later. */
#define SP_FRAG_KNOWN 1                 /* ports filled in */
#define SP_FRAG_HELD 0                  /* kept until the first arrives */

/*
 * A first fragment (MF set, offset 0) with its flow key's ports. Returns how
 * many held fragments of the datagram it released into out[SP_FRAG_HOLD]
 * (the caller translates them after it, in arrival order, without asking
 * again: their ranges are recorded), or minus the counter to drop it under
 * (an overlap, a duplicate, a killed datagram). When there is no room the
 * first fragment is translated all the same and its later fragments are
 * dropped as they come.
 */
int sp_frag_first(struct sp_frag *f, const struct sp_frag_key *k,
		  const struct sp_frag_span *span, rte_be16_t sport,
		  rte_be16_t dport, uint32_t now, struct rte_mbuf **out,
		  uint64_t *cnt);

/*
 * A later fragment (offset not 0). SP_FRAG_KNOWN: *sport, *dport hold its
 * datagram's ports. SP_FRAG_HELD: m was kept (counted frag_held). Otherwise
 * minus the counter to drop m under (the caller frees it).
 */
int sp_frag_later(struct sp_frag *f, const struct sp_frag_key *k,
		  const struct sp_frag_span *span, struct rte_mbuf *m,
		  uint32_t now, rte_be16_t *sport, rte_be16_t *dport,
		  uint64_t *cnt);

/* Frees datagrams past their time, looking at up to budget slots; their
 * held fragments are counted drop_frag_timeout. Returns fragments freed. */
unsigned sp_frag_age(struct sp_frag *f, uint32_t now, unsigned budget,
		     uint64_t *cnt);

/* Frees every held fragment (at exit), counting them drop_frag_timeout. */
void sp_frag_flush(struct sp_frag *f, uint64_t *cnt);

#endif /* SP_FRAG_H */
