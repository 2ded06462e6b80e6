/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loads a shared QNS test vector (tests/vectors/qns/README.md) into rules and
 * steps. Used by the vector runner (qns_vectors.c) and the benchmark.
 *
 * Two kinds of problems are told apart:
 * - a malformed file (bad JSON, a missing field, a field of the wrong JSON
 *   type, an unknown step field): vector_file_load() fails with a message
 *   naming the file and the rule or step;
 * - a rule value that struct qns_rule cannot hold (port 70000, an unknown
 *   protocol name, a prefix that is not a.b.c.d/len): the rule is invalid,
 *   the answer the file must then expect ("expect_error": "invalid").
 */
#ifndef QUICKNAT_VECTOR_FILE_H
#define QUICKNAT_VECTOR_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "qns.h"

enum vector_step_type {
	VECTOR_LOOKUP,
	VECTOR_ADD,
	VECTOR_REMOVE,
};

/* Outcome of an add or a remove; the names of "expect_error". */
enum vector_outcome {
	VECTOR_OK = 0,
	VECTOR_EXISTS,
	VECTOR_INVALID,
	VECTOR_NOT_FOUND,
};

/* Restriction of a lookup to one kind. */
#define VECTOR_KIND_BOTH (-1)

struct vector_packet {
	uint8_t proto;
	uint16_t sport; /* 0 unless TCP or UDP */
	uint16_t dport;
	uint32_t src;   /* host byte order */
	uint32_t dst;
	int kind;       /* VECTOR_KIND_BOTH or enum qns_kind */
};

struct vector_step {
	enum vector_step_type type;
	/* VECTOR_LOOKUP */
	struct vector_packet packet;
	uint32_t expect_id; /* 0: no rule matches */
	/* VECTOR_ADD */
	struct qns_rule rule;
	int rule_unrepresentable; /* a value struct qns_rule cannot hold */
	/* VECTOR_REMOVE */
	uint32_t id;
	int id_unrepresentable; /* below 1 or above 2^32-1: matches no rule */
	/* VECTOR_ADD, VECTOR_REMOVE */
	enum vector_outcome expect;
};

struct vector_file {
	char *path;
	char *name; /* the "name" field, else the file name */
	struct qns_rule *rules;
	size_t n_rules;
	struct vector_step *steps;
	size_t n_steps;
};

/*
 * Returns 0, or -1 with a message (starting with the path) in err. On
 * failure *vf needs no vector_file_free().
 */
int vector_file_load(const char *path, struct vector_file *vf, char *err,
		     size_t errlen);

void vector_file_free(struct vector_file *vf);

const char *vector_outcome_name(enum vector_outcome outcome);

/* The outcome a QNS or linear-scan return code stands for, or -1. */
int vector_outcome_of_rc(int rc);

#endif /* QUICKNAT_VECTOR_FILE_H */
