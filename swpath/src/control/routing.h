/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Neighbours, as the control thread keeps them: `neighbor` at start-up and
 * at run time, and the neighbour table the workers read without locks,
 * kept from their messages (ARP learned, next hops to resolve). The routes
 * are control/routes.h.
 */
#ifndef SP_ROUTING_H
#define SP_ROUTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/cmd.h"
#include "util/buf.h"

int sp_apply_neighbor(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		      size_t errlen);
/* `neighbor del`: a configured neighbour removed at run time (`quicknat
 * reload` of a file without it); its next packets ask for it by ARP. */
int sp_apply_neighbor_del(const struct sp_cmd *cmd, struct sp_buf *out,
			  char *err, size_t errlen);
/* `neighbors`: the table as JSON rows, `ip neigh`'s view: [{"address",
 * "interface", "mac" (null while unresolved), "state" (configured,
 * reachable, stale, probe, incomplete), "confirmed_s" (since an ARP packet
 * last gave its MAC; null for a configured or unresolved one), "probes"}]. */
int sp_apply_neighbors(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		       size_t errlen);

/* Adds or updates a neighbour (control thread only); its index, or
 * -ENOSPC (every slot in use, or waiting for the workers' grace period). */
int sp_neigh_set(uint32_t addr, uint16_t iface, const uint8_t mac[6],
		 bool is_static);

/* Applies what the workers reported: ARP learned, next hops to resolve. */
void sp_neigh_messages(void);

/*
 * RFC 1122 sec. 2.3.2.1: ARP MUST flush out-of-date entries; this is its
 * unicast poll, for the entries in use (Linux's STALE, DELAY, PROBE). A
 * learned neighbour not heard from (an ARP packet from it, request or
 * reply, RFC 826's merge) for sp.neigh_reachable_ms is stale; one that
 * workers send to after that (SP_NEIGH_USED) is asked by a request to its
 * MAC alone, at most once a second, and used meanwhile; after three
 * unanswered it is forgotten, and the next packet to it asks anew by
 * broadcast (a host that changed its MAC and said nothing is found
 * again). A neighbour nobody sends to is not asked about.
 *
 * Entries nobody needs leave the table, so that it does not fill for good
 * (Linux's garbage collection): one that never answered, or was
 * forgotten, and is not asked for within 3 s; and, from a table more
 * than a quarter full, a stale one nobody sent to for
 * sp.neigh_reachable_ms more. Their slots are reused once no worker can
 * still be looking at them. Configured neighbours stay and are never
 * polled. Each control round.
 */
void sp_neigh_age(uint32_t now);

#endif /* SP_ROUTING_H */
