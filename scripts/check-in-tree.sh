#!/usr/bin/env bash
# The phase functions are only called through run_phase; apt-get
# indextargets formats are $(FIELD) in single quotes:
# shellcheck disable=SC2317,SC2016
#
# check-in-tree.sh: build this component inside Debian's Open MPI 4.1
# source tree, as opal/mca/btl/ofi, the way Open MPI builds its own.
#
#   scripts/check-in-tree.sh [WORKDIR]        (default: /tmp/ompi-intree)
#
# Phases (each one timed; logs in WORKDIR/logs/):
#   packages   make Debian's source packages known to apt (adds a deb-src
#              entry of its own when none is configured, whatever the
#              format of apt's sources), apt-get install the tools and
#              libraries the opal build needs (as root)
#   fetch      apt-get source openmpi (Debian's patches get applied)
#   replace    opal/mca/btl/ofi := this repository's files (tracked plus
#              untracked-but-not-ignored, as in the work tree)
#   autogen    ./autogen.pl --force --no-ompi --no-orte (opal only,
#              without the bundled hwloc, libevent and PMIx)
#   configure  ./configure --with-libfabric, external hwloc/libevent/pmix
#   build      make -C opal/mca/btl/ofi (BTL_OFI_INTREE_FULL=1: make -C
#              opal, libopen-pal and every loadable component)
#   verify     the DSO exists, is built from our sources, its symbols
#              resolve against libopen-pal (the tree's with
#              BTL_OFI_INTREE_FULL=1, else Debian's of the same sources), and
#              `make install` puts it and help-btl-ofi.txt where Open MPI
#              keeps its own
#
# Prints `in-tree: PASS` and exits 0, or `in-tree: FAIL <reason>` and
# exits 1.  Nothing is cached: WORKDIR is emptied first (only if it is
# empty or was made by this script).
#
# Environment: BTL_OFI_JOBS (make -j, default: nproc);
# BTL_OFI_INTREE_APT_DONE=FILE: created once the apt phases are over;
# BTL_OFI_INTREE_FULL=1 (or BTL_OFI_FULL=1) builds libopen-pal and every loadable component
# of opal too.

set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${1:-/tmp/ompi-intree}
jobs=${BTL_OFI_JOBS:-$(nproc 2>/dev/null || echo 2)}
marker=.btl-ofi-in-tree-workdir
logs=$work/logs
src=
phase_names=()
phase_secs=()
t_start=$SECONDS

export DEBIAN_FRONTEND=noninteractive
export LC_ALL=C

# cpu_ticks: CPU time (user + system, in clock ticks) of this shell's
# finished children, i.e. of everything the phases ran so far.
clk_tck=$(getconf CLK_TCK 2>/dev/null || echo 100)
cpu_ticks() { awk '{ print $16 + $17 }' "/proc/$$/stat" 2>/dev/null || echo 0; }
t_cpu_start=$(cpu_ticks)
phase_cpu=()

print_times() {
    local i
    echo "in-tree: phase times (seconds, wall and CPU):"
    for i in "${!phase_names[@]}"; do
        printf '  %-10s %5d %5d\n' "${phase_names[$i]}" "${phase_secs[$i]}" "${phase_cpu[$i]}"
    done
    printf '  %-10s %5d %5d\n' total $((SECONDS - t_start)) $((($(cpu_ticks) - t_cpu_start) / clk_tck))
}

fail() {
    print_times
    echo "in-tree: FAIL $*"
    exit 1
}

# run_phase NAME FUNCTION: run FUNCTION with its output in logs/NAME.log,
# record its time, stop with FAIL (and the log's end) if it fails.
run_phase() {
    local name=$1 fn=$2 t0 c0 rc
    t0=$SECONDS
    c0=$(cpu_ticks)
    echo "in-tree: [$name] started (log: $logs/$name.log)"
    "$fn" >"$logs/$name.log" 2>&1 </dev/null
    rc=$?
    phase_names+=("$name")
    phase_secs+=($((SECONDS - t0)))
    phase_cpu+=($((($(cpu_ticks) - c0) / clk_tck)))
    echo "in-tree: [$name] done in $((SECONDS - t0)) s, CPU ${phase_cpu[-1]} s (exit $rc)"
    if ((rc != 0)); then
        echo "----- last lines of $logs/$name.log -----"
        tail -n 40 "$logs/$name.log"
        echo "-----"
        fail "$name: $(cat "$logs/$name.reason" 2>/dev/null || echo "exit status $rc, see $logs/$name.log")"
    fi
}

# reason NAME TEXT: the reason FAIL gives if phase NAME fails.
reason() { echo "$2" >"$logs/$1.reason"; }

# ---------------------------------------------------------------------
# work dir: empty it (only if it is ours) and start the logs there
# ---------------------------------------------------------------------
setup_workdir() {
    if [[ -e $work ]]; then
        if [[ -f $work/$marker ]]; then
            rm -rf "$work"
        elif [[ -d $work ]] && [[ -z $(ls -A "$work") ]]; then
            :
        else
            echo "in-tree: FAIL work dir $work exists and was not made by this script; remove it or pass another one"
            exit 1
        fi
    fi
    mkdir -p "$work" || { echo "in-tree: FAIL cannot create $work"; exit 1; }
    work=$(cd "$work" && pwd)
    logs=$work/logs
    mkdir -p "$logs" && touch "$work/$marker"
}

# ---------------------------------------------------------------------
# packages
# ---------------------------------------------------------------------
# What the opal part of Open MPI needs to autogen, configure and build
# with external hwloc, libevent and PMIx, plus dpkg-dev for apt-get source.
packages=(dpkg-dev autoconf automake libtool flex perl make gcc libc6-dev pkg-config
    libfabric-dev libhwloc-dev libevent-dev libpmix-dev)

# Debian's source packages through apt (deb-src entries, apt-get update
# with retries): shared with scripts/build-ompi-fixes.sh
# shellcheck source=scripts/debian-source.sh
source "$repo/scripts/debian-source.sh"

phase_packages() {
    local missing=() p
    for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
    if [[ $(id -u) -ne 0 ]]; then
        if ((${#missing[@]})); then
            reason packages "not root, and these packages are missing: ${missing[*]}"
            return 1
        fi
        echo "not root: relying on the installed packages and on deb-src being enabled"
        return 0
    fi
    echo "apt sources (apt-get indextargets):"
    apt-get indextargets --no-release-info --format '  $(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)  [$(SOURCESENTRY)]' \
        'Identifier: Packages' 2>/dev/null | sort -u
    apt-get indextargets --no-release-info --format '  $(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT)  [$(SOURCESENTRY)]' \
        'Identifier: Sources' 2>/dev/null | sort -u
    reason packages "could not add a deb-src entry to apt's sources"
    if deb_src_configured; then
        echo "a deb-src entry for $(codename) main is configured"
    else
        add_deb_src || return 1
    fi
    # Nothing to fetch when every package is there and the source lists
    # already know Open MPI 4.1 (the fetch phase updates and retries if
    # they turn out to be stale).
    if ((${#missing[@]} == 0)) && openmpi_src_known; then
        echo "all packages installed, Open MPI's source package known: no apt-get update"
        return 0
    fi
    apt_update || echo "warning: apt-get update reported errors (see above); going on"
    if ! openmpi_src_known && [[ ! -f $src_list ]]; then
        # the configured deb-src entries do not carry it: add ours
        echo "apt-cache showsrc openmpi: no 4.1 version with the configured deb-src entries"
        add_deb_src || return 1
        apt_update || echo "warning: apt-get update reported errors (see above); going on"
    fi
    if ! openmpi_src_known; then
        reason packages "apt knows no Open MPI 4.1 source package after apt-get update (deb-src entries: see $logs/packages.log)"
        return 1
    fi
    echo "Open MPI source package: $(apt-cache showsrc openmpi | sed -n 's/^Version: //p' | sort -u | paste -sd' ')"
    if ((${#missing[@]})); then
        reason packages "apt-get install ${missing[*]} failed"
        aptget install -y --no-install-recommends "${missing[@]}" || return 1
    else
        echo "all of ${packages[*]} are installed"
    fi
    # git lists the repository's files for the copy; without it every
    # file but build products is copied
    installed git || aptget install -y --no-install-recommends git || true
}

# ---------------------------------------------------------------------
# fetch
# ---------------------------------------------------------------------
phase_fetch() {
    reason fetch "apt-get source openmpi failed (deb-src enabled? network to the Debian mirror?)"
    cd "$work" || return 1
    if ! apt-get source openmpi; then
        # stale lists name files the mirror no longer has: update, retry
        [[ $(id -u) -eq 0 ]] || return 1
        echo "apt-get source failed; apt-get update and one more try"
        apt_update || true
        rm -rf "$work"/openmpi[-_]*
        apt-get source openmpi || return 1
    fi
    local d
    for d in "$work"/openmpi-*/; do
        [[ -f $d/autogen.pl ]] && src=${d%/}
    done
    if [[ -z $src ]]; then
        reason fetch "no openmpi-*/autogen.pl after apt-get source"
        return 1
    fi
    echo "source tree: $src"
    echo "version: $(sed -n 's/^\(major\|minor\|release\)=//p' "$src/VERSION" | paste -sd.)"
    if ! grep -q '^major=4$' "$src/VERSION" || ! grep -q '^minor=1$' "$src/VERSION"; then
        reason fetch "the fetched Open MPI is not 4.1 (see $src/VERSION)"
        return 1
    fi
    if [[ -s $src/.pc/applied-patches ]]; then
        echo "Debian patches applied:"
        cat "$src/.pc/applied-patches"
    else
        reason fetch "Debian's patches are not applied in $src (no .pc/applied-patches)"
        return 1
    fi
}

# ---------------------------------------------------------------------
# replace
# ---------------------------------------------------------------------
# repo_files: the repository's files, one per line, relative to it.
repo_files() {
    local list
    # tracked files plus new files not (yet) added, less ignored ones
    if list=$(git -C "$repo" ls-files --cached --others --exclude-standard 2>/dev/null) &&
        [[ -n $list ]]; then
        printf '%s\n' "$list"
    else
        # no git (or not a clone): everything but build products
        (cd "$repo" && find . -path ./.git -prune -o -type f -print | sed 's|^\./||' |
            grep -Ev '(^|/)(\.libs|\.deps|autom4te\.cache|_install|_build[^/]*|build[^/]*)/|^config/|\.(o|lo|la|lai|a|so)$|(^|/)Makefile$|^(Makefile\.in|configure|configure~|config\.log|config\.status|libtool|aclocal\.m4)$')
    fi
}

phase_replace() {
    local comp=$src/opal/mca/btl/ofi f n=0
    reason replace "could not copy the repository into $comp"
    rm -rf "$comp" && mkdir -p "$comp" || return 1
    while IFS= read -r f; do
        [[ -f $repo/$f ]] || continue # deleted in the work tree
        mkdir -p "$comp/$(dirname "$f")" && cp -p "$repo/$f" "$comp/$f" || return 1
        printf '%s\n' "$f" >>"$work/copied-files"
        n=$((n + 1))
    done < <(repo_files)
    echo "copied $n files from $repo to $comp"
    # checksums of what was copied, for the verify phase
    (cd "$comp" && xargs -d '\n' sha256sum <"$work/copied-files") >"$work/copied-files.sha256" || return 1
    for f in configure.m4 Makefile.am help-btl-ofi.txt btl_ofi_component.c; do
        if [[ ! -f $comp/$f ]]; then
            reason replace "$f is missing from the repository"
            return 1
        fi
    done
    ls -la "$comp"
}

# ---------------------------------------------------------------------
# autogen, configure, build
# ---------------------------------------------------------------------
phase_autogen() {
    reason autogen "Open MPI's autogen.pl failed"
    cd "$src" || return 1
    # --no-ompi --no-orte: only the opal project, which is where the
    # component lives (autogen.pl reads configure.m4, not configure.ac).
    # --exclude: the bundled hwloc, libevent and PMIx are not used
    # (configure takes Debian's), so their autoreconf runs and their
    # configure checks (over a sixth of configure's time for hwloc) are
    # skipped.
    # (autogen.pl honours only one excluded component per framework.)
    ./autogen.pl --force --no-ompi --no-orte \
        --exclude hwloc-hwloc201,event-libevent2022,pmix-pmix3x || return 1
    if ! grep -q 'opal/mca/btl/ofi/configure.m4' config/autogen_found_items.m4; then
        reason autogen "autogen.pl did not pick up opal/mca/btl/ofi/configure.m4"
        return 1
    fi
    grep -n 'btl/ofi' config/autogen_found_items.m4
}

phase_configure() {
    local pmix_dir
    # Debian's libpmix-dev (PMIx 4) lives in /usr/lib/<multiarch>/pmix2
    pmix_dir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/pmix2
    reason configure "Open MPI's configure failed"
    cd "$src" || return 1
    # Plain ./configure, which re-runs itself under bash as it would for
    # anyone.  (Under dash, with CONFIG_SHELL=/bin/dash, some of its
    # tests break and it quietly decides differently, e.g. it leaves
    # out the memory:patcher component of libopen-pal.)
    ./configure --prefix="$work/install" \
        --with-libfabric \
        --with-hwloc=external --with-libevent=external --with-pmix="$pmix_dir" \
        --disable-dependency-tracking --enable-silent-rules || return 1
    if ! grep -q '^checking if MCA component btl:ofi can compile\.\.\. yes' "$logs/configure.log"; then
        reason configure "configure decided not to build btl:ofi (see 'MCA component btl:ofi' in $logs/configure.log)"
        return 1
    fi
    grep -A3 -- '--- MCA component btl:ofi' "$logs/configure.log"
    grep -E '^(btl_ofi|opal_ofi)_(CPPFLAGS|CFLAGS|LDFLAGS|LIBS)=' config.log || true
}

phase_build() {
    local dso
    cd "$src" || return 1
    dso=$(sed -n 's/^MCA_opal_btl_DSO_SUBDIRS = //p' opal/Makefile)
    echo "btl components configure made loadable: $dso"
    if [[ " $dso " != *" mca/btl/ofi "* ]]; then
        reason build "configure did not make btl/ofi a loadable component (MCA_opal_btl_DSO_SUBDIRS = $dso)"
        return 1
    fi
    if [[ ${BTL_OFI_INTREE_FULL:-${BTL_OFI_FULL:-0}} == 1 ]]; then
        reason build "make -C opal failed (look for 'error' in $logs/build.log)"
        # everything opal's Makefile builds (its subdirectories, the
        # frameworks with their static components, libopen-pal) and every
        # loadable component
        make -C opal -j"$jobs" || return 1
        if [[ ! -f opal/.libs/libopen-pal.so ]]; then
            reason build "make -C opal did not build opal/.libs/libopen-pal.so"
            return 1
        fi
    else
        # Only our directory, with the flags, headers and libtool that
        # Open MPI's autogen and configure made for it: the component links
        # no Open MPI library (its opal symbols resolve at dlopen against
        # the libopen-pal that loads it), so building libopen-pal here
        # (two minutes) would prove nothing about it.
        reason build "make -C opal/mca/btl/ofi failed (look for 'error' in $logs/build.log)"
        make -C opal/mca/btl/ofi -j"$jobs" || return 1
    fi
}

# ---------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------
phase_verify() {
    local comp=$src/opal/mca/btl/ofi so f
    so=$comp/.libs/mca_btl_ofi.so

    if [[ ! -f $so ]]; then
        reason verify "$so was not built"
        return 1
    fi
    echo "built: $so"

    # the component directory still holds the files copied from the
    # repository (nothing in Open MPI's autogen/configure/make replaced them)
    if ! (cd "$comp" && sha256sum --quiet -c "$work/copied-files.sha256"); then
        reason verify "files in $comp changed after they were copied from the repository"
        return 1
    fi
    echo "the $(wc -l <"$work/copied-files") files copied from the repository are unchanged in $comp"
    if ! grep -q 'MCA_BTL_OFI_HELP_DIR' "$comp/Makefile.in"; then
        reason verify "$comp/Makefile.in was not generated from our Makefile.am"
        return 1
    fi

    # (output captured first: grep may stop reading at its first match,
    # and pipefail would count the writer's SIGPIPE as a failure)
    local syms strs
    syms=$(nm -D --defined-only "$so")
    strs=$(strings "$so")
    if ! grep -E ' [DBR] mca_btl_ofi_component$' <<<"$syms" >/dev/null; then
        reason verify "$so does not export mca_btl_ofi_component"
        return 1
    fi
    echo "exports mca_btl_ofi_component"
    if ! grep 'help-btl-ofi\.txt' <<<"$strs" >/dev/null; then
        reason verify "$so does not mention help-btl-ofi.txt"
        return 1
    fi
    echo "mentions help-btl-ofi.txt"
    # MCA_BTL_OFI_HELP_DIR, passed by our Makefile.am, is opal's data dir
    if ! grep -x "$work/install/share/openmpi" <<<"$strs" >/dev/null; then
        reason verify "$so does not hold MCA_BTL_OFI_HELP_DIR ($work/install/share/openmpi)"
        return 1
    fi
    echo "holds MCA_BTL_OFI_HELP_DIR = $work/install/share/openmpi"

    # every symbol resolves against the in-tree libopen-pal (what Open MPI
    # has loaded when it opens a component)
    reason verify "$so does not load on top of libopen-pal (undefined symbols?)"
    cat >"$work/dlcheck.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) { printf("%s\n", dlerror()); return 1; }
    void *h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("%s\n", dlerror()); return 1; }
    if (!dlsym(h, "mca_btl_ofi_component")) { printf("%s\n", dlerror()); return 1; }
    printf("dlopen(RTLD_NOW) of the component: ok\n");
    return 0;
}
EOF
    gcc -o "$work/dlcheck" "$work/dlcheck.c" -ldl || return 1
    if [[ -f $src/opal/.libs/libopen-pal.so ]]; then
        LD_LIBRARY_PATH=$src/opal/.libs "$work/dlcheck" "$src/opal/.libs/libopen-pal.so" "$so" || return 1
    else
        # the same 4.1 sources, as Debian built them
        local pal
        pal=$(ldconfig -p | awk '/libopen-pal\.so\.[0-9]+ .*x86-64/ { print $NF; exit }')
        echo "libopen-pal: $pal (Debian's; BTL_OFI_INTREE_FULL=1 builds the tree's own)"
        "$work/dlcheck" "$pal" "$so" || return 1
    fi

    # installed as Open MPI installs its own components and help files
    reason verify "make -C opal/mca/btl/ofi install failed or put files elsewhere"
    make -C "$comp" install || return 1
    local libdir datadir
    libdir=$(sed -n 's/^opallibdir = //p' "$comp/Makefile")
    datadir=$(sed -n 's/^opaldatadir = //p' "$comp/Makefile")
    libdir=${libdir//\$\{libdir\}/$work/install/lib}
    datadir=${datadir//\$\{datadir\}/$work/install/share}
    echo "opallibdir: $libdir, opaldatadir: $datadir"
    if [[ ! -f $libdir/mca_btl_ofi.so ]]; then
        reason verify "make install did not put mca_btl_ofi.so into $libdir"
        return 1
    fi
    if [[ ! -f $datadir/help-btl-ofi.txt ]]; then
        reason verify "make install did not put help-btl-ofi.txt into $datadir"
        return 1
    fi
    echo "installed: $libdir/mca_btl_ofi.so $datadir/help-btl-ofi.txt"

    # for information only: does an installed Open MPI's ompi_info open it?
    if command -v ompi_info >/dev/null 2>&1; then
        OMPI_MCA_mca_base_component_path=$libdir ompi_info 2>&1 |
            grep 'MCA btl: ofi' || echo "(info) the installed ompi_info does not list it"
    fi
    return 0
}

# Sourcing this file (for testing) only defines the functions.
if [[ ${BASH_SOURCE[0]} != "$0" ]]; then
    return 0
fi

setup_workdir
echo "in-tree: repository $repo, work dir $work, make -j$jobs"
run_phase packages phase_packages
run_phase fetch phase_fetch
# tests/run.sh runs its package test beside this build, once apt is free
[[ -n ${BTL_OFI_INTREE_APT_DONE:-} ]] && : >"$BTL_OFI_INTREE_APT_DONE"
# phase_fetch ran in this shell, so src is set here
run_phase replace phase_replace
run_phase autogen phase_autogen
run_phase configure phase_configure
run_phase build phase_build
run_phase verify phase_verify
print_times
echo "in-tree: PASS"
exit 0
