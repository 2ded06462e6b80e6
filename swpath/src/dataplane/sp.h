/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicknat-swpath: the application's shared state.
 *
 * Written only by the control thread (the main lcore), read by the workers:
 * interfaces, routes and pools are fixed once the workers run; neighbours go
 * through a lock-free rte_hash with one writer; rules live in QNS and the
 * run-time settings in one sp_runtime snapshot, both swapped under
 * rte_rcu_qsbr. Everything a worker writes is in its own sp_worker.
 */
#ifndef SP_H
#define SP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ether.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "core/allocator.h"
#include "core/counters.h"
#include "core/env.h"
#include "dataplane/open_hist.h"
#include "core/rss.h"
#include "core/runtime.h"
#include "core/table.h"
#include "core/types.h"

#define SP_BURST 32
#define SP_MAX_IFACES 16
#define SP_MAX_WORKERS 64
#define SP_MAX_ROUTES 4096
#define SP_MAX_NEIGH 4096
#define SP_RING_SIZE 4096
#define SP_CMD_RING_SIZE 4096           /* session commands per worker */
#define SP_TX_DRAIN_US 100
#define SP_AGE_BUDGET 64
#define SP_OWNED_MIN_PLEN 24
#define SP_DEFAULT_CONTROL "/run/quicknat/swpath.sock"
/* [icmp] defaults, as controller/quicknat/config/model.py IcmpErrors */
#define SP_ICMP_RATE_DEFAULT 100
#define SP_ICMP_BURST_DEFAULT 50
/* Sessions of a worker's table, and the per-host limits (ports and
 * sessions) by default: 1/16 of that table, so one host's flood leaves
 * 15/16 to the rest (RFC 6888 REQ-4/5; model.py DEFAULT_HOST_LIMIT). */
#define SP_SESSIONS_DEFAULT 65536
#define SP_HOST_LIMIT_DEFAULT 4096

struct qns;
struct sp_frag;
struct sp_store_holds;
struct rte_hash;
struct rte_lpm;
struct rte_ring;
struct rte_mempool;
struct rte_rcu_qsbr;

enum sp_dispatch {
	SP_DISPATCH_AUTO = 0,
	SP_DISPATCH_RSS,        /* the NIC spreads packets (one queue per worker) */
	SP_DISPATCH_SOFTWARE,   /* worker 0 reads queue 0 and spreads them */
};

struct sp_iface {
	char name[SP_NAME_MAX];
	uint16_t port;
	uint8_t zone;
	uint8_t has_addr;
	uint8_t plen;
	uint16_t mtu;                   /* largest IPv4 packet sent */
	uint16_t vlan;                  /* 802.1Q VID, 0: untagged */
	uint8_t slow_path;              /* frames are a switch's misses */
	uint32_t addr;                  /* host order */
	rte_be32_t addr_be;
	struct rte_ether_addr mac;
};

struct sp_route {
	struct sp_prefix prefix;
	uint16_t iface;
	uint8_t has_via;
	uint8_t connected;              /* from an interface address */
	uint32_t via;                   /* host order */
	/* The source of the NAT's own ICMP errors to hosts this route
	 * reaches; 0: the address of the interface the offending packet
	 * came in on. A slow-path instance's interfaces have link-local
	 * addresses, so it sends its errors as the switch's interface that
	 * faces the host (docs/offload.md). */
	rte_be32_t source;
	uint8_t live;                   /* in the table: not retired, not free */
};

struct sp_neigh_key {
	uint32_t addr;                  /* host order */
	uint16_t iface;
	uint16_t pad;
};

#define SP_NEIGH_VALID (1ull << 63)
#define SP_NEIGH_STATIC (1ull << 62)
/* a worker sent to it since the control thread last looked (the unicast
 * poll asks only about neighbours in use: control/routing.h) */
#define SP_NEIGH_USED (1ull << 61)

struct sp_neigh {
	uint32_t addr;
	uint16_t iface;
	/* atomic: MAC in bits 0-47 (wire order), SP_NEIGH_* flags above */
	uint64_t mac;
	/* control thread only (control/routing.c): */
	uint32_t last_request;          /* ms of the last ARP request for it */
	uint32_t confirmed;             /* ms of the last ARP that gave its MAC */
	uint32_t idle_since;            /* stale and not sent to since */
	uint8_t stale;                  /* not heard from for reachable_ms */
	uint8_t probes;                 /* unicast polls unanswered */
	uint8_t live;                   /* 0: a free slot (routing.c) */
};

/* A packet waiting for its next hop's MAC (fwd.h sp_unres_hold): Linux
 * queues up to unres_qlen (3) per neighbour while it asks. */
#define SP_UNRES_MAX 16
#define SP_UNRES_PER_NEIGH 3
#define SP_UNRES_MS 1000u

struct sp_unres {
	struct rte_mbuf *m;
	struct rte_ether_hdr *eth;
	uint32_t nh;                    /* host order */
	uint16_t iface;
	uint32_t since;                 /* the worker's ms clock */
};

/* Messages from workers to the control thread (neighbour table). */
enum sp_msg_type {
	SP_MSG_LEARN = 1,               /* an ARP packet told us addr's MAC */
	SP_MSG_RESOLVE = 2,             /* a worker needs addr's MAC */
	SP_MSG_CONFLICT = 3,            /* mac claims addr, one of ours */
};

struct sp_msg {
	uint8_t type;
	uint8_t pad;
	uint16_t iface;
	uint32_t addr;                  /* host order */
	uint8_t mac[6];
	uint16_t pad2;
};

/* sp_app.port_iface[] and sp_rxq.iface of a port with sub-interfaces */
#define SP_IFACE_TRUNK 0x7fff

struct sp_rxq {
	uint16_t port;
	uint16_t queue;
	uint16_t iface;                 /* or SP_IFACE_TRUNK */
};

/* A worker's output to one interface. */
struct sp_txq {
	struct rte_eth_dev_tx_buffer *buf; /* TX queue of its own, or NULL */
	struct rte_ring *ring;          /* else: through worker 0 */
	uint16_t port;
	uint16_t queue;
	uint16_t n;
	struct rte_mbuf *pend[SP_BURST];
};

/* struct sp_worker's listening: who hears the core (persist/sink.c). */
#define SP_LISTEN_STORE  0x1u   /* the state file: sessions */
#define SP_LISTEN_STREAM 0x2u   /* a stream subscriber: sessions */
#define SP_LISTEN_EVENTS 0x4u   /* the event log: mapping events */
#define SP_LISTEN_IPFIX_SESSIONS 0x8u   /* IPFIX: session events */

struct sp_worker {
	unsigned index;
	unsigned lcore;
	int socket;
	unsigned n_rxq;
	struct sp_rxq rxq[SP_MAX_IFACES];
	struct sp_txq tx[SP_MAX_IFACES];        /* by interface index */
	struct rte_ring *in_ring;               /* dispatch + handoff (MP/SC) */
	struct rte_ring *ctl_ring;              /* packets from control (MP/SC) */
	struct rte_ring *cmd_ring;              /* session commands (SP/SC) */
	/* Where the NAT core's observer (persist/sink.c) writes: */
	struct rte_ring *event_ring;            /* mapping events (SP/SC), or NULL */
	struct rte_ring *stream_ring;           /* the session stream (SP/SC) */
	struct sp_session *store;               /* the state file's copies of
						 * this worker's sessions, or NULL */
	struct sp_store_holds *store_holds;     /* and its port holds */
	/* Which of those listen now (SP_LISTEN_*): the core calls its
	 * observer only while one does (core/observer.h). Set and cleared
	 * atomically by the control thread, read relaxed by the worker. */
	uint32_t listening;
	uint32_t now;                           /* ms since start */
	/* TSC cycles of the iterations that had packets: the worker's work,
	 * apart from its polling (stats' busy_us; readers tolerate tearing
	 * of a value read while it grows, as the counters do) */
	uint64_t busy_tsc;
	/* the slow path's session opens, timed (open_hist.h) */
	struct sp_open_hist open_hist;
	uint32_t resolve_addr;                  /* last SP_MSG_RESOLVE sent */
	uint32_t resolve_time;
	uint64_t icmp_tokens;                   /* ICMP error bucket, 1/1000 */
	uint32_t icmp_refill;                   /* ms of its last refill */
	uint16_t icmp_ident;                    /* IPv4 id of our errors */
	/* the last gateway route's neighbour (a new session's first packet
	 * would look it up again); route + 1, 0 for none */
	uint16_t via_route1;
	uint16_t via_neigh;
	struct sp_nat nat;
	struct sp_frag *frag;                   /* virtual reassembly (frag.h) */
	/* packets held for their next hop's MAC, in arrival order */
	struct sp_unres unres[SP_UNRES_MAX];
	unsigned n_unres;
	uint32_t unres_polled;                  /* w->now of the last look */
	uint64_t cnt[SP_CNT_MAX] __rte_cache_aligned;
	/* An operator's `sessions delete|flush` (control.c): the control
	 * thread writes del_filter, then bumps del_req; the worker deletes in
	 * its loop, stores del_count, then sets del_done to del_req. */
	struct sp_session_filter del_filter;
	uint32_t del_req;
	uint32_t del_done;
	uint32_t del_count;
	int done;
} __rte_cache_aligned;

struct sp_app {
	/* options */
	unsigned n_workers;
	uint32_t sessions_per_worker;
	enum sp_dispatch dispatch;
	uint32_t port_reuse_ms;
	/* a learned neighbour not heard from for this long is polled
	 * (control/routing.c; 0: never) */
	uint32_t neigh_reachable_ms;
	/* A worker idle for SP_IDLE_POLLS polls sleeps this long between
	 * polls (0: never): for a host whose CPUs poll for more than swpath,
	 * such as the offload lab's two instances beside the switch. */
	uint32_t idle_sleep_us;
	uint64_t seed;

	/* configuration */
	struct sp_iface ifaces[SP_MAX_IFACES];
	unsigned n_ifaces;
	/* a port's interface, SP_IFACE_TRUNK when it has 802.1Q
	 * sub-interfaces (the VID picks one per packet), -1 for none */
	int16_t port_iface[RTE_MAX_ETHPORTS];
	struct sp_route routes[SP_MAX_ROUTES];
	/* Each slot's generation (mod SP_ROUTE_GENS), changed when its route
	 * leaves the table at run time: sessions cache a slot with it
	 * (core/session.h) and look their route up again when it differs;
	 * the workers' timer wheels forget stale ones (core/table.h). */
	uint8_t route_gen[SP_MAX_ROUTES];
	unsigned n_routes;              /* slots ever used (free ones reused) */
	struct rte_lpm *lpm;             /* lengths 1-32 */
	/* 0.0.0.0/0 (rte_lpm has no /0); changed at run time (atomic) */
	uint16_t default_route;
	struct rte_hash *neigh_hash;
	struct sp_neigh neigh[SP_MAX_NEIGH];
	uint32_t n_neigh;               /* slots ever used (free ones reused) */
	uint32_t neigh_entries;         /* entries in the table */
	struct sp_pool *pools[SP_MAX_POOLS];
	unsigned n_pools;
	struct qns *qns;
	struct rte_rcu_qsbr *rcu;
	struct sp_runtime *rt;
	uint32_t timeout_s[SP_TO_MAX];
	uint8_t filtering[SP_PI_MAX];
	uint32_t ports_per_host;
	uint32_t sessions_per_host;
	bool icmp_on_exhaustion;
	uint32_t icmp_rate;
	uint32_t icmp_burst;
	uint8_t after_packets;          /* `offload after_packets N` */
	bool learn;                     /* `offload learn on` */
	/* `offload lease KIND class N seconds S`: each kind's class
	 * (SP_LEARN_NONE: not tagged), each class's seconds (0: unused) */
	uint8_t lease_class[SP_TO_MAX];
	uint32_t class_s[SP_LEARN_CLASSES];
	/* learn mode's quiet period (control/learn_quiet.h): on until
	 * quiet_until_ms (sp_now_ms) */
	bool learn_quiet;
	uint32_t quiet_until_ms;
	/* --state: every session of the predecessor's file was taken over
	 * (persist/session_store.c) */
	bool state_whole;

	/* data path */
	struct sp_rss rss;
	bool hw_rss;
	bool running;                   /* workers launched */
	/* This process's run, as the session stream's `synced` tells it: a
	 * subscriber that sees another value knows the instance restarted
	 * (and whatever it did not take over is gone from it). */
	uint64_t run_id;
	struct sp_worker *workers[SP_MAX_WORKERS];
	struct rte_ring *tx_rings[SP_MAX_IFACES];
	struct rte_ring *msg_ring;
	struct rte_mempool *mbuf_pool;
	int meta_offset;                /* mbuf dynfield: SP_META_* */
	uint64_t tsc_hz;
	uint64_t tsc0;
	uint64_t open_hist_bound_tsc[SP_OPEN_HIST_N];   /* open_hist.h */
	int quit;
};

extern struct sp_app sp;

/* The mbuf dynfield: flags, and what a hairpinned packet's first pass
 * rewrote, so that its second pass can put it back as it arrived. */
struct sp_mbuf_meta {
	uint32_t flags;                 /* SP_META_* */
	rte_be32_t hp_src_addr;         /* hairpin: the sender's own source */
	rte_be16_t hp_src_port;         /* ... and port (ICMP: identifier) */
	rte_be16_t frag_sport;          /* SP_META_FRAG: the datagram's ports, */
	rte_be16_t frag_dport;          /* from the worker that saw its first */
	uint16_t iface;                 /* the interface it arrived on */
};

#define SP_META_HANDED 0x1              /* passed between workers once */
#define SP_META_OUTSIDE 0x2             /* hairpin: process as from outside */
#define SP_META_FRAG 0x4                /* a later fragment with its ports */
#define SP_META_RELAYED 0x8             /* from the outside link, passed on by a
					 * peer instance (peer.h): never again */

static inline struct sp_mbuf_meta *
sp_mbuf_meta(struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, sp.meta_offset, struct sp_mbuf_meta *);
}

static inline uint32_t *
sp_meta(struct rte_mbuf *m)
{
	return &sp_mbuf_meta(m)->flags;
}

/* The interface m arrived on (an 802.1Q sub-interface's, not its port's). */
static inline uint16_t
sp_in_iface(struct rte_mbuf *m)
{
	return sp_mbuf_meta(m)->iface;
}

static inline uint32_t
sp_now_ms(void)
{
	return (uint32_t)((rte_rdtsc() - sp.tsc0) * 1000 / sp.tsc_hz);
}

/* How long before now a stamp of sp_now_ms() was taken, 0 for one taken
 * after now was read: a worker stamps while a control thread walks what it
 * stamped, or on a core whose TSC runs a little ahead, and the unsigned
 * difference would read 49 days. */
static inline uint32_t
sp_age_ms(uint32_t now, uint32_t stamp)
{
	int32_t age = (int32_t)(now - stamp);

	return age > 0 ? (uint32_t)age : 0;
}

static inline const struct sp_runtime *
sp_runtime_get(void)
{
	return __atomic_load_n(&sp.rt, __ATOMIC_ACQUIRE);
}

/* The index of the interface named name, or -1. */
static inline int
sp_iface_by_name(const char *name)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++)
		if (strcmp(sp.ifaces[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Whether interface i is the first on its DPDK port (which is set up,
 * polled and closed once, for all its 802.1Q sub-interfaces). */
static inline bool
sp_port_first_iface(unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (sp.ifaces[j].port == sp.ifaces[i].port)
			return false;
	return true;
}

#define SP_INC(w, name) SP_COUNT_ADD((w)->cnt[SP_CNT_##name], 1)
#define SP_ADD(w, name, n) SP_COUNT_ADD((w)->cnt[SP_CNT_##name], (n))

/* Drops m, counted under counter (enum sp_counter). */
static inline void
sp_drop(struct sp_worker *w, struct rte_mbuf *m, unsigned counter)
{
	SP_COUNT_ADD(w->cnt[counter], 1);
	rte_pktmbuf_free(m);
}

/* sp.c */

/* The platform the NAT core runs on here (core/env.h): DPDK's heap on the
 * given NUMA node, and rte_rand (seeded by --seed). */
extern const struct sp_env sp_dpdk_env;

/* The shared state the core of every worker reads (core/table.h). */
struct sp_nat_shared sp_nat_shared(void);

/* Readers of the workers (control thread): a counter summed over them,
 * and their sessions. */
uint64_t sp_counter_sum(enum sp_counter c);
uint32_t sp_session_count(void);

#endif /* SP_H */
