/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command table read back (cmd_table.h): a parsed command written as a
 * line, in the table's order, the form the controller's writer gives
 * (quicknat/config/command_render.py renders by the same description), and
 * what the table says of a verb.
 */
#include <stdio.h>
#include <string.h>

#include "control/cmd_table.h"
#include "util/text.h"

uint64_t
sp_cmd_get(const struct sp_cmd *cmd, struct sp_cmd_at at)
{
	const uint8_t *p = (const uint8_t *)cmd + at.offset;
	uint64_t v = 0;

	switch (at.size) {
	case 1:
		return *p;
	case 2:
		return *(const uint16_t *)(const void *)p;
	case 4:
		return *(const uint32_t *)(const void *)p;
	default:
		memcpy(&v, p, at.size < sizeof(v) ? at.size : sizeof(v));
		return v;
	}
}

void
sp_cmd_put(struct sp_cmd *cmd, struct sp_cmd_at at, uint64_t v)
{
	uint8_t *p = (uint8_t *)cmd + at.offset;

	switch (at.size) {
	case 1:
		*p = (uint8_t)v;
		break;
	case 2:
		*(uint16_t *)(void *)p = (uint16_t)v;
		break;
	case 4:
		*(uint32_t *)(void *)p = (uint32_t)v;
		break;
	default:
		memcpy(p, &v, at.size < sizeof(v) ? at.size : sizeof(v));
	}
}

bool
sp_cmd_given(const struct sp_cmd *cmd, const struct sp_cmd_field *f)
{
	switch (f->presence) {
	case SP_GIVEN_MEMBER:
		return sp_cmd_get(cmd, f->given) != 0;
	case SP_GIVEN_BIT:
		return sp_cmd_get(cmd, f->given) & 1u << f->bit;
	case SP_GIVEN_UNLESS:
		if (f->type == SP_ARG_NAME || f->type == SP_ARG_PATH ||
		    f->type == SP_ARG_COLLECTOR)
			return ((const char *)cmd)[f->at.offset] != '\0';
		return sp_cmd_get(cmd, f->at) != f->dflt;
	case SP_GIVEN_FLAG:
		return sp_cmd_get(cmd, f->at) != 0;
	default:
		return true;
	}
}

const struct sp_cmd_spec *
sp_cmd_spec_of(const struct sp_cmd *cmd)
{
	for (unsigned i = 0; i < sp_cmd_n_specs; i++) {
		const struct sp_cmd_spec *s = &sp_cmd_specs[i];

		if (s->verb == cmd->verb &&
		    (s->fixed.at.size == 0 ||
		     sp_cmd_get(cmd, s->fixed.at) == s->fixed.value))
			return s;
	}
	return NULL;
}

/* The first entry of a verb (its words' first, for `session ...`). */
static const struct sp_cmd_spec *
spec_of_verb(enum sp_verb verb)
{
	for (unsigned i = 0; i < sp_cmd_n_specs; i++)
		if (sp_cmd_specs[i].verb == verb)
			return &sp_cmd_specs[i];
	return NULL;
}

const char *
sp_cmd_verb_name(enum sp_verb verb)
{
	const struct sp_cmd_spec *s = spec_of_verb(verb);

	return s == NULL ? "?" : s->name;
}

enum sp_cmd_when
sp_cmd_when(enum sp_verb verb)
{
	const struct sp_cmd_spec *s = spec_of_verb(verb);

	return s == NULL ? SP_WHEN_ANY : (enum sp_cmd_when)s->when;
}

bool
sp_verb_is_json(enum sp_verb verb)
{
	const struct sp_cmd_spec *s = spec_of_verb(verb);

	return s != NULL && s->json;
}

bool
sp_verb_is_audited(enum sp_verb verb)
{
	const struct sp_cmd_spec *s = spec_of_verb(verb);

	return s != NULL && s->audit;
}

static void
format_ipv4(struct sp_buf *b, uint32_t a)
{
	char ip[16];

	sp_buf_printf(b, "%s", sp_ip_str(a, ip));
}

static void
format_prefix(struct sp_buf *b, const struct sp_prefix *p)
{
	format_ipv4(b, p->addr);
	sp_buf_printf(b, "/%u", p->len);
}

/* The word of an enum's value. */
static const char *
word_of_value(const struct sp_cmd_field *f, uint64_t v)
{
	for (unsigned i = 0; i < f->n_words; i++)
		if (f->words[i].value == v)
			return f->words[i].word;
	return "?";
}

/* The value of field f in cmd, as the language writes it. */
static void
format_value(struct sp_buf *b, const struct sp_cmd *cmd,
	     const struct sp_cmd_field *f)
{
	const uint8_t *m = (const uint8_t *)cmd + f->at.offset;
	uint64_t v = sp_cmd_get(cmd, f->at);
	char mac[18];

	switch (f->type) {
	case SP_ARG_UINT:
		sp_buf_printf(b, "%llu", (unsigned long long)v);
		break;
	case SP_ARG_ENUM:
		sp_buf_printf(b, "%s", word_of_value(f, v));
		break;
	case SP_ARG_BOOL:
		sp_buf_printf(b, "%s", v ? "true" : "false");
		break;
	case SP_ARG_SWITCH:
		sp_buf_printf(b, "%s", v ? "on" : "off");
		break;
	case SP_ARG_IPV4:
		format_ipv4(b, (uint32_t)v);
		break;
	case SP_ARG_PREFIX:
	case SP_ARG_CIDR:
		format_prefix(b, (const struct sp_prefix *)(const void *)m);
		break;
	case SP_ARG_MAC:
	case SP_ARG_UNICAST_MAC:
		sp_buf_printf(b, "%s", sp_mac_str(m, mac));
		break;
	case SP_ARG_PORT_RANGE:
		sp_buf_printf(b, "%llu-%llu", (unsigned long long)v,
			      (unsigned long long)sp_cmd_get(cmd, f->at2));
		break;
	case SP_ARG_PREFIXES:
		for (uint64_t i = 0; i < sp_cmd_get(cmd, f->at2); i++) {
			sp_buf_printf(b, "%s", i ? " " : "");
			format_prefix(b, (const struct sp_prefix *)(const void *)m + i);
		}
		break;
	case SP_ARG_ENDPOINT:
		format_ipv4(b, (uint32_t)v);
		sp_buf_printf(b, ":%llu",
			      (unsigned long long)sp_cmd_get(cmd, f->at2));
		break;
	default: /* text */
		sp_buf_printf(b, "%s", (const char *)m);
	}
}

void
sp_cmd_format(const struct sp_cmd *cmd, struct sp_buf *b)
{
	const struct sp_cmd_spec *s = sp_cmd_spec_of(cmd);

	if (s == NULL)
		return;
	sp_buf_printf(b, "%s", s->words[0]);
	if (s->n_words == 2)
		sp_buf_printf(b, " %s", s->words[1]);
	for (unsigned i = 0; i < s->n_args; i++) {
		if (!sp_cmd_given(cmd, &s->args[i]))
			continue;
		sp_buf_printf(b, " ");
		format_value(b, cmd, &s->args[i]);
	}
	for (unsigned i = 0; i < s->n_fields; i++) {
		const struct sp_cmd_field *f = &s->fields[i];

		if (!sp_cmd_given(cmd, f))
			continue;
		sp_buf_printf(b, " %s", f->key);
		if (f->type == SP_ARG_FLAG)
			continue;
		sp_buf_printf(b, " ");
		format_value(b, cmd, f);
	}
}
