/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QNS (Quick NAT Search): O(1) NAT rule lookup by hashed sub-tables, one per
 * rule kind and prefix length. Semantics, lookup order and the concurrency
 * contract are specified in docs/qns.md; the shared vectors in
 * tests/vectors/qns/ hold this implementation and the Python one to them.
 *
 * No DPDK dependency: the library is plain C11 so that it builds and is unit
 * tested without the EAL. The DPDK data path links it and supplies an
 * RCU-backed reclaim callback.
 *
 * Addresses are IPv4 in host byte order.
 */
#ifndef QUICKNAT_QNS_H
#define QUICKNAT_QNS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum qns_kind {
	QNS_SNAT = 0, /* matches the packet's source address and port */
	QNS_DNAT = 1, /* matches the packet's destination address and port */
};

/* Number of rule kinds. */
#define QNS_KINDS 2

/* Rule protocol wildcard; real protocols use their IANA numbers (6, 17, 1). */
#define QNS_PROTO_ANY 0

/* Largest prefix length; there are QNS_PLEN_MAX + 1 sub-tables per kind. */
#define QNS_PLEN_MAX 32

struct qns_rule {
	uint32_t id;       /* unique, non-zero */
	uint32_t prefix;   /* masked to plen bits: host bits must be zero */
	uint16_t port;     /* meaningful only when has_port */
	uint8_t plen;      /* 0..32 */
	uint8_t proto;     /* IPPROTO_TCP/UDP/ICMP or QNS_PROTO_ANY */
	uint8_t kind;      /* enum qns_kind */
	uint8_t has_port;  /* 0: wildcard port */
	uint16_t reserved;
	uint64_t user;     /* opaque to QNS: the data path's action (pool, target) */
};

/*
 * Called with memory that is no longer reachable by new lookups but may still
 * be read by lookups in flight. The callee frees it (with free()) once every
 * reader has passed a quiescent state. When no callback is set, memory is
 * freed at once, which is only safe when lookups and updates never overlap.
 */
typedef void (*qns_reclaim_fn)(void *ctx, void *ptr);

struct qns_params {
	qns_reclaim_fn reclaim; /* may be NULL */
	void *reclaim_ctx;
};

struct qns;

/* Returns NULL on allocation failure. params may be NULL. */
struct qns *qns_create(const struct qns_params *params);

/* Frees everything at once: the caller guarantees there are no readers. */
void qns_free(struct qns *q);

/*
 * Adds a copy of *rule. Writers must be serialised by the caller.
 * Returns 0, or -EINVAL (plen > 32, host bits set, id 0, kind unknown,
 * has_port with a protocol other than TCP, UDP or ANY), -EEXIST (same id, or
 * same kind/prefix/plen/port/proto as an existing rule), -ENOMEM.
 */
int qns_add(struct qns *q, const struct qns_rule *rule);

/* Removes the rule with this id. Returns 0 or -ENOENT. Writers serialised. */
int qns_del(struct qns *q, uint32_t id);

/* The rule with this id, or NULL. Not for the fast path. */
const struct qns_rule *qns_get(const struct qns *q, uint32_t id);

/*
 * The first matching rule in the order of docs/qns.md (DNAT before SNAT,
 * longer prefix first, exact port before wildcard, exact protocol before any),
 * or NULL. sport/dport are ignored unless proto is TCP or UDP.
 * Lock-free: safe to call concurrently with one writer. The returned pointer
 * stays valid until the reader's next quiescent state.
 */
const struct qns_rule *qns_lookup(const struct qns *q, uint8_t proto,
				  uint32_t src, uint16_t sport,
				  uint32_t dst, uint16_t dport);

/* The same order restricted to one kind. */
const struct qns_rule *qns_lookup_kind(const struct qns *q, enum qns_kind kind,
				       uint8_t proto, uint32_t addr,
				       uint16_t port);

/* Number of rules. */
size_t qns_count(const struct qns *q);

/*
 * Bytes of memory held: the sub-tables, the rules, the filter that lets
 * lookups pass over sub-tables, the id index and the struct itself.
 */
size_t qns_memory(const struct qns *q);

/* Calls fn for every rule (unspecified order); writers serialised. */
void qns_foreach(const struct qns *q,
		 void (*fn)(const struct qns_rule *rule, void *arg), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* QUICKNAT_QNS_H */
