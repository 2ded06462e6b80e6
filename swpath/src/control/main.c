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
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_random.h>

#include "control/cmd_file.h"
#include "control/control.h"
#include "control/ctl_socket.h"
#include "control/eal.h"
#include "control/format.h"
#include "control/learn_quiet.h"
#include "control/routes.h"
#include "control/routing.h"
#include "control/publish.h"
#include "control/setup.h"
#include "control/telemetry.h"
#include "dataplane/sp.h"
#include "dataplane/worker.h"
#include "persist/events.h"
#include "persist/session_store.h"
#include "qns.h"
#include "util/log.h"
#include "util/tsan.h"

#define PROG "quicknat-swpath"
#define EXIT_STARTUP 2
#ifndef SP_VERSION /* src/Makefile defines it, from controller/quicknat/__init__.py */
#error "SP_VERSION is not defined"
#endif

struct options {
	const char *commands;
	const char *control;
	const char *dump;
	const char *state;
	unsigned exit_when_idle_ms;
};

/* Set once the EAL is up: a start-up failure after it gives back what the
 * EAL and the ports hold, as a clean stop does. */
static bool eal_up;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	char message[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	sp_log("error", "%s", message);
	if (eal_up) {
		sp_ports_close();
		rte_eal_cleanup();
	}
	exit(EXIT_STARTUP);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " [EAL options] -- --commands FILE [options]\n"
		"       " PROG " --version\n"
		"\n"
		"  --commands FILE        configuration in the swpath command language\n"
		"                         (quicknat swpath-commands CONFIG.toml)\n"
		"  --control PATH|none    control socket (default " SP_DEFAULT_CONTROL ")\n"
		"  --lcores-workers N     worker lcores (default 1); the EAL needs N+1 lcores\n"
		"  --sessions N           sessions per worker (default 65536)\n"
		"  --dispatch MODE        auto|rss|software: NIC RSS or software RSS (default auto)\n"
		"  --port-reuse S         seconds a freed port rests before reuse (default 120)\n"
		"  --neighbor-reachable S a neighbour learned by ARP and not heard from for S\n"
		"                         seconds is polled, and forgotten after 3 unanswered\n"
		"                         polls (RFC 1122 2.3.2.1; default 60, 0: never)\n"
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

/* The control socket's directory must exist: a misspelt one is an error,
 * not created (the systemd unit has its own made: RuntimeDirectory=). Said
 * before the EAL starts, as the controller's --socket is said by its CLI. */
static void
check_control_directory(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (strcmp(path, "none") == 0 || slash == NULL || slash == path)
		return; /* none, the current directory, or / */
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		die("--control %s: no directory %s (create it, or choose another path)",
		    path, dir);
}

/* One option after --; the defaults are set before. */
static void
set_option(int c, const char *arg, struct options *o)
{
	switch (c) {
	case 'c':
		o->commands = arg;
		break;
	case 'C':
		o->control = arg;
		break;
	case 'w':
		sp.n_workers = (unsigned)number("--lcores-workers", arg, 1,
						SP_MAX_WORKERS);
		break;
	case 's':
		sp.sessions_per_worker = (uint32_t)number("--sessions", arg, 64,
							  1u << 24);
		break;
	case 'd':
		if (strcmp(arg, "auto") == 0)
			sp.dispatch = SP_DISPATCH_AUTO;
		else if (strcmp(arg, "rss") == 0)
			sp.dispatch = SP_DISPATCH_RSS;
		else if (strcmp(arg, "software") == 0)
			sp.dispatch = SP_DISPATCH_SOFTWARE;
		else
			die("--dispatch %s: must be auto, rss or software", arg);
		break;
	case 'r':
		sp.port_reuse_ms = (uint32_t)number("--port-reuse", arg, 0,
						    86400) * 1000u;
		break;
	case 'N':
		sp.neigh_reachable_ms = (uint32_t)number("--neighbor-reachable",
							 arg, 0, 86400) * 1000u;
		break;
	case 'I':
		sp.idle_sleep_us = (uint32_t)number("--idle-sleep-us", arg, 0,
						    10000);
		break;
	case 'S':
		sp.seed = number("--seed", arg, 0, ULONG_MAX);
		break;
	case 'L':
		if (strcmp(arg, "json") != 0 && strcmp(arg, "text") != 0)
			die("--log-format %s: must be text or json", arg);
		break;
	case 'i':
		o->exit_when_idle_ms = (unsigned)number("--exit-when-idle", arg,
							1, 86400000);
		break;
	case 'D':
		o->dump = arg;
		break;
	case 'T':
		o->state = arg;
		break;
	}
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
		{ "neighbor-reachable", required_argument, NULL, 'N' },
		{ "seed", required_argument, NULL, 'S' },
		{ "exit-when-idle", required_argument, NULL, 'i' },
		{ "idle-sleep-us", required_argument, NULL, 'I' },
		{ "dump-on-exit", required_argument, NULL, 'D' },
		{ "state", required_argument, NULL, 'T' },
		{ "log-format", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->control = SP_DEFAULT_CONTROL;
	sp.n_workers = 1;
	sp.sessions_per_worker = SP_SESSIONS_DEFAULT;
	sp.port_reuse_ms = 120000;
	sp.neigh_reachable_ms = 60000;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == 'V') {
			printf(PROG " %s\n", SP_VERSION);
			exit(0);
		}
		if (c == '?' || c == ':')
			die("unknown or incomplete option '%s' after -- (see --help)",
			    argv[optind - 1]);
		set_option(c, optarg, o);
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
	/* the EAL parses with getopt too: give it back its defaults */
	optind = 1;
	opterr = 1;
	if (o->commands == NULL)
		die("--commands FILE is required (see --help)");
	check_control_directory(o->control);
}

/* -- the command file ------------------------------------------------------- */

/* Every problem of the file said (one log line each), then exit: the user
 * fixes them all in one go (cmd_file.c). */
static struct sp_cmd_line *
read_commands(const char *path, size_t *count)
{
	FILE *f = fopen(path, "r");
	struct sp_cmd_line *cmds;
	struct sp_buf errors = { 0 };
	long n;

	if (f == NULL)
		die("%s: %s", path, strerror(errno));
	n = sp_cmd_file_read(f, path, &cmds, &errors);
	fclose(f);
	if (n < 0) {
		for (char *line = errors.p, *end; line < errors.p + errors.len;
		     line = end + 1) {
			end = memchr(line, '\n', errors.p + errors.len - line);
			sp_log("error", "%.*s", (int)(end - line), line);
		}
		sp_buf_free(&errors);
		exit(EXIT_STARTUP);
	}
	*count = (size_t)n;
	return cmds;
}

/* A start-up failure after the EAL: ours, plus what DPDK said if apt. */
static void __attribute__((noreturn))
die_setup(const char *msg)
{
	char cause[1024];

	if (strstr(msg, "does not exist") != NULL) {
		sp_eal_cause(cause, sizeof(cause));
		if (cause[0] != '\0')
			die("%s; DPDK said: %s", msg, cause);
	}
	die("%s", msg);
}

static void
apply_commands(const char *path, const struct sp_cmd_line *cmds, size_t n,
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

/*
 * Start-up: the command file (syntax, before the EAL), the EAL, the
 * interfaces, the shared tables, every other command, then routes,
 * buffers, workers and ports, the control socket, and the predecessor's
 * sessions before any packet could open others.
 */
static void
start(int argc, char **argv, int sep, const struct options *o)
{
	char *eal_argv[SP_EAL_ARGS_MAX + 1];
	struct sp_cmd_line *cmds;
	size_t n_cmds;
	char err[512];
	int eal_argc;

	cmds = read_commands(o->commands, &n_cmds);
	sp_setup_defaults();
	eal_argc = sp_eal_arguments(sep, argv, sp.n_workers, eal_argv);
	if (sp_eal_start(eal_argc, eal_argv, err, sizeof(err)) < 0)
		die("%s", err);
	eal_up = true;
	sp.tsc_hz = rte_get_tsc_hz();
	sp.tsc0 = rte_rdtsc();
	sp_open_hist_init(sp.open_hist_bound_tsc, sp.tsc_hz);
	if (sp.seed != 0)
		rte_srand(sp.seed);
	apply_commands(o->commands, cmds, n_cmds, true);
	if (sp_setup_dispatch(err, sizeof(err)) < 0 ||
	    sp_setup_core(err, sizeof(err)) < 0)
		die_setup(err);
	apply_commands(o->commands, cmds, n_cmds, false);
	sp_startup_keep(cmds, n_cmds);
	free(cmds);
	if (sp_routes_build(err, sizeof(err)) < 0 ||
	    sp_setup_mempool(err, sizeof(err)) < 0 ||
	    sp_setup_workers(err, sizeof(err)) < 0 ||
	    sp_setup_ports(err, sizeof(err)) < 0 ||
	    sp_runtime_publish() < 0)
		die_setup(err);
	if (strcmp(o->control, "none") != 0 &&
	    sp_control_listen(o->control, err, sizeof(err)) < 0)
		die_setup(err);
	if (o->state != NULL && sp_store_open(o->state, err, sizeof(err)) < 0)
		die_setup(err);
	/* after --state: whether every session of a predecessor is ours */
	if (sp_learn_quiet_begin(sp_now_ms()) && sp_runtime_publish() < 0)
		die("no memory for the runtime snapshot");
	sp_telemetry_register();
}

/* The workers, and the control thread's rounds until a signal (or
 * --exit-when-idle). */
static void
run(const struct options *o)
{
	struct sigaction sa;
	struct timespec ts;
	uint64_t last_activity = 0;
	uint32_t idle_since;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hangup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sp_eal_log_end();
	clock_gettime(CLOCK_REALTIME, &ts);
	sp.run_id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		    ((uint64_t)getpid() << 40);
	sp.running = true;
	for (unsigned i = 0; i < sp.n_workers; i++)
		rte_eal_remote_launch(sp_worker_main, sp.workers[i],
				      sp.workers[i]->lcore);
	sp_log("info", "%u worker%s, %s dispatch, %u interfaces, %zu rules; control %s",
	       sp.n_workers, sp.n_workers == 1 ? "" : "s",
	       sp.n_workers == 1 ? "no" : sp.hw_rss ? "NIC RSS" : "software RSS",
	       sp.n_ifaces, qns_count(sp.qns), o->control);
	notify_systemd("READY=1");
	idle_since = sp_now_ms();
	while (!__atomic_load_n(&sp.quit, __ATOMIC_RELAXED)) {
		uint64_t a;

		sp_control_poll(10);
		/* on failure (no memory) it stays on, tried again next round */
		if (sp_learn_quiet_over(sp_now_ms()) && sp_runtime_changed() < 0)
			sp.learn_quiet = true;
		if (o->exit_when_idle_ms == 0)
			continue;
		a = activity();
		if (a != last_activity) {
			last_activity = a;
			idle_since = sp_now_ms();
		} else if (sp_now_ms() - idle_since >= o->exit_when_idle_ms) {
			__atomic_store_n(&sp.quit, 1, __ATOMIC_RELAXED);
		}
	}
}

/* After the workers stopped: what they logged last, the mappings that end
 * with the process (with --state they pass to the successor: they do not
 * end here), the dump, the state file, then everything else. */
static void
stop(const struct options *o)
{
	notify_systemd("STOPPING=1");
	rte_eal_mp_wait_lcore();
	for (unsigned i = 0; i < sp.n_workers; i++)
		SP_TSAN_ACQUIRE(sp.workers[i]);
	sp_events_drain();
	if (!sp_store_enabled())
		sp_events_mappings_closed();
	sp_events_close();
	if (o->dump != NULL)
		dump_on_exit(o->dump);
	sp_store_close();
	sp_control_close();
	sp.running = false;
	sp_teardown();
	sp_startup_free();
	rte_eal_cleanup();
}

int
main(int argc, char **argv)
{
	struct options o = { 0 };
	int sep = argc;

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
		for (int i = 1; i < argc; i++) {
			if (strcmp(argv[i], "-h") == 0 ||
			    strcmp(argv[i], "--help") == 0) {
				usage(stdout);
				return 0;
			}
			if (strcmp(argv[i], "--version") == 0) {
				printf(PROG " %s\n", SP_VERSION);
				return 0;
			}
		}
		usage(stderr);
		return EXIT_STARTUP;
	}
	argv[sep] = argv[0];
	parse_options(argc - sep, argv + sep, &o);
	start(argc, argv, sep, &o);
	run(&o);
	stop(&o);
	return 0;
}
