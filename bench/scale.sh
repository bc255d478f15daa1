#!/usr/bin/env bash
#
# bench/scale.sh: start-up time and memory per process as the job grows,
# side by side in one run.
#
#   bash bench/scale.sh             (about 15 minutes here; root for the hosts)
#   QUICK=1 bash bench/scale.sh     a smoke: np 4 and 8, one host, one run
#
# Every contender runs bench/scale (bench/scale.c: MPI_Init, one window,
# every rank puts to and fetch-and-adds on every other rank, each result
# checked) with mpi_yield_when_idle 1, --oversubscribe, --bind-to none:
#   ours:shm           osc/rdma over this btl/ofi, provider shm
#   ours:tcp;ofi_rxm   osc/rdma over this btl/ofi, provider tcp;ofi_rxm
#   ob1+vader          osc/rdma over ob1 + btl/vader (one host only)
#   ob1+tcp            osc/pt2pt over ob1 + btl/tcp (btl/tcp has no
#                      atomics, so osc/rdma does not take it)
#   osc/ucx            osc/ucx (its own UCX workers), ob1 + btl/tcp for
#                      two-sided traffic (pml/ucx finds no transport here)
# One host: NPS (default "4 16 32 64"; more ranks than the 2 cores here,
# oversubscribed). Two simulated hosts (tests/hosts/hosts.sh, one veth
# link): HOSTS_NPS ranks in all (default 32: 2 x 16), for ours:tcp;ofi_rxm,
# ob1+tcp and osc/ucx (shm and vader cannot cross hosts). WINDOW=create
# makes the window with MPI_Win_create (the btl carries every rank's
# traffic on one host too); the default, MPI_Win_allocate, is the issue's
# job. REPS repetitions (default 3), medians.
#
# Writes OUT (default bench/results/scale-<date>): raw/ every run's
# output, data.tsv (where contender np metric value), medians.tsv,
# table.md (MPI_Init, window creation, RSS and file descriptors per np;
# memory per added peer = the slope of the mean RSS from the smallest to
# the largest np; the ratios to ob1 + btl/tcp and ob1 + vader that issue
# 28's goals name) and goals.md. UPDATE_README=1 puts them between
# README's lines "(scale-bench begin)" and "(scale-bench end)".
#
# Exit status 1 when a run of ours ends badly (crash, hang, wrong data);
# the others' failures are recorded, not fatal. Timings are reported,
# never asserted.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
quick=${QUICK:-0}
if ((quick)); then
    NPS=${NPS:-4 8}
    HOSTS_NPS=${HOSTS_NPS-}
    REPS=${REPS:-1}
else
    NPS=${NPS:-4 16 32 64}
    HOSTS_NPS=${HOSTS_NPS-32}
    REPS=${REPS:-3}
fi
CONTENDERS=${CONTENDERS:-ours:shm ours:tcp;ofi_rxm ob1+vader ob1+tcp osc/ucx}
WINDOW=${WINDOW:-allocate}
TIMEOUT=${TIMEOUT:-300}
OUT=${OUT:-$repo/bench/results/scale-$(date +%Y-%m-%d)$( ((quick)) && echo -quick)}
bindir=$here/bin

say() { echo "scale-bench: $*"; }
die() {
    say "$*" >&2
    exit 1
}

mkdir -p "$OUT/raw" "$bindir" || die "cannot make $OUT"
[[ -f ${BTL_OFI_PREFIX:-$repo/_install}/lib/openmpi/mca_btl_ofi.so ]] ||
    die "no component installed: run scripts/build.sh first"
mpicc -O2 -Wall -o "$bindir/scale" "$here/scale.c" >"$OUT/build-scale.log" 2>&1 ||
    die "scale does not build (see $OUT/build-scale.log)"
winarg=()
[[ $WINDOW == create ]] && winarg=(-create)

{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"
    echo "open mpi: $(ompi_info --version 2>/dev/null | head -n 1)"
    echo "libfabric: $(fi_info --version 2>/dev/null | head -n 1)"
    echo "cpus: $(nproc); window: MPI_Win_$WINDOW; flags: --oversubscribe --bind-to none, mpi_yield_when_idle 1"
} >"$OUT/env.txt"

# the MCA selection of each contender: osc, btl list, pml
selection() { # contender -> "prov osc btls pml"
    case $1 in
    ours:*) echo "${1#ours:} rdma ofi,self ob1" ;;
    ob1+vader) echo "- rdma vader,self ob1" ;;
    ob1+tcp) echo "- pt2pt tcp,self ob1" ;;
    osc/ucx) echo "- ucx tcp,self ob1" ;;
    *) return 1 ;;
    esac
}

: >"$OUT/data.tsv"
bad=0
run() { # where contender np rep
    local where=$1 who=$2 np=$3 rep=$4 prov osc btls pml log rc
    read -r prov osc btls pml <<<"$(selection "$who")"
    [[ $prov == - ]] && prov=
    log=$OUT/raw/$where-${who//[\/;:+]/_}-np$np-$rep.log
    local -a launch
    if [[ $where == hosts ]]; then
        launch=(bash "$repo/tests/hosts/hosts.sh" mpirun --map-by node --mca btl_tcp_if_include "$link")
    else
        launch=(bash "$repo/scripts/ofirun" --mca mpi_yield_when_idle 1)
    fi
    # shellcheck disable=SC2054 # the commas are part of the btl list
    BTL_OFI_PROVIDER=$prov OFIRUN_OSC=$osc OFIRUN_BTLS=$btls OFIRUN_PML=$pml timeout -k 10 "$TIMEOUT" \
        "${launch[@]}" -np "$np" "$bindir/scale" "${winarg[@]}" \
        >"$log" 2>&1 </dev/null
    rc=$?
    if ((rc != 0)) || ! grep -q '^# verify ok' "$log"; then
        say "$where $who np $np: exit code $rc, $(grep -m1 -E 'verify|scale:|rror' "$log" | cut -c1-160) ($log)"
        [[ $who == ours:* ]] && bad=1
        return 1
    fi
    awk -v w="$where" -v who="$who" -v np="$np" '!/^#/ && NF == 2 && $1 != "np" { print w "\t" who "\t" np "\t" $1 "\t" $2 }' \
        "$log" >>"$OUT/data.tsv"
}

link=
if [[ -n $HOSTS_NPS ]]; then
    ((EUID == 0)) || die "needs root for the simulated hosts (or HOSTS_NPS= to skip them)"
    # shellcheck source=tests/hosts/hosts.sh
    source "$repo/tests/hosts/hosts.sh"
    hosts_up 2 1 >"$OUT/hosts-up.log" 2>&1 || die "the simulated hosts could not be set up ($OUT/hosts-up.log)"
    trap 'hosts_down >/dev/null 2>&1' EXIT
    link=$(hosts_addr h1 0)
    link=${link%.*}.0/24
fi

for ((rep = 1; rep <= REPS; rep++)); do
    for np in $NPS; do
        for who in $CONTENDERS; do
            say "repetition $rep of $REPS, one host, np $np, $who"
            run host "$who" "$np" "$rep"
        done
    done
    for np in $HOSTS_NPS; do
        for who in $CONTENDERS; do
            [[ $who == ours:shm || $who == ob1+vader ]] && continue
            say "repetition $rep of $REPS, two hosts, np $np, $who"
            run hosts "$who" "$np" "$rep"
        done
    done
done

sort -t$'\t' -k1,1 -k2,2 -k3,3n -k4,4 -k5,5g "$OUT/data.tsv" |
    awk -F'\t' '{ k = $1 "\t" $2 "\t" $3 "\t" $4; n[k]++; v[k, n[k]] = $5 }
    END { for (k in n) print k "\t" v[k, int((n[k] + 1) / 2)] }' |
    sort -t$'\t' -k1,1 -k2,2 -k3,3n -k4,4 >"$OUT/medians.tsv"

cd "$OUT" || die "no $OUT"
awk -F'\t' -v who_list="$CONTENDERS" '
    { m[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4] = $5; nps[$1 SUBSEP $3] = 1; wh[$1] = 1 }
    function f(x, d) { return x == "" ? "-" : sprintf("%." d "f", x) }
    function r(a, b) { return (a == "" || b == "" || b <= 0) ? "-" : sprintf("%.2f", a / b) }
    END {
        nw = split(who_list, W, " ")
        print "| where | np | contender | MPI_Init s (slowest) | window s | RSS MiB (mean) | RSS MiB (max) | fds | Init / ob1+tcp | RSS / ob1+tcp | Init / ob1+vader | RSS / ob1+vader |" > "table.md"
        print "|---|---|---|---|---|---|---|---|---|---|---|---|" > "table.md"
        for (where in wh) {
            n = 0
            for (k in nps) { split(k, kk, SUBSEP); if (kk[1] == where) list[++n] = kk[2] + 0 }
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
            for (i = 1; i <= n; i++) {
                np = list[i]
                for (w = 1; w <= nw; w++) {
                    p = where SUBSEP W[w] SUBSEP np SUBSEP
                    if (m[p "init_s_max"] == "") continue
                    t = where SUBSEP "ob1+tcp" SUBSEP np SUBSEP; v = where SUBSEP "ob1+vader" SUBSEP np SUBSEP
                    printf "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", where == "host" ? "one host" : "2 hosts", np, W[w],
                        f(m[p "init_s_max"], 2), f(m[p "win_s_max"], 3), f(m[p "rss_kib_mean"] / 1024, 1), f(m[p "rss_kib_max"] / 1024, 1), m[p "fds_max"],
                        r(m[p "init_s_max"], m[t "init_s_max"]), r(m[p "rss_kib_mean"], m[t "rss_kib_mean"]),
                        r(m[p "init_s_max"], m[v "init_s_max"]), r(m[p "rss_kib_mean"], m[v "rss_kib_mean"]) > "table.md"
                }
            }
            lo = list[1]; hi = list[n]
            if (where == "host" && n > 1) {
                print "| contender | mean RSS, np " lo " | mean RSS, np " hi " | memory per added peer |" > "slope.md"
                print "|---|---|---|---|" > "slope.md"
                for (w = 1; w <= nw; w++) {
                    a = m["host" SUBSEP W[w] SUBSEP lo SUBSEP "rss_kib_mean"]; b = m["host" SUBSEP W[w] SUBSEP hi SUBSEP "rss_kib_mean"]
                    if (a == "" || b == "") continue
                    printf "| %s | %.1f MiB | %.1f MiB | %.1f KiB |\n", W[w], a / 1024, b / 1024, (b - a) / (hi - lo) > "slope.md"
                    slope[W[w]] = (b - a) / (hi - lo)
                }
                print "| goal | np | ours | against | verdict |" > "goals.md"
                print "|---|---|---|---|---|" > "goals.md"
                for (i = 1; i <= n; i++) {
                    np = list[i]
                    split("ours:tcp;ofi_rxm:ob1+tcp ours:shm:ob1+vader", G, " ")
                    for (g = 1; g <= 2; g++) {
                        split(G[g], gg, ":"); o = gg[1] ":" gg[2]; a = gg[3]
                        oi = m["host" SUBSEP o SUBSEP np SUBSEP "init_s_max"]; ai = m["host" SUBSEP a SUBSEP np SUBSEP "init_s_max"]
                        orr = m["host" SUBSEP o SUBSEP np SUBSEP "rss_kib_mean"]; ar = m["host" SUBSEP a SUBSEP np SUBSEP "rss_kib_mean"]
                        if (oi == "" || ai == "") continue
                        printf "| MPI_Init <= 1.5 x %s | %d | %s s (%s) | %s s | %s |\n", a, np, f(oi, 2), o, f(ai, 2), oi <= 1.5 * ai ? "met" : "MISSED" > "goals.md"
                        printf "| RSS <= 2 x %s | %d | %s MiB (%s) | %s MiB | %s |\n", a, np, f(orr / 1024, 1), o, f(ar / 1024, 1), orr <= 2 * ar ? "met" : "MISSED" > "goals.md"
                    }
                }
                for (s in slope) if (s ~ /^ours:/) printf "| memory per added peer <= 16 KiB | %d-%d | %.1f KiB (%s) | 16 KiB | %s |\n", lo, hi, slope[s], s, slope[s] <= 16 ? "met" : "MISSED" > "goals.md"
            }
        }
    }' medians.tsv
[[ -s table.md ]] || die "no table was made (see $OUT/raw)"

report() {
    echo "bench/scale.sh, $(date -u +%F), commit $(git -C "$repo" rev-parse --short HEAD), $REPS repetition(s), medians, MPI_Win_$WINDOW, --oversubscribe --bind-to none, mpi_yield_when_idle 1 (2 cores):"
    echo
    cat table.md
    echo
    [[ -s slope.md ]] && cat slope.md && echo
    [[ -s goals.md ]] && cat goals.md && echo
}
if [[ ${UPDATE_README:-0} == 1 ]] && ((!quick)); then
    block=$(
        echo "(scale-bench begin)"
        echo
        report
        echo "(scale-bench end)"
    )
    BLOCK=$block awk 'BEGIN { b = ENVIRON["BLOCK"] } /^\(scale-bench begin\)/ { print b; skip = 1; next }
        /^\(scale-bench end\)/ { skip = 0; next } !skip' "$repo/README" >"$OUT/README.new" &&
        mv "$OUT/README.new" "$repo/README"
fi
report
say "results in $OUT"
exit $bad
