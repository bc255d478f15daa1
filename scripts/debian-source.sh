# shellcheck shell=bash
# The phase functions' apt-get indextargets formats are $(FIELD) in single
# quotes:
# shellcheck disable=SC2016
#
# scripts/debian-source.sh: Debian's source packages through apt, for the
# scripts that build from Debian's own Open MPI source (check-in-tree.sh,
# build-ompi-fixes.sh). Source it. Nothing of apt's existing configuration
# is changed: a missing deb-src entry is added in a file of its own.
#
#   installed PKG          the package is installed
#   aptget ARGS...         apt-get, waiting for the dpkg lock
#   openmpi_src_known      apt's source lists know Open MPI 4.1
#   codename               the release (bookworm on Debian 12)
#   apt_update             apt-get update, retried
#   add_deb_src            our deb-src entry for the release's main component
#   deb_src_configured     some deb-src entry for it exists
#   openmpi_source_ready   (root) deb-src entry and lists that know Open
#                          MPI 4.1; status 1 with a reason on stderr

# The deb-src entry this script adds when apt knows no source package.
src_list=/etc/apt/sources.list.d/btl-ofi-deb-src.list

installed() {
    [[ $(dpkg-query -W -f='${Status}' "$1" 2>/dev/null) == 'install ok installed' ]]
}

# apt-get with a wait for the dpkg lock (other jobs may be installing).
aptget() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }

# openmpi_src_known: apt's source lists have Open MPI 4.1.
openmpi_src_known() {
    local out
    out=$(apt-cache showsrc openmpi 2>/dev/null)
    grep -E '^Version: ([0-9]+:)?4\.1\.' <<<"$out" >/dev/null
}

# The release this machine runs (bookworm on Debian 12).
codename() {
    local c
    # shellcheck source=/dev/null
    c=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    [[ -n $c ]] || c=$(sed -n 's/^Suites: *\([a-z]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
    echo "${c:-bookworm}"
}

# apt_update: apt-get update, retried (the lists lock may be held by
# another job, or the mirror may hiccup).  A failure is not fatal by
# itself: what matters is whether the install and the source fetch work.
apt_update() {
    local i
    for i in 1 2 3; do
        aptget update && return 0
        echo "apt-get update failed (try $i of 3)"
        sleep 10
    done
    return 1
}

# add_deb_src: a deb-src entry of our own for the main component of
# the Debian release, at every archive apt already takes its binary
# packages of that release from (read through apt itself, so the
# one-line sources.list format and the deb822 .sources format of
# Debian 12 are both understood), or at deb.debian.org when there is
# none.  Nothing of apt's existing configuration is changed.
add_deb_src() {
    local rel uris u
    rel=$(codename)
    uris=$(apt-get indextargets --no-release-info --format '$(REPO_URI)' \
        'Target-Of: deb' 'Identifier: Packages' "Release: $rel" 'Component: main' 2>/dev/null | sort -u)
    [[ -n $uris ]] || uris=http://deb.debian.org/debian/
    {
        echo "# added by btl/ofi's scripts (check-in-tree.sh, build-ompi-fixes.sh) for apt-get source"
        for u in $uris; do
            echo "deb-src $u $rel main"
        done
    } >"$src_list" || return 1
    echo "added $src_list:"
    cat "$src_list"
}

# deb_src_configured: apt's sources have a deb-src entry for the main
# component of this release (in any file, in any format).
deb_src_configured() {
    [[ -n $(apt-get indextargets --no-release-info --format '$(REPO_URI)' \
        'Target-Of: deb-src' "Release: $(codename)" 'Component: main' 2>/dev/null) ]]
}

# Make `apt-get source openmpi' possible (as root: adds our deb-src entry
# and updates the lists when needed).
openmpi_source_ready() {
    openmpi_src_known && return 0
    if [[ $(id -u) -ne 0 ]]; then
        echo "apt knows no Open MPI 4.1 source package, and adding a deb-src entry needs root" >&2
        return 1
    fi
    deb_src_configured || add_deb_src || return 1
    apt_update || echo "warning: apt-get update reported errors; going on"
    if ! openmpi_src_known && [[ ! -f $src_list ]]; then
        add_deb_src || return 1
        apt_update || echo "warning: apt-get update reported errors; going on"
    fi
    if ! openmpi_src_known; then
        echo "apt knows no Open MPI 4.1 source package after apt-get update (deb-src entries?)" >&2
        return 1
    fi
}
