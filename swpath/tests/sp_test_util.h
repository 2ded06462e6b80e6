/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the swpath C unit tests: a quiet EAL without hugepages or
 * devices, and the summary line every test program ends with.
 */
#ifndef SP_TEST_UTIL_H
#define SP_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_log.h>

/* The EAL's runtime directory of this test process, removed at exit. */
static char sp_test_prefix[64];

static inline void
sp_test_eal_cleanup(void)
{
	char dir[128];

	rte_eal_cleanup();
	snprintf(dir, sizeof(dir), "/var/run/dpdk/%s", sp_test_prefix);
	rmdir(dir);
}

static inline int
sp_test_eal_init(const char *prog)
{
	char *argv[] = {
		(char *)prog, "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
		"--no-telemetry", "-l", "0", "--log-level=*:error",
		"--file-prefix", sp_test_prefix, NULL,
	};
	int rc;

	snprintf(sp_test_prefix, sizeof(sp_test_prefix), "sp-unit-%d",
		 (int)getpid());
	rc = rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
	if (rc >= 0)
		atexit(sp_test_eal_cleanup);
	return rc;
}

/* Runs a cmocka group and prints "N passed, M failed" last. */
#define SP_RUN_TESTS(tests, setup, teardown) \
	({ \
		size_t total_ = sizeof(tests) / sizeof((tests)[0]); \
		int failed_ = cmocka_run_group_tests(tests, setup, teardown); \
		fflush(stderr); \
		printf("%zu passed, %d failed\n", \
		       failed_ < 0 ? 0 : total_ - (size_t)failed_, \
		       failed_ < 0 ? (int)total_ : failed_); \
		fflush(stdout); \
		failed_ != 0; \
	})

/* A deterministic PRNG for test data (xorshift64*). */
static inline uint64_t
sp_test_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

#endif /* SP_TEST_UTIL_H */
