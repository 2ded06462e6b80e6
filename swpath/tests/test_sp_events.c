/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Mapping event logging (swpath/src/persist/events.c): the line is the controller's
 * (controller/tests/test_events.py asserts the same string), a record's time
 * is the wall clock minus its age, a full ring drops and counts instead of
 * waiting, the file is appended to and reopened after logrotate moves it,
 * and syslog gets "quicknat" on the daemon facility. syslog(3) is replaced by
 * the __wrap_ functions below (linked with -Wl,--wrap, see the Makefile).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "sp_test_util.h"

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dataplane/sp.h"
#include "persist/events.h"
#include "persist/sink.h"

/* 2023-11-14T22:13:20Z */
#define WHEN 1700000000

static char dir[64];
static char path[128];

static const struct sp_event udp_created = {
	.time_ms = 1000, .int_addr = 0x0a000007, .int_port = 5000,
	.ext_addr = 0xcb007101, .ext_port = 2001, .proto = 17,
	.type = SP_EVENT_CREATED,
};

/* -- syslog(3), recorded ------------------------------------------------------ */

static struct {
	char ident[32];
	int option, facility, priority, opened, closed;
	char message[256];
} sys;

void __wrap_openlog(const char *ident, int option, int facility);
void __wrap_syslog(int priority, const char *fmt, ...);
void __wrap_closelog(void);

void
__wrap_openlog(const char *ident, int option, int facility)
{
	snprintf(sys.ident, sizeof(sys.ident), "%s", ident);
	sys.option = option;
	sys.facility = facility;
	sys.opened++;
}

void
__wrap_syslog(int priority, const char *fmt, ...)
{
	va_list ap;

	sys.priority = priority;
	va_start(ap, fmt);
	vsnprintf(sys.message, sizeof(sys.message), fmt, ap);
	va_end(ap);
}

void
__wrap_closelog(void)
{
	sys.closed++;
}

/* -- helpers ------------------------------------------------------------------- */

static char *
read_file(const char *p)
{
	static char buf[4096];
	FILE *f = fopen(p, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* An event as the worker's core reports it (persist/sink.c puts it in
 * the worker's ring); *dropped: the worker's events_dropped since. */
static void
push(struct rte_ring *ring, struct sp_event ev, uint64_t *dropped)
{
	struct sp_worker *w = sp.workers[0];
	struct sp_nat_observer o = sp_sink_observer(w);
	uint64_t before = w->cnt[SP_CNT_events_dropped];

	assert_ptr_equal(ring, w->event_ring);
	o.event(o.ctx, &ev);
	*dropped += w->cnt[SP_CNT_events_dropped] - before;
}

/* One worker with an event ring, as sp_setup_workers makes it. */
static int
setup_test(void **state)
{
	(void)state;
	memset(&sys, 0, sizeof(sys));
	snprintf(dir, sizeof(dir), "/tmp/sp-events-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(path, sizeof(path), "%s/events.log", dir);
	sp.n_workers = 1;
	sp.tsc_hz = rte_get_tsc_hz();
	sp.tsc0 = rte_rdtsc();
	sp.workers[0] = rte_zmalloc("sp_worker", sizeof(struct sp_worker), 0);
	if (sp.workers[0] == NULL)
		return -1;
	sp.workers[0]->event_ring = sp_events_ring_create(0, SOCKET_ID_ANY);
	return sp.workers[0]->event_ring == NULL ? -1 : 0;
}

static int
teardown_test(void **state)
{
	char cmd[128];

	(void)state;
	sp_events_close();
	rte_ring_free(sp.workers[0]->event_ring);
	rte_free(sp.workers[0]);
	sp.workers[0] = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* -- tests --------------------------------------------------------------------- */

static void
test_line_is_the_controllers(void **state)
{
	struct sp_event ev = udp_created;
	char line[SP_EVENT_LINE_MAX];

	(void)state;
	sp_event_format(&ev, 0, line, sizeof(line));
	assert_string_equal(line, "1970-01-01T00:00:00Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001");
	ev.type = SP_EVENT_DELETED;
	ev.proto = 1;
	sp_event_format(&ev, WHEN, line, sizeof(line));
	assert_string_equal(line, "2023-11-14T22:13:20Z mapping deleted icmp 10.0.0.7:5000 203.0.113.1:2001");
	/* a host at its limit: the controller's quota_text */
	ev.type = SP_EVENT_QUOTA_SESSIONS;
	ev.ext_addr = 4096;
	sp_event_format(&ev, WHEN, line, sizeof(line));
	assert_string_equal(line, "2023-11-14T22:13:20Z quota exceeded sessions_per_host 10.0.0.7 4096");
	ev.type = SP_EVENT_QUOTA_PORTS;
	sp_event_format(&ev, WHEN, line, sizeof(line));
	assert_string_equal(line, "2023-11-14T22:13:20Z quota exceeded ports_per_host 10.0.0.7 4096");
	ev.type = SP_EVENT_DELETED;
	/* the longest line fits */
	ev.int_addr = ev.ext_addr = UINT32_MAX;
	ev.int_port = ev.ext_port = UINT16_MAX;
	assert_true(sp_event_format(&ev, WHEN, line, sizeof(line)) <
		    SP_EVENT_LINE_MAX);
}

static void
test_full_ring_drops_and_counts(void **state)
{
	struct rte_ring *ring = sp.workers[0]->event_ring;
	uint64_t dropped = 0;

	(void)state;
	for (unsigned i = 0; i < SP_EVENT_RING_SIZE + 10; i++)
		push(ring, udp_created, &dropped);
	assert_int_equal(rte_ring_count(ring), rte_ring_get_capacity(ring));
	assert_int_equal(dropped, SP_EVENT_RING_SIZE + 10 -
					  rte_ring_get_capacity(ring));
	/* none configured: the rings are emptied, nothing is written */
	assert_int_equal(sp_events_write(ring, 0, &(struct timespec){ 0 }),
			 SP_EVENT_RING_SIZE - 1);
	assert_int_equal(rte_ring_count(ring), 0);
}

static void
test_time_is_wall_clock_minus_age(void **state)
{
	struct rte_ring *ring = sp.workers[0]->event_ring;
	struct sp_event later = udp_created;
	uint64_t dropped = 0;
	char err[256];

	(void)state;
	assert_int_equal(sp_events_configure(SP_EVENTS_FILE, path, err,
					     sizeof(err)), 0);
	later.time_ms = 4000;
	later.type = SP_EVENT_DELETED;
	push(ring, udp_created, &dropped);
	push(ring, later, &dropped);
	/* workers' clock 6000 ms is wall 1700000005.5: 5 s and 2 s ago */
	assert_int_equal(sp_events_write(ring, 6000,
					 &(struct timespec){ WHEN + 5, 500000000 }),
			 2);
	sp_events_close();
	assert_string_equal(read_file(path),
			    "2023-11-14T22:13:20Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001\n"
			    "2023-11-14T22:13:23Z mapping deleted udp 10.0.0.7:5000 203.0.113.1:2001\n");
}

/* An event stamped after the drain read its clock (a worker pushed in
 * between, or its core's TSC runs ahead) is logged as now, not 49 days
 * back as the unsigned age would wrap. */
static void
test_event_stamped_after_now_is_now(void **state)
{
	struct rte_ring *ring = sp.workers[0]->event_ring;
	struct sp_event ahead = udp_created;
	uint64_t dropped = 0;
	char err[256];

	(void)state;
	assert_int_equal(sp_events_configure(SP_EVENTS_FILE, path, err,
					     sizeof(err)), 0);
	ahead.time_ms = 6001;
	push(ring, ahead, &dropped);
	assert_int_equal(sp_events_write(ring, 6000,
					 &(struct timespec){ WHEN + 5, 500000000 }),
			 1);
	sp_events_close();
	assert_string_equal(read_file(path),
			    "2023-11-14T22:13:25Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001\n");
}

static void
test_file_appended_and_reopened(void **state)
{
	struct rte_ring *ring = sp.workers[0]->event_ring;
	struct sp_event ev = udp_created;
	char rotated[160], err[256];
	uint64_t dropped = 0;
	time_t before = time(NULL), after;
	FILE *f = fopen(path, "w");
	const char *text;

	(void)state;
	assert_false(sp_events_enabled());
	fputs("kept\n", f);
	fclose(f);
	assert_int_equal(sp_events_configure(SP_EVENTS_FILE, path, err,
					     sizeof(err)), 0);
	assert_true(sp_events_enabled());
	ev.time_ms = sp_now_ms();
	push(ring, ev, &dropped);
	sp_events_drain();
	after = time(NULL);
	text = read_file(path);
	/* written when drained (flushed), after what was there */
	assert_int_equal(strncmp(text, "kept\n", 5), 0);
	assert_non_null(strstr(text, " mapping created udp 10.0.0.7:5000 203.0.113.1:2001\n"));
	{
		struct tm tm;
		time_t t;

		memset(&tm, 0, sizeof(tm));
		assert_non_null(strptime(text + 5, "%Y-%m-%dT%H:%M:%SZ", &tm));
		t = timegm(&tm);
		assert_true(t >= before - 1 && t <= after);
	}
	/* logrotate: move the file, SIGHUP; the next line goes to a new one */
	snprintf(rotated, sizeof(rotated), "%s.1", path);
	assert_int_equal(rename(path, rotated), 0);
	sp_events_reopen();
	ev.type = SP_EVENT_DELETED;
	push(ring, ev, &dropped);
	sp_events_drain();
	assert_non_null(strstr(read_file(path), " mapping deleted udp "));
	assert_null(strstr(read_file(path), "created"));
	assert_null(strstr(read_file(rotated), "deleted"));
}

static void
test_bad_file(void **state)
{
	char err[256], missing[160];

	(void)state;
	snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
	assert_int_equal(sp_events_configure(SP_EVENTS_FILE, missing, err,
					     sizeof(err)), -1);
	assert_non_null(strstr(err, "logging: file "));
	assert_non_null(strstr(err, "/no/such/dir: No such file or directory"));
	assert_false(sp_events_enabled());
}

static void
test_syslog(void **state)
{
	struct rte_ring *ring = sp.workers[0]->event_ring;
	uint64_t dropped = 0;
	char err[256];

	(void)state;
	assert_int_equal(sp_events_configure(SP_EVENTS_SYSLOG, "", err,
					     sizeof(err)), 0);
	/* "quicknat: LINE" on daemon.info, as the controller's SysLogHandler */
	assert_string_equal(sys.ident, "quicknat");
	assert_int_equal(sys.facility, LOG_DAEMON);
	assert_int_equal(sys.opened, 1);
	push(ring, udp_created, &dropped);
	assert_int_equal(sp_events_write(ring, 1000,
					 &(struct timespec){ WHEN, 0 }), 1);
	assert_int_equal(sys.priority, LOG_INFO);
	assert_string_equal(sys.message, "2023-11-14T22:13:20Z mapping created udp 10.0.0.7:5000 203.0.113.1:2001");
	sp_events_close();
	assert_int_equal(sys.closed, 1);
}

static int
setup(void **state)
{
	(void)state;
	return sp_test_eal_init("test_sp_events") < 0 ? -1 : 0;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_test, teardown_test)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_line_is_the_controllers),
		T(test_full_ring_drops_and_counts),
		T(test_time_is_wall_clock_minus_age),
		T(test_event_stamped_after_now_is_now),
		T(test_file_appended_and_reopened),
		T(test_bad_file),
		T(test_syslog),
	};

	return SP_RUN_TESTS(tests, setup, NULL);
}
