#!/usr/bin/env bash
#
# Build two of Open MPI's own components from Debian's source with our
# fixes, and install them beside mca_btl_ofi.so, where they are found
# before Debian's:
#   - osc/rdma with osc-rdma/patches (Open MPI 4.1.4's osc/rdma deadlocks on
#     a dynamic window whose target is on another node: ompi issue 10328,
#     fixed upstream in 4.1.5; and the accumulate fixes of README "osc/rdma");
#   - rml/oob with rml-oob/patches (mpirun loses show_help messages from
#     processes on its own node: a use-after-free in its send-to-self path,
#     README "Messages mpirun lost").
#
#   scripts/build-ompi-fixes.sh              fetch, patch, build, install
#   scripts/build-ompi-fixes.sh --fetch DIR  only put Debian's source of the
#                                            two in DIR (scripts/package.sh;
#                                            then BTL_OFI_OMPI_SRC=DIR)
#
# 1. Source: `apt-get source openmpi=<the installed libopenmpi3's
#    version>' (Debian's own patches applied by dpkg-source), or the tree
#    BTL_OFI_OMPI_SRC names (a folder holding ompi/mca/osc/rdma and
#    orte/mca/rml/oob). As root a deb-src entry is added when apt has none
#    (scripts/debian-source.sh).
# 2. Each component's patches applied in order (patch -p1, at the tree's
#    root); OSC_RDMA_PATCHES / RML_OOB_PATCHES, which the component reports
#    as its read-only variable osc_rdma_patches / rml_oob_patches, name them.
# 3. Compiled with the flags Debian built Open MPI with (ompi_info -c,
#    "Build CFLAGS") against Debian's own installed configuration headers
#    (opal_config.h and the rest of libopenmpi-dev: the same configuration,
#    so the same structure layouts), linked against the libraries Debian's
#    component links with.
# 4. Checked: every symbol resolves, and ompi_info loads it (its patches
#    variable is there).
#
# Environment: BTL_OFI_PREFIX (default <repo>/_install), BTL_OFI_OMPI_SRC.
# Takes about 30 s (the download included). scripts/build.sh runs it unless
# BTL_OFI_OMPI_FIXES=0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${BTL_OFI_PREFIX:-$repo/_install}
work=$repo/_build/ompi-fixes
log() { echo "build-ompi-fixes.sh: $*"; }
die() {
    echo "build-ompi-fixes.sh: $*" >&2
    exit 1
}

# shellcheck source=scripts/debian-source.sh
source "$repo/scripts/debian-source.sh"

# component: its folder in Open MPI's tree, our patches, the libraries it
# links with, and the name of the macro that names the patches
components=(
    "ompi/mca/osc/rdma|osc-rdma/patches|-lmpi -lopen-rte -lopen-pal|OSC_RDMA_PATCHES"
    "orte/mca/rml/oob|rml-oob/patches|-lopen-rte -lopen-pal|RML_OOB_PATCHES"
)

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

copy_dir() { # from to dir: one component's folder of one tree into another
    [[ -d $1/$3 ]] || die "no $3 in $1"
    rm -rf "${2:?}/$3"
    mkdir -p "$2/${3%/*}"
    cp -r "$1/$3" "$2/${3%/*}/"
}
copy_components() { # from to: every component's folder
    local c
    for c in "${components[@]}"; do
        copy_dir "$1" "$2" "${c%%|*}"
    done
}

# ---------------------------------------------------------------- 1. source
tree=${BTL_OFI_OMPI_SRC:-}
if [[ -z $tree ]]; then
    tree=$work/openmpi-src
    if [[ ! -f $tree/.version || $(cat "$tree/.version") != "$version" ]]; then
        command -v dpkg-source >/dev/null || {
            [[ $(id -u) -eq 0 ]] || die "dpkg-dev is missing (apt-get install dpkg-dev)"
            aptget install -y --no-install-recommends dpkg-dev >/dev/null
        }
        openmpi_source_ready || die "cannot fetch Debian's openmpi source (see above)"
        rm -rf "$work/fetch" "$tree"
        mkdir -p "$work/fetch" "$tree"
        log "apt-get source openmpi=$version"
        (cd "$work/fetch" && apt-get source "openmpi=$version" >"$work/fetch.log" 2>&1) ||
            die "apt-get source openmpi=$version failed (log: $work/fetch.log)"
        src=$(find "$work/fetch" -maxdepth 1 -type d -name 'openmpi-*' | head -n 1)
        copy_components "$src" "$tree"
        echo "$version" >"$tree/.version"
        rm -rf "$work/fetch"
    fi
fi
if [[ -n $fetch_only ]]; then
    # Debian's source as fetched: the package build patches it itself
    mkdir -p "$fetch_only"
    copy_components "$tree" "$fetch_only"
    echo "$version" >"$fetch_only/.version"
    log "Debian's osc/rdma and rml/oob source ($version) in $fetch_only"
    exit 0
fi

# Debian's flags without the path mapping of its build directory
cflags=$(ompi_info -c 2>/dev/null | sed -n 's/^ *Build CFLAGS: *//p' | tr ' ' '\n' |
    grep -v '^-ffile-prefix-map=\|^-fdebug-prefix-map=\|^-Werror' | paste -sd ' ')
[[ -n $cflags ]] || die "ompi_info -c reports no Build CFLAGS"
incs=()
for d in $(mpicc --showme:incdirs); do incs+=(-isystem "$d"); done
libdir=$(mpicc --showme:libdirs | awk '{print $1}')
# loaded by ompi_info on its own (the folder holds nothing else: a prefix
# may hold components built for other checks, AddressSanitizer's say)
default=$(env -u OMPI_MCA_mca_base_component_path ompi_info --path pkglibdir 2>/dev/null |
    sed -n 's/^ *Pkglibdir: *//p')

for c in "${components[@]}"; do
    IFS='|' read -r dir patches libs macro <<<"$c"
    framework=${dir#*/mca/}
    fw=${framework%/*} name=${framework#*/}
    lib=mca_${fw}_$name.so
    var=${fw}_${name}_patches

    # ------------------------------------------------------------ 2. patch
    patched=$work/patched/${fw}-$name
    rm -rf "$patched"
    copy_dir "$tree" "$patched" "$dir"
    names=()
    for p in "$repo/$patches"/*.patch; do
        patch -p1 -s -d "$patched" <"$p" || die "$(basename "$p") does not apply to Debian's openmpi $version"
        names+=("$(basename "$p" .patch)")
    done
    log "$fw/$name patched: ${names[*]}"

    # ------------------------------------------------------------ 3. build
    obj=$work/obj/${fw}-$name
    rm -rf "$obj"
    mkdir -p "$obj"
    for f in "$patched/$dir"/*.c; do
        # shellcheck disable=SC2086 # Debian's flags, one word each
        gcc $cflags -fPIC -D"$macro"="\"$(
            IFS=' '
            echo "${names[*]}"
        ) (btl/ofi's $patches on Debian openmpi $version)\"" \
            "${incs[@]}" -idirafter "$repo/coll/shim" -c "$f" -o "$obj/$(basename "${f%.c}").o" \
            2>>"$work/compile.log" || die "compiling $(basename "$f") failed (log: $work/compile.log)"
    done
    # shellcheck disable=SC2086 # one word per library
    gcc -shared -o "$obj/$lib" "$obj"/*.o -L"$libdir" $libs || die "linking $lib failed"

    # ------------------------------------------------------------ 4. check
    undefined=$(LD_LIBRARY_PATH=$libdir ldd -r "$obj/$lib" 2>&1 | grep 'undefined symbol' || true)
    [[ -z $undefined ]] || die "$lib: unresolved symbols: $(head -n 3 <<<"$undefined")"
    rm -f "$obj"/*.o
    seen=$(OMPI_MCA_mca_base_component_path="$obj:$default" \
        ompi_info --param "$fw" "$name" --level 3 2>/dev/null | grep -o "$var\" (current value: \"[^\"]*" || true)
    [[ -n $seen ]] || die "ompi_info does not load the $lib built in $obj"
    install -D -m 0644 "$obj/$lib" "$prefix/lib/openmpi/$lib"
    log "installed $prefix/lib/openmpi/$lib (${seen#*current value: \"})"
done
