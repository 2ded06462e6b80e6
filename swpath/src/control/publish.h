/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread's side of what workers read without locks: the
 * run-time snapshot (core/runtime.h), rebuilt and published whole at each
 * change, and the memory retired from it and from QNS, freed once RCU
 * (rte_rcu_qsbr) says no worker can still see it.
 */
#ifndef SP_PUBLISH_H
#define SP_PUBLISH_H

#include <stdbool.h>

#include "core/runtime.h"

/* A snapshot of the current settings and rules (the NAT-owned ranges from
 * the pools and the DNAT rules), or NULL (no memory). */
struct sp_runtime *sp_runtime_build(void);

/* Publishes a new run-time snapshot from the current settings and rules. */
int sp_runtime_publish(void);

/* Publishes a new snapshot when the workers run (before, the one made at
 * start-up will have the change). 0 or -1. */
int sp_runtime_changed(void);

/* QNS reclaim callback: free ptr after every worker's next quiescent state. */
void sp_rcu_defer(void *ctx, void *ptr);
/* Frees what RCU says is no longer visible; wait: block until all is. */
void sp_rcu_reclaim(bool wait);

#endif /* SP_PUBLISH_H */
