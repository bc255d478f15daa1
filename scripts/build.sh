#!/usr/bin/env bash
#
# Build and install the ofi BTL component, coll/ofi, and Open MPI's
# osc/rdma and rml/oob with the fixes of osc-rdma/ and rml-oob/patches:
#
#   scripts/build.sh              install missing Debian packages (as root),
#                                 then autogen, configure, make, make install,
#                                 then scripts/build-ompi-fixes.sh
#   scripts/build.sh --deps-only  only the package check/installation
#
# Installs into PREFIX = ${BTL_OFI_PREFIX:-<repo>/_install}: mca_btl_ofi.so,
# mca_coll_ofi.so, mca_osc_rdma.so and mca_rml_oob.so in $PREFIX/lib/openmpi. Run jobs
# through scripts/ofirun to make Open MPI load them instead of its own.
#
# Extra configure arguments: BTL_OFI_CONFIGURE_ARGS="--enable-werror ...".
# BTL_OFI_OMPI_FIXES=0: no osc/rdma or rml/oob of ours (Debian's are used:
# its osc/rdma deadlocks on dynamic windows across nodes, README "osc/rdma";
# its mpirun loses show_help messages, README "Messages mpirun lost").
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${BTL_OFI_PREFIX:-$repo/_install}

deps_only=0
case "${1:-}" in
--deps-only) deps_only=1 ;;
"") ;;
-h | --help)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 0
    ;;
*)
    echo "build.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

log() { echo "build.sh: $*"; }

# ------------------------------------------------------------------
# Debian packages: install what is missing (only when root).
# ------------------------------------------------------------------
# (iproute2 and procps: the simulated hosts of tests/hosts)
packages=(openmpi-bin libopenmpi-dev libfabric-dev libfabric-bin autoconf automake libtool
    pkg-config make gcc iproute2 procps dpkg-dev patch)

missing=()
for p in "${packages[@]}"; do
    if ! dpkg -s "$p" >/dev/null 2>&1; then
        missing+=("$p")
    fi
done
# dpkg -s also says "installed" for a package in state deinstall/config-files
for p in "${packages[@]}"; do
    if dpkg -s "$p" >/dev/null 2>&1 &&
        ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing missing packages: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update
        apt-get install -y --no-install-recommends "${missing[@]}" </dev/null
    else
        echo "build.sh: missing packages: ${missing[*]}" >&2
        echo "build.sh: install them (as root): apt-get install ${missing[*]}" >&2
        exit 1
    fi
else
    log "all required packages are installed"
fi

if ((deps_only)); then
    exit 0
fi

# ------------------------------------------------------------------
# Build and install.
# ------------------------------------------------------------------
cd "$repo"
for f in autogen.sh configure.ac Makefile.am; do
    if [[ ! -f $f ]]; then
        echo "build.sh: $repo/$f is missing: nothing to build" >&2
        exit 1
    fi
done

log "autogen"
./autogen.sh
log "configure --prefix=$prefix ${BTL_OFI_CONFIGURE_ARGS:-}"
# shellcheck disable=SC2086 # word splitting of the extra arguments is wanted
./configure --prefix="$prefix" ${BTL_OFI_CONFIGURE_ARGS:-}
log "make"
# configure may have changed the flags, which make alone would not notice
if [[ -f Makefile ]]; then
    make clean >/dev/null 2>&1 || true
fi
make -j2
log "make install"
make install

so=$prefix/lib/openmpi/mca_btl_ofi.so
if [[ ! -f $so ]]; then
    echo "build.sh: make install did not produce $so" >&2
    exit 1
fi
log "installed $so"

if [[ ${BTL_OFI_OMPI_FIXES:-1} == 0 ]]; then
    rm -f "$prefix/lib/openmpi/mca_osc_rdma.so" "$prefix/lib/openmpi/mca_rml_oob.so"
    log "BTL_OFI_OMPI_FIXES=0: no osc/rdma or rml/oob of ours (Debian's are used)"
elif ! bash "$repo/scripts/build-ompi-fixes.sh"; then
    echo "build.sh: osc/rdma and rml/oob with our fixes could not be built (above);" \
        "BTL_OFI_OMPI_FIXES=0 builds without them" >&2
    exit 1
fi
