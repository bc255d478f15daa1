#!/usr/bin/env bash
#
# Soak test of btl/ofi, by hand (not in tests/run.sh): 4 ranks of
# tests/faults/soak.c for MINUTES minutes per provider -- random MPI_Put,
# MPI_Get, MPI_Accumulate, MPI_Fetch_and_op and MPI_Compare_and_swap on
# MPI_Win_create windows plus two-sided messages of random sizes, every
# result checked against what the origin wrote.
#
#   tests/faults/soak.sh MINUTES [PROVIDER...]
#       default providers: $PROVIDERS or "shm sockets tcp;ofi_rxm udp;ofi_rxd"
#
# Prints per provider the line of tests/bin/soak ("soak: ... N operations
# (put, get, acc, fetch-op, cswap, messages, bytes), E errors") and
# "PASS soak PROV" or "FAIL soak PROV: why". Environment: NP (default 4),
# SOAK_SEED (default: from the clock; printed). Logs in tests/logs/faults/.
# Exit status 1 if any provider failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/faults
np=${NP:-4}

minutes=${1:-}
if [[ -z $minutes || $minutes == -h || $minutes == --help ]] || ! [[ $minutes =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
    header_of "$0"
    exit 2
fi
shift
provs=("$@")
if ((${#provs[@]} == 0)); then
    read -r -a provs <<<"${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}"
fi

mkdir -p "$bindir" "$logdir"
compile soak || exit 1

for prov in "${provs[@]}"; do
    log=$logdir/soak-${prov//;/+}.log
    seed=${SOAK_SEED:-$(date +%s)}
    # the job's own time plus start-up and the final checks
    limit=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 120 }')
    t0=$SECONDS
    : >"$log"
    run_logged "$log" "$limit" "$ofirun" -np "$np" --oversubscribe \
        --mca btl_ofi_provider_include "$prov" "$bindir/soak" -minutes "$minutes" -seed "$seed"
    rc=$?
    line=$(grep -m1 '^soak: [0-9.]* min on' "$log")
    echo "${line:-soak: no result line from tests/bin/soak ($prov)}"
    if ((rc == 0)) && grep -qx 'OK soak' "$log"; then
        report PASS "soak $prov" $((SECONDS - t0)) ""
    else
        why=$(grep -m1 -E 'WRONG|MPI error|FAIL \[rank|Process received signal' "$log" | cut -c1-300)
        ((rc == 124 || rc == 137)) && why="timed out after ${limit}s (hang?)${why:+; $why}"
        report FAIL "soak $prov" $((SECONDS - t0)) "exit code $rc${why:+: $why} (log: ${log#"$repo"/})"
    fi
done
exit $((failed > 0))
