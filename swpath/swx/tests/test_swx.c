/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The SWX pipeline layer without P4Runtime: a pipeline built from a spec
 * (tables.spec), the table-state manager's changes as packets see them,
 * and the input guard. Packets go through rings and the pipeline is run by
 * the test itself (no pipeline thread).
 */
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_byteorder.h>
#include <rte_eal.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_swx_ctl.h>
#include <rte_swx_pipeline.h>

#include "build.h"
#include "guard.h"
#include "info.h"
#include "tables.h"

#ifndef SWX_TEST_DIR
#define SWX_TEST_DIR "."
#endif

static struct rte_mempool *pool;
static struct rte_ring *ring_in, *ring_guarded, *ring_out;
static struct rte_swx_pipeline *p;
static struct swx_tables *tables;
static struct swx_info info;
static char cache_dir[256];

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *text;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	text = malloc(*len + 1);
	assert_int_equal(fread(text, 1, *len, f), *len);
	text[*len] = '\0';
	fclose(f);
	return text;
}

static struct swx_build_options
options(void)
{
	struct swx_build_options o = {
		.cache_dir = cache_dir,
		.include_dir = SWX_INTERNAL_DIR,
	};
	return o;
}

static int
setup(void **state)
{
	struct swx_build_options o;
	char so[4096], err[512];
	size_t len;
	char *spec;

	(void)state;
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/swx-test-%d", (int)getpid());
	o = options();
	spec = read_file(SWX_TEST_DIR "/tables.spec", &len);
	if (swx_build_lib(&o, spec, len, so, sizeof(so), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	free(spec);
	if (swx_build_pipeline(&p, "test", so,
			       "port in 0 ring IN bsz 1\n"
			       "port in 1 ring GUARDED bsz 1\n"
			       "port out 0 ring OUT bsz 1\n"
			       "port out 1 sink file none\n",
			       0, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(swx_guard_install(p), 0);
	tables = swx_tables_create(p);
	assert_non_null(tables);
	assert_int_equal(swx_info_read(p, &info), 0);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	swx_info_free(&info);
	swx_tables_free(tables);
	swx_guard_free(p);
	rte_swx_pipeline_free(p);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", cache_dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* One IPv4 packet from src to dst through the pipeline: the destination it
 * leaves with, or 0 when it went to the sink (port 1). */
static uint32_t
through(uint32_t src, uint32_t dst)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *out = NULL;
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, 34);
	struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(d + 14);
	uint32_t result = 0;

	memset(d, 0, 34);
	d[12] = 0x08;
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16(20);
	ip->src_addr = rte_cpu_to_be_32(src);
	ip->dst_addr = rte_cpu_to_be_32(dst);
	assert_int_equal(rte_ring_enqueue(ring_in, m), 0);
	for (int i = 0; i < 64; i++)
		rte_swx_pipeline_run(p, 16);
	rte_swx_pipeline_flush(p);
	if (rte_ring_dequeue(ring_out, (void **)&out) == 0) {
		ip = rte_pktmbuf_mtod_offset(out, struct rte_ipv4_hdr *, 14);
		result = rte_be_to_cpu_32(ip->dst_addr);
		rte_pktmbuf_free(out);
	}
	return result;
}

static uint32_t
table_id(const char *name)
{
	int id = swx_info_table(&info, name);

	assert_true(id >= 0);
	return (uint32_t)id;
}

static uint32_t
action_id(const char *name)
{
	int id = swx_info_action(&info, name);

	assert_true(id >= 0);
	return (uint32_t)id;
}

/* fwd(port 0, new_dst) for dst: the arguments are host order (metadata) */
static void
stage_fwd(uint32_t dst, uint32_t new_dst, int add)
{
	uint32_t key = rte_cpu_to_be_32(dst); /* a header field: network order */
	uint32_t data[2] = { 0, new_dst };
	struct swx_entry e = { .table = table_id("by_dst"), .key = (uint8_t *)&key,
			       .action = action_id("fwd"), .data = (uint8_t *)data };

	assert_true((add ? swx_tables_add(tables, &e) : swx_tables_delete(tables, &e)) >= 0);
}

static void
test_exact_add_modify_delete(void **state)
{
	(void)state;
	assert_int_equal(through(0x0a000001, 0xc0000001), 0); /* miss: the sink */
	stage_fwd(0xc0000001, 0xc6336401, 1);
	stage_fwd(0xc0000002, 0xc6336402, 1);
	assert_int_equal(swx_tables_staged(tables), 2);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc0000001), 0xc6336401);
	assert_int_equal(through(0x0a000001, 0xc0000002), 0xc6336402);
	/* add with the same key replaces (a MODIFY), in both table copies */
	stage_fwd(0xc0000001, 0xc6336409, 1);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc0000001), 0xc6336409);
	stage_fwd(0xc0000002, 0, 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc0000002), 0);
	/* once more after a second swap: the retired copy got every change */
	stage_fwd(0xc0000003, 0xc6336403, 1);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc0000001), 0xc6336409);
	assert_int_equal(through(0x0a000001, 0xc0000002), 0);
	assert_int_equal(through(0x0a000001, 0xc0000003), 0xc6336403);
}

static void
test_entry_ids_are_key_slots(void **state)
{
	uint32_t a = rte_cpu_to_be_32(0xc0000001), gone = rte_cpu_to_be_32(0xc00000ff);
	int64_t id;

	(void)state;
	id = swx_tables_entry_id(tables, table_id("by_dst"), (uint8_t *)&a);
	assert_true(id >= 0 && id < 65536);
	assert_int_equal(swx_tables_entry_id(tables, table_id("by_dst"), (uint8_t *)&gone), -1);
	/* a wildcard table has no key slots */
	assert_int_equal(swx_tables_entry_id(tables, table_id("by_src"), (uint8_t *)&a), -1);
}

static void
test_full_table_fails_alone(void **state)
{
	uint32_t mark = 7, keys[5];
	int results[6];

	(void)state;
	for (int i = 0; i < 5; i++) {
		struct swx_entry e = { .table = table_id("small"), .key = (uint8_t *)&keys[i],
				       .action = action_id("set_mark"), .data = (uint8_t *)&mark };

		keys[i] = rte_cpu_to_be_32(0x0b000000 + (uint32_t)i);
		assert_int_equal(swx_tables_add(tables, &e), i);
	}
	stage_fwd(0xc0000004, 0xc6336404, 1);
	/* the fifth of a 4-entry table fails; the others, and the change to
	 * another table in the same commit, take */
	assert_int_equal(swx_tables_commit(tables, results, 6), 1);
	assert_int_equal(results[3], 0);
	assert_int_equal(results[4], -ENOSPC);
	assert_int_equal(results[5], 0);
	assert_int_equal(through(0x0b000000, 0xc0000004), 0);	   /* marked: the sink */
	assert_int_equal(through(0x0b000004, 0xc0000004), 0xc6336404); /* not in */
}

static void
test_lpm_longest_prefix_and_rebuild(void **state)
{
	uint32_t mark = 1, key16 = rte_cpu_to_be_32(0x0c010000),
		 mask16 = rte_cpu_to_be_32(0xffff0000), key24 = rte_cpu_to_be_32(0x0c010200),
		 mask24 = rte_cpu_to_be_32(0xffffff00);
	struct swx_entry wide = { .table = table_id("by_src"), .key = (uint8_t *)&key16,
				  .mask = (uint8_t *)&mask16, .priority = 32 - 16,
				  .action = action_id("set_mark"), .data = (uint8_t *)&mark };
	struct swx_entry narrow = { .table = table_id("by_src"), .key = (uint8_t *)&key24,
				    .mask = (uint8_t *)&mask24, .priority = 32 - 24,
				    .action = action_id("no_mark") };

	(void)state;
	stage_fwd(0xc0000005, 0xc6336405, 1);
	assert_true(swx_tables_add(tables, &wide) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0c017777, 0xc0000005), 0); /* in the /16: marked */
	assert_true(swx_tables_add(tables, &narrow) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0c010207, 0xc0000005), 0xc6336405); /* the /24 wins */
	assert_int_equal(through(0x0c017777, 0xc0000005), 0);
	assert_true(swx_tables_delete(tables, &wide) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0c017777, 0xc0000005), 0xc6336405);
}

static void
test_default_action(void **state)
{
	uint32_t data[2] = { 0, 0xc6336499 }, action, got[2];

	(void)state;
	assert_true(swx_tables_set_default(tables, table_id("by_dst"), action_id("fwd"),
					   (uint8_t *)data) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc00000aa), 0xc6336499);
	assert_int_equal(swx_tables_get_default(tables, table_id("by_dst"), &action,
						(uint8_t *)got), 0);
	assert_int_equal(action, action_id("fwd"));
	assert_int_equal(got[1], 0xc6336499);
	assert_true(swx_tables_set_default(tables, table_id("by_dst"), action_id("to_sink"),
					   NULL) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc00000aa), 0);
}

/* A pipeline thread that gets its CPU late: it runs the pipeline (no
 * packets: each packet thread just takes the published tables at its rx)
 * after `late_ms`, and says when it started. */
struct late_runner {
	unsigned late_ms;
	volatile bool started;
};

static void *
run_late(void *arg)
{
	struct late_runner *r = arg;
	struct timespec ts = { 0, (long)r->late_ms * 1000000L };

	nanosleep(&ts, NULL);
	r->started = true;
	for (int i = 0; i < 64; i++)
		rte_swx_pipeline_run(p, 16);
	return NULL;
}

static double
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A commit returns once its changes are published, however late the
 * pipeline's threads move on to them (issue #33: waiting for them cost a
 * Write its pipeline thread's scheduling delay); the next commit waits for
 * them before it writes the array they may still read, and brings that
 * array level: both commits' entries hold after the second swap. */
static void
test_commit_waits_for_no_pipeline_thread(void **state)
{
	bool running = true;
	struct late_runner late = { .late_ms = 300 };
	struct timespec t0;
	pthread_t thread;

	(void)state;
	swx_tables_watch(tables, &running);
	assert_int_equal(pthread_create(&thread, NULL, run_late, &late), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	stage_fwd(0xc0000006, 0xc6336406, 1);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_true(ms_since(&t0) < 150);	/* published, not waited for */
	assert_false(late.started);
	stage_fwd(0xc0000007, 0xc6336407, 1);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_true(late.started);	/* this one waited for the thread */
	assert_int_equal(pthread_join(thread, NULL), 0);
	swx_tables_watch(tables, NULL);
	assert_int_equal(through(0x0a000001, 0xc0000006), 0xc6336406);
	assert_int_equal(through(0x0a000001, 0xc0000007), 0xc6336407);
	/* a third swap: the array retired by the second commit got both */
	stage_fwd(0xc0000008, 0xc6336408, 1);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	assert_int_equal(through(0x0a000001, 0xc0000006), 0xc6336406);
	assert_int_equal(through(0x0a000001, 0xc0000007), 0xc6336407);
	assert_int_equal(through(0x0a000001, 0xc0000008), 0xc6336408);
}

/* A frame into the guarded port: whether it came out (a table entry
 * forwards every destination it uses, test_guard_drops_truncated_frames). */
static int
guarded(const uint8_t *frame, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *out;
	int came = 0;

	memcpy(rte_pktmbuf_append(m, len), frame, len);
	assert_int_equal(rte_ring_enqueue(ring_guarded, m), 0);
	for (int i = 0; i < 64; i++)
		rte_swx_pipeline_run(p, 16);
	rte_swx_pipeline_flush(p);
	if (rte_ring_dequeue(ring_out, (void **)&out) == 0) {
		rte_pktmbuf_free(out);
		came = 1;
	}
	return came;
}

static void
test_guard_drops_truncated_frames(void **state)
{
	uint8_t f[64] = { 0 };
	struct swx_guard_stats s0, s1;

	(void)state;
	/* what the guard lets through leaves at port 0: IPv4 to 0.0.0.0, and
	 * ARP and the 802.1Q frame, whose bytes 30..33 read as that address */
	assert_true(swx_tables_set_default(tables, table_id("by_dst"), action_id("fwd"),
					   (const uint8_t[8]){ 0 }) >= 0);
	assert_int_equal(swx_tables_commit(tables, NULL, 0), 0);
	f[12] = 0x08;			/* IPv4 */
	f[14] = 0x45;
	f[17] = 20;			/* total length 20: the whole header */
	swx_guard_stats(p, 1, &s0);
	assert_true(guarded(f, 34));
	f[17] = 100;			/* says 100, the frame has 20 */
	assert_false(guarded(f, 34));
	assert_false(guarded(f, 20));	/* not even the header */
	f[13] = 0x06;			/* ARP, shorter than Ethernet/IPv4's */
	assert_false(guarded(f, 30));
	assert_true(guarded(f, 42));
	f[12] = 0x81;			/* 802.1Q, then IPv4 of 20 */
	f[13] = 0x00;
	f[16] = 0x08;
	f[17] = 0x00;
	f[18] = 0x45;
	f[21] = 20;
	assert_true(guarded(f, 38));
	assert_false(guarded(f, 37));
	swx_guard_stats(p, 1, &s1);
	assert_int_equal(s1.truncated - s0.truncated, 4);
	assert_int_equal(s1.packets - s0.packets, 3);
}

static void
test_bad_spec_says_where(void **state)
{
	struct swx_build_options o = options();
	const char *spec = "struct s {\n\tbit<16> x\n}\napply {\n\tfrobnicate\n}\n";
	char so[4096], err[512];

	(void)state;
	assert_int_equal(swx_build_lib(&o, spec, strlen(spec), so, sizeof(so), err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "line"));
}

/* Whether checksum.spec, its C compiled by cc, gives a packet the right
 * header checksum, and its copy in the identification field too. */
static bool
checksum_right(const char *cc, const char *name)
{
	struct swx_build_options o = options();
	struct rte_swx_pipeline *cp;
	struct rte_mbuf *m, *out = NULL;
	struct rte_ipv4_hdr *ip;
	char so[4096], err[512], dir[300];
	uint16_t want;
	bool right;
	uint8_t *d;
	size_t len;
	char *spec = read_file(SWX_TEST_DIR "/checksum.spec", &len);

	/* a cache of its own: the object is named by the spec alone */
	snprintf(dir, sizeof(dir), "%s/%s", cache_dir, name);
	o.cache_dir = dir;
	o.cc = cc;
	if (swx_build_lib(&o, spec, len, so, sizeof(so), err, sizeof(err)) != 0)
		fail_msg("%s", err);
	free(spec);
	if (swx_build_pipeline(&cp, name, so, "port in 0 ring IN bsz 1\nport out 0 ring OUT bsz 1\n",
			       0, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	m = rte_pktmbuf_alloc(pool);
	d = (uint8_t *)rte_pktmbuf_append(m, 34);
	memset(d, 0, 34);
	d[12] = 0x08;
	ip = (struct rte_ipv4_hdr *)(d + 14);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16(20);
	ip->time_to_live = 64;
	ip->next_proto_id = 17;
	ip->src_addr = rte_cpu_to_be_32(0x0a000001);
	ip->dst_addr = rte_cpu_to_be_32(0xc0a80101);
	want = rte_ipv4_cksum(ip);
	assert_int_equal(rte_ring_enqueue(ring_in, m), 0);
	for (int i = 0; i < 64; i++)
		rte_swx_pipeline_run(cp, 16);
	rte_swx_pipeline_flush(cp);
	assert_int_equal(rte_ring_dequeue(ring_out, (void **)&out), 0);
	ip = rte_pktmbuf_mtod_offset(out, struct rte_ipv4_hdr *, 14);
	right = ip->hdr_checksum == want && ip->packet_id == want;
	rte_pktmbuf_free(out);
	rte_swx_pipeline_free(cp);
	return right;
}

/* src/build.c compiles the generated C with -fno-strict-aliasing: without
 * it, gcc 12 moves a 64-bit read of a checksum before the 16-bit write that
 * computed it (checksum.spec), and the copy reads 0. The same spec built by
 * the same compiler less that flag shows the test can tell. */
static void
test_checksum_needs_no_strict_aliasing(void **state)
{
	(void)state;
	assert_true(checksum_right(NULL, "flags"));
	if (checksum_right(SWX_TEST_DIR "/cc-strict-aliasing.sh", "strict"))
		skip();	/* this compiler does not miscompile it: nothing to show */
}

int
main(int argc, char **argv)
{
	char *eal[] = { argv[0], "--no-huge", "--no-pci", "-m", "256", "--no-shconf",
			"--no-telemetry", "--log-level", "*:error", "--file-prefix", "swx-test" };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_add_modify_delete),
		cmocka_unit_test(test_entry_ids_are_key_slots),
		cmocka_unit_test(test_full_table_fails_alone),
		cmocka_unit_test(test_lpm_longest_prefix_and_rebuild),
		cmocka_unit_test(test_default_action),
		cmocka_unit_test(test_commit_waits_for_no_pipeline_thread),
		cmocka_unit_test(test_guard_drops_truncated_frames),
		cmocka_unit_test(test_bad_spec_says_where),
		cmocka_unit_test(test_checksum_needs_no_strict_aliasing),
	};
	char runtime_dir[PATH_MAX];
	int failed;

	(void)argc;
	if (rte_eal_init(sizeof(eal) / sizeof(eal[0]), eal) < 0)
		return 1;
	pool = rte_pktmbuf_pool_create("test_pool", 1024, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	ring_in = rte_ring_create("IN", 64, 0, 0);
	ring_guarded = rte_ring_create("GUARDED", 64, 0, 0);
	ring_out = rte_ring_create("OUT", 64, 0, 0);
	if (pool == NULL || ring_in == NULL || ring_guarded == NULL || ring_out == NULL)
		return 1;
	failed = cmocka_run_group_tests(tests, setup, teardown);
	printf("%d passed, %d failed\n", (int)(sizeof(tests) / sizeof(tests[0])) - failed, failed);
	/* the EAL leaves its runtime directory behind, empty */
	snprintf(runtime_dir, sizeof(runtime_dir), "%s", rte_eal_get_runtime_dir());
	rte_eal_cleanup();
	rmdir(runtime_dir);
	return failed != 0;
}
