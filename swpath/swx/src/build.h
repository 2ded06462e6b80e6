/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A P4 program's SWX pipeline from its spec (what p4c-dpdk writes): DPDK
 * 22.11's own way in, rte_swx_pipeline_codegen() (spec -> C, which also
 * checks the spec), the C compiled into a shared object, then
 * rte_swx_pipeline_build_from_lib() with an I/O spec naming the ports.
 * (22.11 has no rte_swx_pipeline_build_from_spec.)
 *
 * The generated C includes two headers Debian's libdpdk-dev does not ship
 * (rte_swx_pipeline_internal.h, rte_swx_pipeline_spec.h); `make deps` takes
 * them from Debian's source package of the installed DPDK
 * (swpath/swx/Makefile). It is compiled with -fno-strict-aliasing: with
 * gcc 12 at -O2 the IPv4 and TCP checksums come out wrong without it (the
 * inline ckadd/cksub write 16 bits through a uint16_t * that a following
 * 64-bit load reads through a uint64_t *; tests/checksum.spec shows it,
 * test_checksum_needs_no_strict_aliasing holds the build to it).
 *
 * Compiled objects are cached in a directory, named by a hash of the spec
 * and kept with it (compared byte for byte before use), so a pipeline the
 * switch has built once loads in milliseconds; a first build of the PNA
 * program takes about 3 s.
 */
#ifndef SWX_BUILD_H
#define SWX_BUILD_H

#include <stddef.h>

struct rte_swx_pipeline;

struct swx_build_options {
	const char *cache_dir;	  /* where NAME.c / NAME.so / NAME.log go */
	const char *include_dir;  /* rte_swx_pipeline_internal.h is there */
	const char *cc;		  /* the C compiler ("cc" if NULL) */
};

/*
 * The shared object for this spec (text, len bytes) in the cache, built if
 * it is not there: its path in so_path. 0, or -1 with a line in err (the
 * spec's line and DPDK's message for a bad spec; the log file for a
 * compiler error).
 */
int swx_build_lib(const struct swx_build_options *o, const char *spec,
		  size_t len, char *so_path, size_t so_len, char *err,
		  size_t errlen);

/*
 * A pipeline named name from the shared object and an I/O spec (text).
 * 0, or -1 with a line in err.
 */
int swx_build_pipeline(struct rte_swx_pipeline **p, const char *name,
		       const char *so_path, const char *iospec, int numa_node,
		       char *err, size_t errlen);

#endif /* SWX_BUILD_H */
