/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread (the main lcore): applies commands (start-up file and
 * control socket share sp_apply), owns every write to shared state, serves
 * the control socket, maintains the neighbour table from the workers'
 * messages and frees retired memory once RCU says no worker can see it.
 * It never blocks a worker: rules change through QNS (lock-free readers)
 * and the run-time snapshot is swapped with one atomic store.
 */
#ifndef SP_CONTROL_H
#define SP_CONTROL_H

#include <stdbool.h>
#include <stddef.h>

#include "control/cmd.h"
#include "control/format.h"

/*
 * Applies one command. Answers (rules, sessions, stats) go to out.
 * Returns 0, or -1 with a message in err.
 */
int sp_apply(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	     size_t errlen);

/* Whether a verb answers in JSON (the status-socket form). */
bool sp_verb_is_json(enum sp_verb verb);

/* Routes: connected prefixes of the interfaces plus the configured ones. */
int sp_routes_build(char *err, size_t errlen);

/* Publishes a new run-time snapshot from the current settings and rules. */
int sp_runtime_publish(void);

/* QNS reclaim callback: free ptr after every worker's next quiescent state. */
void sp_rcu_defer(void *ctx, void *ptr);
/* Frees what RCU says is no longer visible; wait: block until all is. */
void sp_rcu_reclaim(bool wait);

/* Adds or updates a neighbour (control thread only). */
int sp_neigh_set(uint32_t addr, uint16_t iface, const uint8_t mac[6],
		 bool is_static);

/* Applies what the workers reported: ARP learned, next hops to resolve. */
void sp_neigh_messages(void);

/* ctl_socket.c */
int sp_control_listen(const char *path, char *err, size_t errlen);
/* One round of control work: socket, worker messages, RCU reclaim. */
void sp_control_poll(int timeout_ms);
void sp_control_close(void);

#endif /* SP_CONTROL_H */
