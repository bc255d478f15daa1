#!/usr/bin/env bash
#
# Build the Debian package of btl/ofi with Debian's own tools
# (dpkg-buildpackage, debhelper; the recipe is debian/):
#
#   bash scripts/package.sh     -> _build/deb/openmpi-btl-ofi_VERSION_ARCH.deb
#
# Installs the build tools it lacks when run as root (apt-get). The package
# is built from a copy of the sources in _build/deb/src, so the checkout
# stays clean, and lintian checks it: an error (a line "E: ...") fails the
# build. Its version must be the component's (AC_INIT in configure.ac).
#
# Then, as root:  apt install ./_build/deb/openmpi-btl-ofi_*.deb
# (libopenmpi3's btl/ofi is diverted while it is installed; apt remove
# openmpi-btl-ofi gives it back).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=$repo/_build/deb

case "${1:-}" in
"") ;;
-h | --help)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 0
    ;;
*)
    echo "package.sh: unknown argument '$1' (try --help)" >&2
    exit 2
    ;;
esac

log() { echo "package.sh: $*"; }
die() {
    echo "package.sh: FAILED: $*" >&2
    exit 1
}

tools=(dpkg-dev debhelper lintian libopenmpi-dev libfabric-dev autoconf automake libtool
    pkg-config make gcc)
missing=()
for p in "${tools[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    ((EUID == 0)) || die "missing packages: ${missing[*]} (run as root, or apt-get install them)"
    log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
fi

version=$(sed -n 's/^AC_INIT(\[[^]]*\], *\[\([^]]*\)\].*/\1/p' "$repo/configure.ac")
deb_version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
[[ -n $version && ${deb_version%-*} == "$version" ]] ||
    die "debian/changelog says $deb_version, configure.ac says ${version:-nothing}: make them agree"

# a copy of what git tracks (or every source file outside a checkout)
src=$out/src/openmpi-btl-ofi-$version
rm -rf "$out"
mkdir -p "$src"
if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$repo" ls-files -z --cached --others --exclude-standard |
        (cd "$repo" && xargs -0 cp --parents -t "$src")
else
    (cd "$repo" && tar --exclude=./_build --exclude=./_install -cf - .) | (cd "$src" && tar -xf -)
fi

# Debian's osc/rdma and rml/oob source, for debian/rules to patch and
# build offline
bash "$repo/scripts/build-ompi-fixes.sh" --fetch "$src/debian-ompi-src" >"$out/ompi-fetch.log" 2>&1 ||
    die "could not fetch Debian's osc/rdma and rml/oob source; see $out/ompi-fetch.log"

log "building openmpi-btl-ofi $deb_version"
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 ||
    die "dpkg-buildpackage failed; see $out/build.log"
deb=$(ls "$out"/src/openmpi-btl-ofi_*.deb 2>/dev/null | head -n 1)
[[ -n $deb ]] || die "no .deb was built; see $out/build.log"
mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/ 2>/dev/null || true
deb=$out/${deb##*/}

lintian --tag-display-limit 0 "$deb" >"$out/lintian.log" 2>&1 || true
if grep -q '^E: ' "$out/lintian.log"; then
    cat "$out/lintian.log" >&2
    die "lintian reports errors"
fi
log "lintian: $(grep -c '^E: ' "$out/lintian.log") errors, $(grep -c '^W: ' "$out/lintian.log") warnings ($out/lintian.log)"
log "built $deb"
echo "$deb"
