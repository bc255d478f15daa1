#!/usr/bin/env bash
#
# bench/strided.sh: MPI_Put, then MPI_Get, of a column (MPI_Type_vector of
# N doubles, every other one) + MPI_Win_flush, side by side, in one run:
#
#   bash bench/strided.sh          one node and two simulated hosts (root)
#   HOSTS=0 bash bench/strided.sh  one node only
#
# Contenders (bench/strided.c, 2 ranks, MPI_Win_create window):
#   ours PROV         osc/rdma over this btl/ofi: small puts and gets
#                     gathered into messages (btl_ofi_put_gather_size,
#                     btl_ofi_get_gather_size, default)
#   ours PROV gather0 the same with both 0: one btl put or get per piece,
#                     as before gathering
#   pt2pt+tcp         Open MPI's osc/pt2pt over btl/tcp (packs the datatype
#                     into one message)
#   rdma+vader        osc/rdma over btl/vader (one node only)
# Across the hosts: one rank on each (tests/hosts/hosts.sh, --map-by node,
# mpi_yield_when_idle 1). Prints microseconds per put or get + flush
# (median of 5) and ratios against pt2pt+tcp; writes
# bench/results/strided-DATE/.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
ofirun=$repo/scripts/ofirun
out=$repo/bench/results/strided-$(date +%Y-%m-%d)
mkdir -p "$out" "$here/bin"
mpicc -O2 -Wall -o "$here/bin/strided" "$here/strided.c" || exit 1
sizes="1 16 256 1024"

run() { # name where(node|hosts) gather(default|0) VAR=value...
    local name=$1 where=$2 gather=$3
    shift 3
    local log=$out/${name// /_}-$where.log
    local -a extra=()
    [[ $gather == 0 ]] && extra=(--mca btl_ofi_put_gather_size 0 --mca btl_ofi_get_gather_size 0)
    if [[ $where == node ]]; then
        env "$@" timeout 300 "$ofirun" -np 2 "${extra[@]}" "$here/bin/strided" $sizes >"$log" 2>&1
    else
        env "$@" timeout 300 bash "$repo/tests/hosts/hosts.sh" mpirun -np 2 --map-by node \
            "${extra[@]}" "$here/bin/strided" $sizes >"$log" 2>&1
    fi
    local rc=$?
    if ((rc != 0)) || ! grep -q '^strided ' "$log"; then
        echo "$name ($where): failed, exit code $rc (see $log)"
        return
    fi
    grep -E '^(strided|gets) ' "$log" | sed -E "s/^(strided|gets) /$where|$name|\1|/" >>"$out/data.txt"
}

: >"$out/data.txt"
for p in "tcp;ofi_rxm" sockets; do
    run "ours $p" node default BTL_OFI_PROVIDER="$p"
    run "ours $p gather0" node 0 BTL_OFI_PROVIDER="$p"
done
run "pt2pt+tcp" node default OFIRUN_OSC=pt2pt OFIRUN_BTLS=tcp,self
run "rdma+vader" node default OFIRUN_BTLS=vader,self
if [[ ${HOSTS:-1} != 0 ]]; then
    bash "$repo/tests/hosts/hosts.sh" up 2 1 >"$out/hosts-up.log" 2>&1 || {
        echo "the simulated hosts could not be set up (root?): see $out/hosts-up.log"
        exit 1
    }
    trap 'bash "$repo/tests/hosts/hosts.sh" down >/dev/null 2>&1' EXIT
    for p in "tcp;ofi_rxm" sockets; do
        run "ours $p" hosts default OFIRUN_BTLS=ofi,self BTL_OFI_PROVIDER="$p"
        run "ours $p gather0" hosts 0 OFIRUN_BTLS=ofi,self BTL_OFI_PROVIDER="$p"
    done
    run "pt2pt+tcp" hosts default OFIRUN_OSC=pt2pt OFIRUN_BTLS=tcp,self
fi

# one table per place and operation: us per put or get + flush of N
# pieces, and pt2pt+tcp's time over each one's (above 1: faster than
# osc/pt2pt)
awk -F'|' '
{ split($4, f, " "); key = $1 "|" $2 "|" $3; t[key, f[1]] = f[2]; names[$1, $2, $3] = 1;
  if ($2 == "pt2pt+tcp") ref[$1, $3, f[1]] = f[2] }
END {
  split("node hosts", places, " "); split("strided gets", ops, " ")
  for (pi = 1; pi <= 2; ++pi) for (oi = 1; oi <= 2; ++oi) {
    w = places[pi]; o = ops[oi]; any = 0
    for (k in names) { split(k, kk, SUBSEP); if (kk[1] == w && kk[3] == o) any = 1 }
    if (!any) continue
    printf("\n%s: us per %s of N doubles (every other one) + MPI_Win_flush; x = pt2pt+tcp / it\n\n",
           w == "node" ? "one node" : "two simulated hosts", o == "gets" ? "MPI_Get" : "MPI_Put")
    printf("| contender | N=1 | N=16 | N=256 | N=1024 |\n|---|---|---|---|---|\n")
    for (k in names) {
      split(k, kk, SUBSEP); if (kk[1] != w || kk[3] != o) continue
      line = "| " kk[2]
      split("1 16 256 1024", nl, " ")
      for (j = 1; j <= 4; ++j) {
        v = t[w "|" kk[2] "|" o, nl[j]]; r = ref[w, o, nl[j]]
        line = line sprintf(" | %s%s", v == "" ? "-" : v, (v != "" && r != "" && v > 0) ? sprintf(" (%.2fx)", r / v) : "")
      }
      print line " |"
    }
  }
}' "$out/data.txt" | tee "$out/table.md"
