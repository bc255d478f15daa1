#!/usr/bin/env bash
#
# bench/stream_budget.sh: what the stream budget costs ob1 over sockets
# between two processes of one node (README "Stream budget"), side by
# side in one run:
#
#   bash bench/stream_budget.sh          REPS=3 by default
#
# Contenders, alternating within each repetition, both ours over sockets
# (pml ob1, btl ofi,self, bench/p2p_bench):
#   budget     the defaults: at most 20 KiB of messages in flight to a peer
#              of this node, eager limit and send size 16 KiB
#   unbounded  what came before: btl_ofi_stream_budget 0, eager limit and
#              send size 64 KiB (exposed to the stall the budget prevents)
# Prints the median of REPS runs per size and metric (latency in us,
# streaming bandwidth in MB/s) and ratio = budget / unbounded for
# bandwidth, unbounded / budget for latency (above 1: the budget faster);
# writes bench/results/stream-budget-DATE/ (data.txt, table.md, one log per
# run). Timings are never asserted; a run whose byte check fails is
# reported and left out.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
REPS=${REPS:-3}
SIZES=${SIZES:-1024,8192,16384,24576,32768,65536,262144,4194304}
out=${OUT:-$repo/bench/results/stream-budget-$(date +%Y-%m-%d)}
mkdir -p "$out" "$here/bin"
mpicc -O2 -Wall -o "$here/bin/p2p_bench" "$here/p2p_bench.c" || exit 1
: >"$out/data.txt"

run() { # name rep mca...
    local name=$1 rep=$2 log
    shift 2
    log=$out/$name-$rep.log
    if ! timeout -k 5 300 "$repo/scripts/ofirun" -np 2 --mca btl_ofi_provider_include sockets \
        "$@" "$here/bin/p2p_bench" -ops lat,stream -sizes "$SIZES" -runs 3 >"$log" 2>&1 ||
        ! grep -q '^# verify ok' "$log"; then
        echo "$name run $rep failed or failed its check: $log"
        return
    fi
    # "send SIZE lat US", "send SIZE bw MBS"
    awk -v n="$name" '$1 == "send" && ($3 == "lat" || $3 == "bw") {print n, $2, $3, $4}' \
        "$log" >>"$out/data.txt"
}

for ((r = 1; r <= REPS; ++r)); do
    if ((r % 2)); then
        run budget "$r"
        run unbounded "$r" --mca btl_ofi_stream_budget 0 --mca btl_ofi_eager_limit 65536 \
            --mca btl_ofi_max_send_size 65536
    else
        run unbounded "$r" --mca btl_ofi_stream_budget 0 --mca btl_ofi_eager_limit 65536 \
            --mca btl_ofi_max_send_size 65536
        run budget "$r"
    fi
done

awk -f "$here/median.awk" -f /dev/stdin "$out/data.txt" <<'AWK' |
{ v[$1 " " $2 " " $3] = v[$1 " " $2 " " $3] " " $4; sizes[$2] = 1; metrics[$3] = 1 }
END {
    printf "| metric | size (B) | budget | unbounded | ratio |\n|---|---:|---:|---:|---:|\n"
    for (m in metrics) for (s in sizes) {
        b = v["budget " s " " m]; u = v["unbounded " s " " m]
        if (b == "" || u == "") continue
        mb = median(b); mu = median(u)
        ratio = m == "lat" ? mu / mb : mb / mu
        printf "| %s | %d | %.2f | %.2f | %.2fx |\n", m == "lat" ? "latency us" : "bandwidth MB/s", s, mb, mu, ratio
    }
}
AWK
    { read -r h1; read -r h2; echo "$h1"; echo "$h2"; sort -t'|' -k2,2 -k3,3n; } | tee "$out/table.md"
