/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The slow-path instances behind one switch (dataplane/peer.h), as the
 * `peer` commands describe them at start-up: checked (no overlapping VIDs
 * or port blocks, one `self`, one `default` at most) and, once the
 * interfaces, routes and neighbours are known, tied to the outside
 * slow-path sub-interface and the switch's MAC on it.
 */
#ifndef SP_PEERS_H
#define SP_PEERS_H

#include <stddef.h>

#include "control/cmd.h"
#include "util/buf.h"

/* `peer ...`: one instance, in the switch's order. */
int sp_apply_peer(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
		  size_t errlen);

/* After the interfaces, routes and neighbours: finds the sub-interface to
 * send by and the switch's MAC on it, and checks the list (one `self`). */
int sp_peers_setup(char *err, size_t errlen);

#endif /* SP_PEERS_H */
