#!/usr/bin/env bash
#
# scripts/mpich-rma.sh: MPICH's one-sided test suite (test/mpi/rma) over
# this btl/ofi and osc/rdma, one provider at a time. Not part of the
# default suite: the build takes a few minutes and the run 10 to 15 per
# provider; the README ("MPICH's RMA tests") has the last results.
#
#   bash scripts/mpich-rma.sh [PROVIDER ...]   (default: shm sockets tcp;ofi_rxm udp;ofi_rxd)
#
# Environment:
#   MPICH_RMA_DIR   where MPICH's source is fetched and the tests built
#                   (default _build/mpich-rma)
#   MPICH_RMA_NP    largest rank count run (default 4: this machine has 2
#                   cores; tests listed with more ranks are counted as
#                   skipped)
#   MPICH_RMA_TIME  seconds per test before it counts as failed (default 90)
#
# What it does:
#  1. fetches Debian's mpich source (apt-get source --download-only mpich;
#     deb-src entry of scripts/debian-source.sh) and configures its
#     test suite with Open MPI's mpicc (no Fortran, C++, ROMIO, spawn or
#     fault-tolerance tests), then builds the helpers (util, dtpools) and
#     the rma directory. dtpools calls MPI_Type_hvector and
#     MPI_Type_hindexed, which MPI-3 removed and Open MPI 4.1's mpi.h no
#     longer declares: they are renamed to MPI_Type_create_hvector and
#     MPI_Type_create_hindexed, which take the same arguments;
#  2. runs every test of rma/testlist (its rank count and arguments) with
#     scripts/ofirun and btl_ofi_provider_include PROVIDER, stdin from
#     /dev/null; a test passes when it exits 0 and prints "No Errors";
#  3. prints one FAIL line per failed test (exit code and the first lines
#     it printed) and per provider "PROVIDER: N passed, N failed, N
#     skipped"; the logs are in MPICH_RMA_DIR/logs.
# Exit status 0 (the known failures are osc/rdma 4.1.4's own; see README).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${MPICH_RMA_DIR:-$repo/_build/mpich-rma}
npmax=${MPICH_RMA_NP:-4}
limit=${MPICH_RMA_TIME:-90}
providers=("$@")
((${#providers[@]})) || providers=(shm sockets "tcp;ofi_rxm" "udp;ofi_rxd")

say() { echo "mpich-rma: $*"; }
die() {
    say "$*" >&2
    exit 1
}

# ------------------------------------------------------------ 1. build
mkdir -p "$dir/logs" || die "cannot make $dir"
src=$(find "$dir" -maxdepth 1 -type d -name 'mpich-*' | head -n 1)
if [[ -z $src ]]; then
    # shellcheck source=scripts/debian-source.sh disable=SC1091
    source "$repo/scripts/debian-source.sh"
    # the deb-src entry and lists that know Debian 12's sources (mpich
    # comes from the same archive as openmpi)
    openmpi_source_ready >"$dir/logs/fetch.log" 2>&1 || die "apt cannot fetch sources (see $dir/logs/fetch.log)"
    (cd "$dir" && apt-get source --download-only mpich && dpkg-source -x --no-check mpich_*.dsc) \
        >>"$dir/logs/fetch.log" 2>&1 || die "apt-get source mpich failed (see $dir/logs/fetch.log)"
    src=$(find "$dir" -maxdepth 1 -type d -name 'mpich-*' | head -n 1)
    [[ -n $src ]] || die "no mpich source under $dir"
fi
tests=$src/test/mpi
if [[ ! -x $tests/rma/putfence1 ]]; then
    sed -i -e 's/MPI_Type_hvector(/MPI_Type_create_hvector(/' \
        -e 's/MPI_Type_hindexed(/MPI_Type_create_hindexed(/' "$tests/dtpools/src/dtpools_custom.c"
    say "configuring and building $tests/rma (logs/build.log)"
    (cd "$tests" &&
        ./configure CC=mpicc --disable-fortran --disable-cxx --disable-romio --disable-spawn \
            --disable-ft-tests &&
        make -C util && make -C dtpools && make -C rma -k) >"$dir/logs/build.log" 2>&1 ||
        say "the build had errors (tests that did not build are counted as skipped)"
fi

# ------------------------------------------------------------ 2. run
for prov in "${providers[@]}"; do
    pass=0 fail=0 skip=0
    while read -r name np rest; do
        [[ -z $name || $name == \#* ]] && continue
        if [[ ! -x $tests/rma/$name ]] || ((np > npmax)); then
            skip=$((skip + 1))
            continue
        fi
        args=()
        for word in $rest; do
            [[ $word == arg=* ]] && args+=("${word#arg=}")
        done
        log=$dir/logs/${prov//;/+}-$name${args[*]:+-${args[*]// /_}}.log
        (cd "$tests/rma" && timeout -k 10 "$limit" "$repo/scripts/ofirun" -np "$np" \
            --mca btl_ofi_provider_include "$prov" "./$name" "${args[@]}") </dev/null >"$log" 2>&1
        rc=$?
        if ((rc == 0)) && grep -q 'No Errors' "$log"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $prov $name np=$np ${args[*]} exit $rc$( ((rc == 124)) && echo " (over ${limit} s)"):" \
                "$(grep -v '^[[:space:]]*$' "$log" | head -n 2 | tr '\n' ' ' | cut -c1-200)"
        fi
    done <"$tests/rma/testlist"
    say "$prov: $pass passed, $fail failed, $skip skipped"
done
