#!/usr/bin/env bash
#
# bench/rxm_eager.sh: tcp;ofi_rxm's largest message, 64 KiB (since
# 2026-12-03) against 16 KiB (before), across two simulated hosts, side by
# side in one run (README "Two-sided traffic"):
#
#   bash bench/rxm_eager.sh          REPS=3 by default (root: namespaces)
#
# Contenders, alternating within each repetition, both ours over
# tcp;ofi_rxm between h1 and h2 (tests/hosts/hosts.sh, one veth link, one
# rank per host, --bind-to none, mpi_yield_when_idle 1):
#   e64   the defaults: eager limit and send size 64 KiB (ofi_rxm's eager
#         limit set to cover them, btl_ofi_provenv.c)
#   e16   btl_ofi_eager_limit and btl_ofi_max_send_size 16384: what came
#         before (and rxm's eager limit with them)
#   anchor  ob1 over btl/tcp and osc/pt2pt on the same link (what a user
#         without this btl gets), in the same repetitions
# Each: bench/p2p_bench (ob1 ping-pong latency, streaming bandwidth) and
# bench/osc_bench acc (osc/rdma's MPI_Accumulate + flush; to another node
# one message per eager limit up to 32 KiB, osc-rdma/patches 0016).
# Prints the median of REPS runs per size and metric and ratio = e64 / e16
# for bandwidth, e16 / e64 for latency (above 1: 64 KiB faster), and the
# anchor's median with 64 KiB's ratio to it the same way; writes
# bench/results/rxm-eager-DATE/ (data.txt, table.md, one log per run).
# Timings are never asserted; a run whose check fails is reported and
# left out.
set -uo pipefail

bench=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$bench/.." && pwd)
REPS=${REPS:-3}
out=${OUT:-$repo/bench/results/rxm-eager-$(date +%Y-%m-%d)}
mkdir -p "$out" "$bench/bin"
for prog in p2p_bench osc_bench; do
    mpicc -O2 -Wall -o "$bench/bin/$prog" "$bench/$prog.c" || exit 1
done
: >"$out/data.txt"
# shellcheck source=tests/hosts/hosts.sh
source "$repo/tests/hosts/hosts.sh" # (sets its own `here')
hosts_up 2 1 >"$out/hosts-up.log" 2>&1 || {
    echo "rxm_eager.sh: the simulated hosts could not be set up ($out/hosts-up.log)" >&2
    exit 1
}
trap 'hosts_down >/dev/null 2>&1' EXIT
link=$(hosts_addr h1 0)
link=${link%.*}.0/24

run() { # name rep mca... (name anchor: ob1 over btl/tcp, osc/pt2pt)
    local name=$1 rep=$2 log prog prov="tcp;ofi_rxm" osc=rdma btls=ofi,self
    shift 2
    [[ $name == anchor ]] && prov="" osc=pt2pt btls=tcp,self
    for prog in p2p_bench osc_bench; do
        log=$out/$name-$prog-$rep.log
        local -a args=(-ops "lat,stream" -lat 4k:256k -bw 4k:1m)
        [[ $prog == osc_bench ]] && args=(-ops acc -lat 4k:128k)
        if ! BTL_OFI_PROVIDER=$prov OFIRUN_OSC=$osc OFIRUN_BTLS=$btls timeout -k 5 300 \
            bash "$repo/tests/hosts/hosts.sh" mpirun -np 2 --map-by node --bind-to none "$@" \
            "$bench/bin/$prog" "${args[@]}" -runs 3 -run-ms 20 >"$log" 2>&1 ||
            ! grep -q '^# verify ok' "$log"; then
            echo "$name $prog run $rep failed or failed its check: $log"
            continue
        fi
        # "send SIZE lat US", "send SIZE bw MBS", "acc SIZE lat US"
        awk -v n="$name" '($1 == "send" || $1 == "acc") && ($3 == "lat" || $3 == "bw") {print n, $1, $2, $3, $4}' \
            "$log" >>"$out/data.txt"
    done
}

small=(--mca btl_ofi_eager_limit 16384 --mca btl_ofi_max_send_size 16384)
for ((r = 1; r <= REPS; ++r)); do
    if ((r % 2)); then
        run e64 "$r"
        run e16 "$r" "${small[@]}"
        run anchor "$r" --mca btl_tcp_if_include "$link"
    else
        run anchor "$r" --mca btl_tcp_if_include "$link"
        run e16 "$r" "${small[@]}"
        run e64 "$r"
    fi
done

awk -f "$bench/median.awk" -f /dev/stdin "$out/data.txt" <<'AWK' |
{ k = $2 " " $3 " " $4; v[$1 " " k] = v[$1 " " k] " " $5; keys[k] = 1 }
END {
    printf "| operation | size (B) | metric | 64 KiB | 16 KiB | ratio | anchor | 64 KiB / anchor |\n|---|---:|---|---:|---:|---:|---:|---:|\n"
    for (k in keys) {
        a = v["e64 " k]; b = v["e16 " k]; c = v["anchor " k]
        if (a == "" || b == "") continue
        split(k, p, " ")
        ma = median(a); mb = median(b)
        lat = p[3] == "lat"
        ratio = lat ? mb / ma : ma / mb
        anchor = c == "" ? "-" : sprintf("%.2f", median(c))
        vs = c == "" ? "-" : sprintf("%.2fx", lat ? median(c) / ma : ma / median(c))
        printf "| %s | %d | %s | %.2f | %.2f | %.2fx | %s | %s |\n", p[1] == "send" ? "ob1 send" : "osc accumulate", p[2], lat ? "latency us" : "bandwidth MB/s", ma, mb, ratio, anchor, vs
    }
}
AWK
    { read -r h1; read -r h2; echo "$h1"; echo "$h2"; sort -t'|' -k2,2 -k4,4 -k3,3n; } | tee "$out/table.md"
