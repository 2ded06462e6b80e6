/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command language as data: one struct sp_cmd_spec per command (its
 * words, positional arguments, keywords, their value types and ranges,
 * when it may be applied), generated into cmd_table.c from
 * swpath/spec/commands.toml, the one description the controller's writer
 * is generated from too. cmd_parse.c reads a line by it, cmd_format.c
 * writes a command back by it; only what a table cannot say (one field's
 * value against another's) is code, in cmd_check.c.
 */
#ifndef SP_CMD_TABLE_H
#define SP_CMD_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/cmd.h"

/* The value types (commands.toml's "Types"). */
enum sp_arg_type {
	SP_ARG_UINT,            /* decimal in [min, max] */
	SP_ARG_BOOL,            /* true | false */
	SP_ARG_SWITCH,          /* on | off */
	SP_ARG_ENUM,            /* one of words[] */
	SP_ARG_NAME,            /* a word of at most max bytes */
	SP_ARG_PATH,
	SP_ARG_IPV4,            /* a.b.c.d, host order */
	SP_ARG_PREFIX,          /* a.b.c.d[/len], no host bits */
	SP_ARG_CIDR,            /* a.b.c.d/len, host bits allowed */
	SP_ARG_MAC,
	SP_ARG_UNICAST_MAC,
	SP_ARG_PORT_RANGE,      /* LOW-HIGH: at, at2 */
	SP_ARG_PREFIXES,        /* PREFIX [PREFIX ...]: array at, count at2 */
	SP_ARG_ENDPOINT,        /* a.b.c.d:port: address at, port at2 */
	SP_ARG_COLLECTOR,       /* a.b.c.d:port, kept as text */
	SP_ARG_FLAG,            /* a keyword alone: a bool */
};

/* How the parser records that a value was given, and the writer knows. */
enum sp_presence {
	SP_GIVEN_ALWAYS,        /* required, or a default applied first */
	SP_GIVEN_MEMBER,        /* a bool member (given) */
	SP_GIVEN_BIT,           /* bit `bit` of the byte at given */
	SP_GIVEN_UNLESS,        /* the value is not dflt (text: not empty) */
	SP_GIVEN_FLAG,          /* a flag: its bool is true */
};

/* A member of struct sp_cmd: its offset and size. */
struct sp_cmd_at {
	uint16_t offset;
	uint16_t size;
};

#define SP_CMD_AT(m) { offsetof(struct sp_cmd, u.m), sizeof(((struct sp_cmd *)0)->u.m) }

struct sp_cmd_word {
	const char *word;
	uint64_t value;
};

struct sp_cmd_field {
	const char *key;        /* NULL: a positional argument */
	const char *name;       /* in messages: the key, or the argument's name */
	uint8_t type;           /* enum sp_arg_type */
	uint8_t presence;       /* enum sp_presence */
	bool required;
	uint8_t bit;
	uint8_t group;          /* 1 + the one_of group it leads; 0: none */
	uint8_t n_words;
	struct sp_cmd_at at;    /* where the value goes */
	struct sp_cmd_at at2;   /* a second member: high, port, count */
	struct sp_cmd_at given; /* the bool, or the byte of set bits */
	uint64_t min, max;      /* uint: bounds; text: the most bytes */
	uint64_t dflt, dflt2;   /* ALWAYS: applied first; UNLESS: absent */
	const struct sp_cmd_word *words;
};

/* Constants a verb sets (`session offload` sets action). */
struct sp_cmd_fixed {
	struct sp_cmd_at at;
	uint64_t value;
};

struct sp_cmd_spec {
	const char *name;       /* the verb's, in messages: "rule add", "session" */
	const char *words[2];
	uint8_t n_words;
	uint8_t n_args;
	uint8_t n_fields;
	uint8_t when;           /* enum sp_cmd_when */
	bool json;              /* answers one JSON document */
	bool audit;             /* an operator's change: logged when applied
				 * at run time */
	bool named;             /* its first argument names the object */
	bool at_least_one;      /* nothing given is an error */
	enum sp_verb verb;
	struct sp_cmd_fixed fixed;
	const struct sp_cmd_field *args;
	const struct sp_cmd_field *fields;
	const char *syntax;     /* as docs/swpath-commands.md shows it */
};

extern const struct sp_cmd_spec sp_cmd_specs[];
extern const unsigned sp_cmd_n_specs;

/* The spec of a parsed command (its verb and fixed value), or NULL. */
const struct sp_cmd_spec *sp_cmd_spec_of(const struct sp_cmd *cmd);

/* An unsigned member of any size, read and written. */
uint64_t sp_cmd_get(const struct sp_cmd *cmd, struct sp_cmd_at at);
void sp_cmd_put(struct sp_cmd *cmd, struct sp_cmd_at at, uint64_t v);

/* Whether field f (of spec s) was given in cmd. */
bool sp_cmd_given(const struct sp_cmd *cmd, const struct sp_cmd_field *f);

/*
 * The checks a table cannot say, between the values of one command (an
 * SNAT `to` is one address, a port needs TCP or UDP, ...). 0, or -1 with a
 * message. cmd_check.c.
 */
int sp_cmd_check(const struct sp_cmd *cmd, char *err, size_t errlen);

#endif /* SP_CMD_TABLE_H */
