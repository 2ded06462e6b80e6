/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicknat-swpath [EAL options] -- --commands FILE [options]
 *
 * Start-up: read and check the command file (syntax, before the EAL), start
 * the EAL quietly, apply the commands (interfaces first), start the ports and
 * the workers, then serve the control socket on the main lcore until a
 * signal (or --exit-when-idle). Every start-up failure ends with one line on
 * stderr and exit status 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_random.h>

#include "control/control.h"
#include "control/format.h"
#include "control/setup.h"
#include "control/telemetry.h"
#include "dataplane/sp.h"
#include "dataplane/worker.h"
#include "persist/events.h"
#include "persist/session_store.h"
#include "qns.h"
#include "util/log.h"

#define PROG "quicknat-swpath"
#define EXIT_STARTUP 2
#define MAX_EAL_ARGS 128

struct options {
	const char *commands;
	const char *control;
	const char *dump;
	const char *state;
	unsigned exit_when_idle_ms;
};

struct cmd_line {
	unsigned line;
	struct sp_cmd cmd;
};

static bool user_log_level;
static void die_setup(const char *msg) __attribute__((noreturn));

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	sp_log("error", "%s", message);
	exit(EXIT_STARTUP);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [EAL options] -- --commands FILE [options]\n"
		"\n"
		"  --commands FILE        configuration in the swpath command language\n"
		"                         (quicknat swpath-commands CONFIG.toml)\n"
		"  --control PATH|none    control socket (default " SP_DEFAULT_CONTROL ")\n"
		"  --lcores-workers N     worker lcores (default 1); the EAL needs N+1 lcores\n"
		"  --sessions N           sessions per worker (default 65536)\n"
		"  --dispatch MODE        auto|rss|software: NIC RSS or software RSS (default auto)\n"
		"  --port-reuse S         seconds a freed port rests before reuse (default 120)\n"
		"  --seed N               seed of the port choice (reproducible runs)\n"
		"  --exit-when-idle MS    exit after MS ms without packets (tests, pcap replay)\n"
		"  --idle-sleep-us US     a worker whose queues held less than a full burst\n"
		"                         sleeps US us before it polls again (adaptive: under\n"
		"                         light load it wakes to a batch, under full load it\n"
		"                         never sleeps; default 0: it polls without a pause)\n"
		"  --dump-on-exit FILE    write {\"stats\":..., \"sessions\":[...]} on exit\n"
		"  --state FILE           keep the sessions in FILE (shared memory, e.g. under\n"
		"                         /dev/shm): a restart with it takes them over\n"
		"  --log-format FMT       text (default) or json: one object per line, the\n"
		"                         controller's keys (time, level, process, message)\n"
		"\n"
		"Without EAL options the defaults are: --no-huge -m 512 --no-pci --no-shconf\n"
		"(hugepages instead when some are free and mounted, or with --in-memory),\n"
		"--lcores '(0-N)@(CPUS)' and --log-level '*:error'. See docs/swpath.md.\n");
}

static unsigned long
number(const char *opt, const char *s, unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || *s == '\0' || v < min || v > max)
		die("%s %s: must be %lu..%lu", opt, s, min, max);
	return v;
}

static void
parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "commands", required_argument, NULL, 'c' },
		{ "control", required_argument, NULL, 'C' },
		{ "lcores-workers", required_argument, NULL, 'w' },
		{ "sessions", required_argument, NULL, 's' },
		{ "dispatch", required_argument, NULL, 'd' },
		{ "port-reuse", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "exit-when-idle", required_argument, NULL, 'i' },
		{ "idle-sleep-us", required_argument, NULL, 'I' },
		{ "dump-on-exit", required_argument, NULL, 'D' },
		{ "state", required_argument, NULL, 'T' },
		{ "log-format", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->control = SP_DEFAULT_CONTROL;
	sp.n_workers = 1;
	sp.sessions_per_worker = SP_SESSIONS_DEFAULT;
	sp.port_reuse_ms = 120000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->commands = optarg;
			break;
		case 'C':
			o->control = optarg;
			break;
		case 'w':
			sp.n_workers = (unsigned)number("--lcores-workers", optarg,
							1, SP_MAX_WORKERS);
			break;
		case 's':
			sp.sessions_per_worker = (uint32_t)number("--sessions",
								  optarg, 64,
								  1u << 24);
			break;
		case 'd':
			if (strcmp(optarg, "auto") == 0)
				sp.dispatch = SP_DISPATCH_AUTO;
			else if (strcmp(optarg, "rss") == 0)
				sp.dispatch = SP_DISPATCH_RSS;
			else if (strcmp(optarg, "software") == 0)
				sp.dispatch = SP_DISPATCH_SOFTWARE;
			else
				die("--dispatch %s: must be auto, rss or software",
				    optarg);
			break;
		case 'r':
			sp.port_reuse_ms = (uint32_t)number("--port-reuse", optarg,
							    0, 86400) * 1000u;
			break;
		case 'I':
			sp.idle_sleep_us = (uint32_t)number("--idle-sleep-us",
							    optarg, 0, 10000);
			break;
		case 'S':
			sp.seed = number("--seed", optarg, 0, ULONG_MAX);
			break;
		case 'L':
			if (strcmp(optarg, "json") != 0 && strcmp(optarg, "text") != 0)
				die("--log-format %s: must be text or json", optarg);
			break;
		case 'i':
			o->exit_when_idle_ms = (unsigned)number("--exit-when-idle",
								optarg, 1,
								86400000);
			break;
		case 'D':
			o->dump = optarg;
			break;
		case 'T':
			o->state = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			die("unknown or incomplete option '%s' after -- (see --help)",
			    argv[optind - 1]);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	/* the EAL parses with getopt too: give it back its defaults */
	optind = 1;
	opterr = 1;
	if (o->commands == NULL)
		die("--commands FILE is required (see --help)");
}

/* -- the command file ------------------------------------------------------- */

static struct cmd_line *
read_commands(const char *path, size_t *count)
{
	FILE *f = fopen(path, "r");
	struct cmd_line *cmds = NULL;
	size_t n = 0, cap = 0;
	char *line = NULL;
	size_t len = 0;
	unsigned lineno = 0;
	bool inside = false, outside = false;

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	while (getline(&line, &len, f) >= 0) {
		struct sp_cmd cmd;
		char err[512];

		lineno++;
		if (sp_cmd_parse(line, &cmd, err, sizeof(err)) < 0)
			die("%s:%u: %s", path, lineno, err);
		if (cmd.verb == SP_CMD_NONE)
			continue;
		if (cmd.verb == SP_CMD_RULES || sp_verb_is_json(cmd.verb) ||
		    cmd.verb == SP_CMD_RULE_DEL)
			die("%s:%u: '%s' is a run-time command", path, lineno,
			    cmd.verb == SP_CMD_RULE_DEL ? "rule del" :
			    cmd.verb == SP_CMD_RULES ? "rules" :
			    cmd.verb == SP_CMD_STATS ? "stats" : "sessions");
		if (cmd.verb == SP_CMD_INTERFACE) {
			inside |= cmd.u.iface.zone == SP_ZONE_INSIDE;
			outside |= cmd.u.iface.zone == SP_ZONE_OUTSIDE;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			cmds = realloc(cmds, cap * sizeof(*cmds));
			if (cmds == NULL)
				die("out of memory");
		}
		cmds[n].line = lineno;
		cmds[n].cmd = cmd;
		n++;
	}
	free(line);
	fclose(f);
	if (!inside || !outside)
		die("%s: needs at least one inside and one outside interface",
		    path);
	*count = n;
	return cmds;
}

static void
apply_commands(const char *path, const struct cmd_line *cmds, size_t n,
	       bool interfaces)
{
	for (size_t i = 0; i < n; i++) {
		struct sp_buf out = { 0 };
		char err[512];

		if ((cmds[i].cmd.verb == SP_CMD_INTERFACE) != interfaces)
			continue;
		if (sp_apply(&cmds[i].cmd, &out, err, sizeof(err)) < 0) {
			char msg[1536];

			snprintf(msg, sizeof(msg), "%s:%u: %s", path,
				 cmds[i].line, err);
			die_setup(msg);
		}
		sp_buf_free(&out);
	}
}

/* -- EAL arguments and a quiet start ---------------------------------------- */

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

/* argv[0..argc) are the EAL arguments; adds the defaults they lack. */
static int
eal_arguments(int argc, char **argv, char **out)
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

	for (int i = 0; i < argc && n < MAX_EAL_ARGS - 12; i++)
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
			 sp.n_workers, cpu_list());
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
static const char *prog_path;

/* The first line of the start-up log that names a cause, or "". */
static void
startup_log_cause(char *line, size_t len)
{
	char buf[1024];
	bool line_start = true;

	line[0] = '\0';
	if (startup_log == NULL)
		return;
	fflush(startup_log);
	rewind(startup_log);
	while (fgets(buf, sizeof(buf), startup_log) != NULL) {
		char *p = buf, *colon;
		bool was_start = line_start;

		line_start = strchr(buf, '\n') != NULL;
		buf[strcspn(buf, "\n")] = '\0';
		if (!was_start || *p == '\0' || *p == ' ' || *p == '\t' ||
		    strncmp(p, "Usage:", 6) == 0 ||
		    strncmp(p, "EAL common options", 18) == 0 ||
		    strncmp(p, "EAL: Detected", 13) == 0 ||
		    strstr(p, "Invalid 'command line'") != NULL)
			continue;
		/* "PROG: unrecognized option" (getopt) -> "unrecognized option" */
		colon = strstr(p, ": ");
		if (colon != NULL && prog_path != NULL &&
		    (size_t)(colon - p) == strlen(prog_path) &&
		    strncmp(p, prog_path, strlen(prog_path)) == 0)
			p = colon + 2;
		if (strncmp(p, "EAL: ", 5) == 0)
			p += 5;
		if (strncmp(p, "FATAL: ", 7) == 0)
			p += 7;
		snprintf(line, len, "%s", p);
		break;
	}
	fseek(startup_log, 0, SEEK_END);
}

static void
startup_log_end(void)
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

static void
eal_init_quiet(int argc, char **argv)
{
	int saved_out, saved_err, rc;

	atexit(remove_runtime_dir);
	startup_log = tmpfile();
	if (startup_log == NULL) {
		if (rte_eal_init(argc, argv) < 0)
			die("DPDK (EAL) did not start: %s", rte_strerror(rte_errno));
		eal_started();
		return;
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
	if (rc < 0) {
		char line[1024];

		startup_log_cause(line, sizeof(line));
		if (line[0] == '\0')
			snprintf(line, sizeof(line), "%s", rte_strerror(rte_errno));
		if (strstr(line, "hugepage") != NULL)
			die("DPDK (EAL) did not start: %s (no free hugepages: reserve some with dpdk-hugepages.py, or pass --no-huge -m 512)",
			    line);
		die("DPDK (EAL) did not start: %s", line);
	}
	eal_started();
}

/* A start-up failure after the EAL: ours, plus what DPDK said if apt. */
static void
die_setup(const char *msg)
{
	char cause[1024];

	if (strstr(msg, "does not exist") != NULL) {
		startup_log_cause(cause, sizeof(cause));
		if (cause[0] != '\0')
			die("%s; DPDK said: %s", msg, cause);
	}
	die("%s", msg);
}

/* -- run -------------------------------------------------------------------- */

static void
on_signal(int sig)
{
	RTE_SET_USED(sig);
	__atomic_store_n(&sp.quit, 1, __ATOMIC_RELAXED);
}

/* logrotate moved the event file: write to a new one at that path */
static void
on_hangup(int sig)
{
	RTE_SET_USED(sig);
	sp_events_reopen();
}

static uint64_t
activity(void)
{
	return sp_counter_sum(SP_CNT_rx) + sp_counter_sum(SP_CNT_ring_rx) +
	       sp_counter_sum(SP_CNT_tx);
}

/*
 * systemd's Type=notify (sd_notify(3)'s protocol, without libsystemd): one
 * datagram to $NOTIFY_SOCKET, a path or an abstract name ("@..."). Nothing
 * when not run by systemd.
 */
static void
notify_systemd(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), 0, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		sp_log("warning", "NOTIFY_SOCKET %s: %s", path, strerror(errno));
	close(fd);
}

static void
dump_on_exit(const char *path)
{
	struct sp_buf b = { 0 };
	FILE *f;

	sp_buf_printf(&b, "{\"stats\": ");
	sp_format_stats_json(&b);
	sp_buf_printf(&b, ", \"sessions\": ");
	sp_format_sessions_json(&b, &(struct sp_session_filter){ 0 }, 0);
	sp_buf_printf(&b, ", \"rules\": \"");
	{
		struct sp_buf r = { 0 };

		sp_format_rules(&r);
		for (size_t i = 0; i < r.len; i++)
			sp_buf_printf(&b, r.p[i] == '\n' ? "\\n" : "%c", r.p[i]);
		sp_buf_free(&r);
	}
	sp_buf_printf(&b, "\"}\n");
	f = fopen(path, "w");
	if (f == NULL) {
		sp_log("warning", "%s: %s", path, strerror(errno));
	} else {
		fwrite(b.p, 1, b.len, f);
		fclose(f);
	}
	sp_buf_free(&b);
}

int
main(int argc, char **argv)
{
	char *eal_argv[MAX_EAL_ARGS];
	struct options o = { 0 };
	struct cmd_line *cmds;
	size_t n_cmds;
	char err[512];
	int sep = argc, eal_argc;
	uint64_t last_activity = 0;
	uint32_t idle_since;
	struct sigaction sa;

	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			sep = i;
			break;
		}
	/* before the EAL starts, so that its failures come out in the format
	 * asked for (the option is checked with the others later) */
	for (int i = sep + 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--log-format") == 0)
			sp_log_set_json(strcmp(argv[i + 1], "json") == 0);
	if (sep == argc) {
		for (int i = 1; i < argc; i++)
			if (strcmp(argv[i], "-h") == 0 ||
			    strcmp(argv[i], "--help") == 0) {
				usage(stdout);
				return 0;
			}
		usage(stderr);
		return EXIT_STARTUP;
	}
	argv[sep] = argv[0];
	parse_options(argc - sep, argv + sep, &o);
	cmds = read_commands(o.commands, &n_cmds);
	sp_setup_defaults();

	prog_path = argv[0];
	eal_argc = eal_arguments(sep, argv, eal_argv);
	eal_init_quiet(eal_argc, eal_argv);
	sp.tsc_hz = rte_get_tsc_hz();
	sp.tsc0 = rte_rdtsc();
	if (sp.seed != 0)
		rte_srand(sp.seed);

	apply_commands(o.commands, cmds, n_cmds, true);
	if (sp_setup_dispatch(err, sizeof(err)) < 0 ||
	    sp_setup_core(err, sizeof(err)) < 0)
		die_setup(err);
	apply_commands(o.commands, cmds, n_cmds, false);
	free(cmds);
	if (sp_routes_build(err, sizeof(err)) < 0 ||
	    sp_setup_mempool(err, sizeof(err)) < 0 ||
	    sp_setup_workers(err, sizeof(err)) < 0 ||
	    sp_setup_ports(err, sizeof(err)) < 0 ||
	    sp_runtime_publish() < 0)
		die_setup(err);
	if (strcmp(o.control, "none") != 0 &&
	    sp_control_listen(o.control, err, sizeof(err)) < 0)
		die_setup(err);
	/* the predecessor's sessions, before any packet could open others */
	if (o.state != NULL && sp_store_open(o.state, err, sizeof(err)) < 0)
		die_setup(err);
	sp_telemetry_register();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hangup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	startup_log_end();
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		sp.run_id = ((uint64_t)ts.tv_sec * 1000000000u +
			     (uint64_t)ts.tv_nsec) ^ ((uint64_t)getpid() << 40);
	}
	sp.running = true;
	for (unsigned i = 0; i < sp.n_workers; i++)
		rte_eal_remote_launch(sp_worker_main, sp.workers[i],
				      sp.workers[i]->lcore);
	sp_log("info", "%u worker%s, %s dispatch, %u interfaces, %zu rules; control %s",
		sp.n_workers, sp.n_workers == 1 ? "" : "s",
		sp.n_workers == 1 ? "no" : sp.hw_rss ? "NIC RSS" : "software RSS",
		sp.n_ifaces, qns_count(sp.qns), o.control);
	notify_systemd("READY=1");

	idle_since = sp_now_ms();
	while (!__atomic_load_n(&sp.quit, __ATOMIC_RELAXED)) {
		sp_control_poll(10);
		if (o.exit_when_idle_ms != 0) {
			uint64_t a = activity();
			uint32_t now = sp_now_ms();

			if (a != last_activity) {
				last_activity = a;
				idle_since = now;
			} else if (now - idle_since >= o.exit_when_idle_ms) {
				__atomic_store_n(&sp.quit, 1, __ATOMIC_RELAXED);
			}
		}
	}
	notify_systemd("STOPPING=1");
	rte_eal_mp_wait_lcore();
	/* what the workers logged last, the mappings that end with the
	 * process, then the file is closed */
	sp_events_drain();
	/* with --state they pass to the successor: they do not end here */
	if (!sp_store_enabled())
		sp_events_mappings_closed();
	sp_events_close();
	if (o.dump != NULL)
		dump_on_exit(o.dump);
	sp_store_close();
	sp_control_close();
	sp.running = false;
	sp_teardown();
	rte_eal_cleanup();
	return 0;
}
