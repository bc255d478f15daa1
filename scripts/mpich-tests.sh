#!/usr/bin/env bash
#
# scripts/mpich-tests.sh: a directory of MPICH's own test suite
# (test/mpi/SUITE of Debian's mpich source, built with Open MPI's mpicc)
# over this btl/ofi, one configuration at a time. Not part of the default
# suite: the build takes a few minutes and a run 5 to 15 per
# configuration; the README ("MPICH's RMA tests", "MPICH's collective
# tests") has the last results.
#
#   bash scripts/mpich-tests.sh rma [PROVIDER ...]
#       one-sided: osc/rdma over btl/ofi on PROVIDER
#       (default: shm sockets tcp;ofi_rxm udp;ofi_rxd)
#       hosts:PROVIDER  the same across two simulated hosts
#                       (tests/hosts/hosts.sh, one link, --map-by node:
#                       ranks alternate between the hosts, so every pair
#                       of neighbours is on two hosts)
#   bash scripts/mpich-tests.sh pt2pt [PROVIDER ...]
#       two-sided: pml ob1 over btl/ofi on PROVIDER (hosts:PROVIDER too),
#       mpi_yield_when_idle 1 (more ranks than cores here); vader and tcp
#       (btl vader,self or tcp,self): Open MPI's own result
#       (default: shm sockets tcp;ofi_rxm udp;ofi_rxd)
#   bash scripts/mpich-tests.sh coll [CONFIG ...]
#       collectives with coll/ofi at priority 90 (coll_ofi_priority), and
#       mpi_yield_when_idle 1 (more ranks than cores here). CONFIG:
#         PROVIDER        btl ofi,self on that provider
#         vader           btl vader,self (coll/ofi over btl/vader)
#         tuned:CONFIG    the same transport with coll/ofi left at
#                         priority 0 (coll/tuned): Open MPI's own result
#         btlonly:CONFIG  coll/ofi with coll_ofi_shared_memory 0: every
#                         peer through the btl, none mapped
#         hosts:CONFIG    across two simulated hosts (as for rma)
#       (default: shm vader tuned:vader)
#
# Environment:
#   MPICH_TESTS_DIR where MPICH's source is fetched and the tests built
#                   (default _build/mpich-rma, shared by the suites)
#   MPICH_TESTS_NP  largest rank count run (default 4 for rma, 8 for coll;
#                   this machine has 2 cores; tests listed with more ranks
#                   are counted as skipped)
#   MPICH_TESTS_TIME seconds per test before it counts as failed (default 90)
#   (MPICH_RMA_DIR, MPICH_RMA_NP, MPICH_RMA_TIME: the same, older names)
#
# What it does:
#  1. fetches Debian's mpich source (apt-get source --download-only mpich;
#     deb-src entry of scripts/debian-source.sh) and configures its
#     test suite with Open MPI's mpicc (no Fortran, C++, ROMIO, spawn or
#     fault-tolerance tests), then builds the helpers (util, dtpools) and
#     the SUITE directory. dtpools calls MPI_Type_hvector and
#     MPI_Type_hindexed, which MPI-3 removed and Open MPI 4.1's mpi.h no
#     longer declares: they are renamed to MPI_Type_create_hvector and
#     MPI_Type_create_hindexed, which take the same arguments;
#  2. runs every test of SUITE/testlist (its rank count and arguments)
#     with scripts/ofirun, stdin from /dev/null; a test passes when it
#     exits 0 and prints "No Errors";
#  3. prints one FAIL line per failed test (exit code and the first lines
#     it printed) and per configuration "CONFIG: N passed, N failed, N
#     skipped"; the logs are in MPICH_TESTS_DIR/logs.
# Exit status 0 unless the build or a fetch failed (known failures: see
# README).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
suite=${1:-}
shift || true
case $suite in
rma | pt2pt) defaults=(shm sockets "tcp;ofi_rxm" "udp;ofi_rxd") npdef=4 ;;
coll) defaults=(shm vader tuned:vader) npdef=8 ;;
*)
    echo "usage: scripts/mpich-tests.sh rma|pt2pt|coll [CONFIG ...]" >&2
    exit 2
    ;;
esac
dir=${MPICH_TESTS_DIR:-${MPICH_RMA_DIR:-$repo/_build/mpich-rma}}
npmax=${MPICH_TESTS_NP:-${MPICH_RMA_NP:-$npdef}}
limit=${MPICH_TESTS_TIME:-${MPICH_RMA_TIME:-90}}
configs=("$@")
((${#configs[@]})) || configs=("${defaults[@]}")

say() { echo "mpich-$suite: $*"; }
die() {
    say "$*" >&2
    exit 1
}

# ------------------------------------------------------------ 1. build
mkdir -p "$dir/logs" || die "cannot make $dir"
src=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'mpich-*' | head -n 1)
if [[ -z $src ]]; then
    # shellcheck source=scripts/debian-source.sh disable=SC1091
    source "$repo/scripts/debian-source.sh"
    # the deb-src entry and lists that know Debian 12's sources (mpich
    # comes from the same archive as openmpi)
    openmpi_source_ready >"$dir/logs/fetch.log" 2>&1 || die "apt cannot fetch sources (see $dir/logs/fetch.log)"
    (cd "$dir" && apt-get source --download-only mpich && dpkg-source -x --no-check mpich_*.dsc) \
        >>"$dir/logs/fetch.log" 2>&1 || die "apt-get source mpich failed (see $dir/logs/fetch.log)"
    src=$(find "$dir" -mindepth 1 -maxdepth 1 -type d -name 'mpich-*' | head -n 1)
    [[ -n $src ]] || die "no mpich source under $dir"
fi
tests=$src/test/mpi
if [[ ! -f $tests/Makefile ]]; then
    sed -i -e 's/MPI_Type_hvector(/MPI_Type_create_hvector(/' \
        -e 's/MPI_Type_hindexed(/MPI_Type_create_hindexed(/' "$tests/dtpools/src/dtpools_custom.c"
    say "configuring $tests (logs/configure.log)"
    (cd "$tests" &&
        ./configure CC=mpicc --disable-fortran --disable-cxx --disable-romio --disable-spawn \
            --disable-ft-tests && make -C util && make -C dtpools) >"$dir/logs/configure.log" 2>&1 ||
        die "configuring MPICH's tests failed (see $dir/logs/configure.log)"
fi
if [[ ! -f $tests/$suite/.built ]]; then
    say "building $tests/$suite (logs/build-$suite.log)"
    if make -C "$tests/$suite" -k >"$dir/logs/build-$suite.log" 2>&1; then
        touch "$tests/$suite/.built"
    else
        say "the build had errors (tests that did not build are counted as skipped)"
    fi
fi

# ------------------------------------------------------------ 2. run
# the mpirun arguments and environment of one configuration
setup() { # config
    local c=$1
    run_env=()
    run_args=()
    local yield=(--mca mpi_yield_when_idle 1)
    runner=("$repo/scripts/ofirun")
    if [[ $c == *hosts:* ]]; then
        # hosts.sh mpirun passes mpi_yield_when_idle itself (Open MPI
        # refuses a parameter given twice)
        runner=(bash "$repo/tests/hosts/hosts.sh" mpirun --map-by node)
        yield=()
        c=${c/hosts:/}
    fi
    if [[ $suite == rma ]]; then
        run_args=(--mca btl_ofi_provider_include "$c")
        return
    fi
    if [[ $suite == pt2pt ]]; then
        run_args=("${yield[@]}")
        case $c in
        # Open MPI's own btls, the reference
        # shellcheck disable=SC2054 # the comma is part of the btl list
        vader | tcp) run_env=(OFIRUN_BTLS=$c,self) ;;
        *) run_args+=(--mca btl_ofi_provider_include "$c") ;;
        esac
        return
    fi
    run_args=("${yield[@]}" --mca coll_ofi_priority 90)
    if [[ $c == tuned:* ]]; then
        run_args=("${yield[@]}" --mca coll_ofi_priority 0)
        c=${c#tuned:}
    elif [[ $c == btlonly:* ]]; then
        run_args+=(--mca coll_ofi_shared_memory 0)
        c=${c#btlonly:}
    fi
    if [[ $c == vader ]]; then
        # shellcheck disable=SC2054 # the comma is part of the btl list
        run_env=(OFIRUN_BTLS=vader,self)
    else
        run_args+=(--mca btl_ofi_provider_include "$c")
    fi
}

# simulated hosts for hosts:CONFIG, made once and removed at the end
for config in "${configs[@]}"; do
    [[ $config == *hosts:* ]] || continue
    bash "$repo/tests/hosts/hosts.sh" up 2 1 >"$dir/logs/hosts-up.log" 2>&1 ||
        die "cannot make simulated hosts (see $dir/logs/hosts-up.log)"
    trap 'bash "$repo/tests/hosts/hosts.sh" down >/dev/null 2>&1' EXIT
    break
done

for config in "${configs[@]}"; do
    setup "$config"
    pass=0 fail=0 skip=0
    while read -r name np rest; do
        [[ -z $name || $name == \#* ]] && continue
        if [[ ! -x $tests/$suite/$name ]] || ((np > npmax)); then
            skip=$((skip + 1))
            continue
        fi
        args=()
        for word in $rest; do
            [[ $word == arg=* ]] && args+=("${word#arg=}")
        done
        log=$dir/logs/$suite-${config//[;:]/+}-$name${args[*]:+-${args[*]// /_}}.log
        (cd "$tests/$suite" && env "${run_env[@]}" timeout -k 10 "$limit" "${runner[@]}" \
            -np "$np" "${run_args[@]}" "./$name" "${args[@]}") </dev/null >"$log" 2>&1
        rc=$?
        if ((rc == 0)) && grep -q 'No Errors' "$log"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $config $name np=$np ${args[*]} exit $rc$( ((rc == 124)) && echo " (over ${limit} s)"):" \
                "$(grep -v '^[[:space:]]*$' "$log" | head -n 2 | tr '\n' ' ' | cut -c1-200)"
        fi
    done <"$tests/$suite/testlist"
    say "$config: $pass passed, $fail failed, $skip skipped"
done
