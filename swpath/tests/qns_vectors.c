/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runs the shared QNS test vectors (tests/vectors/qns/README.md) against QNS
 * and against the linear-scan reference: both must give every answer the
 * file expects. Usage: qns_vectors [DIR_OR_FILE.json ...], by default
 * ../tests/vectors/qns (from swpath/). Ends with "N passed, M failed",
 * counting steps (a file that cannot be loaded counts as one failure).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "linear_scan.h"
#include "qns.h"
#include "vector_file.h"

#define DEFAULT_VECTOR_DIR "../tests/vectors/qns"

struct tally {
	unsigned long passed;
	unsigned long failed;
};

struct impls {
	struct qns *qns;
	struct linear_scan *ls;
};

static uint32_t
rule_id(const struct qns_rule *rule)
{
	return rule != NULL ? rule->id : 0;
}

static void
format_id(char *buf, size_t len, uint32_t id)
{
	if (id == 0)
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "%u", id);
}

static const char *
outcome_text(int outcome, int rc)
{
	static char buf[32];

	if (outcome >= 0)
		return vector_outcome_name((enum vector_outcome)outcome);
	snprintf(buf, sizeof(buf), "error %d", rc);
	return buf;
}

static int
check_lookup(const struct impls *im, const struct vector_step *step,
	     char *why, size_t whylen)
{
	const struct vector_packet *p = &step->packet;
	uint32_t got_qns, got_ls;
	char want[16], q[16], l[16];

	if (p->kind == VECTOR_KIND_BOTH) {
		got_qns = rule_id(qns_lookup(im->qns, p->proto, p->src, p->sport,
					     p->dst, p->dport));
		got_ls = rule_id(linear_scan_lookup(im->ls, p->proto, p->src,
						    p->sport, p->dst, p->dport));
	} else {
		uint32_t addr = p->kind == QNS_SNAT ? p->src : p->dst;
		uint16_t port = p->kind == QNS_SNAT ? p->sport : p->dport;

		got_qns = rule_id(qns_lookup_kind(im->qns, p->kind, p->proto,
						  addr, port));
		got_ls = rule_id(linear_scan_lookup_kind(im->ls, p->kind,
							 p->proto, addr, port));
	}
	if (got_qns == step->expect_id && got_ls == step->expect_id)
		return 0;
	format_id(want, sizeof(want), step->expect_id);
	format_id(q, sizeof(q), got_qns);
	format_id(l, sizeof(l), got_ls);
	snprintf(why, whylen, "lookup: expected %s, qns gave %s, linear_scan gave %s",
		 want, q, l);
	return -1;
}

static int
check_change(const struct impls *im, const struct vector_step *step,
	     char *why, size_t whylen)
{
	size_t count_before = qns_count(im->qns);
	const char *verb = step->type == VECTOR_ADD ? "add" : "remove";
	int rc_qns, rc_ls, got_qns, got_ls;

	if (step->type == VECTOR_ADD && step->rule_unrepresentable) {
		rc_qns = rc_ls = -EINVAL;
	} else if (step->type == VECTOR_ADD) {
		rc_qns = qns_add(im->qns, &step->rule);
		rc_ls = linear_scan_add(im->ls, &step->rule);
	} else if (step->id_unrepresentable) {
		rc_qns = rc_ls = -ENOENT;
	} else {
		rc_qns = qns_del(im->qns, step->id);
		rc_ls = linear_scan_del(im->ls, step->id);
	}
	got_qns = vector_outcome_of_rc(rc_qns);
	got_ls = vector_outcome_of_rc(rc_ls);
	if (got_qns != (int)step->expect || got_ls != (int)step->expect) {
		snprintf(why, whylen, "%s: expected %s, qns gave %s, linear_scan gave %s",
			 verb, vector_outcome_name(step->expect),
			 outcome_text(got_qns, rc_qns),
			 outcome_text(got_ls, rc_ls));
		return -1;
	}
	if (step->expect != VECTOR_OK && qns_count(im->qns) != count_before) {
		snprintf(why, whylen, "%s: refused, but the rule count changed", verb);
		return -1;
	}
	if (qns_count(im->qns) != linear_scan_count(im->ls)) {
		snprintf(why, whylen, "%s: qns holds %zu rules, linear_scan %zu",
			 verb, qns_count(im->qns), linear_scan_count(im->ls));
		return -1;
	}
	return 0;
}

static int
load_rules(const struct impls *im, const struct vector_file *vf, char *why,
	   size_t whylen)
{
	size_t i;

	for (i = 0; i < vf->n_rules; i++) {
		int rc_qns = qns_add(im->qns, &vf->rules[i]);
		int rc_ls = linear_scan_add(im->ls, &vf->rules[i]);

		if (rc_qns != 0 || rc_ls != 0) {
			snprintf(why, whylen, "rules[%zu]: refused (qns %s, "
				 "linear_scan %s)", i,
				 outcome_text(vector_outcome_of_rc(rc_qns), rc_qns),
				 outcome_text(vector_outcome_of_rc(rc_ls), rc_ls));
			return -1;
		}
	}
	return 0;
}

static void
run_file(const char *path, struct tally *total)
{
	struct impls im = { NULL, NULL };
	unsigned long failed = 0;
	struct vector_file vf;
	char why[512];
	size_t i;

	if (vector_file_load(path, &vf, why, sizeof(why)) != 0) {
		printf("FAIL %s\n  %s\n", path, why);
		total->failed++;
		return;
	}
	im.qns = qns_create(NULL);
	im.ls = linear_scan_create();
	if (im.qns == NULL || im.ls == NULL) {
		printf("FAIL %s\n  out of memory\n", path);
		total->failed++;
		goto out;
	}
	if (load_rules(&im, &vf, why, sizeof(why)) != 0) {
		printf("FAIL %s\n  %s: %s\n", path, path, why);
		total->failed++;
		goto out;
	}
	for (i = 0; i < vf.n_steps; i++) {
		const struct vector_step *step = &vf.steps[i];
		int rc = step->type == VECTOR_LOOKUP
				 ? check_lookup(&im, step, why, sizeof(why))
				 : check_change(&im, step, why, sizeof(why));

		if (rc == 0) {
			total->passed++;
			continue;
		}
		if (failed == 0)
			printf("FAIL %s\n", path);
		printf("  %s: steps[%zu]: %s\n", path, i, why);
		failed++;
		total->failed++;
	}
	if (failed == 0)
		printf("ok   %s (%zu rules, %zu steps)\n", path, vf.n_rules,
		       vf.n_steps);
out:
	qns_free(im.qns);
	linear_scan_free(im.ls);
	vector_file_free(&vf);
}

static int
ends_with_json(const char *name)
{
	size_t len = strlen(name);

	return len > strlen(".json") &&
	       strcmp(name + len - strlen(".json"), ".json") == 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every *.json in dir, in name order. Returns the number of files. */
static int
run_dir(const char *dir, struct tally *total)
{
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (d == NULL) {
		printf("FAIL %s\n  cannot open directory: %s\n", dir,
		       strerror(errno));
		total->failed++;
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (!ends_with_json(de->d_name))
			continue;
		if (n == cap) {
			char **grown;

			cap = cap > 0 ? cap * 2 : 16;
			grown = realloc(names, cap * sizeof(*names));
			if (grown == NULL)
				abort();
			names = grown;
		}
		names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
		if (names[n] == NULL)
			abort();
		sprintf(names[n], "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		run_file(names[i], total);
		free(names[i]);
	}
	free(names);
	if (n == 0) {
		printf("FAIL %s\n  no *.json vector files\n", dir);
		total->failed++;
	}
	return (int)n;
}

int
main(int argc, char **argv)
{
	struct tally total = { 0, 0 };
	struct stat st;
	int i;

	if (argc < 2) {
		run_dir(DEFAULT_VECTOR_DIR, &total);
	} else {
		for (i = 1; i < argc; i++) {
			if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
				run_dir(argv[i], &total);
			else
				run_file(argv[i], &total);
		}
	}
	printf("%lu passed, %lu failed\n", total.passed, total.failed);
	return total.failed == 0 ? 0 : 1;
}
