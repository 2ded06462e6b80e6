/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The start-up command file (--commands FILE): every line parsed and
 * checked for what a file may hold, every problem reported, not only the
 * first, each as "FILE:LINE: message", so one run shows the user all there
 * is to fix (as the controller's configuration reader does).
 */
#ifndef SP_CMD_FILE_H
#define SP_CMD_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "control/cmd.h"
#include "util/buf.h"

struct sp_cmd_line {
	unsigned line;
	struct sp_cmd cmd;
};

/*
 * Reads f (named path in messages). On success returns the number of
 * commands and sets *cmds (malloc'ed; free() it); on problems returns -1,
 * with one line per problem in errors (each ending in '\n') and *cmds NULL.
 */
long sp_cmd_file_read(FILE *f, const char *path, struct sp_cmd_line **cmds,
		      struct sp_buf *errors);

#endif /* SP_CMD_FILE_H */
