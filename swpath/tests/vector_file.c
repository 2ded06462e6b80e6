/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vector_file.h"

/* Where a message points: the file, and the rule or step being read. */
struct vf_ctx {
	const char *path;
	char where[64];
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int
vf_fail(struct vf_ctx *ctx, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	snprintf(ctx->err, ctx->errlen, "%s: %s: ", ctx->path, ctx->where);
	len = strlen(ctx->err);
	va_start(ap, fmt);
	vsnprintf(ctx->err + len, ctx->errlen - len, fmt, ap);
	va_end(ap);
	return -1;
}

/* Rejects members other than the allowed ones, so typos do not go unseen. */
static int
vf_check_keys(struct vf_ctx *ctx, json_t *obj, const char *const *allowed)
{
	const char *key;
	json_t *value;

	json_object_foreach(obj, key, value) {
		const char *const *a;

		for (a = allowed; *a != NULL; a++)
			if (strcmp(key, *a) == 0)
				break;
		if (*a == NULL)
			return vf_fail(ctx, "unknown field \"%s\"", key);
	}
	return 0;
}

static int
vf_parse_ipv4(const char *text, uint32_t *addr)
{
	struct in_addr a;

	if (inet_pton(AF_INET, text, &a) != 1)
		return -1;
	*addr = ntohl(a.s_addr);
	return 0;
}

/* "a.b.c.d/len" with len 0..255 (QNS itself refuses len > 32). */
static int
vf_parse_prefix(const char *text, uint32_t *addr, uint8_t *plen)
{
	const char *slash = strchr(text, '/');
	char head[INET_ADDRSTRLEN];
	size_t addr_len, i;
	unsigned long len = 0;

	if (slash == NULL)
		return -1;
	addr_len = (size_t)(slash - text);
	if (addr_len >= sizeof(head))
		return -1;
	memcpy(head, text, addr_len);
	head[addr_len] = '\0';
	if (vf_parse_ipv4(head, addr) != 0)
		return -1;
	if (slash[1] == '\0' || strlen(slash + 1) > 3)
		return -1;
	for (i = 1; slash[i] != '\0'; i++) {
		if (slash[i] < '0' || slash[i] > '9')
			return -1;
		len = len * 10 + (unsigned long)(slash[i] - '0');
	}
	if (len > UINT8_MAX)
		return -1;
	*plen = (uint8_t)len;
	return 0;
}

static int
vf_rule_protocol(const char *name, uint8_t *proto)
{
	if (strcmp(name, "tcp") == 0)
		*proto = IPPROTO_TCP;
	else if (strcmp(name, "udp") == 0)
		*proto = IPPROTO_UDP;
	else if (strcmp(name, "icmp") == 0)
		*proto = IPPROTO_ICMP;
	else if (strcmp(name, "any") == 0)
		*proto = QNS_PROTO_ANY;
	else
		return -1;
	return 0;
}

/*
 * Reads a rule. Returns -1 for a malformed rule; sets *unrepresentable when
 * a value is outside what struct qns_rule can hold.
 */
static int
vf_parse_rule(struct vf_ctx *ctx, json_t *obj, struct qns_rule *rule,
	      int *unrepresentable)
{
	static const char *const keys[] = {
		"id", "type", "prefix", "port", "protocol", "comment", NULL,
	};
	json_t *id, *type, *prefix, *port, *protocol;

	memset(rule, 0, sizeof(*rule));
	*unrepresentable = 0;
	if (!json_is_object(obj))
		return vf_fail(ctx, "a rule must be an object");
	if (vf_check_keys(ctx, obj, keys) != 0)
		return -1;
	id = json_object_get(obj, "id");
	type = json_object_get(obj, "type");
	prefix = json_object_get(obj, "prefix");
	port = json_object_get(obj, "port");
	protocol = json_object_get(obj, "protocol");

	if (!json_is_integer(id))
		return vf_fail(ctx, "rule \"id\" must be an integer");
	if (json_integer_value(id) < 0 || json_integer_value(id) > UINT32_MAX)
		*unrepresentable = 1;
	else
		rule->id = (uint32_t)json_integer_value(id);

	if (!json_is_string(type))
		return vf_fail(ctx, "rule \"type\" must be \"snat\" or \"dnat\"");
	if (strcmp(json_string_value(type), "snat") == 0)
		rule->kind = QNS_SNAT;
	else if (strcmp(json_string_value(type), "dnat") == 0)
		rule->kind = QNS_DNAT;
	else
		*unrepresentable = 1;

	if (!json_is_string(prefix))
		return vf_fail(ctx, "rule \"prefix\" must be a string a.b.c.d/len");
	if (vf_parse_prefix(json_string_value(prefix), &rule->prefix,
			    &rule->plen) != 0)
		*unrepresentable = 1;

	if (port != NULL && !json_is_null(port)) {
		if (!json_is_integer(port))
			return vf_fail(ctx, "rule \"port\" must be an integer or null");
		if (json_integer_value(port) < 0 ||
		    json_integer_value(port) > UINT16_MAX) {
			*unrepresentable = 1;
		} else {
			rule->port = (uint16_t)json_integer_value(port);
			rule->has_port = 1;
		}
	}

	if (protocol != NULL) {
		if (!json_is_string(protocol))
			return vf_fail(ctx, "rule \"protocol\" must be a string");
		if (vf_rule_protocol(json_string_value(protocol),
				     &rule->proto) != 0)
			*unrepresentable = 1;
	}
	return 0;
}

static int
vf_parse_port(struct vf_ctx *ctx, json_t *obj, const char *name, uint16_t *port)
{
	json_t *value = json_object_get(obj, name);

	if (!json_is_integer(value) || json_integer_value(value) < 0 ||
	    json_integer_value(value) > UINT16_MAX)
		return vf_fail(ctx, "a TCP or UDP packet needs \"%s\" 0..65535",
			       name);
	*port = (uint16_t)json_integer_value(value);
	return 0;
}

static int
vf_parse_kind(struct vf_ctx *ctx, json_t *value, int *kind)
{
	if (value == NULL)
		return 0;
	if (json_is_string(value) && strcmp(json_string_value(value), "snat") == 0)
		*kind = QNS_SNAT;
	else if (json_is_string(value) &&
		 strcmp(json_string_value(value), "dnat") == 0)
		*kind = QNS_DNAT;
	else
		return vf_fail(ctx, "\"kind\" must be \"snat\" or \"dnat\"");
	return 0;
}

static int
vf_parse_packet(struct vf_ctx *ctx, json_t *obj, struct vector_packet *pkt)
{
	static const char *const keys[] = {
		"protocol", "src", "sport", "dst", "dport", "kind", NULL,
	};
	json_t *protocol, *src, *dst;

	memset(pkt, 0, sizeof(*pkt));
	pkt->kind = VECTOR_KIND_BOTH;
	if (!json_is_object(obj))
		return vf_fail(ctx, "\"lookup\" must be an object");
	if (vf_check_keys(ctx, obj, keys) != 0)
		return -1;
	protocol = json_object_get(obj, "protocol");
	src = json_object_get(obj, "src");
	dst = json_object_get(obj, "dst");

	if (json_is_integer(protocol) && json_integer_value(protocol) >= 0 &&
	    json_integer_value(protocol) <= UINT8_MAX)
		pkt->proto = (uint8_t)json_integer_value(protocol);
	else if (!json_is_string(protocol) ||
		 vf_rule_protocol(json_string_value(protocol), &pkt->proto) != 0 ||
		 strcmp(json_string_value(protocol), "any") == 0)
		return vf_fail(ctx, "packet \"protocol\" must be tcp, udp, icmp "
			       "or a number 0..255");

	if (!json_is_string(src) ||
	    vf_parse_ipv4(json_string_value(src), &pkt->src) != 0)
		return vf_fail(ctx, "packet \"src\" must be an IPv4 address");
	if (!json_is_string(dst) ||
	    vf_parse_ipv4(json_string_value(dst), &pkt->dst) != 0)
		return vf_fail(ctx, "packet \"dst\" must be an IPv4 address");
	/* Only TCP and UDP packets have ports; others' are ignored. */
	if (pkt->proto == IPPROTO_TCP || pkt->proto == IPPROTO_UDP) {
		if (vf_parse_port(ctx, obj, "sport", &pkt->sport) != 0 ||
		    vf_parse_port(ctx, obj, "dport", &pkt->dport) != 0)
			return -1;
	}
	return vf_parse_kind(ctx, json_object_get(obj, "kind"), &pkt->kind);
}

static int
vf_parse_expect_error(struct vf_ctx *ctx, json_t *value,
		      enum vector_outcome *expect)
{
	const char *name;

	*expect = VECTOR_OK;
	if (value == NULL)
		return 0;
	name = json_is_string(value) ? json_string_value(value) : "";
	if (strcmp(name, "exists") == 0)
		*expect = VECTOR_EXISTS;
	else if (strcmp(name, "invalid") == 0)
		*expect = VECTOR_INVALID;
	else if (strcmp(name, "not_found") == 0)
		*expect = VECTOR_NOT_FOUND;
	else
		return vf_fail(ctx, "\"expect_error\" must be \"exists\", "
			       "\"invalid\" or \"not_found\"");
	return 0;
}

static int
vf_parse_lookup_step(struct vf_ctx *ctx, json_t *obj, struct vector_step *step)
{
	static const char *const keys[] = {
		"lookup", "expect", "kind", "comment", NULL,
	};
	json_t *expect = json_object_get(obj, "expect");
	json_t *kind = json_object_get(obj, "kind");

	if (vf_check_keys(ctx, obj, keys) != 0)
		return -1;
	step->type = VECTOR_LOOKUP;
	if (vf_parse_packet(ctx, json_object_get(obj, "lookup"),
			    &step->packet) != 0)
		return -1;
	/* "kind" may sit beside "lookup" or inside it, not in both. */
	if (kind != NULL && step->packet.kind != VECTOR_KIND_BOTH)
		return vf_fail(ctx, "\"kind\" given twice");
	if (vf_parse_kind(ctx, kind, &step->packet.kind) != 0)
		return -1;
	if (expect == NULL)
		return vf_fail(ctx, "a lookup needs \"expect\" (a rule id or null)");
	if (json_is_null(expect))
		step->expect_id = 0;
	else if (json_is_integer(expect) && json_integer_value(expect) > 0 &&
		 json_integer_value(expect) <= UINT32_MAX)
		step->expect_id = (uint32_t)json_integer_value(expect);
	else
		return vf_fail(ctx, "\"expect\" must be a rule id or null");
	return 0;
}

static int
vf_parse_change_step(struct vf_ctx *ctx, json_t *obj, struct vector_step *step)
{
	static const char *const keys[] = {
		"add", "remove", "expect_error", "comment", NULL,
	};
	json_t *remove = json_object_get(obj, "remove");

	if (vf_check_keys(ctx, obj, keys) != 0)
		return -1;
	if (vf_parse_expect_error(ctx, json_object_get(obj, "expect_error"),
				  &step->expect) != 0)
		return -1;
	if (remove == NULL) {
		step->type = VECTOR_ADD;
		return vf_parse_rule(ctx, json_object_get(obj, "add"),
				     &step->rule, &step->rule_unrepresentable);
	}
	step->type = VECTOR_REMOVE;
	if (!json_is_integer(remove))
		return vf_fail(ctx, "\"remove\" must be a rule id");
	if (json_integer_value(remove) < 1 ||
	    json_integer_value(remove) > UINT32_MAX)
		step->id_unrepresentable = 1;
	else
		step->id = (uint32_t)json_integer_value(remove);
	return 0;
}

static int
vf_parse_step(struct vf_ctx *ctx, json_t *obj, struct vector_step *step)
{
	int actions;

	memset(step, 0, sizeof(*step));
	if (!json_is_object(obj))
		return vf_fail(ctx, "a step must be an object");
	actions = (json_object_get(obj, "lookup") != NULL) +
		  (json_object_get(obj, "add") != NULL) +
		  (json_object_get(obj, "remove") != NULL);
	if (actions != 1)
		return vf_fail(ctx, "a step needs exactly one of \"lookup\", "
			       "\"add\", \"remove\"");
	if (json_object_get(obj, "lookup") != NULL)
		return vf_parse_lookup_step(ctx, obj, step);
	return vf_parse_change_step(ctx, obj, step);
}

static int
vf_parse_file(struct vf_ctx *ctx, json_t *root, struct vector_file *vf)
{
	json_t *rules, *steps, *name;
	size_t i;

	snprintf(ctx->where, sizeof(ctx->where), "top level");
	if (!json_is_object(root))
		return vf_fail(ctx, "the file must hold one JSON object");
	rules = json_object_get(root, "rules");
	steps = json_object_get(root, "steps");
	name = json_object_get(root, "name");
	if (!json_is_array(rules) || !json_is_array(steps))
		return vf_fail(ctx, "\"rules\" and \"steps\" must be arrays");
	if (name != NULL && !json_is_string(name))
		return vf_fail(ctx, "\"name\" must be a string");
	vf->name = strdup(name != NULL ? json_string_value(name) : vf->path);
	vf->rules = calloc(json_array_size(rules) + 1, sizeof(*vf->rules));
	vf->steps = calloc(json_array_size(steps) + 1, sizeof(*vf->steps));
	if (vf->name == NULL || vf->rules == NULL || vf->steps == NULL)
		return vf_fail(ctx, "out of memory");

	for (i = 0; i < json_array_size(rules); i++) {
		int unrepresentable;

		snprintf(ctx->where, sizeof(ctx->where), "rules[%zu]", i);
		if (vf_parse_rule(ctx, json_array_get(rules, i), &vf->rules[i],
				  &unrepresentable) != 0)
			return -1;
		if (unrepresentable)
			return vf_fail(ctx, "invalid rule: a value is out of range");
		vf->n_rules++;
	}
	for (i = 0; i < json_array_size(steps); i++) {
		snprintf(ctx->where, sizeof(ctx->where), "steps[%zu]", i);
		if (vf_parse_step(ctx, json_array_get(steps, i),
				  &vf->steps[i]) != 0)
			return -1;
		vf->n_steps++;
	}
	return 0;
}

int
vector_file_load(const char *path, struct vector_file *vf, char *err,
		 size_t errlen)
{
	struct vf_ctx ctx = { .path = path, .err = err, .errlen = errlen };
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(vf, 0, sizeof(*vf));
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line,
			 jerr.column, jerr.text);
		return -1;
	}
	vf->path = strdup(path);
	if (vf->path == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		json_decref(root);
		return -1;
	}
	rc = vf_parse_file(&ctx, root, vf);
	json_decref(root);
	if (rc != 0)
		vector_file_free(vf);
	return rc;
}

void
vector_file_free(struct vector_file *vf)
{
	free(vf->path);
	free(vf->name);
	free(vf->rules);
	free(vf->steps);
	memset(vf, 0, sizeof(*vf));
}

const char *
vector_outcome_name(enum vector_outcome outcome)
{
	switch (outcome) {
	case VECTOR_OK:
		return "ok";
	case VECTOR_EXISTS:
		return "exists";
	case VECTOR_INVALID:
		return "invalid";
	case VECTOR_NOT_FOUND:
		return "not_found";
	}
	return "?";
}

int
vector_outcome_of_rc(int rc)
{
	switch (rc) {
	case 0:
		return VECTOR_OK;
	case -EEXIST:
		return VECTOR_EXISTS;
	case -EINVAL:
		return VECTOR_INVALID;
	case -ENOENT:
		return VECTOR_NOT_FOUND;
	}
	return -1;
}
