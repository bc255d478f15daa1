#!/usr/bin/env bash
#
# Endurance of btl/ofi, by hand (not in tests/run.sh): COUNT short jobs
# back to back per provider -- tests/bin/workload all -n 2 on 2 ranks
# (MPI_Init, checked one-sided and two-sided traffic, MPI_Finalize), the
# job of the jobs:PROV:COUNT cases of tests/faults/run.sh, which run 30.
#
#   tests/faults/endurance.sh [COUNT]       default 1000 per provider
#
# Every job runs even after a failure; at the end one line per provider:
#   endurance PROV: P passed, F failed of COUNT (S s, S/COUNT s per job)
# with the first failures' logs kept in tests/logs/faults/endurance-*.
# Environment: PROVIDERS (default "shm sockets tcp;ofi_rxm udp;ofi_rxd"),
# BTL_OFI_TEST_TIMEOUT (seconds per job, default 120). Exit status 1 if
# any job failed. About 0.8 s per job on 2 cores: 1000 x 4 providers take
# close to an hour.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/faults
count=${1:-1000}
tmo=${BTL_OFI_TEST_TIMEOUT:-120}

if [[ $count == -h || $count == --help ]] || ! [[ $count =~ ^[0-9]+$ ]]; then
    header_of "$0"
    exit 2
fi
read -r -a provs <<<"${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}"

mkdir -p "$bindir" "$logdir"
compile workload || exit 1

results=()
total_failed=0
for prov in "${provs[@]}"; do
    p=${prov//;/+}
    rm -f "$logdir/endurance-$p"-*.log
    ok=0 bad=0 t0=$SECONDS
    for ((i = 1; i <= count; i++)); do
        jlog=$logdir/endurance-$p-last.log
        : >"$jlog"
        BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$jlog" "$tmo" "$ofirun" -np 2 \
            --mca btl_ofi_provider_include "$prov" "$bindir/workload" all -n 2
        rc=$?
        if ((rc == 0)) && grep -qx 'OK workload' "$jlog"; then
            ok=$((ok + 1))
        else
            bad=$((bad + 1))
            # keep the first ten failures
            ((bad <= 10)) && cp "$jlog" "$logdir/endurance-$p-fail$i.log"
            echo "endurance $prov: job $i failed (exit code $rc$( ((rc == 124 || rc == 137)) && echo ', timed out')): $(grep -m1 -E 'FAIL \[rank|MPI error|WRONG|Process received signal|btl/ofi' "$jlog" | cut -c1-200)"
        fi
        if ((i % 100 == 0)); then
            echo "endurance $prov: $i of $count done, $bad failed so far ($((SECONDS - t0)) s)"
        fi
    done
    rm -f "$logdir/endurance-$p-last.log"
    secs=$((SECONDS - t0))
    per=$((secs * 100 / (count > 0 ? count : 1)))
    results+=("endurance $prov: $ok passed, $bad failed of $count ($secs s, $((per / 100)).$(printf '%02d' $((per % 100))) s per job)")
    total_failed=$((total_failed + bad))
done
printf '%s\n' "${results[@]}"
exit $((total_failed > 0))
