/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Neighbours (routing.h). Control thread only.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "control/routing.h"
#include "dataplane/l2.h"
#include "dataplane/sp.h"
#include "util/log.h"
#include "util/text.h"

/* Unicast polls of a neighbour not heard from, a second apart, before it
 * is forgotten (sp_neigh_age). */
#define NEIGH_PROBES 3
#define NEIGH_PROBE_MS 1000u
/* An entry never resolved, or forgotten, and not asked for this long is
 * removed: three broadcast requests' worth (neigh_resolve asks once a
 * second while packets wait for it). */
#define NEIGH_FAILED_MS 3000u
/* Learned neighbours nobody sends to are removed only from a table fuller
 * than this, as Linux collects none below gc_thresh1: a site's gateway,
 * idle for an hour, is still resolved when its next flow starts (whose
 * first packet would otherwise wait an ARP round, fwd.h sp_unres_hold). */
#define NEIGH_GC_ABOVE (SP_MAX_NEIGH / 4)

/* -- the neighbour table's slots ------------------------------------------
 *
 * Workers keep neighbour indexes (in sessions, for the last gateway) and
 * check before each use that the slot still holds their address
 * (dataplane/fwd.h), so a forgotten neighbour's slot can be reused: once
 * no worker can still be inside a lookup that found it. Its hash key
 * position and its slot wait for a grace period of the workers' RCU
 * (rte_rcu_qsbr: a worker reports a quiescent state between bursts). */

struct neigh_gone {
	uint64_t token;                 /* rte_rcu_qsbr_start() at removal */
	int32_t pos;                    /* its key's position in neigh_hash */
	uint16_t slot;
};

/* FIFO of removed entries (tokens only grow), and the slots free again */
static struct neigh_gone gone[SP_MAX_NEIGH];
static uint32_t gone_head, n_gone;
static uint16_t free_slot[SP_MAX_NEIGH];
static uint32_t n_free;
/* said once until a slot is free again (neigh_table_full) */
static bool full_told;

/* Slots and key positions whose grace period is over become free. */
static void
neigh_reclaim(void)
{
	while (n_gone != 0) {
		struct neigh_gone *g = &gone[gone_head];

		if (sp.running &&
		    rte_rcu_qsbr_check(sp.rcu, g->token, false) != 1)
			break;
		rte_hash_free_key_with_position(sp.neigh_hash, g->pos);
		free_slot[n_free++] = g->slot;
		gone_head = (gone_head + 1) % SP_MAX_NEIGH;
		n_gone--;
		full_told = false;
	}
}

/* Takes entry i out of the table: workers that still hold its index see
 * it invalid at once, and not theirs once the slot is reused. */
static void
neigh_remove(uint32_t i)
{
	struct sp_neigh *n = &sp.neigh[i];
	struct sp_neigh_key key = { .addr = n->addr, .iface = n->iface };
	int32_t pos;

	n->live = 0;
	__atomic_store_n(&n->mac, 0, __ATOMIC_RELEASE);
	pos = rte_hash_del_key(sp.neigh_hash, &key);
	if (pos < 0)
		return;
	gone[(gone_head + n_gone) % SP_MAX_NEIGH] = (struct neigh_gone){
		.token = sp.running ? rte_rcu_qsbr_start(sp.rcu) : 0,
		.pos = pos,
		.slot = (uint16_t)i,
	};
	n_gone++;
	sp.neigh_entries--;
}

int
sp_neigh_set(uint32_t addr, uint16_t iface, const uint8_t mac[6],
	     bool is_static)
{
	struct sp_neigh_key key = { .addr = addr, .iface = iface };
	uint64_t v = 0;
	void *data;
	uint32_t i;

	if (mac != NULL) {
		memcpy(&v, mac, RTE_ETHER_ADDR_LEN);
		v |= SP_NEIGH_VALID | (is_static ? SP_NEIGH_STATIC : 0);
	}
	if (rte_hash_lookup_data(sp.neigh_hash, &key, &data) >= 0) {
		struct sp_neigh *n = &sp.neigh[(uintptr_t)data];

		/* learning never overrides a configured neighbour */
		if (mac != NULL && (is_static || !(n->mac & SP_NEIGH_STATIC))) {
			/* (a worker's SP_NEIGH_USED may go: it comes back) */
			__atomic_store_n(&n->mac, v, __ATOMIC_RELEASE);
			n->confirmed = sp_now_ms();
			n->stale = 0;
			n->probes = 0;
		}
		return (int)(uintptr_t)data;
	}
	neigh_reclaim();
	if (n_free != 0)
		i = free_slot[--n_free];
	else if (sp.n_neigh < SP_MAX_NEIGH)
		i = sp.n_neigh++;
	else
		return -ENOSPC;
	sp.neigh[i].addr = addr;
	sp.neigh[i].iface = iface;
	sp.neigh[i].last_request = 0;
	sp.neigh[i].confirmed = sp_now_ms();
	sp.neigh[i].stale = 0;
	sp.neigh[i].probes = 0;
	sp.neigh[i].live = 1;
	/* a worker holding this slot's old index reads the MAC word first
	 * (acquire), so it sees the new address and lets the slot be */
	__atomic_store_n(&sp.neigh[i].mac, v, __ATOMIC_RELEASE);
	/* the lock-free hash publishes the entry with release semantics */
	if (rte_hash_add_key_data(sp.neigh_hash, &key, (void *)(uintptr_t)i) < 0) {
		sp.neigh[i].live = 0;
		free_slot[n_free++] = (uint16_t)i;
		return -ENOSPC;
	}
	sp.neigh_entries++;
	return (int)i;
}

int
sp_apply_neighbor(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		  size_t errlen)
{
	const struct sp_cmd_neighbor *c = &cmd->u.neigh;
	char ip[16];
	int iface = sp_iface_by_name(c->dev);

	if (iface < 0)
		return sp_fail(err, errlen, "neighbor %s: unknown interface '%s'",
			    sp_ip_str(c->addr, ip), c->dev);
	if (sp_neigh_set(c->addr, (uint16_t)iface, c->mac, true) < 0)
		return sp_fail(err, errlen, "neighbor %s: table full (%d)",
			    sp_ip_str(c->addr, ip), SP_MAX_NEIGH);
	return 0;
}

int
sp_apply_neighbor_del(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		      size_t errlen)
{
	const struct sp_cmd_neighbor *c = &cmd->u.neigh;
	int iface = sp_iface_by_name(c->dev);
	struct sp_neigh_key key = { .addr = c->addr };
	void *data;
	char ip[16];

	if (iface < 0)
		return sp_fail(err, errlen, "neighbor %s: unknown interface '%s'",
			    sp_ip_str(c->addr, ip), c->dev);
	key.iface = (uint16_t)iface;
	if (rte_hash_lookup_data(sp.neigh_hash, &key, &data) < 0 ||
	    !(sp.neigh[(uintptr_t)data].mac & SP_NEIGH_STATIC))
		return sp_fail(err, errlen, "neighbor %s: not configured on %s",
			    sp_ip_str(c->addr, ip), c->dev);
	/* workers that cached its index see the slot empty (fwd.h
	 * sp_neigh_is) and look it up anew */
	neigh_remove((uint32_t)(uintptr_t)data);
	return 0;
}

/* Linux's names for the states this table has (ip-neighbour(8)). */
static const char *
neigh_state(const struct sp_neigh *n, uint64_t v)
{
	if (v & SP_NEIGH_STATIC)
		return "configured";
	if (!(v & SP_NEIGH_VALID))
		return "incomplete";
	if (!n->stale)
		return "reachable";
	return n->probes ? "probe" : "stale";
}

int
sp_apply_neighbors(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		   size_t errlen)
{
	uint32_t now = sp_now_ms();
	unsigned rows = 0;

	sp_buf_printf(out, "[");
	for (uint32_t i = 0; i < sp.n_neigh; i++) {
		const struct sp_neigh *n = &sp.neigh[i];
		uint64_t v = __atomic_load_n(&n->mac, __ATOMIC_RELAXED);
		const uint8_t *m = (const uint8_t *)&v;
		char ip[16], mac[18];

		if (!n->live)
			continue;
		sp_buf_printf(out, "%s\n {\"address\": \"%s\", \"interface\": \"%s\", ",
			      rows++ ? "," : "", sp_ip_str(n->addr, ip),
			      sp.ifaces[n->iface].name);
		if (v & SP_NEIGH_VALID)
			sp_buf_printf(out, "\"mac\": \"%s\", ", sp_mac_str(m, mac));
		else
			sp_buf_printf(out, "\"mac\": null, ");
		sp_buf_printf(out, "\"state\": \"%s\", ", neigh_state(n, v));
		if (!(v & SP_NEIGH_VALID) || (v & SP_NEIGH_STATIC))
			sp_buf_printf(out, "\"confirmed_s\": null, ");
		else
			sp_buf_printf(out, "\"confirmed_s\": %.1f, ",
				      (double)(now - n->confirmed) / 1000.0);
		sp_buf_printf(out, "\"probes\": %u}", n->probes);
	}
	sp_buf_printf(out, "%s]\n", rows ? "\n" : "");
	return 0;
}

/* -- worker messages: the neighbour table --------------------------------- */

/* A neighbour the table has no room for (learned, or to resolve): its
 * packets are dropped, counted drop_no_neighbor, until ageing frees a
 * slot (sp_neigh_age); said once until then. */
static void
neigh_table_full(uint32_t addr, uint16_t iface)
{
	char ip[16];

	if (full_told)
		return;
	full_told = true;
	sp_log("error", "neighbor table full (%d entries): %s on %s and any further neighbour are not resolved until unused entries are forgotten; their packets are dropped (drop_no_neighbor)",
	       SP_MAX_NEIGH, sp_ip_str(addr, ip), sp.ifaces[iface].name);
}

/* An ARP request for n, broadcast or to mac alone; worker 0 sends it. */
static void
neigh_ask(struct sp_neigh *n, const struct rte_ether_addr *mac, uint32_t now)
{
	struct rte_mbuf *m = sp_arp_request(n->iface, n->addr, mac);

	n->last_request = now ? now : 1;
	if (m != NULL && rte_ring_mp_enqueue(sp.workers[0]->ctl_ring, m) != 0)
		rte_pktmbuf_free(m);
}

static void
neigh_resolve(uint32_t addr, uint16_t iface)
{
	int i = sp_neigh_set(addr, iface, NULL, false);
	uint32_t now = sp_now_ms();
	struct sp_neigh *n;

	if (i < 0) {
		neigh_table_full(addr, iface);
		return;
	}
	n = &sp.neigh[i];
	if ((n->mac & SP_NEIGH_VALID) ||
	    (n->last_request != 0 && now - n->last_request < NEIGH_PROBE_MS))
		return;
	neigh_ask(n, NULL, now);
}

void
sp_neigh_age(uint32_t now)
{
	static uint32_t last;

	/* a tenth of the polls' spacing is fine enough; the table's 4,096
	 * entries are not walked every 10 ms control round */
	if (now - last < NEIGH_PROBE_MS / 10)
		return;
	last = now;
	neigh_reclaim();
	for (uint32_t i = 0; i < sp.n_neigh; i++) {
		struct sp_neigh *n = &sp.neigh[i];
		uint64_t v = __atomic_load_n(&n->mac, __ATOMIC_RELAXED);
		struct rte_ether_addr mac;
		char ip[16];

		if (!n->live || (v & SP_NEIGH_STATIC))
			continue;
		if (!(v & SP_NEIGH_VALID)) {
			/* RFC 1122 sec. 2.3.2.1: nobody asked for it for
			 * NEIGH_FAILED_MS after a request went unanswered
			 * (Linux's FAILED, then its garbage collection) */
			uint32_t asked = n->last_request ? n->last_request :
							   n->confirmed;

			if (now - asked >= NEIGH_FAILED_MS)
				neigh_remove(i);
			continue;
		}
		if (sp.neigh_reachable_ms == 0 ||
		    now - n->confirmed < sp.neigh_reachable_ms)
			continue;
		if (!n->stale) {
			/* from now on, a packet sent to it asks for a poll */
			n->stale = 1;
			n->idle_since = now;
			__atomic_fetch_and(&n->mac, ~SP_NEIGH_USED,
					   __ATOMIC_RELAXED);
			continue;
		}
		if (!(v & SP_NEIGH_USED)) {
			/* stale, and sent nothing for as long again: its
			 * slot goes to neighbours in use */
			if (sp.neigh_entries > NEIGH_GC_ABOVE &&
			    now - n->idle_since >= sp.neigh_reachable_ms)
				neigh_remove(i);
			continue;
		}
		n->idle_since = now;
		if (n->probes != 0 && now - n->last_request < NEIGH_PROBE_MS)
			continue;
		if (n->probes == NEIGH_PROBES) {
			/* workers see it invalid and ask anew, by broadcast */
			__atomic_store_n(&n->mac, 0, __ATOMIC_RELAXED);
			n->stale = 0;
			n->probes = 0;
			sp_log("info", "neighbor %s on %s: no answer to %u polls; forgotten, asked anew when next needed",
			       sp_ip_str(n->addr, ip), sp.ifaces[n->iface].name,
			       NEIGH_PROBES);
			continue;
		}
		memcpy(&mac, &v, RTE_ETHER_ADDR_LEN);
		neigh_ask(n, &mac, now);
		n->probes++;
		/* the next poll only if it is still sent to */
		__atomic_fetch_and(&n->mac, ~SP_NEIGH_USED, __ATOMIC_RELAXED);
	}
}

/* -- worker messages: address conflicts ----------------------------------
 *
 * RFC 5227 sec. 2.4 (c): a router does not give up an address another host
 * claims; it defends it with one ARP announcement per DEFEND_INTERVAL, so
 * that the hosts that took the other MAC take ours back, and two defenders
 * do not flood the link. The log line is said as often. */

#define DEFEND_INTERVAL_MS 10000u
/* Addresses defended in one interval: beyond them (a flood of claims of
 * many pool addresses) conflicts are counted, not answered or logged. */
#define DEFENDED_MAX 16

static struct {
	uint32_t addr;
	uint16_t iface;
	uint32_t at;        /* sp_now_ms() of its announcement; 0: free */
} defended[DEFENDED_MAX];

/* addr's slot in defended[], or the slot to take for it: a free one, or
 * the one defended longest ago. */
static unsigned
defended_slot(uint32_t addr, uint16_t iface, uint32_t now)
{
	unsigned oldest = 0;

	for (unsigned i = 0; i < DEFENDED_MAX; i++) {
		if (defended[i].at != 0 && defended[i].addr == addr &&
		    defended[i].iface == iface)
			return i;
		if (defended[oldest].at != 0 &&
		    (defended[i].at == 0 ||
		     now - defended[i].at > now - defended[oldest].at))
			oldest = i;
	}
	return oldest;
}

static void
address_conflict(const struct sp_msg *msg)
{
	const struct sp_iface *ifc = &sp.ifaces[msg->iface];
	uint32_t now = sp_now_ms() | 1;
	unsigned i = defended_slot(msg->addr, msg->iface, now);
	struct rte_mbuf *m;
	char ip[16], mac[18];

	/* defended lately: this address, or DEFENDED_MAX others */
	if (defended[i].at != 0 && now - defended[i].at < DEFEND_INTERVAL_MS)
		return;
	defended[i].addr = msg->addr;
	defended[i].iface = msg->iface;
	defended[i].at = now;
	sp_log("warning", "address conflict: %s, %s on %s, is claimed by %s; defended with an ARP announcement (RFC 5227), at most once per %u s",
	       sp_ip_str(msg->addr, ip),
	       ifc->has_addr && msg->addr == ifc->addr ? "its address" :
							 "a NAT-owned address",
	       ifc->name, sp_mac_str(msg->mac, mac), DEFEND_INTERVAL_MS / 1000);
	m = sp_arp_announce(msg->iface, msg->addr);
	if (m != NULL && rte_ring_mp_enqueue(sp.workers[0]->ctl_ring, m) != 0)
		rte_pktmbuf_free(m);
}

void
sp_neigh_messages(void)
{
	struct sp_msg msgs[64];
	unsigned n;

	do {
		n = rte_ring_sc_dequeue_burst_elem(sp.msg_ring, msgs,
						   sizeof(msgs[0]), 64, NULL);
		for (unsigned i = 0; i < n; i++) {
			if (msgs[i].type == SP_MSG_LEARN &&
			    sp_neigh_set(msgs[i].addr, msgs[i].iface,
					 msgs[i].mac, false) < 0)
				neigh_table_full(msgs[i].addr, msgs[i].iface);
			else if (msgs[i].type == SP_MSG_RESOLVE)
				neigh_resolve(msgs[i].addr, msgs[i].iface);
			else if (msgs[i].type == SP_MSG_CONFLICT)
				address_conflict(&msgs[i]);
		}
	} while (n == 64);
}
