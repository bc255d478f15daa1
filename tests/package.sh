#!/usr/bin/env bash
#
# The Debian package as a user meets it (root only; it installs and removes
# a package system-wide):
#
#   bash tests/package.sh
#
#  1. scripts/package.sh builds _build/deb/openmpi-btl-ofi_*.deb (lintian:
#     no error);
#  2. before: `ompi_info' lists Debian's btl/ofi (Component v<libopenmpi3's
#     upstream version>);
#  3. apt-get install ./the.deb: ompi_info, with no component path set,
#     lists OUR btl/ofi and coll/ofi (Component v<configure.ac's version>),
#     the diversions of libopenmpi3's mca_btl_ofi.so, mca_osc_rdma.so and
#     mca_rml_oob.so are in place (ompi_info lists osc_rdma_patches and
#     rml_oob_patches), and the one-sided demo
#     (examples/osc_demo.c) run with plain mpirun --mca btl ofi,self
#     --mca osc rdma ends "verified: 0 wrong byte(s) or count(s)" with our
#     version in its output;
#  4. apt-get remove: Debian's btl/ofi, osc/rdma and rml/oob are back
#     (ompi_info, and dpkg --verify libopenmpi3 finds the files unchanged), the
#     diversions are gone;
#  5. dpkg --purge: the package is unknown to dpkg and left no file.
# On any failure the package is purged, which restores Debian's file: the
# machine is left as it was. Prints one line per step,
# "PASS package <step> (Ns) -- ..." or "FAIL package <step> (Ns): why",
# and exits 1 if a step failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
logdir=${BTL_OFI_LOG_DIR:-$here/logs}/package
pkg=openmpi-btl-ofi
mkdir -p "$logdir"

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 0
fi

# shellcheck source=tests/lib.sh
source "$here/lib.sh"
failed=0
step() { # PASS|FAIL name t0 text
    local verdict=$1 name=$2 t0=$3 text=$4
    if [[ $verdict == PASS ]]; then
        echo "PASS package $name ($((SECONDS - t0))s) -- $text"
    else
        echo "FAIL package $name ($((SECONDS - t0))s): $text"
        failed=1
    fi
}
installed() { dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; }
known() { dpkg-query -W "$pkg" >/dev/null 2>&1; }
ofi_line() { ompi_info 2>/dev/null | grep -m1 "MCA btl: ofi" | sed 's/^ *//'; }
cleanup() {
    if known; then
        dpkg --purge "$pkg" >>"$logdir/cleanup.log" 2>&1
    fi
}
trap cleanup EXIT

if ((EUID != 0)); then
    step FAIL build $SECONDS "needs root (it installs a package)"
    exit 1
fi
ours=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$repo/configure.ac")
debian=$(dpkg-query -W -f='${Version}' libopenmpi3 | sed -E 's/-[^-]*$//')
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
comp=/usr/lib/$multiarch/openmpi/lib/openmpi3/mca_btl_ofi.so
osc=/usr/lib/$multiarch/openmpi/lib/openmpi3/mca_osc_rdma.so
rml=/usr/lib/$multiarch/openmpi/lib/openmpi3/mca_rml_oob.so
if known; then
    step FAIL build $SECONDS "$pkg is installed already: remove it first (apt-get purge $pkg)"
    trap - EXIT
    exit 1
fi

# 1. build
t0=$SECONDS
if deb=$(bash "$repo/scripts/package.sh" 2>"$logdir/package.log" | tail -n 1) && [[ -f $deb ]]; then
    step PASS build $t0 "${deb#"$repo"/} ($(grep -c '^W: ' "$repo/_build/deb/lintian.log") lintian warnings, no error); depends: $(dpkg-deb -f "$deb" Depends)"
else
    step FAIL build $t0 "scripts/package.sh failed: $(tail -n 3 "$logdir/package.log" | paste -sd ' ' -)"
    exit 1
fi

# 2. before
t0=$SECONDS
before=$(ofi_line)
if [[ $before == *"Component v$debian)"* ]]; then
    step PASS before $t0 "ompi_info: '$before'"
else
    step FAIL before $t0 "ompi_info does not list Debian's btl/ofi v$debian: '$before'"
    exit 1
fi

# 3. installed
t0=$SECONDS
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb" >"$logdir/install.log" 2>&1; then
    step FAIL install $t0 "apt-get install failed: $(tail -n 2 "$logdir/install.log" | paste -sd ' ' -)"
    exit 1
fi
with=$(ofi_line)
divert=$(dpkg-divert --list "$comp")
coll=$(ompi_info 2>/dev/null | grep -m1 'MCA coll: ofi ' | sed 's/^ *//')
odivert=$(dpkg-divert --list "$osc")
opatches=$(ompi_patches osc rdma)
rdivert=$(dpkg-divert --list "$rml")
rpatches=$(ompi_patches rml oob)
mpicc -O2 -o "$logdir/osc_demo" "$repo/examples/osc_demo.c" >"$logdir/demo.log" 2>&1
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl ofi,self \
    --mca osc rdma --mca btl_ofi_provider_include shm "$logdir/osc_demo" >>"$logdir/demo.log" 2>&1
rc=$?
# a production build: the test-only fault switch is not in it
switch=$(ompi_info --param btl ofi --level 9 --parsable 2>/dev/null | grep -c 'btl_ofi_inject_fault')
traces=$(strings "$comp" 2>/dev/null | grep -c 'inject_fault\|injecting a failure')
if [[ $with != *"Component v$ours)"* ]]; then
    step FAIL install $t0 "ompi_info lists '$with', not our v$ours"
elif ((switch > 0 || traces > 0)); then
    step FAIL install $t0 "the package carries the test-only fault switch (ompi_info: $switch parameter line(s), $traces string(s) in $comp): debian/rules must not configure --enable-fault-injection"
elif [[ $coll != *"Component v$ours)"* ]]; then
    step FAIL install $t0 "ompi_info lists no coll/ofi v$ours: '${coll:-none}'"
elif [[ $odivert != *"by $pkg"* || $opatches != *dynamic-region-deadlock* ]]; then
    step FAIL install $t0 "osc/rdma: diversion '${odivert:-none}', osc_rdma_patches '${opatches:-none}' (want ours, with the dynamic-region fix)"
elif [[ $rdivert != *"by $pkg"* || $rpatches != *self-send-copy-before-callback* ]]; then
    step FAIL install $t0 "rml/oob: diversion '${rdivert:-none}', rml_oob_patches '${rpatches:-none}' (want ours, with the send-to-self fix)"
elif [[ $divert != *"by $pkg"* ]]; then
    step FAIL install $t0 "no diversion of $comp by $pkg: '$divert'"
elif ((rc != 0)) || ! grep -q "^verified: 0 wrong byte(s) or count(s)" "$logdir/demo.log" ||
    ! grep -q "0\.1\.0\|v$ours" "$logdir/demo.log"; then
    step FAIL install $t0 "the demo with plain mpirun failed (exit code $rc): $(tail -n 3 "$logdir/demo.log" | paste -sd ' ' -)"
else
    step PASS install $t0 "ompi_info: '$with' and '$coll' with no component path set; $divert; $odivert (osc_rdma_patches: $opatches); $rdivert (rml_oob_patches: $rpatches); no fault switch in it; demo: $(grep -m1 '^verified' "$logdir/demo.log")"
fi

# 4. removed
t0=$SECONDS
DEBIAN_FRONTEND=noninteractive apt-get remove -y "$pkg" >"$logdir/remove.log" 2>&1
after=$(ofi_line)
verify=$(dpkg --verify libopenmpi3 2>&1 | grep "mca_btl_ofi\|mca_osc_rdma\|mca_rml_oob" || true)
diverted=$(dpkg-divert --list "$comp"; dpkg-divert --list "$osc"; dpkg-divert --list "$rml")
ours_left=$(ompi_patches osc rdma; ompi_patches rml oob)
if installed; then
    step FAIL remove $t0 "apt-get remove left $pkg installed: $(tail -n 2 "$logdir/remove.log" | paste -sd ' ' -)"
elif [[ $after != *"Component v$debian)"* ]]; then
    step FAIL remove $t0 "Debian's btl/ofi is not back: ompi_info lists '$after'"
elif [[ -n $diverted ]]; then
    step FAIL remove $t0 "a diversion is still there: $diverted"
elif [[ -n $verify || ! -f $comp || ! -f $osc || ! -f $rml ]]; then
    step FAIL remove $t0 "libopenmpi3's $comp, $osc or $rml is not intact: '${verify:-missing}'"
elif [[ -n $ours_left ]]; then
    step FAIL remove $t0 "ompi_info still loads our osc/rdma or rml/oob ($ours_left)"
else
    step PASS remove $t0 "ompi_info: '$after'; Debian's osc/rdma and rml/oob back; dpkg --verify libopenmpi3: its mca_btl_ofi.so, mca_osc_rdma.so and mca_rml_oob.so unchanged"
fi

# 5. purged
t0=$SECONDS
dpkg --purge "$pkg" >"$logdir/purge.log" 2>&1
left=$(ls /usr/share/openmpi/help-btl-ofi.txt /usr/share/openmpi/help-coll-ofi.txt \
    "${comp%/*}/mca_coll_ofi.so" "/usr/lib/$multiarch/openmpi-btl-ofi-diverted" 2>/dev/null)
if known; then
    step FAIL purge $t0 "dpkg still knows $pkg: $(dpkg-query -W -f='${Status}' "$pkg")"
elif [[ -n $left ]]; then
    step FAIL purge $t0 "files left behind: $left"
else
    step PASS purge $t0 "dpkg no longer knows $pkg; no file of it left"
fi

echo "ompi_info before: $before"
echo "ompi_info with:   ${with:-}"
echo "ompi_info after:  ${after:-}"
exit $failed
