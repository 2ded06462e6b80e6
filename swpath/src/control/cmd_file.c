/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "control/cmd_file.h"

struct file_state {
	const char *path;
	struct sp_buf *errors;
	unsigned n_errors;
	bool inside;
	bool outside;
	/* an interface line had a problem: its zone may be the one missing */
	bool interface_refused;
};

static void __attribute__((format(printf, 3, 4)))
problem(struct file_state *s, unsigned lineno, const char *fmt, ...)
{
	char message[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	if (lineno != 0)
		sp_buf_printf(s->errors, "%s:%u: %s\n", s->path, lineno, message);
	else
		sp_buf_printf(s->errors, "%s: %s\n", s->path, message);
	s->n_errors++;
}

/* One line: parsed, and a command a file may hold; false on a problem. */
static bool
check_line(struct file_state *s, unsigned lineno, const char *text,
	   struct sp_cmd *cmd)
{
	char err[512];

	if (sp_cmd_parse(text, cmd, err, sizeof(err)) < 0) {
		problem(s, lineno, "%s", err);
		s->interface_refused |=
			strncmp(text + strspn(text, " \t"), "interface", 9) == 0;
		return false;
	}
	if (cmd->verb == SP_CMD_NONE)
		return false;
	if (sp_cmd_when(cmd->verb) == SP_WHEN_RUNTIME) {
		problem(s, lineno, "'%s' is a run-time command",
			sp_cmd_verb_name(cmd->verb));
		return false;
	}
	if (cmd->verb == SP_CMD_INTERFACE) {
		s->inside |= cmd->u.iface.zone == SP_ZONE_INSIDE;
		s->outside |= cmd->u.iface.zone == SP_ZONE_OUTSIDE;
	}
	return true;
}

static int
append(struct sp_cmd_line **cmds, size_t *n, size_t *cap, unsigned lineno,
       const struct sp_cmd *cmd)
{
	if (*n == *cap) {
		size_t want = *cap ? 2 * *cap : 64;
		struct sp_cmd_line *grown = realloc(*cmds, want * sizeof(**cmds));

		if (grown == NULL)
			return -1;
		*cmds = grown;
		*cap = want;
	}
	(*cmds)[*n].line = lineno;
	(*cmds)[*n].cmd = *cmd;
	(*n)++;
	return 0;
}

long
sp_cmd_file_read(FILE *f, const char *path, struct sp_cmd_line **cmds,
		 struct sp_buf *errors)
{
	struct file_state s = { .path = path, .errors = errors };
	size_t n = 0, cap = 0, len = 0;
	char *text = NULL;
	unsigned lineno = 0;

	*cmds = NULL;
	while (getline(&text, &len, f) >= 0) {
		struct sp_cmd cmd;

		lineno++;
		if (!check_line(&s, lineno, text, &cmd) || s.n_errors > 0)
			continue; /* past a problem: only looking for more */
		if (append(cmds, &n, &cap, lineno, &cmd) < 0) {
			problem(&s, 0, "out of memory");
			break;
		}
	}
	free(text);
	if (ferror(f))
		problem(&s, 0, "read error after line %u", lineno);
	if ((!s.inside || !s.outside) && !s.interface_refused)
		problem(&s, 0, "needs at least one inside and one outside interface");
	if (s.n_errors > 0) {
		free(*cmds);
		*cmds = NULL;
		return -1;
	}
	return (long)n;
}
