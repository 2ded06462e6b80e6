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

struct sp_cmd_line;

/*
 * Keeps the command file's lines as written back: `startup` answers them,
 * so that `quicknat reload` can refuse a file that changes what only a
 * restart changes (which lines those are is the CLI's one list,
 * config/commands.py RESTART_ONLY), as the controller does on the P4
 * path, instead of applying the rest and saying nothing of it.
 * sp_startup_free() at exit.
 */
void sp_startup_keep(const struct sp_cmd_line *cmds, size_t n);
void sp_startup_free(void);

#endif /* SP_CONTROL_H */
