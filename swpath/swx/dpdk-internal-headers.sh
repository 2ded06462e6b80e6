#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The two headers of DPDK's SWX pipeline that the code it generates includes
# and Debian's libdpdk-dev does not ship (rte_swx_pipeline_internal.h,
# rte_swx_pipeline_spec.h), from Debian's source package of the DPDK that is
# installed, so they match it exactly: `make deps` runs this.
#
#   dpdk-internal-headers.sh DEST   -> DEST/dpdk-UPSTREAM/lib/pipeline/*.h
#
# apt fetches and verifies the source package (the archive's keyring signs
# its Release files) with a configuration of its own: the machine's apt
# sources are not touched.
set -eu
dest=$1
version=$(dpkg-query -W -f='${Version}' libdpdk-dev)
upstream=${version%-*}
out="$dest/dpdk-$upstream/lib/pipeline"
if [ -f "$out/rte_swx_pipeline_internal.h" ]; then
    echo "deps: DPDK $upstream's pipeline headers present ($out)"
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$work/sources.list" <<LIST
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm main
deb-src [signed-by=$keyring] http://deb.debian.org/debian bookworm-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security bookworm-security main
LIST
mkdir -p "$work/lists/partial" "$work/src"
apt="apt-get -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList=$work/sources.list -o Dir::Etc::SourceParts=/nonexistent -o Dir::State::Lists=$work/lists"
$apt update >/dev/null
(cd "$work/src" && $apt source --download-only "dpdk=$version" >/dev/null 2>&1) || {
    echo "deps: Debian's source package dpdk=$version could not be fetched" >&2; exit 1; }
mkdir -p "$out"
tar -xJf "$work/src/dpdk_$upstream.orig.tar.xz" -C "$work/src" --wildcards \
    '*/lib/pipeline/rte_swx_pipeline_internal.h' '*/lib/pipeline/rte_swx_pipeline_spec.h'
cp "$work"/src/*/lib/pipeline/rte_swx_pipeline_*.h "$out/"
echo "deps: DPDK $upstream's pipeline headers in $out"
