#!/bin/sh
# The C compiler as swx_build_lib calls it, less -fno-strict-aliasing: what
# the pipeline's generated code would be without it (test_swx.c,
# test_checksum_needs_no_strict_aliasing).
for a in "$@"; do shift; [ "$a" = "-fno-strict-aliasing" ] || set -- "$@" "$a"; done
exec cc "$@"
