/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The control thread's half of mapping event logging (events.h): the sink
 * (an append-only file, reopened on SIGHUP for logrotate, or syslog's daemon
 * facility as the controller's SysLogHandler), the line format, and draining
 * the workers' rings. Control thread only, apart from sp_events_reopen.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "dataplane/sp.h"
#include "persist/event_export.h"
#include "persist/events.h"
#include "util/log.h"
#include "util/text.h"

#define DRAIN_BURST 64

static struct {
	uint8_t sink;
	char path[SP_PATH_MAX];
	FILE *file;
	bool failing;           /* the last write failed (said once) */
	int reopen;             /* set by SIGHUP */
} log_state;

bool
sp_event_has_line(const struct sp_event *ev)
{
	return ev->type <= SP_EVENT_QUOTA_SESSIONS;
}

int
sp_event_format(const struct sp_event *ev, time_t when, char *buf, size_t len)
{
	char stamp[32], in[16], ex[16];
	struct tm tm;

	gmtime_r(&when, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (ev->type == SP_EVENT_QUOTA_PORTS ||
	    ev->type == SP_EVENT_QUOTA_SESSIONS)
		return snprintf(buf, len, "%s quota exceeded %s %s %u", stamp,
				ev->type == SP_EVENT_QUOTA_PORTS ?
					"ports_per_host" : "sessions_per_host",
				sp_ip_str(ev->int_addr, in), ev->ext_addr);
	return snprintf(buf, len, "%s mapping %s %s %s:%u %s:%u", stamp,
			ev->type == SP_EVENT_CREATED ? "created" : "deleted",
			sp_proto_name(ev->proto), sp_ip_str(ev->int_addr, in),
			ev->int_port, sp_ip_str(ev->ext_addr, ex), ev->ext_port);
}

static void
sink_close(void)
{
	if (log_state.file != NULL)
		fclose(log_state.file);
	else if (log_state.sink == SP_EVENTS_SYSLOG)
		closelog();
	log_state.file = NULL;
	log_state.sink = SP_EVENTS_NONE;
}

int
sp_events_configure(uint8_t sink, const char *path, char *err, size_t errlen)
{
	FILE *f = NULL;

	if (sink == SP_EVENTS_FILE) {
		/* opened now: a path that cannot be written fails at start-up */
		f = fopen(path, "ae");
		if (f == NULL)
			return sp_fail(err, errlen, "logging: file %s: %s", path,
				       strerror(errno));
	}
	sink_close();
	log_state.sink = sink;
	log_state.file = f;
	log_state.failing = false;
	snprintf(log_state.path, sizeof(log_state.path), "%s",
		 path != NULL ? path : "");
	/* "quicknat: LINE", as the controller's SysLogHandler formats it */
	if (sink == SP_EVENTS_SYSLOG)
		openlog("quicknat", LOG_NDELAY, LOG_DAEMON);
	return 0;
}

bool
sp_events_enabled(void)
{
	return log_state.sink != SP_EVENTS_NONE || sp_export_enabled();
}

struct rte_ring *
sp_events_ring_create(unsigned worker, int socket)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "sp_events_%u", worker);
	return rte_ring_create_elem(name, sizeof(struct sp_event),
				    SP_EVENT_RING_SIZE, socket,
				    RING_F_SP_ENQ | RING_F_SC_DEQ);
}

static void
reopen_file(void)
{
	FILE *f = fopen(log_state.path, "ae");

	if (f == NULL) {
		/* keep writing to the file we have rather than nowhere */
		sp_log("warning", "logging: cannot reopen %s: %s",
		       log_state.path, strerror(errno));
		return;
	}
	fclose(log_state.file);
	log_state.file = f;
	log_state.failing = false;
}

static void
write_line(const char *line)
{
	if (log_state.sink == SP_EVENTS_NONE)
		return;
	if (log_state.sink == SP_EVENTS_SYSLOG)
		syslog(LOG_INFO, "%s", line);
	else if (log_state.file != NULL)
		fprintf(log_state.file, "%s\n", line);
}

unsigned
sp_events_write(struct rte_ring *ring, uint32_t now_ms,
		const struct timespec *wall)
{
	uint64_t wall_ms = (uint64_t)wall->tv_sec * 1000 +
			   (uint64_t)wall->tv_nsec / 1000000;
	struct sp_event ev[DRAIN_BURST];
	unsigned total = 0, n;

	/* bounded: a worker logging without pause cannot hold control here */
	do {
		n = rte_ring_sc_dequeue_burst_elem(ring, ev, sizeof(ev[0]),
						   DRAIN_BURST, NULL);
		for (unsigned i = 0; i < n; i++) {
			char line[SP_EVENT_LINE_MAX];
			/* a worker may push between the read of now_ms and
			 * this dequeue: an event stamped after it is new */
			uint32_t age = sp_age_ms(now_ms, ev[i].time_ms);
			time_t when = (time_t)((wall_ms - age) / 1000);

			if (!sp_event_has_line(&ev[i])) {
				sp_export_event(&ev[i], wall_ms - age, "");
				continue;
			}
			sp_event_format(&ev[i], when, line, sizeof(line));
			write_line(line);
			/* the text after the time, for the collectors */
			sp_export_event(&ev[i], wall_ms - age,
					strchr(line, ' ') ? strchr(line, ' ') + 1 : line);
		}
		total += n;
	} while (n == DRAIN_BURST && total < SP_EVENT_RING_SIZE);
	return total;
}

void
sp_events_drain(void)
{
	struct timespec wall;
	uint32_t now;
	unsigned n = 0;

	if (!sp_events_enabled())
		return;
	if (__atomic_exchange_n(&log_state.reopen, 0, __ATOMIC_ACQ_REL) &&
	    log_state.file != NULL)
		reopen_file();
	now = sp_now_ms();
	clock_gettime(CLOCK_REALTIME, &wall);
	for (unsigned w = 0; w < sp.n_workers; w++)
		if (sp.workers[w] != NULL && sp.workers[w]->event_ring != NULL)
			n += sp_events_write(sp.workers[w]->event_ring, now,
					     &wall);
	sp_export_flush(false);
	if (n == 0 || log_state.file == NULL)
		return;
	if (fflush(log_state.file) != 0) {
		if (!log_state.failing)
			sp_log("warning", "logging: cannot write %s: %s",
			       log_state.path, strerror(errno));
		log_state.failing = true;
		clearerr(log_state.file);
	} else {
		log_state.failing = false;
	}
}

void
sp_events_mappings_closed(void)
{
	struct timespec wall;
	uint64_t wall_ms;

	if (!sp_events_enabled())
		return;
	clock_gettime(CLOCK_REALTIME, &wall);
	wall_ms = (uint64_t)wall.tv_sec * 1000 + (uint64_t)wall.tv_nsec / 1000000;
	for (unsigned w = 0; w < sp.n_workers; w++) {
		const struct sp_nat *nat;

		if (sp.workers[w] == NULL)
			continue;
		nat = &sp.workers[w]->nat;
		for (uint32_t i = 0; i < nat->max_sessions; i++) {
			const struct sp_mapping *m = &nat->mappings[i];
			struct sp_event ev = {
				.int_addr = m->int_addr, .ext_addr = m->ext.addr,
				.int_port = m->int_port, .ext_port = m->ext.port,
				.proto = m->proto, .type = SP_EVENT_DELETED,
			};
			char line[SP_EVENT_LINE_MAX];

			if (m->proto == 0)
				continue;
			sp_event_format(&ev, (time_t)wall.tv_sec, line, sizeof(line));
			write_line(line);
			sp_export_event(&ev, wall_ms, strchr(line, ' ') + 1);
		}
	}
	sp_export_flush(true);
	if (log_state.file != NULL)
		fflush(log_state.file);
}

void
sp_events_reopen(void)
{
	__atomic_store_n(&log_state.reopen, 1, __ATOMIC_RELEASE);
}

void
sp_events_close(void)
{
	sp_export_close();
	sink_close();
}
