#!/bin/sh
# The C compiler as swx_build_lib calls it, with DPDK's instruction trace
# on (rte_swx_pipeline_internal.h, TRACE_LEVEL): each instruction the
# pipeline executes prints a line, which bench/swx_ceiling.py counts per
# packet (bench_swx_spec -c).
exec cc -DTRACE_LEVEL=1 "$@"
