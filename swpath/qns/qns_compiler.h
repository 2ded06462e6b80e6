/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Branch hints for the QNS sources and tests. The library does not depend on
 * DPDK, so it cannot use rte_branch_prediction.h; these are the same macros.
 */
#ifndef QUICKNAT_QNS_COMPILER_H
#define QUICKNAT_QNS_COMPILER_H

#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

#endif /* QUICKNAT_QNS_COMPILER_H */
