/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting DPDK's EAL the way swpath wants it (docs/swpath.md, "EAL
 * defaults"): the arguments the user gave, plus defaults for what they did
 * not (memory, shared config, devices, lcores, log level), so a fresh
 * machine without hugepages runs it as is; and quietly: what DPDK prints
 * while it starts is kept back, so a start-up failure is one line of ours
 * (with DPDK's cause quoted) and a success shows it only when asked for
 * (--log-level).
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>

#include "control/eal.h"
#include "util/log.h"
#include "util/text.h"

static bool user_log_level;
static char prog_path[256];

static bool
has_arg(int argc, char **argv, const char *const *names)
{
	for (int i = 1; i < argc; i++)
		for (const char *const *n = names; *n; n++) {
			size_t len = strlen(*n);

			if (strncmp(argv[i], *n, len) == 0 &&
			    (argv[i][len] == '\0' || argv[i][len] == '=' ||
			     ((*n)[1] != '-' && len == 2)))
				return true;
		}
	return false;
}

static bool
file_has_line(const char *path, const char *fmt, unsigned long *n)
{
	FILE *f = fopen(path, "r");
	char line[512];
	bool found = false;

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = n != NULL ? sscanf(line, fmt, n) == 1 :
				    strstr(line, fmt) != NULL;
	fclose(f);
	return found;
}

/*
 * Hugepages the EAL can take: some free, and either a hugetlbfs mounted or
 * --in-memory (a memfd of hugepages, no mount needed). Reserved pages with
 * no mount and a --file-prefix would stop the EAL ("Cannot get hugepage
 * information"): then run without them.
 */
static bool
hugepages_usable(bool in_memory)
{
	unsigned long n = 0;

	return file_has_line("/proc/meminfo", "HugePages_Free: %lu", &n) &&
	       n > 0 &&
	       (in_memory || file_has_line("/proc/mounts", " hugetlbfs ", NULL));
}

static char *
cpu_list(void)
{
	static char buf[512];
	cpu_set_t set;
	size_t len = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return strcpy(buf, "0");
	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && len < sizeof(buf) - 8; c++)
		if (CPU_ISSET(c, &set))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len,
						"%s%d", len ? "," : "", c);
	return buf;
}

int
sp_eal_arguments(int argc, char **argv, unsigned n_workers, char **out)
{
	static const char *const mem[] = { "--no-huge", "-m", "--socket-mem",
		"--huge-dir", "--in-memory", "--legacy-mem", "--socket-limit",
		NULL };
	static const char *const shconf[] = { "--file-prefix", "--proc-type",
		"--no-shconf", "--in-memory", NULL };
	static const char *const pci[] = { "-a", "--allow", "-b", "--block",
		"--no-pci", NULL };
	static const char *const cores[] = { "-l", "-c", "--lcores", NULL };
	static const char *const log[] = { "--log-level", NULL };
	static char lcores[600];
	int n = 0;
	bool no_huge;

	for (int i = 0; i < argc && n < SP_EAL_ARGS_MAX - 12; i++)
		out[n++] = argv[i];
	no_huge = has_arg(argc, argv, (const char *const[]){ "--no-huge", NULL });
	if (!has_arg(argc, argv, mem)) {
		no_huge = !hugepages_usable(!has_arg(argc, argv, shconf));
		if (no_huge) {
			out[n++] = "--no-huge";
			out[n++] = "-m";
			out[n++] = "512";
		}
	}
	if (!has_arg(argc, argv, shconf))
		out[n++] = no_huge ? "--no-shconf" : "--in-memory";
	if (no_huge && !has_arg(argc, argv, pci))
		out[n++] = "--no-pci";
	if (!has_arg(argc, argv, cores)) {
		snprintf(lcores, sizeof(lcores), "--lcores=(0-%u)@(%s)",
			 n_workers, cpu_list());
		out[n++] = lcores;
	}
	user_log_level = has_arg(argc, argv, log);
	if (!user_log_level)
		out[n++] = "--log-level=*:error";
	out[n] = NULL;
	return n;
}

/*
 * What DPDK logs during start-up is kept in a temporary file, not shown: a
 * start-up failure is one line of ours. On success it is shown only when the
 * user chose a --log-level.
 */
static FILE *startup_log;

/* A line of the start-up log that says nothing of a cause: a blank or
 * indented one, the usage, the EAL's inventory. */
static bool
no_cause(const char *p)
{
	return *p == '\0' || *p == ' ' || *p == '\t' ||
	       strncmp(p, "Usage:", 6) == 0 ||
	       strncmp(p, "EAL common options", 18) == 0 ||
	       strncmp(p, "EAL: Detected", 13) == 0 ||
	       strstr(p, "Invalid 'command line'") != NULL;
}

/* The cause itself: "PROG: unrecognized option" (getopt) -> "unrecognized
 * option", and no "EAL: " or "FATAL: " in front. */
static const char *
cause_of(const char *p)
{
	const char *colon = strstr(p, ": ");

	if (colon != NULL && prog_path[0] != '\0' &&
	    (size_t)(colon - p) == strlen(prog_path) &&
	    strncmp(p, prog_path, strlen(prog_path)) == 0)
		p = colon + 2;
	if (strncmp(p, "EAL: ", 5) == 0)
		p += 5;
	if (strncmp(p, "FATAL: ", 7) == 0)
		p += 7;
	return p;
}

void
sp_eal_cause(char *line, size_t len)
{
	char buf[1024];
	bool line_start = true;

	line[0] = '\0';
	if (startup_log == NULL)
		return;
	fflush(startup_log);
	rewind(startup_log);
	while (fgets(buf, sizeof(buf), startup_log) != NULL) {
		bool was_start = line_start;

		line_start = strchr(buf, '\n') != NULL;
		buf[strcspn(buf, "\n")] = '\0';
		if (!was_start || no_cause(buf))
			continue;
		snprintf(line, len, "%s", cause_of(buf));
		break;
	}
	fseek(startup_log, 0, SEEK_END);
}

void
sp_eal_log_end(void)
{
	if (startup_log == NULL)
		return;
	if (user_log_level) {
		int c;

		fflush(startup_log);
		rewind(startup_log);
		while ((c = fgetc(startup_log)) != EOF)
			fputc(c, stderr);
	}
	rte_openlog_stream(sp_log_dpdk_stream());
	fclose(startup_log);
	startup_log = NULL;
}

static char runtime_dir[PATH_MAX];

/*
 * The EAL makes /var/run/dpdk/PREFIX and leaves it behind, even when it
 * holds nothing (--no-shconf, --in-memory); one per run would pile up.
 * Registered before rte_eal_init(), so that it runs after the EAL's own exit
 * handlers (telemetry unlinks its socket in one).
 */
static void
remove_runtime_dir(void)
{
	if (runtime_dir[0] != '\0')
		rmdir(runtime_dir);
}

static void
eal_started(void)
{
	snprintf(runtime_dir, sizeof(runtime_dir), "%s",
		 rte_eal_get_runtime_dir());
}

/* What the EAL's failure says, as one line in err. */
static int
eal_failed(char *err, size_t errlen)
{
	char line[1024];

	sp_eal_cause(line, sizeof(line));
	if (line[0] == '\0')
		snprintf(line, sizeof(line), "%s", rte_strerror(rte_errno));
	if (strstr(line, "hugepage") != NULL)
		return sp_fail(err, errlen,
			       "DPDK (EAL) did not start: %s (no free hugepages: reserve some with dpdk-hugepages.py, or pass --no-huge -m 512)",
			       line);
	return sp_fail(err, errlen, "DPDK (EAL) did not start: %s", line);
}

int
sp_eal_start(int argc, char **argv, char *err, size_t errlen)
{
	int saved_out, saved_err, rc;

	snprintf(prog_path, sizeof(prog_path), "%s", argv[0]);
	atexit(remove_runtime_dir);
	startup_log = tmpfile();
	if (startup_log == NULL) {
		if (rte_eal_init(argc, argv) < 0)
			return sp_fail(err, errlen, "DPDK (EAL) did not start: %s",
				       rte_strerror(rte_errno));
		eal_started();
		return 0;
	}
	/* every writer appends: the log stream, stdout and stderr */
	fcntl(fileno(startup_log), F_SETFL, O_APPEND);
	setvbuf(startup_log, NULL, _IOLBF, 0);
	/* the EAL prints its usage with printf: capture stdout too */
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	dup2(fileno(startup_log), STDOUT_FILENO);
	dup2(fileno(startup_log), STDERR_FILENO);
	rte_openlog_stream(startup_log);
	rc = rte_eal_init(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	if (rc < 0)
		return eal_failed(err, errlen);
	eal_started();
	return 0;
}
