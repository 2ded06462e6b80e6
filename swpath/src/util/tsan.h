/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What ThreadSanitizer cannot see for itself, told to it. It sees the
 * synchronisation in code built with -fsanitize=thread and in the calls it
 * intercepts (pthread, libc), not inside DPDK's libraries: so it cannot see
 * that rte_eal_mp_wait_lcore() or rte_eal_wait_lcore() has joined a worker
 * lcore, and would report every access of the teardown that follows as
 * racing with the worker's last ones (swpath's workers, quicknat-swx's
 * pipeline threads). Empty in every other build.
 */
#ifndef SP_TSAN_H
#define SP_TSAN_H

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
/* Everything this thread did before happens before what follows a later
 * SP_TSAN_ACQUIRE(addr) in another. */
#define SP_TSAN_RELEASE(addr) __tsan_release(addr)
#define SP_TSAN_ACQUIRE(addr) __tsan_acquire(addr)
#else
#define SP_TSAN_RELEASE(addr) ((void)(addr))
#define SP_TSAN_ACQUIRE(addr) ((void)(addr))
#endif

#endif /* SP_TSAN_H */
