#!/usr/bin/env bash
#
# Build the component with AddressSanitizer into its own prefix, from a
# copy of the sources (scripts/build.sh configures and cleans in the folder
# it lives in; the repository's own build must not be touched):
#
#   tests/faults/asan-build.sh DIR
#
# copies the component sources (the tracked top-level files and scripts/,
# as they are in the working tree) to DIR/src, runs
#   BTL_OFI_PREFIX=DIR/install CFLAGS=... LDFLAGS=... DIR/src/scripts/build.sh
# with CFLAGS=-g -O1 -fsanitize=address -fno-omit-frame-pointer and
# LDFLAGS=-fsanitize=address, and checks that the installed
# mca_btl_ofi.so needs libasan. Prints the install prefix on its last line.
# The build log is DIR/build.log.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
dir=${1:?usage: asan-build.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

rm -rf "$dir/src"
mkdir -p "$dir/src/scripts"
# tracked files outside tests/, bench/ and examples/: the component, its
# build system and scripts (working-tree content, so uncommitted edits of
# the component are what gets checked)
(cd "$repo" && git ls-files -- . ':!tests' ':!bench' ':!examples' ':!.ci') |
    while IFS= read -r f; do
        mkdir -p "$dir/src/$(dirname "$f")"
        cp -p "$repo/$f" "$dir/src/$f"
    done

flags='-g -O1 -fsanitize=address -fno-omit-frame-pointer'
# (build.sh word-splits BTL_OFI_CONFIGURE_ARGS, so flags with spaces go
# through the environment, which configure reads as well)
# (BTL_OFI_OMPI_FIXES=0: what AddressSanitizer checks is this component;
# the jobs use Debian's osc/rdma, on one host, without dynamic windows
# across hosts)
if ! BTL_OFI_OMPI_FIXES=0 BTL_OFI_PREFIX=$dir/install CFLAGS="$flags" LDFLAGS=-fsanitize=address \
    bash "$dir/src/scripts/build.sh" >"$dir/build.log" 2>&1; then
    echo "asan-build: build failed; last lines of $dir/build.log:" >&2
    tail -n 30 "$dir/build.log" >&2
    exit 1
fi
so=$dir/install/lib/openmpi/mca_btl_ofi.so
# (ldd's output taken whole first: with pipefail, grep -q leaving at the
# first match could end ldd with SIGPIPE and fail the check at random)
needed=$(ldd "$so") || {
    echo "asan-build: ldd $so failed" >&2
    exit 1
}
if [[ $needed != *libasan* ]]; then
    echo "asan-build: $so does not link libasan (CFLAGS not applied?)" >&2
    exit 1
fi
echo "$dir/install"
