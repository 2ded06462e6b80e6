/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a worker's NAT core reports (core/observer.h): the state file's
 * copy of each session (session_store.h), the session stream
 * (session_stream.h) and the mapping event ring (events.h). The core knows
 * none of them; this is the one place they meet it.
 */
#ifndef SP_SINK_H
#define SP_SINK_H

#include "core/observer.h"
#include "dataplane/sp.h"

/* The observer for worker w's core (its rings and store as they are then
 * and later: set them before or after, the observer reads them). */
struct sp_nat_observer sp_sink_observer(struct sp_worker *w);

#endif /* SP_SINK_H */
