/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread (the main lcore): applies commands (start-up file and
 * control socket share sp_apply), owns every write to shared state, serves
 * the control socket (ctl_socket.h), maintains the neighbour table from the
 * workers' messages (routing.h) and frees retired memory once RCU says no
 * worker can see it (runtime.h). It never blocks a worker: rules change
 * through QNS (lock-free readers) and the run-time snapshot is swapped with
 * one atomic store.
 */
#ifndef SP_CONTROL_H
#define SP_CONTROL_H

#include <stddef.h>

#include "control/cmd.h"
#include "util/buf.h"

/*
 * Applies one command. Answers (rules, sessions, stats) go to out.
 * Returns 0, or -1 with a message in err.
 */
int sp_apply(const struct sp_cmd *cmd, struct sp_buf *out, char *err,
	     size_t errlen);

#endif /* SP_CONTROL_H */
