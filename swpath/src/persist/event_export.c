/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "persist/event_export.h"
#include "util/text.h"

#define APP_NAME "quicknat-swpath"
#define FACILITY_DAEMON 3
#define IPFIX_VERSION 10
#define TEMPLATE_SET 2
#define IPFIX_HEADER 16
/* A message fits one Ethernet frame with IPv4 and UDP (RFC 7011 sec.
 * 10.3.3): 1428 bytes on the wire. */
#define MESSAGE_MAX 1400
/* Templates again after this long (RFC 7011 sec. 8.4, 10.3.6: over UDP a
 * collector that lost them, or started later, learns them again). */
#define TEMPLATE_REFRESH_MS 60000
/* The longest a record waits for a full message. */
#define FLUSH_INTERVAL_MS 1000

/* natEvent (RFC 8158 sec. 4.1.3) */
#define NAT44_BIB_CREATE 8
#define NAT44_BIB_DELETE 9
#define QUOTA_EXCEEDED 13
#define NAT_ADDRESSES_EXHAUSTED 3
#define NAT44_SESSION_CREATE 4
#define NAT44_SESSION_DELETE 5
#define NAT_PORTS_EXHAUSTED 12
#define MAX_ENTRIES_PER_USER 3  /* natQuotaExceededEvent */

/*
 * The templates, as controller/quicknat/ipfix.py's (the same bytes; its
 * docstring and docs/ipfix.md say why each field is there): (element id,
 * length) in record order, each after observationTimeMilliseconds (323),
 * natEvent (230) and natInstanceID (463).
 */
#define HEAD { 323, 8 }, { 230, 1 }, { 463, 4 }
static const uint16_t bib_fields[][2] = {
	HEAD, { 4, 1 }, { 8, 4 }, { 7, 2 }, { 225, 4 }, { 227, 2 },
};
static const uint16_t quota_fields[][2] = {
	HEAD, { 466, 4 }, { 8, 4 }, { 473, 4 },
};
static const uint16_t session_fields[][2] = {
	HEAD, { 4, 1 }, { 8, 4 }, { 7, 2 }, { 225, 4 }, { 227, 2 },
	{ 12, 4 }, { 11, 2 },
};
static const uint16_t addresses_fields[][2] = { HEAD, { 283, 4 }, { 4, 1 } };
static const uint16_t ports_fields[][2] = { HEAD, { 225, 4 }, { 4, 1 } };

enum { T_BIB, T_QUOTA, T_SESSION, T_ADDRESSES, T_PORTS, T_COUNT };

static const struct template {
	uint16_t id;
	uint16_t n;
	const uint16_t (*fields)[2];
} templates[T_COUNT] = {
#define T(i, f) { i, sizeof(f) / sizeof(f[0]), f }
	[T_BIB] = T(256, bib_fields),
	[T_QUOTA] = T(257, quota_fields),
	[T_SESSION] = T(258, session_fields),
	[T_ADDRESSES] = T(259, addresses_fields),
	[T_PORTS] = T(260, ports_fields),
#undef T
};

static struct {
	int fd;
	bool syslog_on, ipfix_on;
	struct sockaddr_in syslog_sa, ipfix_sa;
	char host[64];
	uint32_t enterprise;    /* SD-ID nat@N (RFC 5424 sec. 7.2.2) */
	uint32_t domain;        /* observation domain (RFC 7011 sec. 3.1) */
	uint32_t instance;      /* natInstanceID (RFC 8158 sec. 4.1.1) */
	uint32_t sequence;      /* data records sent (RFC 7011 sec. 3.1) */
	uint8_t pending[T_COUNT][MESSAGE_MAX];
	size_t n_pending[T_COUNT];      /* bytes */
	unsigned records;               /* pending, all templates */
	uint64_t first_ms;              /* when the oldest pending came */
	uint64_t templates_ms;          /* when templates last went */
	bool templates_sent;
	bool sessions;                  /* session records asked for */
	uint64_t failed;
} ex = { .fd = -1 };

static int
parse_collector(const char *what, const char *text, struct sockaddr_in *sa,
		char *err, size_t errlen)
{
	char host[32];
	const char *colon = strrchr(text, ':');
	unsigned long port;
	char *end;

	if (colon == NULL || (size_t)(colon - text) >= sizeof(host))
		return sp_fail(err, errlen, "logging: %s %s: must be a.b.c.d:port",
			       what, text);
	memcpy(host, text, (size_t)(colon - text));
	host[colon - text] = '\0';
	port = strtoul(colon + 1, &end, 10);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1 || *end != '\0' ||
	    port == 0 || port > 65535)
		return sp_fail(err, errlen, "logging: %s %s: must be a.b.c.d:port",
			       what, text);
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

int
sp_export_configure(const struct sp_export_config *c, char *err, size_t errlen)
{
	struct sockaddr_in s = { 0 }, i = { 0 };
	bool syslog_on = c->syslog_server[0] != '\0';
	bool ipfix_on = c->ipfix_collector[0] != '\0';

	if (syslog_on &&
	    parse_collector("syslog_server", c->syslog_server, &s, err, errlen) < 0)
		return -1;
	if (ipfix_on &&
	    parse_collector("ipfix_collector", c->ipfix_collector, &i, err,
			    errlen) < 0)
		return -1;
	if (c->syslog_enterprise == 0)
		return sp_fail(err, errlen,
			       "logging: syslog_enterprise 0: must be an enterprise number (1 or more)");
	sp_export_close();
	if (!syslog_on && !ipfix_on)
		return 0;
	ex.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ex.fd < 0)
		return sp_fail(err, errlen, "logging: UDP socket: %s",
			       strerror(errno));
	ex.syslog_on = syslog_on;
	ex.ipfix_on = ipfix_on;
	ex.syslog_sa = s;
	ex.ipfix_sa = i;
	ex.enterprise = c->syslog_enterprise;
	ex.domain = c->ipfix_domain;
	ex.instance = c->nat_instance;
	ex.sessions = c->ipfix_sessions && ex.ipfix_on;
	ex.sequence = 0;
	ex.templates_sent = false;
	if (gethostname(ex.host, sizeof(ex.host)) != 0 || ex.host[0] == '\0')
		strcpy(ex.host, "-");
	ex.host[sizeof(ex.host) - 1] = '\0';
	return 0;
}

bool
sp_export_enabled(void)
{
	return ex.fd >= 0;
}

bool
sp_export_sessions(void)
{
	return ex.sessions;
}

uint64_t
sp_export_failed(void)
{
	return ex.failed;
}

static void
send_to(const void *data, size_t len, const struct sockaddr_in *sa)
{
	if (sendto(ex.fd, data, len, 0, (const struct sockaddr *)sa,
		   sizeof(*sa)) < 0)
		ex.failed++;
}

static void
stamp_ms(uint64_t time_ms, char *buf, size_t len)
{
	time_t secs = (time_t)(time_ms / 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&secs, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", base, (unsigned)(time_ms % 1000));
}

static bool
is_quota(const struct sp_event *ev)
{
	return ev->type == SP_EVENT_QUOTA_PORTS ||
	       ev->type == SP_EVENT_QUOTA_SESSIONS;
}

static void
syslog_5424(const struct sp_event *ev, uint64_t time_ms, const char *text)
{
	char msg[512], when[40], a[16], b[16];
	int n;

	stamp_ms(time_ms, when, sizeof(when));
	if (is_quota(ev))
		n = snprintf(msg, sizeof(msg),
			     "<%u>1 %s %s " APP_NAME " %d QUOTA [nat@%u event=\"quota-exceeded\" "
			     "limit=\"%s\" host=\"%s\" value=\"%u\"] %s",
			     FACILITY_DAEMON * 8 + 4, when, ex.host, (int)getpid(),
			     ex.enterprise,
			     ev->type == SP_EVENT_QUOTA_PORTS ? "ports_per_host" :
								 "sessions_per_host",
			     sp_ip_str(ev->int_addr, a), ev->ext_addr, text);
	else
		n = snprintf(msg, sizeof(msg),
			     "<%u>1 %s %s " APP_NAME " %d MAPPING [nat@%u event=\"%s\" "
			     "proto=\"%s\" inside=\"%s:%u\" outside=\"%s:%u\"] %s",
			     FACILITY_DAEMON * 8 + 6, when, ex.host, (int)getpid(),
			     ex.enterprise,
			     ev->type == SP_EVENT_CREATED ? "created" : "deleted",
			     sp_proto_name(ev->proto), sp_ip_str(ev->int_addr, a),
			     ev->int_port, sp_ip_str(ev->ext_addr, b),
			     ev->ext_port, text);
	if (n > 0)
		send_to(msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1,
			&ex.syslog_sa);
}

static uint8_t *
put(uint8_t *p, uint64_t v, unsigned width)
{
	for (unsigned i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * (width - 1 - i)));
	return p + width;
}

static size_t
record_size(const struct template *t)
{
	size_t n = 0;

	for (unsigned i = 0; i < t->n; i++)
		n += t->fields[i][1];
	return n;
}

static size_t
template_set_size(void)
{
	size_t n = 4;

	for (unsigned t = 0; t < T_COUNT; t++)
		n += 4 + 4u * templates[t].n;
	return n;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool
templates_due(uint64_t now)
{
	return !ex.templates_sent || now - ex.templates_ms >= TEMPLATE_REFRESH_MS;
}

/* The message's length if it went now with `extra` bytes more of template
 * t's records. */
static size_t
message_size(uint64_t now, unsigned t, size_t extra)
{
	size_t n = IPFIX_HEADER + (templates_due(now) ? template_set_size() : 0);

	for (unsigned i = 0; i < T_COUNT; i++)
		if (ex.n_pending[i] != 0 || i == t)
			n += 4 + ex.n_pending[i];
	return n + extra;
}

static uint8_t *
put_set(uint8_t *p, uint16_t id, const uint8_t *body, size_t len)
{
	p = put(p, id, 2);
	p = put(p, 4 + len, 2);
	memcpy(p, body, len);
	return p + len;
}

static void
send_pending(uint64_t now)
{
	uint8_t msg[MESSAGE_MAX + 512];
	uint8_t *p = msg + IPFIX_HEADER, *set;

	if (templates_due(now)) {
		set = p;
		p = put(p, TEMPLATE_SET, 2) + 2;
		for (unsigned t = 0; t < T_COUNT; t++) {
			p = put(p, templates[t].id, 2);
			p = put(p, templates[t].n, 2);
			for (unsigned i = 0; i < templates[t].n; i++) {
				p = put(p, templates[t].fields[i][0], 2);
				p = put(p, templates[t].fields[i][1], 2);
			}
		}
		put(set + 2, (uint64_t)(p - set), 2);
		ex.templates_sent = true;
		ex.templates_ms = now;
	}
	for (unsigned t = 0; t < T_COUNT; t++)
		if (ex.n_pending[t] != 0)
			p = put_set(p, templates[t].id, ex.pending[t],
				    ex.n_pending[t]);
	put(msg, IPFIX_VERSION, 2);
	put(msg + 2, (uint64_t)(p - msg), 2);
	put(msg + 4, (uint64_t)time(NULL), 4);
	put(msg + 8, ex.sequence, 4);
	put(msg + 12, ex.domain, 4);
	send_to(msg, (size_t)(p - msg), &ex.ipfix_sa);
	ex.sequence += ex.records;
	ex.records = 0;
	memset(ex.n_pending, 0, sizeof(ex.n_pending));
}

void
sp_export_flush(bool force)
{
	uint64_t now;

	if (!ex.ipfix_on || ex.records == 0)
		return;
	now = mono_ms();
	if (force || now - ex.first_ms >= FLUSH_INTERVAL_MS)
		send_pending(now);
}

/* Queues one record of template t: values in field order after the head. */
static void
queue_record(unsigned t, uint64_t time_ms, uint8_t nat_event,
	     const uint64_t *values)
{
	const struct template *tp = &templates[t];
	uint64_t now = mono_ms();
	size_t size = record_size(tp);
	uint8_t *p;

	if (ex.records != 0 && message_size(now, t, size) > MESSAGE_MAX)
		send_pending(now);
	if (ex.records == 0)
		ex.first_ms = now;
	p = ex.pending[t] + ex.n_pending[t];
	p = put(p, time_ms, 8);
	p = put(p, nat_event, 1);
	p = put(p, ex.instance, 4);
	for (unsigned i = 3; i < tp->n; i++)
		p = put(p, values[i - 3], tp->fields[i][1]);
	ex.n_pending[t] += size;
	ex.records++;
}

static void
ipfix_record(const struct sp_event *ev, uint64_t time_ms)
{
	switch (ev->type) {
	case SP_EVENT_SESSION_OPENED:
	case SP_EVENT_SESSION_CLOSED: {
		uint64_t v[] = { ev->proto, ev->int_addr, ev->int_port,
				 ev->ext_addr, ev->ext_port, ev->rem_addr,
				 ev->rem_port };

		queue_record(T_SESSION, time_ms,
			     ev->type == SP_EVENT_SESSION_OPENED ?
				NAT44_SESSION_CREATE : NAT44_SESSION_DELETE, v);
		return;
	}
	case SP_EVENT_PORTS_EXHAUSTED: {
		uint64_t v[] = { ev->ext_addr, ev->proto };

		queue_record(T_PORTS, time_ms, NAT_PORTS_EXHAUSTED, v);
		return;
	}
	case SP_EVENT_ADDRESSES_EXHAUSTED: {
		uint64_t v[] = { ev->int_addr /* natPoolID */, ev->proto };

		queue_record(T_ADDRESSES, time_ms, NAT_ADDRESSES_EXHAUSTED, v);
		return;
	}
	default:
		break;
	}
	if (is_quota(ev)) {
		uint64_t v[] = { MAX_ENTRIES_PER_USER, ev->int_addr,
				 ev->ext_addr /* the limit's value */ };

		queue_record(T_QUOTA, time_ms, QUOTA_EXCEEDED, v);
		return;
	}
	uint64_t v[] = { ev->proto, ev->int_addr, ev->int_port, ev->ext_addr,
			 ev->ext_port };

	queue_record(T_BIB, time_ms, ev->type == SP_EVENT_CREATED ?
			NAT44_BIB_CREATE : NAT44_BIB_DELETE, v);
}

void
sp_export_event(const struct sp_event *ev, uint64_t time_ms, const char *text)
{
	if (ex.fd < 0)
		return;
	/* syslog carries the line log's events: mappings and quotas */
	if (ex.syslog_on && ev->type <= SP_EVENT_QUOTA_SESSIONS)
		syslog_5424(ev, time_ms, text);
	if (ex.ipfix_on)
		ipfix_record(ev, time_ms);
}

void
sp_export_close(void)
{
	sp_export_flush(true);
	if (ex.fd >= 0)
		close(ex.fd);
	ex.fd = -1;
	ex.syslog_on = ex.ipfix_on = false;
	ex.records = 0;
	memset(ex.n_pending, 0, sizeof(ex.n_pending));
}
