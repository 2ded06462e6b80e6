/* SPDX-License-Identifier: Apache-2.0 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "build.h"
#include "harness.h"

static void
put32(FILE *f, uint32_t v)
{
	fwrite(&v, 4, 1, f);
}

void
bench_pcap_record(FILE *f, const uint8_t *frame, uint32_t len)
{
	put32(f, 0);
	put32(f, 0);
	put32(f, len);
	put32(f, len);
	fwrite(frame, len, 1, f);
}

void
bench_pcap_header(FILE *f)
{
	put32(f, 0xa1b2c3d4);
	put32(f, 0x00040002);	/* version 2.4 */
	put32(f, 0);
	put32(f, 0);
	put32(f, 65535);
	put32(f, 1);		/* Ethernet */
}

long
bench_pcap_count(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint32_t head[6], rec[4];
	long n = 0;
	int swapped;

	if (f == NULL || fread(head, 4, 6, f) != 6 ||
	    (head[0] != 0xa1b2c3d4 && head[0] != 0xd4c3b2a1)) {
		if (f)
			fclose(f);
		return -1;
	}
	swapped = head[0] == 0xd4c3b2a1;
	while (fread(rec, 4, 4, f) == 4) {
		uint32_t caplen = swapped ? __builtin_bswap32(rec[2]) : rec[2];

		if (caplen > 65535 || fseek(f, caplen, SEEK_CUR) != 0)
			break;
		n++;
	}
	fclose(f);
	return n;
}

char *
bench_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *text;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	text = malloc(*len + 1);
	if (text == NULL || fread(text, 1, *len, f) != *len) {
		fclose(f);
		free(text);
		return NULL;
	}
	text[*len] = '\0';
	fclose(f);
	return text;
}

/* rte_swx_ctl has no free for what table_entry_read made */
static void
table_entry_free(struct rte_swx_table_entry *e)
{
	free(e->key);
	free(e->key_mask);
	free(e->action_data);
	free(e);
}

int
bench_table_add(struct rte_swx_ctl_pipeline *ctl, const char *table, const char *line)
{
	struct rte_swx_table_entry *e = rte_swx_ctl_pipeline_table_entry_read(ctl, table, line, NULL);

	if (e == NULL || rte_swx_ctl_pipeline_table_entry_add(ctl, table, e) != 0) {
		fprintf(stderr, "bench_swx: %s: cannot add %s\n", table, line);
		if (e)
			table_entry_free(e);
		return -1;
	}
	table_entry_free(e);
	return 0;
}

long
bench_table_add_file(struct rte_swx_ctl_pipeline *ctl, const char *table, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[2048];
	long n = 0;

	if (f == NULL) {
		fprintf(stderr, "bench_swx: cannot read %s\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '\0' || line[0] == ';' || line[0] == '#')
			continue;
		if (bench_table_add(ctl, table, line) != 0) {
			fclose(f);
			return -1;
		}
		n++;
	}
	fclose(f);
	return n;
}

struct rte_swx_pipeline *
bench_build(const char *spec_path, const char *cache_dir, const char *cc, const char *iospec)
{
	struct swx_build_options o = { .include_dir = SWX_DPDK_INTERNAL, .cache_dir = cache_dir,
				       .cc = cc };
	struct rte_swx_pipeline *p = NULL;
	char so[4096], err[512];
	size_t len;
	char *spec = bench_read_file(spec_path, &len);

	if (spec == NULL) {
		fprintf(stderr, "bench_swx: cannot read %s\n", spec_path);
		return NULL;
	}
	if (swx_build_lib(&o, spec, len, so, sizeof(so), err, sizeof(err)) != 0 ||
	    swx_build_pipeline(&p, "bench", so, iospec, 0, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_swx: %s\n", err);
		p = NULL;
	}
	free(spec);
	return p;
}

uint64_t
bench_out_packets(struct rte_swx_pipeline *p, uint32_t count_mask)
{
	uint64_t n = 0;

	for (uint32_t port = 0; port < 32; port++) {
		struct rte_swx_port_out_stats s = { 0 };

		if (!(count_mask & (1u << port)))
			continue;
		rte_swx_ctl_pipeline_port_out_stats_read(p, port, &s);
		n += s.n_pkts + s.n_pkts_drop;
	}
	return n;
}

struct bench_rate
bench_run_timed(struct rte_swx_pipeline *p, uint32_t count_mask, uint32_t warmup, double seconds)
{
	uint64_t hz = rte_get_tsc_hz(), before, t0, t1;

	for (uint32_t n = 0; n < warmup; n++)
		rte_swx_pipeline_run(p, 16);
	before = bench_out_packets(p, count_mask);
	t0 = rte_rdtsc();
	do {
		for (int n = 0; n < 1000; n++)
			rte_swx_pipeline_run(p, 64);
		t1 = rte_rdtsc();
	} while (t1 - t0 < (uint64_t)(seconds * (double)hz));
	rte_swx_pipeline_flush(p);
	return (struct bench_rate){ .packets = bench_out_packets(p, count_mask) - before,
				    .seconds = (double)(t1 - t0) / (double)hz };
}

static char runtime_dir[PATH_MAX];

static void
remove_runtime_dir(void)
{
	rmdir(runtime_dir);
}

void
bench_remove_runtime_dir_at_exit(void)
{
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	atexit(remove_runtime_dir);
}

void
bench_teardown(struct rte_swx_ctl_pipeline *ctl, struct rte_swx_pipeline *p)
{
	(void)ctl;
	rte_swx_pipeline_free(p);
}
