/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tables' statistics as the packets made them, with the PNA program's
 * fast path in front (p4src/include/pna/fastpath.spec). A packet the fast
 * path hands on after looking some of the program's tables up is looked up
 * again by the full program, and the pipeline counts both lookups: every
 * new flow would count two misses in nat_in2out. The fast path counts such
 * a packet in its exit's slot of fastpath_counter, and the spec says, one
 * comment line an exit, which lookups the exit repeats:
 *
 *   ; fastpath exit 6: core_zone_port_zone hit ... core_nat_nat_in2out miss
 *
 * Those lines are the contract, read here from the spec the pipeline was
 * built from (quicknat-swx and bench_swx_spec both), so the template is
 * the one place it is written; swx_splice.py checks their names.
 */
#ifndef SWX_FASTPATH_STATS_H
#define SWX_FASTPATH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rte_swx_ctl.h>

struct rte_swx_pipeline;

#define SWX_FASTPATH_REGARRAY "fastpath_counter"
#define SWX_FASTPATH_EXITS_MAX 32
#define SWX_FASTPATH_LOOKUPS_MAX 8

struct swx_fastpath_exit {
	uint32_t slot;		/* of fastpath_counter */
	uint32_t n_lookups;
	struct {
		char table[RTE_SWX_CTL_NAME_SIZE];
		bool hit;
	} lookups[SWX_FASTPATH_LOOKUPS_MAX];
};

struct swx_fastpath_exits {
	uint32_t n;
	struct swx_fastpath_exit exit[SWX_FASTPATH_EXITS_MAX];
};

/*
 * The exit lines of a spec (len bytes; none without a fast path). Returns
 * their number, or -1 with a message in err for a malformed line (a table
 * name too long, a word other than hit or miss, too many of either).
 */
int swx_fastpath_exits_parse(const char *spec, size_t len, struct swx_fastpath_exits *x,
			     char *err, size_t err_size);

/*
 * Table `table`'s hits and misses in pipeline p, less the lookups the
 * fast path's exits made before the full program made them again. A
 * learner table's too (its learns and rearms are never repeated: the fast
 * path learns from a learn tag only once sure to send it). Returns 0, or -1
 * when the pipeline has no such table or learner.
 */
int swx_table_stats_once(struct rte_swx_pipeline *p, const struct swx_fastpath_exits *x,
			 const char *table, uint64_t *hits, uint64_t *misses);

#endif /* SWX_FASTPATH_STATS_H */
