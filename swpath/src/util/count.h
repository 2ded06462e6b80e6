/* SPDX-License-Identifier: Apache-2.0 */
#ifndef SP_COUNT_H
#define SP_COUNT_H

/*
 * Adds n to (or takes it from) a figure one thread writes while others read
 * it: in swpath a worker's counters and histogram buckets, its session and
 * mapping counts, its pool slots' use (read by control/format.c,
 * dataplane/sp.c, control/telemetry.c); in quicknat-swx the input guard's
 * counts (swx/src/guard.c, read by P4Runtime's Read).
 * A relaxed atomic load and store, not a locked add: no other thread writes,
 * so no update is lost, and a reader's relaxed load sees a whole value. A
 * plain `c++` racing with that load is undefined (C11 5.1.2.4p25) and lets
 * the compiler tear the store or keep the value in a register; ThreadSanitizer
 * (`make -C swpath/src test-threads`) reports every such pair. On x86-64
 * both compile to the same load, add and store.
 */
#define SP_COUNT_ADD(lvalue, n) \
	__atomic_store_n(&(lvalue), \
			 __atomic_load_n(&(lvalue), __ATOMIC_RELAXED) + (n), \
			 __ATOMIC_RELAXED)
#define SP_COUNT_SUB(lvalue, n) \
	__atomic_store_n(&(lvalue), \
			 __atomic_load_n(&(lvalue), __ATOMIC_RELAXED) - (n), \
			 __ATOMIC_RELAXED)

#endif /* SP_COUNT_H */
