/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parser of the command language (cmd.h), by its table (cmd_table.h):
 * a line is split into words, its verb found, its arguments read in order,
 * then its keywords in any order (a later one wins), each value by its type
 * into the member the table names; then what must be given is checked, and
 * the checks between values (cmd_check.c). A message names what is wrong as
 * the user wrote it: "interface in0: mtu 575: must be 576..9216".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control/cmd_table.h"

#define SP_MAX_WORDS 96
#define SP_LINE_MAX 2048

struct words {
	unsigned n;
	char *w[SP_MAX_WORDS];
};

/* One line being parsed. */
struct parse {
	const struct sp_cmd_spec *spec;
	const struct words *words;
	unsigned i;             /* the next word */
	uint64_t seen;          /* bit k: fields[k] was given */
	char ctx[96];           /* what messages start with: "pool p" */
	struct sp_cmd *cmd;
	char *err;
	size_t errlen;
};

static int
split(char *line, struct words *words)
{
	char *save = NULL;
	char *hash = strchr(line, '#');

	if (hash != NULL)
		*hash = '\0';
	words->n = 0;
	for (char *t = strtok_r(line, " \t\r\n", &save); t != NULL;
	     t = strtok_r(NULL, " \t\r\n", &save)) {
		if (words->n == SP_MAX_WORDS)
			return -1;
		words->w[words->n++] = t;
	}
	return 0;
}

/* -- values ------------------------------------------------------------------- */

/* Unsigned decimal in [min, max]. */
static int
parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
parse_ipv4(const char *s, uint32_t *out)
{
	unsigned a[4];
	char tail;

	if (sscanf(s, "%3u.%3u.%3u.%3u%c", &a[0], &a[1], &a[2], &a[3],
		   &tail) != 4)
		return -1;
	for (int i = 0; i < 4; i++)
		if (a[i] > 255)
			return -1;
	for (const char *p = s; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '.')
			return -1;
	*out = a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
	return 0;
}

/* "a.b.c.d/len" or "a.b.c.d" (a /32); NULL, or why not. host_bits:
 * whether they may be set (an interface's address on its link). */
static const char *
parse_prefix(const char *s, bool host_bits, struct sp_prefix *out)
{
	char buf[40];
	char *slash;
	uint64_t len = 32;

	if (strlen(s) >= sizeof(buf))
		return "not an IPv4 prefix";
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		if (parse_uint(slash + 1, 0, 32, &len) < 0)
			return "prefix length must be 0..32";
	}
	if (parse_ipv4(buf, &out->addr) < 0)
		return "not an IPv4 address";
	out->len = (uint8_t)len;
	if (!host_bits && (out->addr & ~sp_prefix_mask(out->len)) != 0)
		return "host bits set";
	return NULL;
}

static int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (strlen(s) != 17 ||
	    sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3],
		   &b[4], &b[5], &tail) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

/* "LOW-HIGH" within 1-65535, LOW <= HIGH. */
static int
parse_port_range(const char *s, uint64_t *low, uint64_t *high)
{
	char buf[16];
	char *dash;

	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	dash = strchr(buf, '-');
	if (dash == NULL)
		return -1;
	*dash = '\0';
	if (parse_uint(buf, 1, 65535, low) < 0 ||
	    parse_uint(dash + 1, 1, 65535, high) < 0 || *low > *high)
		return -1;
	return 0;
}

/* "a.b.c.d:port" */
static int
parse_endpoint(const char *s, uint32_t *addr, uint64_t *port)
{
	char buf[24];
	const char *colon = strrchr(s, ':');

	if (colon == NULL || (size_t)(colon - s) >= sizeof(buf))
		return -1;
	memcpy(buf, s, (size_t)(colon - s));
	buf[colon - s] = '\0';
	if (parse_ipv4(buf, addr) < 0 || parse_uint(colon + 1, 0, 65535, port) < 0)
		return -1;
	return 0;
}

static const struct sp_cmd_word *
word_of(const struct sp_cmd_field *f, const char *s)
{
	for (unsigned i = 0; i < f->n_words; i++)
		if (strcmp(f->words[i].word, s) == 0)
			return &f->words[i];
	return NULL;
}

/* "a, b or c": an enum's words, for a message. */
static void
word_list(const struct sp_cmd_field *f, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (unsigned i = 0; i < f->n_words && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s",
				      i == 0 ? "" : i + 1 == f->n_words ? " or " : ", ",
				      f->words[i].word);
}

/* The message of a value that is not of its type: "CTX: KEY VALUE: why". */
static int
bad_value(struct parse *ps, const struct sp_cmd_field *f, const char *s,
	  const char *why)
{
	return sp_fail(ps->err, ps->errlen, "%s: %s %s: %s", ps->ctx, f->name, s,
		       why);
}

/* A word of text into its member (at most f->max bytes). */
static int
put_text(struct parse *ps, const struct sp_cmd_field *f, const char *s)
{
	if (strlen(s) > f->max || strlen(s) >= f->at.size)
		return sp_fail(ps->err, ps->errlen, "%s: %s: longer than %u bytes",
			       ps->ctx, f->name, (unsigned)f->max);
	memcpy((char *)ps->cmd + f->at.offset, s, strlen(s) + 1);
	return 0;
}

/* The numbers: uint, enum, bool, switch. */
static int
put_number(struct parse *ps, const struct sp_cmd_field *f, const char *s)
{
	const struct sp_cmd_word *w;
	char list[160];
	uint64_t v;

	switch (f->type) {
	case SP_ARG_UINT:
		if (parse_uint(s, f->min, f->max, &v) < 0) {
			snprintf(list, sizeof(list), "must be %llu..%llu",
				 (unsigned long long)f->min,
				 (unsigned long long)f->max);
			return bad_value(ps, f, s, list);
		}
		break;
	case SP_ARG_ENUM:
		w = word_of(f, s);
		if (w == NULL) {
			char why[200];

			word_list(f, list, sizeof(list));
			snprintf(why, sizeof(why), "must be %s", list);
			return bad_value(ps, f, s, why);
		}
		v = w->value;
		break;
	default: {
		const char *yes = f->type == SP_ARG_BOOL ? "true" : "on";
		const char *no = f->type == SP_ARG_BOOL ? "false" : "off";

		if (strcmp(s, yes) != 0 && strcmp(s, no) != 0) {
			snprintf(list, sizeof(list), "must be %s or %s", yes, no);
			return bad_value(ps, f, s, list);
		}
		v = strcmp(s, yes) == 0;
	}
	}
	sp_cmd_put(ps->cmd, f->at, v);
	return 0;
}

/* The addresses: ipv4, prefix, cidr, mac, endpoint, collector. */
static int
put_address(struct parse *ps, const struct sp_cmd_field *f, const char *s)
{
	uint8_t *m = (uint8_t *)ps->cmd + f->at.offset;
	struct sp_prefix p;
	const char *why;
	uint32_t addr;
	uint64_t port;

	switch (f->type) {
	case SP_ARG_IPV4:
		if (parse_ipv4(s, &addr) < 0)
			return bad_value(ps, f, s, "not an IPv4 address");
		sp_cmd_put(ps->cmd, f->at, addr);
		return 0;
	case SP_ARG_PREFIX:
	case SP_ARG_CIDR:
		why = parse_prefix(s, f->type == SP_ARG_CIDR, &p);
		if (why != NULL)
			return bad_value(ps, f, s, f->type == SP_ARG_CIDR ?
					 "must be a.b.c.d/len" : why);
		memcpy(m, &p, sizeof(p));
		return 0;
	case SP_ARG_MAC:
	case SP_ARG_UNICAST_MAC:
		if (parse_mac(s, m) < 0 || (f->type == SP_ARG_UNICAST_MAC && (m[0] & 1)))
			return bad_value(ps, f, s, f->type == SP_ARG_MAC ?
					 "must be aa:bb:cc:dd:ee:ff" :
					 "must be a unicast aa:bb:cc:dd:ee:ff");
		return 0;
	case SP_ARG_ENDPOINT:
		if (parse_endpoint(s, &addr, &port) < 0)
			return bad_value(ps, f, s, "must be a.b.c.d:port");
		sp_cmd_put(ps->cmd, f->at, addr);
		sp_cmd_put(ps->cmd, f->at2, port);
		return 0;
	default: /* SP_ARG_COLLECTOR: checked, kept as written */
		if (parse_endpoint(s, &addr, &port) < 0)
			return bad_value(ps, f, s, "must be a.b.c.d:port");
		return put_text(ps, f, s);
	}
}

/* A port range, or the prefixes of a list. */
static int
put_range(struct parse *ps, const struct sp_cmd_field *f, const char *s)
{
	uint64_t low, high;

	if (parse_port_range(s, &low, &high) < 0)
		return bad_value(ps, f, s, "must be LOW-HIGH within 1-65535");
	sp_cmd_put(ps->cmd, f->at, low);
	sp_cmd_put(ps->cmd, f->at2, high);
	return 0;
}

/* Whether word w is one of the command's keywords. */
static const struct sp_cmd_field *
keyword(const struct sp_cmd_spec *spec, const char *w)
{
	for (unsigned i = 0; i < spec->n_fields; i++)
		if (strcmp(spec->fields[i].key, w) == 0)
			return &spec->fields[i];
	return NULL;
}

/* PREFIX [PREFIX ...]: the words up to the next keyword. */
static int
put_prefixes(struct parse *ps, const struct sp_cmd_field *f)
{
	struct sp_prefix *array = (struct sp_prefix *)((uint8_t *)ps->cmd +
						       f->at.offset);
	unsigned cap = f->at.size / sizeof(*array), n = 0;

	while (ps->i < ps->words->n &&
	       keyword(ps->spec, ps->words->w[ps->i]) == NULL) {
		const char *s = ps->words->w[ps->i++];
		const char *why;

		if (n == cap)
			return sp_fail(ps->err, ps->errlen, "%s: %s: more than %u",
				       ps->ctx, f->name, cap);
		why = parse_prefix(s, false, &array[n]);
		if (why != NULL)
			return bad_value(ps, f, s, why);
		n++;
	}
	if (n == 0)
		return sp_fail(ps->err, ps->errlen, "%s: %s: missing value",
			       ps->ctx, f->name);
	sp_cmd_put(ps->cmd, f->at2, n);
	return 0;
}

/* A value s of field f, by its type, and that it was given. */
static int
put_value(struct parse *ps, const struct sp_cmd_field *f, const char *s)
{
	int rc;

	switch (f->type) {
	case SP_ARG_NAME:
	case SP_ARG_PATH:
		rc = put_text(ps, f, s);
		break;
	case SP_ARG_PORT_RANGE:
		rc = put_range(ps, f, s);
		break;
	case SP_ARG_UINT:
	case SP_ARG_ENUM:
	case SP_ARG_BOOL:
	case SP_ARG_SWITCH:
		rc = put_number(ps, f, s);
		break;
	default:
		rc = put_address(ps, f, s);
	}
	if (rc == 0 && f->presence == SP_GIVEN_MEMBER)
		sp_cmd_put(ps->cmd, f->given, 1);
	else if (rc == 0 && f->presence == SP_GIVEN_BIT)
		sp_cmd_put(ps->cmd, f->given,
			   sp_cmd_get(ps->cmd, f->given) | 1u << f->bit);
	return rc;
}

/* -- a line ------------------------------------------------------------------ */

/* The table's entry for the words, or NULL with a message. */
static const struct sp_cmd_spec *
find_spec(const struct words *w, char *err, size_t errlen)
{
	const struct sp_cmd_spec *second[8];
	char list[512] = "";
	size_t n = 0;
	unsigned seen = 0;

	for (unsigned i = 0; i < sp_cmd_n_specs; i++) {
		const struct sp_cmd_spec *s = &sp_cmd_specs[i];

		if (strcmp(s->words[0], w->w[0]) != 0)
			continue;
		if (s->n_words == 1 || (w->n >= 2 && strcmp(s->words[1], w->w[1]) == 0))
			return s;
		if (seen < 8)
			second[seen++] = s;
	}
	/* "rule: expected 'add' or 'del'" */
	for (unsigned k = 0; k < seen; k++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s'%s'",
				      k == 0 ? "" : k + 1 == seen ? " or " : ", ",
				      second[k]->words[1]);
	if (seen != 0)
		return sp_fail(err, errlen, "%s: expected %s", w->w[0], list), NULL;
	for (unsigned i = 0; i < sp_cmd_n_specs; i++)
		if (i == 0 || strcmp(sp_cmd_specs[i].words[0],
				     sp_cmd_specs[i - 1].words[0]) != 0)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
					      i ? ", " : "", sp_cmd_specs[i].words[0]);
	return sp_fail(err, errlen, "unknown command '%s' (%s)", w->w[0], list),
	       NULL;
}

/* Before the words: what the verb fixes, and the defaults. */
static void
start(struct parse *ps)
{
	const struct sp_cmd_spec *spec = ps->spec;

	ps->cmd->verb = spec->verb;
	if (spec->fixed.at.size != 0)
		sp_cmd_put(ps->cmd, spec->fixed.at, spec->fixed.value);
	for (unsigned i = 0; i < spec->n_fields; i++) {
		const struct sp_cmd_field *f = &spec->fields[i];

		if (f->required || f->dflt == 0)
			continue;
		sp_cmd_put(ps->cmd, f->at, f->dflt);
		if (f->type == SP_ARG_PORT_RANGE)
			sp_cmd_put(ps->cmd, f->at2, f->dflt2);
	}
	snprintf(ps->ctx, sizeof(ps->ctx), "%s%s%s", spec->words[0],
		 spec->n_words == 2 ? " " : "",
		 spec->n_words == 2 ? spec->words[1] : "");
}

/* The positional arguments, in order; an optional one is absent when the
 * next word is a keyword (or there is none). */
static int
read_args(struct parse *ps)
{
	for (unsigned a = 0; a < ps->spec->n_args; a++) {
		const struct sp_cmd_field *f = &ps->spec->args[a];
		const char *s = ps->i < ps->words->n ? ps->words->w[ps->i] : NULL;

		if (s == NULL || (!f->required && keyword(ps->spec, s) != NULL)) {
			if (f->required)
				return sp_fail(ps->err, ps->errlen, "%s: missing %s",
					       ps->ctx, f->name);
			continue;
		}
		ps->i++;
		if (put_value(ps, f, s) < 0)
			return -1;
		/* messages name the object from now on: "pool p: ..." */
		if (a == 0 && ps->spec->named) {
			size_t len = strlen(ps->ctx);

			snprintf(ps->ctx + len, sizeof(ps->ctx) - len, " %s", s);
		}
	}
	return 0;
}

static int
unknown_word(struct parse *ps, const char *w)
{
	char list[512] = "";
	size_t n = 0;

	if (ps->spec->n_fields == 0)
		return sp_fail(ps->err, ps->errlen, "%s: unexpected '%s'", ps->ctx, w);
	for (unsigned i = 0; i < ps->spec->n_fields; i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
				      i ? ", " : "", ps->spec->fields[i].key);
	return sp_fail(ps->err, ps->errlen, "%s: unknown word '%s' (%s)", ps->ctx,
		       w, list);
}

/* The keywords, in any order. */
static int
read_fields(struct parse *ps)
{
	while (ps->i < ps->words->n) {
		const char *w = ps->words->w[ps->i++];
		const struct sp_cmd_field *f = keyword(ps->spec, w);

		if (f == NULL)
			return unknown_word(ps, w);
		ps->seen |= 1ull << (f - ps->spec->fields);
		if (f->type == SP_ARG_FLAG) {
			sp_cmd_put(ps->cmd, f->at, 1);
			continue;
		}
		if (f->type == SP_ARG_PREFIXES) {
			if (put_prefixes(ps, f) < 0)
				return -1;
			continue;
		}
		if (ps->i == ps->words->n)
			return sp_fail(ps->err, ps->errlen, "%s: %s: missing value",
				       ps->ctx, w);
		if (put_value(ps, f, ps->words->w[ps->i++]) < 0)
			return -1;
	}
	return 0;
}

/* What the table says must be given: each required keyword, something at
 * all, exactly one of the one_of groups. */
static int
check_given(struct parse *ps)
{
	const struct sp_cmd_spec *spec = ps->spec;
	unsigned any = 0, groups = 0, leaders = 0;
	char names[128] = "";
	size_t n = 0;

	for (unsigned i = 0; i < spec->n_fields; i++) {
		const struct sp_cmd_field *f = &spec->fields[i];
		bool given = ps->seen & (1ull << i);

		if (f->required && !given)
			return sp_fail(ps->err, ps->errlen, "%s: missing %s",
				       ps->ctx, f->key);
		any += given;
		if (f->group == 0)
			continue;
		leaders++;
		groups += given;
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
				      leaders == 1 ? "" : " or ", f->key);
	}
	if (spec->at_least_one && any == 0)
		return sp_fail(ps->err, ps->errlen, "%s: nothing to set", ps->ctx);
	if (leaders != 0 && groups != 1)
		return sp_fail(ps->err, ps->errlen,
			       "%s: needs exactly one of %s", ps->ctx, names);
	return 0;
}

int
sp_cmd_parse(const char *line, struct sp_cmd *cmd, char *err, size_t errlen)
{
	char buf[SP_LINE_MAX];
	struct words words;
	struct parse ps = {
		.words = &words, .cmd = cmd, .err = err, .errlen = errlen,
	};

	memset(cmd, 0, sizeof(*cmd));
	if (strlen(line) >= sizeof(buf))
		return sp_fail(err, errlen, "line longer than %zu bytes",
			       sizeof(buf) - 1);
	strcpy(buf, line);
	if (split(buf, &words) < 0)
		return sp_fail(err, errlen, "more than %d words", SP_MAX_WORDS);
	if (words.n == 0)
		return 0;       /* SP_CMD_NONE: blank or a comment */
	ps.spec = find_spec(&words, err, errlen);
	if (ps.spec == NULL)
		return -1;
	ps.i = ps.spec->n_words;
	start(&ps);
	if (read_args(&ps) < 0 || read_fields(&ps) < 0 || check_given(&ps) < 0)
		return -1;
	return sp_cmd_check(cmd, err, errlen);
}
