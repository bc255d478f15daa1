#!/usr/bin/env bash
#
# Build Open MPI's osc/rdma from Debian's own source with the fixes of
# osc-rdma/patches (Open MPI 4.1.4's osc/rdma deadlocks on a dynamic window
# whose target is on another node: ompi issue 10328, fixed upstream in
# 4.1.5), and install it as $PREFIX/lib/openmpi/mca_osc_rdma.so beside
# mca_btl_ofi.so, where it is found before Debian's.
#
#   scripts/build-osc-rdma.sh                fetch, patch, build, install
#   scripts/build-osc-rdma.sh --fetch DIR    only put Debian's osc/rdma
#                                            source in DIR (scripts/package.sh;
#                                            then BTL_OFI_OSC_RDMA_SRC=DIR)
#
# 1. Source: `apt-get source openmpi=<the installed libopenmpi3's
#    version>' (Debian's own patches applied by dpkg-source), or the tree
#    BTL_OFI_OSC_RDMA_SRC names (a folder holding ompi/mca/osc/rdma).
#    As root a deb-src entry is added when apt has none
#    (scripts/debian-source.sh).
# 2. osc-rdma/patches/*.patch applied in order (patch -p1, at the tree's
#    root); OSC_RDMA_PATCHES, which the component reports as its read-only
#    variable osc_rdma_patches, names them.
# 3. Compiled with the flags Debian built Open MPI with (ompi_info -c,
#    "Build CFLAGS") against Debian's own installed configuration headers
#    (opal_config.h and the rest of libopenmpi-dev: the same configuration,
#    so the same structure layouts), linked against libmpi, libopen-rte
#    and libopen-pal as Debian's component is.
# 4. Checked: every symbol resolves, and ompi_info loads it (the
#    osc_rdma_patches variable is there).
#
# Environment: BTL_OFI_PREFIX (default <repo>/_install), BTL_OFI_OSC_RDMA_SRC.
# Takes about 30 s (the download included). scripts/build.sh runs it unless
# BTL_OFI_OSC_RDMA=0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${BTL_OFI_PREFIX:-$repo/_install}
work=$repo/_build/osc-rdma
log() { echo "build-osc-rdma.sh: $*"; }
die() {
    echo "build-osc-rdma.sh: $*" >&2
    exit 1
}

# shellcheck source=scripts/debian-source.sh
source "$repo/scripts/debian-source.sh"

fetch_only=
case "${1:-}" in
--fetch) fetch_only=${2:?--fetch needs a directory} ;;
"") ;;
-h | --help)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 0
    ;;
*) die "unknown argument '$1' (try --help)" ;;
esac

version=$(dpkg-query -W -f='${source:Version}' libopenmpi3 2>/dev/null) ||
    die "libopenmpi3 is not installed (scripts/build.sh installs it)"

# ---------------------------------------------------------------- 1. source
tree=${BTL_OFI_OSC_RDMA_SRC:-}
if [[ -z $tree ]]; then
    tree=$work/openmpi-src
    if [[ ! -f $tree/.version || $(cat "$tree/.version") != "$version" ]]; then
        command -v dpkg-source >/dev/null || {
            [[ $(id -u) -eq 0 ]] || die "dpkg-dev is missing (apt-get install dpkg-dev)"
            aptget install -y --no-install-recommends dpkg-dev >/dev/null
        }
        openmpi_source_ready || die "cannot fetch Debian's openmpi source (see above)"
        rm -rf "$work/fetch" "$tree"
        mkdir -p "$work/fetch"
        log "apt-get source openmpi=$version"
        (cd "$work/fetch" && apt-get source "openmpi=$version" >"$work/fetch.log" 2>&1) ||
            die "apt-get source openmpi=$version failed (log: $work/fetch.log)"
        src=$(find "$work/fetch" -maxdepth 1 -type d -name 'openmpi-*' | head -n 1)
        [[ -d $src/ompi/mca/osc/rdma ]] || die "no ompi/mca/osc/rdma in the fetched source"
        mkdir -p "$tree/ompi/mca/osc"
        cp -r "$src/ompi/mca/osc/rdma" "$tree/ompi/mca/osc/"
        echo "$version" >"$tree/.version"
        rm -rf "$work/fetch"
    fi
fi
[[ -d $tree/ompi/mca/osc/rdma ]] || die "$tree holds no ompi/mca/osc/rdma"
if [[ -n $fetch_only ]]; then
    # Debian's source as fetched: the package build patches it itself
    mkdir -p "$fetch_only"
    rm -rf "$fetch_only/ompi"
    mkdir -p "$fetch_only/ompi/mca/osc"
    cp -r "$tree/ompi/mca/osc/rdma" "$fetch_only/ompi/mca/osc/"
    echo "$version" >"$fetch_only/.version"
    log "Debian's osc/rdma source ($version) in $fetch_only"
    exit 0
fi

# ---------------------------------------------------------------- 2. patch
patched=$work/patched
rm -rf "$patched"
mkdir -p "$patched/ompi/mca/osc"
cp -r "$tree/ompi/mca/osc/rdma" "$patched/ompi/mca/osc/"
names=()
for p in "$repo"/osc-rdma/patches/*.patch; do
    patch -p1 -s -d "$patched" <"$p" || die "$(basename "$p") does not apply to Debian's openmpi $version"
    names+=("$(basename "$p" .patch)")
done
log "patched: ${names[*]}"

# ---------------------------------------------------------------- 3. build
# Debian's flags without the path mapping of its build directory
cflags=$(ompi_info -c 2>/dev/null | sed -n 's/^ *Build CFLAGS: *//p' | tr ' ' '\n' |
    grep -v '^-ffile-prefix-map=\|^-fdebug-prefix-map=\|^-Werror' | paste -sd ' ')
[[ -n $cflags ]] || die "ompi_info -c reports no Build CFLAGS"
incs=()
for d in $(mpicc --showme:incdirs); do incs+=(-isystem "$d"); done
libdir=$(mpicc --showme:libdirs | awk '{print $1}')
obj=$work/obj
rm -rf "$obj"
mkdir -p "$obj"
for c in "$patched"/ompi/mca/osc/rdma/*.c; do
    # shellcheck disable=SC2086 # Debian's flags, one word each
    gcc $cflags -fPIC -DOSC_RDMA_PATCHES="\"$(
        IFS=' '
        echo "${names[*]}"
    ) (btl/ofi's osc-rdma/patches on Debian openmpi $version)\"" \
        "${incs[@]}" -idirafter "$repo/coll/shim" -c "$c" -o "$obj/$(basename "${c%.c}").o" \
        2>>"$work/compile.log" || die "compiling $(basename "$c") failed (log: $work/compile.log)"
done
gcc -shared -o "$obj/mca_osc_rdma.so" "$obj"/*.o -L"$libdir" -lmpi -lopen-rte -lopen-pal ||
    die "linking mca_osc_rdma.so failed"

# ---------------------------------------------------------------- 4. check
undefined=$(LD_LIBRARY_PATH=$libdir ldd -r "$obj/mca_osc_rdma.so" 2>&1 | grep 'undefined symbol' || true)
[[ -z $undefined ]] || die "unresolved symbols: $(head -n 3 <<<"$undefined")"
# loaded by ompi_info on its own (the folder holds nothing else: a prefix
# may hold components built for other checks, AddressSanitizer's say)
default=$(env -u OMPI_MCA_mca_base_component_path ompi_info --path pkglibdir 2>/dev/null |
    sed -n 's/^ *Pkglibdir: *//p')
rm -f "$obj"/*.o
seen=$(OMPI_MCA_mca_base_component_path="$obj:$default" \
    ompi_info --param osc rdma --level 3 2>/dev/null | grep -o 'osc_rdma_patches" (current value: "[^"]*' || true)
[[ -n $seen ]] || die "ompi_info does not load the mca_osc_rdma.so built in $obj"
install -D -m 0644 "$obj/mca_osc_rdma.so" "$prefix/lib/openmpi/mca_osc_rdma.so"
log "installed $prefix/lib/openmpi/mca_osc_rdma.so (${seen#*current value: \"})"
