#!/usr/bin/env bash
#
# bench/sync.sh: one 8-byte MPI_Put or MPI_Get under each synchronisation
# mode MPI offers (bench/sync.c: flush, flush_local, lock_all, lock,
# lockshared, fence, pscw), across two simulated hosts (one rank on each,
# tests/hosts/hosts.sh, one link; root), side by side in one run:
#
#   bash bench/sync.sh              REPS=3 by default
#
# Contenders: osc/rdma over ours on tcp;ofi_rxm and on sockets, and the
# anchor, osc/pt2pt over ob1 + btl/tcp. Ours with btl_ofi_global_atomics
# at its default (-1: osc/rdma on its own node with processor atomics;
# README "osc/rdma", 0013-0015); GLOBAL=0 sets it to 0, GLOBAL=1 to -1
# (named in the table's title). Prints microseconds per
# operation (median of REPS runs, the contenders alternating within each
# repetition) and ratio = anchor / ours (above 1: ours faster); writes
# bench/results/sync-DATE/ (data.txt, table.md, one log per run).
# Timings are never asserted; a run that ends badly or fails its byte
# check is reported and left out.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
REPS=${REPS:-3}
# GLOBAL=1 / GLOBAL=0: btl_ofi_global_atomics -1 / 0 for ours (unset: its default)
global=
[[ -n ${GLOBAL:-} ]] && global=$([[ $GLOBAL == 1 ]] && echo -1 || echo 0)
out=${OUT:-$repo/bench/results/sync-$(date +%Y-%m-%d)}
mkdir -p "$out" "$here/bin"
mpicc -O2 -Wall -o "$here/bin/sync" "$here/sync.c" || exit 1

bash "$repo/tests/hosts/hosts.sh" up 2 1 >"$out/hosts-up.log" 2>&1 || {
    echo "the simulated hosts could not be set up (root?): see $out/hosts-up.log"
    exit 1
}
trap 'bash "$repo/tests/hosts/hosts.sh" down >/dev/null 2>&1' EXIT

run() { # name rep VAR=value...
    local name=$1 rep=$2
    shift 2
    local log=$out/${name//[ ;]/_}-$rep.log rc
    local -a mca=()
    [[ -n $global && $name == ours* ]] && mca=(--mca btl_ofi_global_atomics "$global")
    env "$@" timeout 300 bash "$repo/tests/hosts/hosts.sh" mpirun -np 2 --map-by node "${mca[@]}" \
        "$here/bin/sync" >"$log" 2>&1
    rc=$?
    if ((rc != 0)) || ! grep -q '^# verify ok' "$log"; then
        echo "$name: run $rep failed, exit code $rc (see $log)"
        return
    fi
    awk -v n="$name" '$1 == "sync" { print n "|" $2 "|" $3 "|" $4 }' "$log" >>"$out/data.txt"
}

: >"$out/data.txt"
for ((rep = 1; rep <= REPS; rep++)); do
    run "anchor pt2pt+tcp" "$rep" OFIRUN_OSC=pt2pt OFIRUN_BTLS=tcp,self
    run "ours tcp;ofi_rxm" "$rep" OFIRUN_BTLS=ofi,self BTL_OFI_PROVIDER="tcp;ofi_rxm"
    run "ours sockets" "$rep" OFIRUN_BTLS=ofi,self BTL_OFI_PROVIDER=sockets
done

{
    echo "bench/sync.sh, $(date -u +%F), commit $(git -C "$repo" rev-parse --short HEAD), $REPS repetition(s), medians; two simulated hosts, one rank on each${global:+; ours with btl_ofi_global_atomics $global}"
    echo
    echo "us per 8-byte operation; ratio = anchor / ours (above 1: ours faster)"
    echo
    sort -t'|' -k1,1 -k2,2 -k3,3 -k4,4g "$out/data.txt" | awk -F'|' '
    { k = $1 "|" $2 "|" $3; n[k]++; v[k, n[k]] = $4 }
    END {
      for (k in n) med[k] = v[k, int((n[k] + 1) / 2)]
      split("flush flush_local lock_all lock lockshared fence pscw", modes, " ")
      print "| mode | op | anchor pt2pt+tcp | ours tcp;ofi_rxm | ratio | ours sockets | ratio |"
      print "|---|---|---|---|---|---|---|"
      for (i = 1; i <= 7; ++i) for (g = 0; g < 2; ++g) {
        o = g ? "get" : "put"; a = med["anchor pt2pt+tcp|" modes[i] "|" o]
        t = med["ours tcp;ofi_rxm|" modes[i] "|" o]; s = med["ours sockets|" modes[i] "|" o]
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", modes[i], o, a == "" ? "-" : a,
          t == "" ? "-" : t, (a != "" && t > 0) ? sprintf("%.2f", a / t) : "-",
          s == "" ? "-" : s, (a != "" && s > 0) ? sprintf("%.2f", a / s) : "-"
      }
    }'
} | tee "$out/table.md"
