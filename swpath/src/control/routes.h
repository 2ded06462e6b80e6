/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The route table, as the control thread keeps it: `route` lines at
 * start-up, the interfaces' connected prefixes, and `route` / `route del`
 * at run time (`quicknat reload`), changed under the workers without a
 * lock. Each route is a slot of sp.routes[]; rte_lpm (and sp.default_route
 * for 0.0.0.0/0) gives a destination's slot. A session caches its route's
 * slot with the slot's generation (core/session.h), so a route replaced or
 * deleted at run time, or narrowed by a new prefix, is looked up again by
 * every session that used it, at its next packet (dataplane/fwd.h
 * sp_session_route).
 */
#ifndef SP_ROUTES_H
#define SP_ROUTES_H

#include <stddef.h>

#include "control/cmd.h"
#include "util/buf.h"

/* `route PREFIX dev NAME [via A] [source A]`: at start-up, one more route;
 * at run time, the route for PREFIX added or replaced (as `ip route
 * replace`; the same route again changes nothing). */
int sp_apply_route(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		   size_t errlen);
/* `route del PREFIX`: the route for PREFIX removed at run time; an
 * interface's connected network it stood for comes back. */
int sp_apply_route_del(const struct sp_cmd *cmd, struct sp_buf *out,
		       char *err, size_t errlen);
/* `routes`: the table as JSON rows, `ip route`'s view: [{"prefix",
 * "interface", "via" (null: on link), "source" (null: the arrival
 * interface's address), "connected"}]. */
int sp_apply_routes(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		    size_t errlen);

/* The table the workers start with: the configured routes and each
 * interface's connected prefix that no route names. */
int sp_routes_build(char *err, size_t errlen);

#endif /* SP_ROUTES_H */
