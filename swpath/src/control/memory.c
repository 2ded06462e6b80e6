/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "control/memory.h"
#include "dataplane/sp.h"
#include "util/text.h"

#define HEAP_NAME "quicknat"
#define PAGE_2M (2ull << 20)
/*
 * A worker's tables take 99 bytes per session and direction at 1M sessions
 * (make bench-swpath); its hash indexes round their buckets up to a power
 * of two, which adds up to 36 more. 320 per session leaves room, and what is
 * never touched is never faulted in.
 */
#define BYTES_PER_SESSION 320ull
#define BYTES_PER_WORKER (8ull << 20)     /* rings, TX buffers, small tables */
#define BYTES_FIXED (16ull << 20)         /* heap element headers, alignment */

static void *heap_va;
static size_t heap_len;
static int heap_socket = -1;

static uint64_t
mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;

	if (f == NULL)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb ? kb << 10 : UINT64_MAX;
}

int
sp_memory_init(size_t mbuf_bytes, unsigned n_workers,
	       uint32_t sessions_per_worker, char *err, size_t errlen)
{
	uint64_t need = mbuf_bytes + BYTES_FIXED +
			n_workers * (BYTES_PER_WORKER +
				     BYTES_PER_SESSION * sessions_per_worker);
	size_t len = RTE_ALIGN_CEIL(need, PAGE_2M);
	uint8_t *map;

	if (rte_eal_has_hugepages())
		return 0;
	if (need > mem_available())
		return sp_fail(err, errlen,
			    "not enough memory: %u workers x %u sessions and the packet buffers need about %llu MB, the machine has %llu MB available; lower --sessions",
			    n_workers, sessions_per_worker,
			    (unsigned long long)(need >> 20),
			    (unsigned long long)(mem_available() >> 20));
	/* one extra huge page of address space, to start on a 2 MiB boundary */
	map = mmap(NULL, len + PAGE_2M, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return sp_fail(err, errlen, "cannot map %zu MB: %s", len >> 20,
			    strerror(errno));
	heap_va = RTE_PTR_ALIGN_CEIL(map, PAGE_2M);
	heap_len = len;
	/* trim the slack, so that munmap(heap_va, heap_len) is all of it */
	if (heap_va != map)
		munmap(map, RTE_PTR_DIFF(heap_va, map));
	munmap(RTE_PTR_ADD(heap_va, len), PAGE_2M - RTE_PTR_DIFF(heap_va, map));
	/* a hint: with THP off the pages stay small and nothing fails */
	(void)madvise(heap_va, heap_len, MADV_HUGEPAGE);
	if (rte_malloc_heap_create(HEAP_NAME) < 0 ||
	    rte_malloc_heap_memory_add(HEAP_NAME, heap_va, heap_len, NULL,
				       (unsigned)(heap_len / PAGE_2M),
				       PAGE_2M) < 0) {
		int e = rte_errno;

		sp_memory_fini();
		return sp_fail(err, errlen, "cannot make the packet heap: %s",
			    rte_strerror(e));
	}
	heap_socket = rte_malloc_heap_get_socket(HEAP_NAME);
	return 0;
}

int
sp_memory_socket(int numa)
{
	return heap_socket >= 0 ? heap_socket : numa;
}

void
sp_memory_fini(void)
{
	if (heap_va == NULL)
		return;
	/* fails (EBUSY) while something is still allocated: then keep it */
	if (heap_socket >= 0 &&
	    rte_malloc_heap_memory_remove(HEAP_NAME, heap_va, heap_len) < 0)
		return;
	rte_malloc_heap_destroy(HEAP_NAME);
	munmap(heap_va, heap_len);
	heap_va = NULL;
	heap_socket = -1;
}
