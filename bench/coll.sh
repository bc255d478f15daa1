#!/usr/bin/env bash
#
# bench/coll.sh: coll/ofi against coll/tuned over the same btls, side by
# side in one run.
#
#   bash bench/coll.sh            (about 10 minutes here; root for the hosts)
#   QUICK=1 bash bench/coll.sh    a smoke: np 2 on ofi (shm), 3 sizes, one run
#
# bench/coll_bench (MPI_Bcast, MPI_Reduce, MPI_Allreduce from 8 B to 1 MiB,
# MPI_Barrier; the slowest rank's time per call, median of -runs runs,
# every result checked) under two coll selections, everything else equal:
#   ofi     --mca coll_ofi_priority 90 (coll/ofi serves the calls; its
#           verbose line proves it)
#   tuned   coll/ofi left at priority 0: Open MPI's coll/tuned over ob1
# over these btls:
#   ofi:shm      btl ofi,self, provider shm (one host; NPS, default 2 4 8)
#   vader        btl vader,self (one host; NPS)
#   ofi:tcp      btl ofi,self, provider tcp;ofi_rxm, two simulated hosts x
#                2 ranks (tests/hosts/hosts.sh; root; HOSTS=0 skips)
# Always mpi_yield_when_idle 1, --oversubscribe, --bind-to none.
#
# Writes OUT (default bench/results/coll-<date>): raw/ every run's
# output, data.tsv (setup np contender op size value), medians.tsv,
# table.md (tuned and ofi in us per call, speedup = tuned / ofi) and
# goals.md (issue 26: at 1 KiB and below coll/ofi at least 1.5x faster
# than coll/tuned over the same btl; above 1 KiB never slower), and a
# plot per setup (plots/, gnuplot). UPDATE_README=1 puts table and goals
# between README's lines "(coll-bench begin)" and "(coll-bench end)".
#
# METHOD=osu: OSU's method instead of back-to-back calls (coll_bench
# -osu: a barrier before each call, the average over the ranks of each
# call's own time); OUT ends in -osu, and UPDATE_README=1 writes between
# "(coll-bench-osu begin)" and "(coll-bench-osu end)".
#
# Exit status 1 when a run ends badly (crash, hang, wrong result, or the
# ofi contender not served by coll/ofi). Timings are never asserted.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
quick=${QUICK:-0}
if ((quick)); then
    NPS=${NPS:-2}
    SETUPS=${SETUPS:-ofi:shm}
    REPS=${REPS:-1}
    args=(-sizes 8,1024,65536 -runs 1 -run-ms 5 -warm-ms 2)
else
    NPS=${NPS:-2 4 8}
    SETUPS=${SETUPS:-ofi:shm vader ofi:tcp}
    REPS=${REPS:-1}
    args=(-lat 8:1m -step 4 -runs 5 -run-ms 20)
fi
METHOD=${METHOD:-back-to-back}
mark=coll-bench
case $METHOD in
back-to-back) ;;
osu) args+=(-osu) mark=coll-bench-osu ;;
*)
    echo "coll-bench: METHOD is back-to-back or osu, not '$METHOD'" >&2
    exit 1
    ;;
esac
TIMEOUT=${TIMEOUT:-600}
OUT=${OUT:-$repo/bench/results/coll-$(date +%Y-%m-%d)$( ((quick)) && echo -quick)$([[ $METHOD == osu ]] && echo -osu)}
bindir=$here/bin

say() { echo "coll-bench: $*"; }
die() {
    say "$*" >&2
    exit 1
}

mkdir -p "$OUT/raw" "$OUT/plots" "$bindir" || die "cannot make $OUT"
[[ -f ${BTL_OFI_PREFIX:-$repo/_install}/lib/openmpi/mca_coll_ofi.so ]] ||
    die "no coll/ofi installed: run scripts/build.sh first"
mpicc -O2 -Wall -o "$bindir/coll_bench" "$here/coll_bench.c" >"$OUT/build.log" 2>&1 ||
    die "coll_bench does not build (see $OUT/build.log)"
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"
    echo "open mpi: $(ompi_info --version 2>/dev/null | head -n 1)"
    echo "cpus: $(nproc); flags: --oversubscribe --bind-to none, mpi_yield_when_idle 1; coll_bench ${args[*]}"
} >"$OUT/env.txt"

: >"$OUT/data.tsv"
bad=0
run() { # setup np contender rep
    local setup=$1 np=$2 who=$3 rep=$4 prio log rc prov btls
    local -a launch
    prio=0
    [[ $who == ofi ]] && prio=90
    log=$OUT/raw/${setup//[:;]/_}-np$np-$who-$rep.log
    case $setup in
    ofi:shm) prov=shm btls=ofi,self launch=(bash "$repo/scripts/ofirun" --mca mpi_yield_when_idle 1) ;;
    vader) prov= btls=vader,self launch=(bash "$repo/scripts/ofirun" --mca mpi_yield_when_idle 1) ;;
    ofi:tcp) prov="tcp;ofi_rxm" btls=ofi,self launch=(bash "$repo/tests/hosts/hosts.sh" mpirun --map-by node) ;;
    esac
    BTL_OFI_PROVIDER=$prov OFIRUN_BTLS=$btls timeout -k 10 "$TIMEOUT" "${launch[@]}" -np "$np" \
        --mca coll_ofi_priority "$prio" --mca coll_ofi_verbose 1 "$bindir/coll_bench" "${args[@]}" \
        >"$log" 2>&1 </dev/null
    rc=$?
    if ((rc != 0)) || ! grep -q '^# verify ok' "$log"; then
        say "$setup np $np $who: exit code $rc, $(grep -m1 -E 'verify|coll_bench:|rror' "$log" | cut -c1-160) ($log)"
        bad=1
        return 1
    fi
    if [[ $who == ofi ]] && ! grep -q "coll:ofi: serving communicator 0 with $np ranks" "$log"; then
        say "$setup np $np: coll/ofi did not serve MPI_COMM_WORLD ($log)"
        bad=1
        return 1
    fi
    awk -v s="$setup" -v np="$np" -v w="$who" '!/^#/ && $3 == "lat" { print s "\t" np "\t" w "\t" $1 "\t" $2 "\t" $4 }' \
        "$log" >>"$OUT/data.tsv"
}

hosts=0
if [[ " $SETUPS " == *" ofi:tcp "* ]]; then
    ((EUID == 0)) || die "the ofi:tcp setup needs root (simulated hosts); SETUPS without it"
    # shellcheck source=tests/hosts/hosts.sh
    source "$repo/tests/hosts/hosts.sh"
    hosts_up 2 1 >"$OUT/hosts-up.log" 2>&1 || die "the simulated hosts could not be set up"
    trap 'hosts_down >/dev/null 2>&1' EXIT
    hosts=1
fi

for ((rep = 1; rep <= REPS; rep++)); do
    for setup in $SETUPS; do
        nps=$NPS
        [[ $setup == ofi:tcp ]] && nps=4
        for np in $nps; do
            # the order alternates between repetitions
            order="ofi tuned"
            ((rep % 2 == 0)) && order="tuned ofi"
            for who in $order; do
                say "repetition $rep of $REPS: $setup np $np $who"
                run "$setup" "$np" "$who" "$rep"
            done
        done
    done
done
((hosts)) && hosts_down >/dev/null 2>&1

cd "$OUT" || die "no $OUT"
sort -t$'\t' -k1,1 -k2,2n -k3,3 -k4,4 -k5,5n -k6,6g data.tsv |
    awk -F'\t' '{ k = $1 "\t" $2 "\t" $3 "\t" $4 "\t" $5; n[k]++; v[k, n[k]] = $6 }
    END { for (k in n) print k "\t" v[k, int((n[k] + 1) / 2)] }' |
    sort -t$'\t' -k1,1 -k2,2n -k4,4 -k5,5n -k3,3 >medians.tsv

awk -F'\t' '
    { m[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4 SUBSEP $5] = $6; key = $1 SUBSEP $2 SUBSEP $4 SUBSEP $5
      if (!(key in seen)) { seen[key] = 1; keys[++nk] = key } }
    function human(s) { return s >= 1048576 ? (s / 1048576) " MiB" : (s >= 1024 ? (s / 1024) " KiB" : s " B") }
    function f(x) { return x == "" ? "-" : (x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
    END {
        print "| btl | np | collective | size | coll/tuned us | coll/ofi us | speedup |" > "table.md"
        print "|---|---|---|---|---|---|---|" > "table.md"
        for (j = 1; j <= nk; j++) {
            split(keys[j], k, SUBSEP)
            t = m[k[1] SUBSEP k[2] SUBSEP "tuned" SUBSEP k[3] SUBSEP k[4]]
            o = m[k[1] SUBSEP k[2] SUBSEP "ofi" SUBSEP k[3] SUBSEP k[4]]
            r = (t != "" && o > 0) ? t / o : ""
            printf "| %s | %s | %s | %s | %s | %s | %s |\n", k[1], k[2], k[3], k[3] == "barrier" ? "-" : human(k[4]), f(t), f(o), r == "" ? "-" : sprintf("%.2fx", r) > "table.md"
            if (r == "") continue
            small = k[3] == "barrier" || k[4] <= 1024
            g = k[1] " np " k[2] (small ? ", <= 1 KiB: >= 1.5x" : ", > 1 KiB: >= 1x")
            if (!(g in gn)) { gorder[++ng] = g; gworst[g] = r; gwhere[g] = k[3] " " human(k[4]) }
            gn[g]++
            if (r < gworst[g]) { gworst[g] = r; gwhere[g] = k[3] " " (k[3] == "barrier" ? "" : human(k[4])) }
            if (r < (small ? 1.5 : 1.0)) gmiss[g]++
        }
        print "| goal | checks | missed | worst speedup | at |" > "goals.md"
        print "|---|---|---|---|---|" > "goals.md"
        for (i = 1; i <= ng; i++) {
            g = gorder[i]
            printf "| %s | %d | %d | %.2fx | %s |\n", g, gn[g], gmiss[g] + 0, gworst[g], gwhere[g] > "goals.md"
        }
    }' medians.tsv
[[ -s table.md ]] || die "no table was made (see $OUT/raw)"

if command -v gnuplot >/dev/null 2>&1; then
    for setup in $SETUPS; do
        s=${setup//[:;]/_}
        np=$(awk -F'\t' -v s="$setup" '$1 == s { print $2 }' medians.tsv | sort -n | tail -n 1)
        [[ -n $np ]] || continue
        for op in bcast reduce allreduce; do
            for who in ofi tuned; do
                awk -F'\t' -v s="$setup" -v np="$np" -v w="$who" -v o="$op" \
                    '$1 == s && $2 == np && $3 == w && $4 == o { print $5, $6 }' medians.tsv >"plots/.$s-$op-$who.dat"
            done
        done
        gnuplot <<EOF 2>>plots/gnuplot.log
set terminal png size 1200,400 noenhanced
set output "plots/$s-np$np.png"
set multiplot layout 1,3 title "coll/ofi against coll/tuned, btl $setup, np $np (us per call, lower is better)"
set logscale xy 2
set key top left
set xlabel "bytes"
set title "MPI_Bcast"
plot "plots/.$s-bcast-ofi.dat" w lp t "coll/ofi", "plots/.$s-bcast-tuned.dat" w lp t "coll/tuned"
set title "MPI_Reduce"
plot "plots/.$s-reduce-ofi.dat" w lp t "coll/ofi", "plots/.$s-reduce-tuned.dat" w lp t "coll/tuned"
set title "MPI_Allreduce"
plot "plots/.$s-allreduce-ofi.dat" w lp t "coll/ofi", "plots/.$s-allreduce-tuned.dat" w lp t "coll/tuned"
unset multiplot
EOF
    done
    rm -f plots/.*.dat
fi

report() {
    echo "bench/coll.sh, $(date -u +%F), commit $(git -C "$repo" rev-parse --short HEAD), method $METHOD, $REPS repetition(s), medians; plots in ${OUT#"$repo"/}/plots/"
    echo
    cat table.md
    echo
    cat goals.md
    echo
}
if [[ ${UPDATE_README:-0} == 1 ]] && ((!quick)); then
    block=$(
        echo "($mark begin)"
        echo
        report
        echo "($mark end)"
    )
    BLOCK=$block MARK=$mark awk 'BEGIN { b = ENVIRON["BLOCK"]; m = ENVIRON["MARK"] }
        $0 == "(" m " begin)" { print b; skip = 1; next }
        $0 == "(" m " end)" { skip = 0; next } !skip' "$repo/README" >README.new &&
        mv README.new "$repo/README"
fi
report
say "results in $OUT"
exit $bad
