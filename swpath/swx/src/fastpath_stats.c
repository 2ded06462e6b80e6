/* SPDX-License-Identifier: Apache-2.0 */
#include "fastpath_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_swx_ctl.h>

#define EXIT_PREFIX "; fastpath exit "

/* One "; fastpath exit N: TABLE hit|miss ..." line (line, n bytes). */
static int
parse_exit(const char *line, size_t n, struct swx_fastpath_exit *e, char *err, size_t err_size)
{
	char buf[1024], *save = NULL, *word;
	char *end;

	if (n >= sizeof(buf)) {
		snprintf(err, err_size, "a fast path exit line of %zu bytes", n);
		return -1;
	}
	memcpy(buf, line, n);
	buf[n] = '\0';
	memset(e, 0, sizeof(*e));
	e->slot = (uint32_t)strtoul(buf + strlen(EXIT_PREFIX), &end, 10);
	if (end == buf + strlen(EXIT_PREFIX) || *end != ':') {
		snprintf(err, err_size, "'%s': wants '%sN: TABLE hit|miss ...'", buf, EXIT_PREFIX);
		return -1;
	}
	for (word = strtok_r(end + 1, " \t", &save); word != NULL;
	     word = strtok_r(NULL, " \t", &save)) {
		char *outcome = strtok_r(NULL, " \t", &save);

		if (e->n_lookups == SWX_FASTPATH_LOOKUPS_MAX ||
		    strlen(word) >= RTE_SWX_CTL_NAME_SIZE || outcome == NULL ||
		    (strcmp(outcome, "hit") != 0 && strcmp(outcome, "miss") != 0)) {
			snprintf(err, err_size, "fast path exit %" PRIu32 ": '%s' is not "
				 "'TABLE hit|miss', at most %d of them", e->slot, word,
				 SWX_FASTPATH_LOOKUPS_MAX);
			return -1;
		}
		snprintf(e->lookups[e->n_lookups].table, RTE_SWX_CTL_NAME_SIZE, "%s", word);
		e->lookups[e->n_lookups++].hit = strcmp(outcome, "hit") == 0;
	}
	return 0;
}

int
swx_fastpath_exits_parse(const char *spec, size_t len, struct swx_fastpath_exits *x,
			 char *err, size_t err_size)
{
	const char *at = spec, *end = spec + len;

	x->n = 0;
	while (at < end) {
		const char *nl = memchr(at, '\n', (size_t)(end - at));
		size_t n = nl ? (size_t)(nl - at) : (size_t)(end - at);

		if (n > strlen(EXIT_PREFIX) && memcmp(at, EXIT_PREFIX, strlen(EXIT_PREFIX)) == 0) {
			if (x->n == SWX_FASTPATH_EXITS_MAX) {
				snprintf(err, err_size, "more than %d fast path exits",
					 SWX_FASTPATH_EXITS_MAX);
				return -1;
			}
			if (parse_exit(at, n, &x->exit[x->n], err, err_size) != 0)
				return -1;
			x->n++;
		}
		at += n + 1;
	}
	return (int)x->n;
}

/* The exit's repeated lookup of table, or NULL. */
static const bool *
lookup_of(const struct swx_fastpath_exit *e, const char *table)
{
	for (uint32_t k = 0; k < e->n_lookups; k++)
		if (strcmp(e->lookups[k].table, table) == 0)
			return &e->lookups[k].hit;
	return NULL;
}

int
swx_table_stats_once(struct rte_swx_pipeline *p, const struct swx_fastpath_exits *x,
		     const char *table, uint64_t *hits, uint64_t *misses)
{
	struct rte_swx_ctl_pipeline_info info;
	struct rte_swx_table_stats stats = { 0 };
	uint64_t again_hits = 0, again_misses = 0, *per_action;

	/* The exits first: a packet between its two lookups while this runs
	 * is then counted twice for a moment, never taken out twice. */
	for (uint32_t i = 0; x != NULL && i < x->n; i++) {
		const bool *hit = lookup_of(&x->exit[i], table);
		uint64_t n = 0;

		if (hit != NULL &&
		    rte_swx_ctl_pipeline_regarray_read(p, SWX_FASTPATH_REGARRAY,
						       x->exit[i].slot, &n) == 0)
			*(*hit ? &again_hits : &again_misses) += n;
	}
	if (rte_swx_ctl_pipeline_info_get(p, &info) != 0)
		return -1;
	/* the pipeline writes a count for every action, asked or not */
	per_action = calloc(info.n_actions + 1, sizeof(*per_action));
	if (per_action == NULL)
		return -1;
	stats.n_pkts_action = per_action;
	if (rte_swx_ctl_pipeline_table_stats_read(p, table, &stats) != 0) {
		/* a learner: the fast path looks the learned sessions up too */
		struct rte_swx_learner_stats learner = { .n_pkts_action = per_action };

		if (rte_swx_ctl_pipeline_learner_stats_read(p, table, &learner) != 0) {
			free(per_action);
			return -1;
		}
		stats.n_pkts_hit = learner.n_pkts_hit;
		stats.n_pkts_miss = learner.n_pkts_miss;
	}
	free(per_action);
	*hits = stats.n_pkts_hit - (again_hits < stats.n_pkts_hit ? again_hits : stats.n_pkts_hit);
	*misses = stats.n_pkts_miss -
		  (again_misses < stats.n_pkts_miss ? again_misses : stats.n_pkts_miss);
	return 0;
}
