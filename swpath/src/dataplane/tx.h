/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Buffered TX, the last step of every output (fwd.h's routed packets,
 * ip_fragment.c's fragments, l2.c's answers): a frame is queued on the
 * worker's own TX queue of its interface (rte_eth_tx_buffer) or, for a
 * port with fewer TX queues than workers, on the ring worker 0 sends from
 * (struct sp_txq), and drained when a burst is full or on the worker's TSC
 * timer. An 802.1Q sub-interface's frames are tagged here.
 */
#ifndef SP_DATAPLANE_TX_H
#define SP_DATAPLANE_TX_H

#include <rte_ethdev.h>
#include <rte_ring.h>

#include "dataplane/sp.h"
#include "dataplane/vlan.h"

static inline void
sp_txq_flush_ring(struct sp_worker *w, struct sp_txq *q)
{
	unsigned sent = rte_ring_mp_enqueue_burst(q->ring, (void **)q->pend,
						  q->n, NULL);

	if (unlikely(sent < q->n)) {
		SP_ADD(w, drop_ring_full, q->n - sent);
		rte_pktmbuf_free_bulk(&q->pend[sent], q->n - sent);
	}
	q->n = 0;
}

/* Queues frame m, tagged already if it must be, on interface iface's
 * queue. */
static inline void
sp_tx_frame(struct sp_worker *w, uint16_t iface, struct rte_mbuf *m)
{
	struct sp_txq *q = &w->tx[iface];

	SP_INC(w, tx);
	if (q->buf != NULL) {
		rte_eth_tx_buffer(q->port, q->queue, q->buf, m);
		return;
	}
	q->pend[q->n++] = m;
	if (q->n == SP_BURST)
		sp_txq_flush_ring(w, q);
}

/* Queues m for output on interface iface. */
static inline void
sp_tx(struct sp_worker *w, uint16_t iface, struct rte_mbuf *m)
{
	if (unlikely(sp.ifaces[iface].vlan != 0) &&
	    unlikely(sp_vlan_tag(&sp.ifaces[iface], m) < 0)) {
		sp_drop(w, m, SP_CNT_drop_slow_path_tag);
		return;
	}
	sp_tx_frame(w, iface, m);
}

static inline void
sp_tx_flush_all(struct sp_worker *w)
{
	for (unsigned i = 0; i < sp.n_ifaces; i++) {
		struct sp_txq *q = &w->tx[i];

		if (q->buf != NULL)
			rte_eth_tx_buffer_flush(q->port, q->queue, q->buf);
		else if (q->n != 0)
			sp_txq_flush_ring(w, q);
	}
}

#endif /* SP_DATAPLANE_TX_H */
