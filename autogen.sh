#!/bin/sh
#
# Generate ./configure for the stand-alone (out of tree) build:
#
#   ./autogen.sh && ./configure --prefix=P && make && make install
#
# Needs autoconf, automake, libtool and pkg-config (for pkg.m4).  When
# one is missing and this runs as root on Debian, it is installed with
# apt-get; otherwise the script stops and names the packages.
#
# (Inside an Open MPI source tree this script is not used: Open MPI's
# autogen.pl reads configure.m4.)

set -e

srcdir=$(dirname "$0")
cd "$srcdir"

missing=
command -v autoreconf >/dev/null 2>&1 || missing="$missing autoconf"
command -v automake >/dev/null 2>&1 || missing="$missing automake"
command -v libtoolize >/dev/null 2>&1 || missing="$missing libtool"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
# pkg.m4 (PKG_CHECK_MODULES) comes with pkg-config; look where aclocal looks.
if ! command -v aclocal >/dev/null 2>&1 ||
   ! test -f "$(aclocal --print-ac-dir 2>/dev/null)/pkg.m4"; then
    case "$missing" in *pkg-config*) ;; *) missing="$missing pkg-config" ;; esac
fi

if test -n "$missing"; then
    if test "$(id -u)" = 0 && command -v apt-get >/dev/null 2>&1; then
        echo "autogen.sh: installing:$missing"
        apt-get update
        # shellcheck disable=SC2086 # one word per package
        DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing
    else
        echo "autogen.sh: missing tools; install them first:" >&2
        echo "    apt-get install$missing" >&2
        exit 1
    fi
fi

mkdir -p config/m4
autoreconf --install --force --verbose --warnings=all
