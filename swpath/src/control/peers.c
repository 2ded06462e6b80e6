/* SPDX-License-Identifier: Apache-2.0 */
/* The `peer` commands and the peers' set-up (peers.h). Start-up only. */
#include "control/peers.h"
#include "dataplane/fwd.h"
#include "dataplane/peer.h"

int
sp_apply_peer(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	      size_t errlen)
{
	const struct sp_cmd_peer *c = &cmd->u.peer;

	if (sp_peers.n == SP_MAX_PEERS)
		return sp_fail(err, errlen, "peer: more than %d instances",
			       SP_MAX_PEERS);
	for (unsigned i = 0; i < sp_peers.n; i++) {
		const struct sp_peer *o = &sp_peers.p[i];

		/* each has two: vid and vid + 1 */
		if (o->vid == c->vid || o->vid + 1 == c->vid ||
		    c->vid + 1 == o->vid)
			return sp_fail(err, errlen,
				       "peer vid %u: overlaps vid %u (each instance has two, V and V + 1)",
				       c->vid, o->vid);
		if (c->port_min <= o->port_max && o->port_min <= c->port_max)
			return sp_fail(err, errlen,
				       "peer vid %u: ports %u-%u overlap those of vid %u (%u-%u); each instance owns its own block",
				       c->vid, c->port_min, c->port_max, o->vid,
				       o->port_min, o->port_max);
	}
	if (c->self && sp_peers.has_self)
		return sp_fail(err, errlen,
			       "peer vid %u: a second 'self' (vid %u is)",
			       c->vid, sp_peers.p[sp_peers.self].vid);
	if (c->is_default && sp_peers.has_default)
		return sp_fail(err, errlen,
			       "peer vid %u: a second 'default' (vid %u is)",
			       c->vid, sp_peers.p[sp_peers.deflt].vid);
	if (c->self) {
		sp_peers.self = sp_peers.n;
		sp_peers.has_self = true;
	}
	if (c->is_default) {
		sp_peers.deflt = sp_peers.n;
		sp_peers.has_default = true;
	}
	sp_peers.p[sp_peers.n++] = (struct sp_peer){
		.vid = c->vid, .port_min = c->port_min,
		.port_max = c->port_max,
	};
	return 0;
}

int
sp_peers_setup(char *err, size_t errlen)
{
	int iface = -1;

	if (sp_peers.n == 0)
		return 0;
	if (!sp_peers.has_self)
		return sp_fail(err, errlen,
			       "peer: none is 'self' (which instance is this one?)");
	for (unsigned i = 0; i < sp.n_ifaces && iface < 0; i++)
		if (sp.ifaces[i].slow_path &&
		    sp.ifaces[i].zone == SP_ZONE_OUTSIDE)
			iface = (int)i;
	if (iface < 0)
		return sp_fail(err, errlen,
			       "peer: needs an outside interface with slow_path true (peers are reached through the switch)");
	sp_peers.iface = (uint16_t)iface;
	sp_peers.neigh = SP_NEIGH_NONE;
	for (unsigned r = 0; r < sp.n_routes; r++)
		if (sp.routes[r].iface == iface && sp.routes[r].has_via)
			sp_peers.neigh = sp_neigh_find(sp.routes[r].via,
						       (uint16_t)iface);
	if (sp_peers.neigh == SP_NEIGH_NONE)
		return sp_fail(err, errlen,
			       "peer: interface %s needs a route via the switch and its neighbour entry",
			       sp.ifaces[iface].name);
	return 0;
}

