/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Linear-scan reference for QNS. One sorted array per kind ("chain"); each
 * entry holds a copy of its rule and the precomputed netmask, so a scan step
 * is a mask-and-compare plus the port and protocol tests.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "linear_scan.h"
#include "qns_compiler.h"

#define LS_KINDS 2

struct ls_entry {
	uint32_t mask; /* netmask of rule.plen */
	struct qns_rule rule;
};

struct ls_chain {
	struct ls_entry *entry;
	size_t count;
	size_t capacity;
};

struct linear_scan {
	struct ls_chain chain[LS_KINDS];
};

static uint32_t
ls_netmask(unsigned int plen)
{
	return plen == 0 ? 0 : ~(uint32_t)0 << (32 - plen);
}

/* The probe form of docs/qns.md, 1 to 4. */
static int
ls_form(const struct qns_rule *r)
{
	if (r->has_port)
		return r->proto == QNS_PROTO_ANY ? 2 : 1;
	return r->proto == QNS_PROTO_ANY ? 4 : 3;
}

static int
ls_cmp_u32(uint32_t a, uint32_t b)
{
	return (a > b) - (a < b);
}

/*
 * The lookup order within a kind: longer prefix first, then probe form. The
 * remaining fields only make the order deterministic and put rules with the
 * same key next to each other; rules that tie on length and form never match
 * the same packet.
 */
static int
ls_cmp_rule(const struct qns_rule *a, const struct qns_rule *b)
{
	int c;

	if ((c = ls_cmp_u32(b->plen, a->plen)) != 0)
		return c;
	if ((c = ls_cmp_u32((uint32_t)ls_form(a), (uint32_t)ls_form(b))) != 0)
		return c;
	if ((c = ls_cmp_u32(a->prefix, b->prefix)) != 0)
		return c;
	if ((c = ls_cmp_u32(a->has_port ? a->port : 0,
			    b->has_port ? b->port : 0)) != 0)
		return c;
	return ls_cmp_u32(a->proto, b->proto);
}

static int
ls_cmp_entry(const void *a, const void *b)
{
	const struct ls_entry *ea = a, *eb = b;
	int c = ls_cmp_rule(&ea->rule, &eb->rule);

	return c != 0 ? c : ls_cmp_u32(ea->rule.id, eb->rule.id);
}

static int
ls_cmp_id(const void *a, const void *b)
{
	return ls_cmp_u32(*(const uint32_t *)a, *(const uint32_t *)b);
}

static int
ls_rule_is_valid(const struct qns_rule *r)
{
	if (r->id == 0 || r->kind > QNS_DNAT || r->plen > 32 || r->has_port > 1)
		return 0;
	if ((r->prefix & ~ls_netmask(r->plen)) != 0)
		return 0;
	if (r->has_port && r->proto != IPPROTO_TCP && r->proto != IPPROTO_UDP &&
	    r->proto != QNS_PROTO_ANY)
		return 0;
	return 1;
}

static int
ls_packet_has_ports(uint8_t proto)
{
	return proto == IPPROTO_TCP || proto == IPPROTO_UDP;
}

struct linear_scan *
linear_scan_create(void)
{
	return calloc(1, sizeof(struct linear_scan));
}

void
linear_scan_free(struct linear_scan *ls)
{
	unsigned int kind;

	if (ls == NULL)
		return;
	for (kind = 0; kind < LS_KINDS; kind++)
		free(ls->chain[kind].entry);
	free(ls);
}

static int
ls_chain_reserve(struct ls_chain *chain, size_t count)
{
	struct ls_entry *grown;
	size_t capacity = chain->capacity > 0 ? chain->capacity : 16;

	if (count <= chain->capacity)
		return 0;
	while (capacity < count)
		capacity *= 2;
	grown = realloc(chain->entry, capacity * sizeof(*grown));
	if (unlikely(grown == NULL))
		return -ENOMEM;
	chain->entry = grown;
	chain->capacity = capacity;
	return 0;
}

static struct ls_entry *
ls_find_id(const struct linear_scan *ls, uint32_t id, unsigned int *kind)
{
	unsigned int k;
	size_t i;

	for (k = 0; k < LS_KINDS; k++) {
		for (i = 0; i < ls->chain[k].count; i++) {
			if (ls->chain[k].entry[i].rule.id == id) {
				*kind = k;
				return &ls->chain[k].entry[i];
			}
		}
	}
	return NULL;
}

int
linear_scan_add(struct linear_scan *ls, const struct qns_rule *rule)
{
	struct ls_chain *chain;
	unsigned int kind;
	size_t pos;

	if (unlikely(!ls_rule_is_valid(rule)))
		return -EINVAL;
	if (unlikely(ls_find_id(ls, rule->id, &kind) != NULL))
		return -EEXIST;
	chain = &ls->chain[rule->kind];
	/* Insert after every rule that sorts before or equal to the new one. */
	for (pos = 0; pos < chain->count; pos++) {
		int c = ls_cmp_rule(&chain->entry[pos].rule, rule);

		if (unlikely(c == 0))
			return -EEXIST;
		if (c > 0)
			break;
	}
	if (unlikely(ls_chain_reserve(chain, chain->count + 1) != 0))
		return -ENOMEM;
	memmove(&chain->entry[pos + 1], &chain->entry[pos],
		(chain->count - pos) * sizeof(chain->entry[0]));
	chain->entry[pos].mask = ls_netmask(rule->plen);
	chain->entry[pos].rule = *rule;
	chain->count++;
	return 0;
}

static long
ls_index_of_id(const struct qns_rule *rules, size_t n, uint32_t id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rules[i].id == id)
			return (long)i;
	return -1;
}

/* Checks that the ids of the current rules and the new ones are unique. */
static int
ls_check_unique_ids(const struct linear_scan *ls, const struct qns_rule *rules,
		    size_t n, long *bad)
{
	size_t total = n + ls->chain[0].count + ls->chain[1].count;
	size_t i, k = 0;
	unsigned int kind;
	uint32_t *ids;

	ids = malloc((total > 0 ? total : 1) * sizeof(*ids));
	if (unlikely(ids == NULL))
		return -ENOMEM;
	for (i = 0; i < n; i++)
		ids[k++] = rules[i].id;
	for (kind = 0; kind < LS_KINDS; kind++)
		for (i = 0; i < ls->chain[kind].count; i++)
			ids[k++] = ls->chain[kind].entry[i].rule.id;
	qsort(ids, total, sizeof(*ids), ls_cmp_id);
	for (i = 1; i < total; i++) {
		if (unlikely(ids[i] == ids[i - 1])) {
			*bad = ls_index_of_id(rules, n, ids[i]);
			free(ids);
			return -EEXIST;
		}
	}
	free(ids);
	return 0;
}

int
linear_scan_add_bulk(struct linear_scan *ls, const struct qns_rule *rules,
		     size_t n, long *bad)
{
	struct ls_chain merged[LS_KINDS] = {{0}};
	long bad_index = -1;
	unsigned int kind;
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		if (unlikely(!ls_rule_is_valid(&rules[i]))) {
			bad_index = (long)i;
			rc = -EINVAL;
			goto out;
		}
	}
	rc = ls_check_unique_ids(ls, rules, n, &bad_index);
	if (unlikely(rc != 0))
		goto out;

	/* Old and new entries together, sorted; equal keys end up adjacent. */
	for (kind = 0; kind < LS_KINDS; kind++) {
		const struct ls_chain *old = &ls->chain[kind];

		rc = ls_chain_reserve(&merged[kind], old->count + n);
		if (unlikely(rc != 0))
			goto out;
		if (old->count > 0)
			memcpy(merged[kind].entry, old->entry,
			       old->count * sizeof(old->entry[0]));
		merged[kind].count = old->count;
	}
	for (i = 0; i < n; i++) {
		struct ls_chain *chain = &merged[rules[i].kind];

		chain->entry[chain->count].mask = ls_netmask(rules[i].plen);
		chain->entry[chain->count].rule = rules[i];
		chain->count++;
	}
	for (kind = 0; kind < LS_KINDS; kind++) {
		struct ls_chain *chain = &merged[kind];

		if (chain->count == 0)
			continue;
		qsort(chain->entry, chain->count, sizeof(chain->entry[0]),
		      ls_cmp_entry);
		for (i = 1; i < chain->count; i++) {
			if (unlikely(ls_cmp_rule(&chain->entry[i - 1].rule,
						 &chain->entry[i].rule) == 0)) {
				bad_index = ls_index_of_id(rules, n,
							   chain->entry[i].rule.id);
				rc = -EEXIST;
				goto out;
			}
		}
	}
	for (kind = 0; kind < LS_KINDS; kind++) {
		free(ls->chain[kind].entry);
		ls->chain[kind] = merged[kind];
		merged[kind] = (struct ls_chain){0};
	}
out:
	for (kind = 0; kind < LS_KINDS; kind++)
		free(merged[kind].entry);
	if (bad != NULL)
		*bad = rc != 0 ? bad_index : -1;
	return rc;
}

int
linear_scan_del(struct linear_scan *ls, uint32_t id)
{
	struct ls_entry *entry;
	struct ls_chain *chain;
	unsigned int kind;
	size_t pos;

	entry = ls_find_id(ls, id, &kind);
	if (entry == NULL)
		return -ENOENT;
	chain = &ls->chain[kind];
	pos = (size_t)(entry - chain->entry);
	memmove(&chain->entry[pos], &chain->entry[pos + 1],
		(chain->count - pos - 1) * sizeof(chain->entry[0]));
	chain->count--;
	return 0;
}

static const struct qns_rule *
ls_scan(const struct ls_chain *chain, uint8_t proto, uint32_t addr,
	uint16_t port)
{
	const int ported = ls_packet_has_ports(proto);
	const struct ls_entry *e = chain->entry;
	const struct ls_entry *end = e + chain->count;

	for (; e < end; e++) {
		if ((addr & e->mask) != e->rule.prefix)
			continue;
		if (e->rule.has_port && (!ported || e->rule.port != port))
			continue;
		if (e->rule.proto != QNS_PROTO_ANY && e->rule.proto != proto)
			continue;
		return &e->rule;
	}
	return NULL;
}

const struct qns_rule *
linear_scan_lookup(const struct linear_scan *ls, uint8_t proto, uint32_t src,
		   uint16_t sport, uint32_t dst, uint16_t dport)
{
	const struct qns_rule *rule;

	rule = ls_scan(&ls->chain[QNS_DNAT], proto, dst, dport);
	if (rule != NULL)
		return rule;
	return ls_scan(&ls->chain[QNS_SNAT], proto, src, sport);
}

const struct qns_rule *
linear_scan_lookup_kind(const struct linear_scan *ls, enum qns_kind kind,
			uint8_t proto, uint32_t addr, uint16_t port)
{
	if ((unsigned int)kind >= LS_KINDS)
		return NULL;
	return ls_scan(&ls->chain[kind], proto, addr, port);
}

size_t
linear_scan_count(const struct linear_scan *ls)
{
	return ls->chain[0].count + ls->chain[1].count;
}
