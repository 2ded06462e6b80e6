/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Routes and neighbours, as the control thread keeps them: `route` and
 * `neighbor` at start-up, the route table (rte_lpm, the interfaces'
 * connected prefixes added), and the neighbour table the workers read
 * without locks, kept from their messages (ARP learned, next hops to
 * resolve).
 */
#ifndef SP_ROUTING_H
#define SP_ROUTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/cmd.h"
#include "util/buf.h"

int sp_apply_route(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		   size_t errlen);
int sp_apply_neighbor(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		      size_t errlen);

/* Routes: connected prefixes of the interfaces plus the configured ones. */
int sp_routes_build(char *err, size_t errlen);

/* Adds or updates a neighbour (control thread only); its index, or
 * -ENOSPC. */
int sp_neigh_set(uint32_t addr, uint16_t iface, const uint8_t mac[6],
		 bool is_static);

/* Applies what the workers reported: ARP learned, next hops to resolve. */
void sp_neigh_messages(void);

#endif /* SP_ROUTING_H */
