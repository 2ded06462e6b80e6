/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness over swpath's command language (control/cmd.h): the
 * lines of a --commands file, of the control socket (an operator's
 * `quicknat` and the offload manager's `session` lines) and of a state
 * file's commands all go through sp_cmd_parse. For any input line it must
 * either refuse it with a message or give a command whose line
 * (sp_cmd_format) parses again to a command with the same line: what
 * swpath writes back (`rules`, the audit log, `routes`) is what it would
 * read. ASan and UBSan watch both for reads past the line, overflows in
 * the numbers and the like.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/cmd.h"

#define LINE_MAX_BYTES 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *
line_of(const struct sp_cmd *cmd)
{
	struct sp_buf b = { 0 };

	sp_cmd_format(cmd, &b);
	sp_buf_printf(&b, "%c", '\0');
	return b.p;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[LINE_MAX_BYTES + 1];
	struct sp_cmd cmd, again;
	char err[512], err2[512];
	char *first, *second;

	/* one line, as the readers give it: no newline, NUL-terminated */
	if (size > LINE_MAX_BYTES)
		size = LINE_MAX_BYTES;
	memcpy(line, data, size);
	line[size] = '\0';
	line[strcspn(line, "\n")] = '\0';

	err[0] = '\0';
	if (sp_cmd_parse(line, &cmd, err, sizeof(err)) != 0) {
		if (err[0] == '\0') {
			fprintf(stderr, "refused without a message: '%s'\n", line);
			abort();
		}
		return 0;
	}
	if (cmd.verb == SP_CMD_NONE)
		return 0;
	first = line_of(&cmd);
	if (sp_cmd_parse(first, &again, err2, sizeof(err2)) != 0) {
		fprintf(stderr, "'%s' wrote '%s', which it refuses: %s\n", line,
			first, err2);
		abort();
	}
	second = line_of(&again);
	if (strcmp(first, second) != 0) {
		fprintf(stderr, "'%s' wrote '%s', read back as '%s'\n", line,
			first, second);
		abort();
	}
	free(first);
	free(second);
	return 0;
}
