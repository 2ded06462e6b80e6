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
#define PEN_EXAMPLE 32473       /* RFC 5612 */
#define FACILITY_DAEMON 3
#define IPFIX_VERSION 10
#define IPFIX_DOMAIN 2
#define TEMPLATE_SET 2
#define MAPPING_TEMPLATE 256
#define QUOTA_TEMPLATE 257
#define NAT44_BIB_CREATE 8
#define NAT44_BIB_DELETE 9
#define QUOTA_EXCEEDED 13
#define MAX_ENTRIES_PER_USER 3
#define MAPPING_RECORD 22       /* 8 + 1 + 1 + 4 + 2 + 4 + 2 */
#define QUOTA_RECORD 21         /* 8 + 1 + 4 + 4 + 4 */
/* a message stays within one Ethernet frame: 1400 bytes */
#define RECORDS_MAX 1300

/* (element id, length) of each template, as event_export.py's. */
static const uint16_t mapping_fields[][2] = {
	{ 323, 8 }, { 230, 1 }, { 4, 1 }, { 8, 4 }, { 7, 2 }, { 225, 4 }, { 227, 2 },
};
static const uint16_t quota_fields[][2] = {
	{ 323, 8 }, { 230, 1 }, { 466, 4 }, { 8, 4 }, { 473, 4 },
};

static struct {
	int fd;
	bool syslog_on, ipfix_on;
	struct sockaddr_in syslog_sa, ipfix_sa;
	char host[64];
	uint32_t sequence;      /* data records sent (RFC 7011 sec. 3.1) */
	uint8_t mappings[RECORDS_MAX], quotas[RECORDS_MAX];
	size_t n_mappings, n_quotas;   /* bytes */
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
sp_export_configure(const char *syslog_server, const char *ipfix_collector,
		    char *err, size_t errlen)
{
	struct sockaddr_in s = { 0 }, i = { 0 };

	if (syslog_server[0] != '\0' &&
	    parse_collector("syslog_server", syslog_server, &s, err, errlen) < 0)
		return -1;
	if (ipfix_collector[0] != '\0' &&
	    parse_collector("ipfix_collector", ipfix_collector, &i, err, errlen) < 0)
		return -1;
	sp_export_close();
	if (syslog_server[0] == '\0' && ipfix_collector[0] == '\0')
		return 0;
	ex.fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ex.fd < 0)
		return sp_fail(err, errlen, "logging: UDP socket: %s",
			       strerror(errno));
	ex.syslog_on = syslog_server[0] != '\0';
	ex.ipfix_on = ipfix_collector[0] != '\0';
	ex.syslog_sa = s;
	ex.ipfix_sa = i;
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
			     PEN_EXAMPLE,
			     ev->type == SP_EVENT_QUOTA_PORTS ? "ports_per_host" :
								 "sessions_per_host",
			     sp_ip_str(ev->int_addr, a), ev->ext_addr, text);
	else
		n = snprintf(msg, sizeof(msg),
			     "<%u>1 %s %s " APP_NAME " %d MAPPING [nat@%u event=\"%s\" "
			     "proto=\"%s\" inside=\"%s:%u\" outside=\"%s:%u\"] %s",
			     FACILITY_DAEMON * 8 + 6, when, ex.host, (int)getpid(),
			     PEN_EXAMPLE,
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

static uint8_t *
put_template(uint8_t *p, uint16_t id, const uint16_t (*fields)[2], unsigned n)
{
	p = put(p, id, 2);
	p = put(p, n, 2);
	for (unsigned i = 0; i < n; i++) {
		p = put(p, fields[i][0], 2);
		p = put(p, fields[i][1], 2);
	}
	return p;
}

void
sp_export_flush(void)
{
	uint8_t msg[16 + 4 + 2 * 4 + 4 * 12 + 2 * 4 + 2 * RECORDS_MAX];
	uint8_t *p = msg + 16, *set;
	unsigned records = (unsigned)(ex.n_mappings / MAPPING_RECORD +
				      ex.n_quotas / QUOTA_RECORD);

	if (!ex.ipfix_on || records == 0)
		return;
	/* the templates in every message: UDP loses and reorders (RFC 7011
	 * sec. 10.3.6) */
	set = p;
	p = put(p, TEMPLATE_SET, 2) + 2;
	p = put_template(p, MAPPING_TEMPLATE, mapping_fields, 7);
	p = put_template(p, QUOTA_TEMPLATE, quota_fields, 5);
	put(set + 2, (uint64_t)(p - set), 2);
	if (ex.n_mappings != 0) {
		p = put(p, MAPPING_TEMPLATE, 2);
		p = put(p, 4 + ex.n_mappings, 2);
		memcpy(p, ex.mappings, ex.n_mappings);
		p += ex.n_mappings;
	}
	if (ex.n_quotas != 0) {
		p = put(p, QUOTA_TEMPLATE, 2);
		p = put(p, 4 + ex.n_quotas, 2);
		memcpy(p, ex.quotas, ex.n_quotas);
		p += ex.n_quotas;
	}
	put(msg, IPFIX_VERSION, 2);
	put(msg + 2, (uint64_t)(p - msg), 2);
	put(msg + 4, (uint64_t)time(NULL), 4);
	put(msg + 8, ex.sequence, 4);
	put(msg + 12, IPFIX_DOMAIN, 4);
	send_to(msg, (size_t)(p - msg), &ex.ipfix_sa);
	ex.sequence += records;
	ex.n_mappings = ex.n_quotas = 0;
}

static void
ipfix_record(const struct sp_event *ev, uint64_t time_ms)
{
	uint8_t *p;

	if (ex.n_mappings + MAPPING_RECORD > RECORDS_MAX ||
	    ex.n_quotas + QUOTA_RECORD > RECORDS_MAX)
		sp_export_flush();
	if (is_quota(ev)) {
		p = ex.quotas + ex.n_quotas;
		p = put(p, time_ms, 8);
		p = put(p, QUOTA_EXCEEDED, 1);
		p = put(p, MAX_ENTRIES_PER_USER, 4);
		p = put(p, ev->int_addr, 4);
		put(p, ev->ext_addr, 4);        /* the limit's value */
		ex.n_quotas += QUOTA_RECORD;
		return;
	}
	p = ex.mappings + ex.n_mappings;
	p = put(p, time_ms, 8);
	p = put(p, ev->type == SP_EVENT_CREATED ? NAT44_BIB_CREATE :
						  NAT44_BIB_DELETE, 1);
	p = put(p, ev->proto, 1);
	p = put(p, ev->int_addr, 4);
	p = put(p, ev->int_port, 2);
	p = put(p, ev->ext_addr, 4);
	put(p, ev->ext_port, 2);
	ex.n_mappings += MAPPING_RECORD;
}

void
sp_export_event(const struct sp_event *ev, uint64_t time_ms, const char *text)
{
	if (ex.fd < 0)
		return;
	if (ex.syslog_on)
		syslog_5424(ev, time_ms, text);
	if (ex.ipfix_on)
		ipfix_record(ev, time_ms);
}

void
sp_export_close(void)
{
	sp_export_flush();
	if (ex.fd >= 0)
		close(ex.fd);
	ex.fd = -1;
	ex.syslog_on = ex.ipfix_on = false;
	ex.n_mappings = ex.n_quotas = 0;
}
