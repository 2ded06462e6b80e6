/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared NAT behaviour vectors (tests/vectors/nat/README.md) against
 * swpath's NAT core: one worker's struct sp_nat, its new-flow decisions and
 * timer wheel, with no ports and no packets. The Python core runs the same
 * files (controller/quicknat/nat/nat_vectors.py); both must give every answer
 * a vector states.
 *
 * A vector's configuration becomes lines of the swpath command language,
 * applied by the same code as --commands at start-up (sp_cmd_parse,
 * sp_apply), so a vector means here what it means to the TOML parser.
 * Around the core this runner does what the fast path does (fastpath.c
 * translate): a packet of a session refreshes it unless it is a RST
 * (TCP-3), tracks its TCP flags and reschedules it on FIN or RST; a
 * hairpinned packet passes again as from outside (fastpath.c hairpin).
 *
 * Usage: nat_vectors [--expect-failures] FILE.json...
 * prints one line per failed check and "N passed, M failed" (vectors) last.
 * With --expect-failures a vector passes when exactly its "expect_failures"
 * checks fail (tests/vectors/nat/selftest/: the runner's own test).
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_tcp.h>

#include "control/control.h"
#include "control/publish.h"
#include "control/setup.h"
#include "core/counters.h"
#include "core/lifecycle.h"
#include "core/nat.h"
#include "dataplane/dispatch.h"
#include "dataplane/sp.h"
#include "qns.h"
#include "sp_core_util.h"
#include "sp_test_util.h"

#define T0_MS 1000u
#define DEFAULT_CAPACITY 1024u
#define MAX_LABELS 64
#define MAX_EVENTS 64
#define LINE_MAX_LEN 1024

/* What the vectors call each refusal: the counter's name without "drop_". */
static const char *const counter_names[] = {
#define X(name, help) #name,
	SP_COUNTERS(X)
#undef X
};

/* A session a step named, as it was then: its slot may hold another
 * session after it expires. */
struct label {
	char name[32];
	uint32_t sidx;
	uint32_t id;
	struct sp_session snap;
};

struct outcome {
	bool refused;
	const char *reason;     /* with refused */
	uint32_t sidx;
	bool is_new;
};

/* --expect-failures: count failed checks instead of reporting them. */
static bool expect_mode;

/* One vector's run. */
struct run {
	const char *where;
	uint64_t counters[SP_CNT_MAX];
	struct sp_nat nat;
	struct sp_runtime *rt;
	struct sp_test_heard heard;     /* what the core reported */
	struct label labels[MAX_LABELS];
	unsigned n_labels;
	char events[MAX_EVENTS][80];
	unsigned n_events;
	unsigned failures;
	char step[64];
};

__attribute__((format(printf, 2, 3))) static void
miss(struct run *r, const char *fmt, ...)
{
	va_list ap;

	r->failures++;
	if (expect_mode)
		return;
	printf("%s: %s: ", r->where, r->step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* -- configuration: JSON sections -> command lines ------------------------- */

static int
apply_line(const char *line, char *err, size_t errlen)
{
	struct sp_buf out = { 0 };
	struct sp_cmd cmd;
	int rc;

	if (sp_cmd_parse(line, &cmd, err, errlen) < 0)
		return -1;
	rc = sp_apply(&cmd, &out, err, errlen);
	sp_buf_free(&out);
	return rc;
}

/* Appends " word" (printf-style) to line. */
__attribute__((format(printf, 2, 3))) static void
append(char *line, const char *fmt, ...)
{
	size_t len = strlen(line);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line + len, LINE_MAX_LEN - len, fmt, ap);
	va_end(ap);
}

/* A prefix as the command language wants it: with its length. */
static void
append_prefix(char *line, const char *text)
{
	append(line, " %s%s", text, strchr(text, '/') ? "" : "/32");
}

static void
append_value(char *line, json_t *v)
{
	if (json_is_integer(v))
		append(line, " %lld", (long long)json_integer_value(v));
	else if (json_is_boolean(v))
		append(line, " %s", json_is_true(v) ? "true" : "false");
	else if (json_is_string(v))
		append(line, " %s", json_string_value(v));
}

static void
pool_line(json_t *pool, char *line)
{
	static const char *const optional[] = {
		"ports", "preserve_parity", "preserve_port", NULL,
	};
	size_t i;
	json_t *a;

	snprintf(line, LINE_MAX_LEN, "pool %s",
		 json_string_value(json_object_get(pool, "name")));
	for (const char *const *k = optional; *k; k++)
		if (json_object_get(pool, *k) != NULL) {
			append(line, " %s", *k);
			append_value(line, json_object_get(pool, *k));
		}
	append(line, " addresses");
	json_array_foreach(json_object_get(pool, "addresses"), i, a)
		append_prefix(line, json_string_value(a));
}

static void
rule_line(json_t *rule, char *line)
{
	json_t *v;

	snprintf(line, LINE_MAX_LEN, "rule add id %lld type %s prefix",
		 (long long)json_integer_value(json_object_get(rule, "id")),
		 json_string_value(json_object_get(rule, "type")));
	append_prefix(line, json_string_value(json_object_get(rule, "prefix")));
	if ((v = json_object_get(rule, "port")) != NULL)
		append(line, " port %lld", (long long)json_integer_value(v));
	v = json_object_get(rule, "protocol");
	append(line, " protocol %s", v ? json_string_value(v) : "any");
	if ((v = json_object_get(rule, "pool")) != NULL)
		append(line, " pool %s", json_string_value(v));
	if ((v = json_object_get(rule, "to")) != NULL) {
		append(line, " to");
		append_prefix(line, json_string_value(v));
	}
	if ((v = json_object_get(rule, "to_port")) != NULL)
		append(line, " to_port %lld", (long long)json_integer_value(v));
}

/* "timeouts", "filtering", "limits": the section's keys are the command's. */
static void
table_line(const char *section, json_t *table, char *line)
{
	const char *key;
	json_t *v;

	snprintf(line, LINE_MAX_LEN, "%s", section);
	json_object_foreach(table, key, v) {
		append(line, " %s", key);
		append_value(line, v);
	}
}

/* The vector's sections over the file's (a section given replaces it). */
static json_t *
section(json_t *file_cfg, json_t *vec_cfg, const char *name)
{
	json_t *v = json_object_get(vec_cfg, name);

	return v != NULL ? v : json_object_get(file_cfg, name);
}

static int
configure(struct run *r, json_t *file_cfg, json_t *vec_cfg, char *err,
	  size_t errlen)
{
	static const char *const tables[] = {
		"timeouts", "filtering", "limits", NULL,
	};
	char line[LINE_MAX_LEN];
	size_t i;
	json_t *e;

	json_array_foreach(section(file_cfg, vec_cfg, "pool"), i, e) {
		pool_line(e, line);
		if (apply_line(line, err, errlen) < 0)
			return -1;
	}
	json_array_foreach(section(file_cfg, vec_cfg, "rule"), i, e) {
		rule_line(e, line);
		if (apply_line(line, err, errlen) < 0)
			return -1;
	}
	for (const char *const *t = tables; *t; t++) {
		json_t *table = section(file_cfg, vec_cfg, *t);

		if (table == NULL)
			continue;
		table_line(*t, table, line);
		if (apply_line(line, err, errlen) < 0)
			return -1;
	}
	r->rt = sp_runtime_build();
	return r->rt == NULL ? -1 : 0;
}

/* -- set-up and tear-down, as test_sp_nat.c ---------------------------------- */

static int
vector_setup(struct run *r, json_t *file_cfg, json_t *vec)
{
	json_t *cap = json_object_get(vec, "capacity");
	char err[512];

	memset(&sp, 0, sizeof(sp));
	sp_setup_defaults();
	sp.n_workers = 1;
	sp.port_reuse_ms = 120000;
	sp_rss_init(&sp.rss, sp_rss_default_key, 128, 1);
	sp.qns = qns_create(NULL);
	if (configure(r, file_cfg, json_object_get(vec, "config"), err,
		      sizeof(err)) < 0) {
		printf("%s: configuration: %s\n", r->where, err);
		return -1;
	}
	memset(&r->heard, 0, sizeof(r->heard));
	if (sp_test_nat_init(&r->nat, 0, 1,
			     cap ? (uint32_t)json_integer_value(cap) :
				   DEFAULT_CAPACITY,
			     r->counters, T0_MS, &r->heard) < 0) {
		printf("%s: sp_nat_init failed\n", r->where);
		return -1;
	}
	return 0;
}

static void
vector_teardown(struct run *r)
{
	sp_nat_free(&r->nat);
	for (unsigned i = 0; i < sp.n_pools; i++)
		sp_pool_free(sp.pools[i]);
	qns_free(sp.qns);
	free(r->rt);
	memset(&sp, 0, sizeof(sp));
}

/* -- packets ----------------------------------------------------------------- */

struct packet {
	bool outside;
	struct sp_flow_key key;
	uint8_t flags;
};

static int
parse_endpoint(const char *text, bool ported, uint32_t *addr, uint16_t *port)
{
	char buf[32];
	char *colon;
	struct in_addr a;

	snprintf(buf, sizeof(buf), "%s", text);
	colon = strchr(buf, ':');
	if ((colon != NULL) != ported)
		return -1;
	if (colon != NULL) {
		*colon = '\0';
		*port = (uint16_t)atoi(colon + 1);
	} else {
		*port = 0;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -1;
	*addr = a.s_addr; /* network order, as in a key */
	return 0;
}

/* "ZONE PROTO SRC > DST [id N] [FLAGS]" (README.md). */
static int
parse_packet(const char *text, struct packet *p)
{
	char zone[16], proto[16], src[32], dst[32], w1[16] = "", w2[16] = "",
	     w3[16] = "";
	uint16_t sport, dport;
	uint32_t saddr, daddr;
	const char *flags = NULL;
	bool ported;
	int n;

	n = sscanf(text, "%15s %15s %31s > %31s %15s %15s %15s", zone, proto,
		   src, dst, w1, w2, w3);
	if (n < 4)
		return -1;
	memset(p, 0, sizeof(*p));
	p->outside = strcmp(zone, "outside") == 0;
	if (strcmp(proto, "tcp") == 0)
		p->key.proto = IPPROTO_TCP;
	else if (strcmp(proto, "udp") == 0)
		p->key.proto = IPPROTO_UDP;
	else if (strcmp(proto, "icmp") == 0)
		p->key.proto = IPPROTO_ICMP;
	else
		p->key.proto = (uint8_t)atoi(proto);
	ported = p->key.proto == IPPROTO_TCP || p->key.proto == IPPROTO_UDP;
	if (parse_endpoint(src, ported, &saddr, &sport) < 0 ||
	    parse_endpoint(dst, ported, &daddr, &dport) < 0)
		return -1;
	if (strcmp(w1, "id") == 0) {
		/* an echo's key has the identifier as both ports */
		sport = dport = (uint16_t)atoi(w2);
		flags = w3;
	} else {
		flags = w1;
	}
	for (const char *f = flags; *f; f++)
		p->flags |= *f == 'F' ? RTE_TCP_FIN_FLAG :
			    *f == 'S' ? RTE_TCP_SYN_FLAG :
			    *f == 'R' ? RTE_TCP_RST_FLAG :
			    *f == 'P' ? RTE_TCP_PSH_FLAG :
			    *f == 'A' ? RTE_TCP_ACK_FLAG :
			    *f == 'U' ? RTE_TCP_URG_FLAG : 0;
	p->key.src = saddr;
	p->key.dst = daddr;
	p->key.sport = rte_cpu_to_be_16(sport);
	p->key.dport = rte_cpu_to_be_16(dport);
	return 0;
}

/* What sp_translate does to a session a packet passes (fastpath.h). */
static void
seen(struct run *r, uint32_t sidx, unsigned dir, uint8_t flags, uint32_t now)
{
	struct sp_session *s = &r->nat.sessions[sidx];

	if (!(flags & RTE_TCP_RST_FLAG))
		s->last_seen = now;
	if (s->proto == IPPROTO_TCP) {
		sp_session_tcp_track(s, dir, flags);
		if (flags & (RTE_TCP_FIN_FLAG | RTE_TCP_RST_FLAG))
			sp_nat_reschedule(&r->nat, r->rt, sidx);
	}
}

/* One pass: a lookup, else a new-flow decision by zone. */
static struct outcome
pass(struct run *r, const struct sp_flow_key *key, bool outside,
     uint8_t flags, uint32_t now)
{
	struct outcome o = { 0 };
	int64_t e = sp_nat_lookup(&r->nat, key);
	unsigned owner;
	int rc;

	if (e >= 0) {
		o.sidx = (uint32_t)(e >> 1);
		seen(r, o.sidx, (unsigned)(e & 1), flags, now);
		return o;
	}
	rc = outside ? sp_nat_inbound(&r->nat, r->rt, key, flags, now, 1,
				      &o.sidx, &owner) :
		       sp_nat_outbound(&r->nat, r->rt, key, flags, now, 1,
				       &o.sidx, &owner);
	if (rc != SP_NAT_OK) {
		o.refused = true;
		o.reason = counter_names[rc] + strlen("drop_");
		return o;
	}
	o.is_new = true;
	seen(r, o.sidx, outside ? SP_DIR_OUT2IN : SP_DIR_IN2OUT, flags, now);
	return o;
}

/* The second pass of a hairpinned packet: its in2out rewrite, from outside. */
static struct outcome
hairpin(struct run *r, uint32_t sidx, const struct packet *p, uint32_t now)
{
	const struct sp_session *s = &r->nat.sessions[sidx];
	struct sp_flow_key k = p->key;

	k.src = s->ext_addr;
	k.sport = s->ext_port;
	if (k.proto == IPPROTO_ICMP)
		k.dport = s->ext_port;
	return pass(r, &k, true, p->flags, now);
}

/* -- expectations ------------------------------------------------------------ */

static struct label *
label_find(struct run *r, const char *name)
{
	for (unsigned i = 0; i < r->n_labels; i++)
		if (strcmp(r->labels[i].name, name) == 0)
			return &r->labels[i];
	miss(r, "unknown label %s", name);
	return NULL;
}

static void
label_set(struct run *r, const char *name, uint32_t sidx)
{
	struct label *l = NULL;

	for (unsigned i = 0; i < r->n_labels; i++)
		if (strcmp(r->labels[i].name, name) == 0)
			l = &r->labels[i];
	if (l == NULL && r->n_labels < MAX_LABELS)
		l = &r->labels[r->n_labels++];
	if (l == NULL)
		return;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->sidx = sidx;
	l->id = r->nat.sessions[sidx].id;
	l->snap = r->nat.sessions[sidx];
}

static bool
label_alive(struct run *r, const struct label *l)
{
	const struct sp_session *s = &r->nat.sessions[l->sidx];

	return s->proto != 0 && s->id == l->id;
}

static void
endpoint_str(rte_be32_t addr, rte_be16_t port, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &addr, a, sizeof(a));
	snprintf(buf, len, "%s:%u", a, rte_be_to_cpu_16(port));
}

static bool
in_prefix(rte_be32_t addr, const char *prefix)
{
	char buf[32];
	char *slash;
	struct in_addr a;
	unsigned len = 32;
	uint32_t mask;

	snprintf(buf, sizeof(buf), "%s", prefix);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		len = (unsigned)atoi(slash + 1);
	}
	inet_pton(AF_INET, buf, &a);
	mask = len == 0 ? 0 : ~0u << (32 - len);
	return (rte_be_to_cpu_32(addr) & mask) == (ntohl(a.s_addr) & mask);
}

static const struct sp_session *
labelled(struct run *r, json_t *name)
{
	struct label *l = label_find(r, json_string_value(name));

	return l ? &l->snap : NULL;
}

static void
check_external(struct run *r, json_t *want, const struct sp_session *s)
{
	uint16_t ext = rte_be_to_cpu_16(s->ext_port);
	uint16_t internal = rte_be_to_cpu_16(s->int_port);
	char got[32];
	const char *key;
	json_t *v;

	endpoint_str(s->ext_addr, s->ext_port, got, sizeof(got));
	if (json_is_string(want)) {
		const char *w = json_string_value(want);

		if (strchr(w, ':') ? strcmp(got, w) != 0 :
				     !in_prefix(s->ext_addr, w))
			miss(r, "external %s, expected %s", got, w);
		return;
	}
	json_object_foreach(want, key, v) {
		const struct sp_session *o = NULL;

		if (strcmp(key, "same_as") == 0) {
			if ((o = labelled(r, v)) != NULL &&
			    (o->ext_addr != s->ext_addr ||
			     o->ext_port != s->ext_port))
				miss(r, "external %s: expected %s's", got,
				     json_string_value(v));
		} else if (strcmp(key, "differs_from") == 0) {
			json_t *list = json_is_string(v) ? json_pack("[O]", v) :
							   json_incref(v);
			size_t i;
			json_t *name;

			json_array_foreach(list, i, name)
				if ((o = labelled(r, name)) != NULL &&
				    o->ext_addr == s->ext_addr &&
				    o->ext_port == s->ext_port)
					miss(r, "external %s: expected other than %s's",
					     got, json_string_value(name));
			json_decref(list);
		} else if (strcmp(key, "address_of") == 0) {
			if ((o = labelled(r, v)) != NULL &&
			    o->ext_addr != s->ext_addr)
				miss(r, "external %s: expected %s's address",
				     got, json_string_value(v));
		} else if (strcmp(key, "not_address_of") == 0) {
			if ((o = labelled(r, v)) != NULL &&
			    o->ext_addr == s->ext_addr)
				miss(r, "external %s: expected other than %s's address",
				     got, json_string_value(v));
		} else if (strcmp(key, "in") == 0) {
			if (!in_prefix(s->ext_addr, json_string_value(v)))
				miss(r, "external %s: expected within %s", got,
				     json_string_value(v));
		} else if (strcmp(key, "ports") == 0) {
			unsigned lo = 0, hi = 0;

			sscanf(json_string_value(v), "%u-%u", &lo, &hi);
			if (ext < lo || ext > hi)
				miss(r, "external %s: expected a port in %s",
				     got, json_string_value(v));
		} else if (strcmp(key, "parity") == 0) {
			if ((ext & 1) != (internal & 1))
				miss(r, "external %s: expected the parity of %u",
				     got, internal);
		} else if (strcmp(key, "port_is_internal") == 0) {
			if ((ext == internal) != json_is_true(v))
				miss(r, "external %s: expected the internal port %u %skept",
				     got, internal, json_is_true(v) ? "" : "not ");
		} else if (strcmp(key, "not_next_to") == 0) {
			if ((o = labelled(r, v)) != NULL &&
			    abs((int)rte_be_to_cpu_16(o->ext_port) - ext) <= 1)
				miss(r, "external %s: a port next to %s's: predictable",
				     got, json_string_value(v));
		} else {
			miss(r, "unknown external check %s", key);
		}
	}
}

static void
check_outcome(struct run *r, json_t *want, const struct outcome *o,
	      const char *as)
{
	const struct sp_session *s;
	json_t *v;

	if ((v = json_object_get(want, "refused")) != NULL) {
		if (!o->refused || strcmp(o->reason, json_string_value(v)) != 0)
			miss(r, "%s%s, expected refused: %s",
			     o->refused ? "refused: " : "a session",
			     o->refused ? o->reason : "", json_string_value(v));
		return;
	}
	if (o->refused) {
		miss(r, "refused: %s, expected a session", o->reason);
		return;
	}
	s = &r->nat.sessions[o->sidx];
	if ((v = json_object_get(want, "session")) != NULL) {
		const char *w = json_string_value(v);

		if (strcmp(w, "new") == 0) {
			if (!o->is_new)
				miss(r, "an existing session, expected a new one");
		} else {
			struct label *l = label_find(r, w);

			if (l != NULL && (l->sidx != o->sidx || !label_alive(r, l)))
				miss(r, "not the session of %s", w);
		}
	}
	if (as != NULL)
		label_set(r, as, o->sidx);
	if ((v = json_object_get(want, "internal")) != NULL) {
		char got[32];

		endpoint_str(s->int_addr, s->int_port, got, sizeof(got));
		if (strcmp(got, json_string_value(v)) != 0)
			miss(r, "internal %s, expected %s", got,
			     json_string_value(v));
	}
	if ((v = json_object_get(want, "external")) != NULL)
		check_external(r, v, s);
}

/* The mapping, quota and exhaustion events since the last step, as the
 * vectors write them (session events are not asked for: their runner's
 * observer leaves session_events_when 0). */
static void
collect_events(struct run *r)
{
	r->n_events = 0;
	for (unsigned i = 0; i < r->heard.n_events; i++) {
		const struct sp_event ev = r->heard.events[i];
		char *line = r->events[r->n_events];
		struct in_addr a = { .s_addr = htonl(ev.int_addr) };
		char addr[INET_ADDRSTRLEN];

		if (r->n_events == MAX_EVENTS)
			break;
		inet_ntop(AF_INET, &a, addr, sizeof(addr));
		if (ev.type == SP_EVENT_PORTS_EXHAUSTED) {
			struct in_addr x = { .s_addr = htonl(ev.ext_addr) };

			inet_ntop(AF_INET, &x, addr, sizeof(addr));
			snprintf(line, 80, "ports-exhausted %s %s",
				 sp_proto_name(ev.proto), addr);
		} else if (ev.type == SP_EVENT_ADDRESSES_EXHAUSTED) {
			snprintf(line, 80, "addresses-exhausted %s %u",
				 sp_proto_name(ev.proto), ev.int_addr);
		} else if (ev.type == SP_EVENT_QUOTA_PORTS ||
		    ev.type == SP_EVENT_QUOTA_SESSIONS)
			snprintf(line, 80, "quota %s %s",
				 ev.type == SP_EVENT_QUOTA_PORTS ?
					 "ports_per_host" : "sessions_per_host",
				 addr);
		else
			snprintf(line, 80, "%s %s %s:%u",
				 ev.type == SP_EVENT_CREATED ? "created" : "deleted",
				 sp_proto_name(ev.proto), addr, ev.int_port);
		r->n_events++;
	}
	r->heard.n_events = 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Events compare as multisets: two sessions expiring in one step may go
 * in either order. */
static void
check_events(struct run *r, json_t *want)
{
	const char *got[MAX_EVENTS], *exp[MAX_EVENTS];
	size_t n_want = json_array_size(want), i;
	bool same = n_want == r->n_events;

	for (i = 0; i < r->n_events; i++)
		got[i] = r->events[i];
	for (i = 0; i < n_want && i < MAX_EVENTS; i++)
		exp[i] = json_string_value(json_array_get(want, i));
	qsort(got, r->n_events, sizeof(got[0]), cmp_str);
	qsort(exp, n_want < MAX_EVENTS ? n_want : MAX_EVENTS, sizeof(exp[0]),
	      cmp_str);
	for (i = 0; same && i < n_want; i++)
		same = strcmp(got[i], exp[i]) == 0;
	if (!same) {
		char list[1024] = "";

		for (i = 0; i < r->n_events; i++)
			append(list, "%s'%s'", i ? ", " : "", r->events[i]);
		miss(r, "events [%s], expected %s", list,
		     json_dumps(want, JSON_COMPACT));
	}
}

static void
check_labels(struct run *r, json_t *list, bool alive)
{
	size_t i;
	json_t *name;

	json_array_foreach(list, i, name) {
		struct label *l = label_find(r, json_string_value(name));

		if (l != NULL && label_alive(r, l) != alive)
			miss(r, "session %s is %s, expected %s",
			     json_string_value(name), alive ? "gone" : "alive",
			     alive ? "alive" : "gone");
	}
}

static void
run_step(struct run *r, json_t *step, uint32_t now)
{
	json_t *want = json_object_get(step, "expect");
	json_t *text = json_object_get(step, "packet");
	json_t *v;

	/* everything due by now: the worker does it in slices of the wheel */
	while ((int32_t)(now - r->nat.wheel_time) >=
	       (int32_t)(1u << SP_WHEEL_SLOT_SHIFT))
		sp_nat_age(&r->nat, r->rt, now, UINT32_MAX);
	if (text != NULL) {
		struct packet p;
		struct outcome first, second;

		if (parse_packet(json_string_value(text), &p) < 0) {
			miss(r, "packet '%s': cannot read it",
			     json_string_value(text));
			return;
		}
		first = pass(r, &p.key, p.outside, p.flags, now);
		check_outcome(r, want, &first,
			      json_string_value(json_object_get(step, "as")));
		v = json_object_get(want, "hairpin");
		if (!first.refused &&
		    (r->nat.sessions[first.sidx].flags & SP_SESS_HAIRPIN) &&
		    sp_nat_lookup(&r->nat, &p.key) ==
			    (int64_t)(first.sidx << 1 | SP_DIR_IN2OUT)) {
			second = hairpin(r, first.sidx, &p, now);
			if (v != NULL) {
				snprintf(r->step + strlen(r->step),
					 sizeof(r->step) - strlen(r->step),
					 ": hairpin");
				check_outcome(r, v, &second,
					      json_string_value(json_object_get(v, "as")));
			}
		} else if (v != NULL) {
			miss(r, "no second pass (not a hairpinned packet)");
		}
	}
	collect_events(r);
	if ((v = json_object_get(want, "events")) != NULL)
		check_events(r, v);
	if ((v = json_object_get(want, "sessions")) != NULL &&
	    r->nat.n_sessions != json_integer_value(v))
		miss(r, "%u sessions, expected %lld", r->nat.n_sessions,
		     (long long)json_integer_value(v));
	check_labels(r, json_object_get(want, "alive"), true);
	check_labels(r, json_object_get(want, "gone"), false);
}

static bool
run_vector(const char *file, json_t *file_cfg, json_t *vec)
{
	static struct run r;
	char where[256];
	size_t i;
	json_t *step;

	memset(&r, 0, sizeof(r));
	snprintf(where, sizeof(where), "%s: %s", file,
		 json_string_value(json_object_get(vec, "name")));
	r.where = where;
	if (vector_setup(&r, file_cfg, vec) < 0) {
		vector_teardown(&r);
		return false;
	}
	json_array_foreach(json_object_get(vec, "steps"), i, step) {
		double at = json_number_value(json_object_get(step, "at"));

		snprintf(r.step, sizeof(r.step), "steps[%zu]", i);
		run_step(&r, step, T0_MS + (uint32_t)(at * 1000.0));
	}
	vector_teardown(&r);
	if (expect_mode) {
		json_int_t want = json_integer_value(
			json_object_get(vec, "expect_failures"));

		if ((json_int_t)r.failures != want)
			printf("%s: %u checks failed, expected %lld\n", where,
			       r.failures, (long long)want);
		return (json_int_t)r.failures == want;
	}
	return r.failures == 0;
}

int
main(int argc, char **argv)
{
	unsigned passed = 0, failed = 0;

	int first = 1;

	if (argc > 1 && strcmp(argv[1], "--expect-failures") == 0) {
		expect_mode = true;
		first = 2;
	}
	if (argc <= first) {
		fprintf(stderr, "usage: %s [--expect-failures] FILE.json...\n",
			argv[0]);
		return 2;
	}
	if (sp_test_eal_init(argv[0]) < 0) {
		fprintf(stderr, "%s: EAL start failed\n", argv[0]);
		return 1;
	}
	for (int a = first; a < argc; a++) {
		json_error_t jerr;
		json_t *root = json_load_file(argv[a], 0, &jerr);
		const char *base = strrchr(argv[a], '/');
		size_t i;
		json_t *vec;

		base = base ? base + 1 : argv[a];
		if (root == NULL) {
			printf("%s: line %d: %s\n", argv[a], jerr.line, jerr.text);
			failed++;
			continue;
		}
		json_array_foreach(json_object_get(root, "vectors"), i, vec) {
			if (run_vector(base, json_object_get(root, "config"), vec))
				passed++;
			else
				failed++;
		}
		json_decref(root);
	}
	printf("%u passed, %u failed\n", passed, failed);
	return failed == 0 ? 0 : 1;
}
