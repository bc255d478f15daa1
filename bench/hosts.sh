#!/usr/bin/env bash
#
# bench/hosts.sh: one-sided MPI across two simulated hosts, side by side.
#
#   bash bench/hosts.sh            (about 15 minutes here; root: namespaces)
#   QUICK=1 bash bench/hosts.sh    a smoke of a minute (3 sizes, 1 run each)
#
# Two hosts (tests/hosts/hosts.sh: network namespaces joined by one veth
# link, Open MPI's rsh launcher), one rank on each. Every contender is
# started by the same launcher with the same flags: -np 2 --map-by node,
# mpi_yield_when_idle 1, and each binding of BINDINGS (default "core
# none"): --bind-to core is what Open MPI does by default with 2 ranks (each
# host's daemon binds its rank to core 0, so the two ranks share one core
# of this machine, like ranks sharing cores on a loaded node); --bind-to
# none is scripts/ofirun's (the ranks float over both cores). Contenders,
# each repetition and binding in one run:
#   ours:PROV     osc/rdma over this btl/ofi (btl ofi,self, provider PROV):
#                 bench/osc_bench: put, get, accumulate latency 8 B .. 4 MiB,
#                 fetch-and-op and compare-and-swap (8 B), put and get
#                 bandwidth (a window of operations, then one flush)
#   anchor        osc/pt2pt over ob1 + btl/tcp (btl tcp,self on the link):
#                 the same osc_bench, the one-sided path Open MPI users
#                 fall back on without an RDMA btl
#   floor:PROV    ob1 over this btl/ofi: bench/p2p_bench ping-pong latency
#                 (half a round trip), the two-sided floor of the same
#                 provider on the same link
#   raw:PROV      the provider itself: bench/fi_floor put and get bandwidth
#                 (fi_write and fi_read, a window in flight, on a libfabric
#                 endpoint of PROV opened by the benchmark; MPI over
#                 btl/tcp only starts it), the most PROV carries on this
#                 link: where the anchor is faster than that, no btl over
#                 PROV can reach the anchor. Run with --bind-to none only
#                 (it polls without yielding; on one shared core it would
#                 measure its own spinning); every binding's ceiling table
#                 compares with it
#   path:NAME     other one-sided paths of ours on tcp;ofi_rxm, 8-byte put,
#                 get, fetch-and-op and compare-and-swap latency: the
#                 progress thread, puts and gets as messages, atomics as
#                 messages, osc_rdma_acc_single_intrinsic
# PROV: tcp;ofi_rxm, sockets and udp;ofi_rxd (PROVIDERS to choose).
#
# Writes OUT (default bench/results/hosts-<date>): raw/ every run's output,
# data.tsv (binding/contender op size metric value), medians.tsv, per
# binding table-BIND.md (ours, the anchor, the ratio ours/anchor and the
# floor, per provider), goals-BIND.md (the goals of issue 24: 8 B put +
# flush and get + flush at most 2x the floor and at most the anchor;
# bandwidth from 64 KiB at least the anchor's), paths-BIND.md, and
# plots/BIND-PROV.png (gnuplot, when there). UPDATE_README=1 puts them
# between README's lines "(hosts-bench begin)" and "(hosts-bench end)".
#
# REPORT_ONLY=1 runs nothing: the tables, goals, plots and README block
# are made again from OUT's data.tsv (OUT must then be given).
#
# Exit status 1 when a run of ours ends badly (crash, hang, data not
# verified); the anchor's failures are recorded, not fatal. Timings are
# never asserted: the goals are reported, met or missed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
quick=${QUICK:-0}
PROVIDERS=${PROVIDERS:-tcp;ofi_rxm sockets udp;ofi_rxd}
REPS=${REPS:-1}
BINDINGS=${BINDINGS:-core none}
TIMEOUT=${TIMEOUT:-600}
OUT=${OUT:-$repo/bench/results/hosts-$(date +%Y-%m-%d)$( ((quick)) && echo -quick)}
bindir=$here/bin

if ((quick)); then
    lat=(-lat 8:8 -runs 1 -run-ms 5)
    bw=(-bw 64k:64k)
    plat=(-lat 8:8 -runs 1 -run-ms 5)
else
    lat=(-lat 8:4m -runs 5 -run-ms 20)
    bw=(-bw 1k:4m -wbytes 16777216)
    plat=(-lat 8:8 -runs 5 -run-ms 20)
fi

say() { echo "hosts-bench: $*"; }
die() {
    say "$*" >&2
    exit 1
}

report_only=${REPORT_ONLY:-0}
if ((report_only)); then
    [[ -s $OUT/data.tsv ]] || die "REPORT_ONLY=1: no $OUT/data.tsv (give OUT)"
fi
((EUID == 0 || report_only)) || die "needs root (network and pid namespaces)"
mkdir -p "$OUT/raw" "$OUT/plots" "$bindir" || die "cannot make $OUT"
[[ -f $repo/_install/lib/openmpi/mca_btl_ofi.so || -n ${BTL_OFI_PREFIX:-} ]] ||
    die "no component installed: run scripts/build.sh first"
for prog in osc_bench p2p_bench fi_floor; do
    ((report_only)) && break
    libs=()
    [[ $prog == fi_floor ]] && libs=(-lfabric)
    mpicc -O2 -Wall -o "$bindir/$prog" "$here/$prog.c" "${libs[@]}" >"$OUT/build-$prog.log" 2>&1 ||
        die "$prog does not build (see $OUT/build-$prog.log)"
done

# shellcheck source=tests/hosts/hosts.sh
source "$repo/tests/hosts/hosts.sh"
((report_only)) || hosts_up 2 1 >"$OUT/hosts-up.log" 2>&1 || die "the simulated hosts could not be set up ($OUT/hosts-up.log)"
((report_only)) || trap 'hosts_down >/dev/null 2>&1' EXIT
link=$(hosts_addr h1 0)
link=${link%.*}.0/24

((report_only)) || {
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"
    echo "open mpi: $(ompi_info --version 2>/dev/null | head -n 1)"
    echo "libfabric: $(fi_info --version 2>/dev/null | head -n 1)"
    echo "cpus: $(nproc); flags: -np 2 --map-by node --bind-to core, mpi_yield_when_idle 1"
} >"$OUT/env.txt"

((report_only)) || : >"$OUT/data.tsv"
bad=0
run() { # contender log prov osc btls prog args...
    local who=$1 log=$2 prov=$3 osc=$4 btls=$5 rc
    shift 5
    BTL_OFI_PROVIDER=$prov OFIRUN_OSC=$osc OFIRUN_BTLS=$btls timeout -k 10 "$TIMEOUT" \
        bash "$repo/tests/hosts/hosts.sh" mpirun -np 2 --map-by node \
        --mca btl_tcp_if_include "$link" "$@" >"$log" 2>&1 </dev/null
    rc=$?
    if ((rc != 0)) || ! grep -q '^# verify ok' "$log"; then
        say "$who: exit code $rc, $(grep -m1 -E 'verify|FAIL|rror' "$log" | cut -c1-160) ($log)"
        [[ $who == */anchor ]] || bad=1
        return 1
    fi
    awk -v who="$who" '!/^#/ && NF == 4 { print who "\t" $1 "\t" $2 "\t" $3 "\t" $4 }' "$log" >>"$OUT/data.tsv"
}

# other one-sided paths of ours, 8-byte latency on tcp;ofi_rxm beside the
# same run's floor: the progress thread, puts and gets as messages,
# atomics as messages (udp;ofi_rxd takes the message paths by default),
# and osc/rdma told that accumulates are single elements (its fetch-and-op
# then one btl atomic without the accumulate lock: osc-rdma/patches 0008)
paths=("progress-thread:--mca btl_ofi_progress_thread 1"
    "emulated-rma:--mca btl_ofi_emulate_rma 1"
    "emulated-atomics:--mca btl_ofi_emulate_atomics 1"
    "acc-single-intrinsic:--mca osc_rdma_acc_single_intrinsic true")
for ((rep = 1; rep <= REPS && !report_only; rep++)); do
    for bind in $BINDINGS; do
        say "repetition $rep of $REPS, --bind-to $bind"
        run "$bind/anchor" "$OUT/raw/$bind-anchor-$rep.log" "" pt2pt tcp,self --bind-to "$bind" \
            "$bindir/osc_bench" -ops put,get,acc,fop,cas,putbw,getbw "${lat[@]}" "${bw[@]}"
        for prov in $PROVIDERS; do
            p=${prov//;/+}
            run "$bind/ours:$prov" "$OUT/raw/$bind-ours-$p-$rep.log" "$prov" rdma ofi,self \
                --bind-to "$bind" "$bindir/osc_bench" -ops put,get,acc,fop,cas,putbw,getbw \
                "${lat[@]}" "${bw[@]}"
            run "$bind/floor:$prov" "$OUT/raw/$bind-floor-$p-$rep.log" "$prov" rdma ofi,self \
                --bind-to "$bind" "$bindir/p2p_bench" -ops lat "${plat[@]}"
            # the provider itself floating over both cores only: fi_floor
            # polls without ever giving the core away, so with both ranks
            # on one core it measures its own spinning, not the provider
            if [[ $bind == none ]]; then
                run "none/raw:$prov" "$OUT/raw/none-raw-$p-$rep.log" "" pt2pt tcp,self \
                    --bind-to none "$bindir/fi_floor" -p "$prov" -ops putbw,getbw "${bw[@]}"
            fi
        done
        for path in "${paths[@]}"; do
            # shellcheck disable=SC2086 # the MCA arguments split on purpose
            run "$bind/path:${path%%:*}" "$OUT/raw/$bind-path-${path%%:*}-$rep.log" "tcp;ofi_rxm" \
                rdma ofi,self --bind-to "$bind" ${path#*:} "$bindir/osc_bench" -ops put,get,fop,cas \
                "${plat[@]}"
        done
    done
done

# medians over the repetitions
sort -t$'\t' -k1,1 -k2,2 -k3,3n -k4,4 -k5,5g "$OUT/data.tsv" |
    awk -F'\t' '{ k = $1 "\t" $2 "\t" $3 "\t" $4; n[k]++; v[k, n[k]] = $5 }
    END { for (k in n) print k "\t" v[k, int((n[k] + 1) / 2)] }' | sort -t$'\t' -k1,1 -k2,2 -k4,4 -k3,3n >"$OUT/medians.tsv"

# table-BIND.md and goals-BIND.md, per binding (written in OUT)
cd "$OUT" || die "no $OUT"
tables() { # bind
    awk -F'\t' -v provs="$PROVIDERS" -v bind="$1" '
    index($1, "none/raw:") == 1 { w = $1; sub("^none/", "", w); rawm[w SUBSEP $2 SUBSEP $3 SUBSEP $4] = $5 }
    index($1, bind "/") != 1 { next }
    { sub("^" bind "/", "", $1) }
    $1 ~ /^path:/ { w = $1; sub(/^path:/, "", w); paths[w] = 1 }
    { m[$1 SUBSEP $2 SUBSEP $3 SUBSEP $4] = $5; if (!(($2 SUBSEP $3 SUBSEP $4) in seen)) { seen[$2 SUBSEP $3 SUBSEP $4] = 1; keys[++nk] = $2 SUBSEP $3 SUBSEP $4 } }
    function f(x) { return x == "" ? "-" : (x >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
    function human(s) { return s >= 1048576 ? (s / 1048576) " MiB" : (s >= 1024 ? (s / 1024) " KiB" : s " B") }
    END {
        np = split(provs, P, " ")
        hdr = "| operation | size | anchor |"; sep = "|---|---|---|"
        for (i = 1; i <= np; i++) { hdr = hdr " ours " P[i] " | ratio |"; sep = sep "---|---|" }
        print "Latency in us per operation + MPI_Win_flush (lower is better), bandwidth in MB/s (higher is better); ratio = ours / anchor. Floor: ob1 over ours, half a ping-pong of 8 B.\n" > ("table-" bind ".md")
        print hdr > ("table-" bind ".md"); print sep > ("table-" bind ".md")
        for (j = 1; j <= nk; j++) {
            split(keys[j], k, SUBSEP)
            if (k[3] == "rate" || k[1] == "send") continue
            line = "| " k[1] " " (k[3] == "lat" ? "latency" : "bandwidth") " | " human(k[2]) " | " f(m["anchor" SUBSEP keys[j]]) " |"
            for (i = 1; i <= np; i++) {
                o = m["ours:" P[i] SUBSEP keys[j]]; a = m["anchor" SUBSEP keys[j]]
                line = line " " f(o) " | " ((o != "" && a > 0) ? sprintf("%.2f", o / a) : "-") " |"
            }
            print line > ("table-" bind ".md")
        }
        line = "| floor: ob1 over ours, send | 8 B | - |"
        for (i = 1; i <= np; i++) line = line " " f(m["floor:" P[i] SUBSEP "send" SUBSEP 8 SUBSEP "lat"]) " | - |"
        print line > ("table-" bind ".md")

        print "| goal | provider | ours | against | verdict |" > ("goals-" bind ".md")
        print "|---|---|---|---|---|" > ("goals-" bind ".md")
        for (i = 1; i <= np; i++) {
            fl = m["floor:" P[i] SUBSEP "send" SUBSEP 8 SUBSEP "lat"]
            for (o = 1; o <= 2; o++) {
                op = o == 1 ? "put" : "get"
                v = m["ours:" P[i] SUBSEP op SUBSEP 8 SUBSEP "lat"]; a = m["anchor" SUBSEP op SUBSEP 8 SUBSEP "lat"]
                printf "| %s 8 B + flush <= 2 x floor | %s | %s us | 2 x %s us | %s |\n", op, P[i], f(v), f(fl), (v != "" && fl != "" && v <= 2 * fl) ? "met" : "MISSED" > ("goals-" bind ".md")
                printf "| %s 8 B + flush <= anchor | %s | %s us | %s us | %s |\n", op, P[i], f(v), f(a), (v != "" && a != "" && v <= a) ? "met" : "MISSED" > ("goals-" bind ".md")
            }
            for (o = 1; o <= 2; o++) {
                op = o == 1 ? "put" : "get"; worst = ""; wsz = ""
                for (j = 1; j <= nk; j++) {
                    split(keys[j], k, SUBSEP)
                    if (k[1] != op || k[3] != "bw" || k[2] < 65536) continue
                    v = m["ours:" P[i] SUBSEP keys[j]]; a = m["anchor" SUBSEP keys[j]]
                    if (v == "" || a == "") continue
                    r = v / a
                    if (worst == "" || r < worst) { worst = r; wsz = k[2] }
                }
                printf "| %s bandwidth >= anchor from 64 KiB | %s | lowest ratio %s at %s | 1.00 | %s |\n", op, P[i], worst == "" ? "-" : sprintf("%.2f", worst), wsz == "" ? "-" : human(wsz), (worst != "" && worst >= 1) ? "met" : "MISSED" > ("goals-" bind ".md")
            }
        }
        print "| provider | operation | size | ours | provider itself (raw) | ours / raw | anchor | raw / anchor |" > ("ceiling-" bind ".md")
        print "|---|---|---|---|---|---|---|---|" > ("ceiling-" bind ".md")
        for (i = 1; i <= np; i++) {
            for (j = 1; j <= nk; j++) {
                split(keys[j], k, SUBSEP)
                if (k[3] != "bw" || k[2] < 65536 || (k[2] != 65536 && k[2] != 1048576 && k[2] != 4194304)) continue
                v = m["ours:" P[i] SUBSEP keys[j]]; rw = rawm["raw:" P[i] SUBSEP keys[j]]; a = m["anchor" SUBSEP keys[j]]
                printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", P[i], k[1], human(k[2]), f(v), f(rw), (v != "" && rw > 0) ? sprintf("%.2f", v / rw) : "-", f(a), (rw != "" && a > 0) ? sprintf("%.2f", rw / a) : "-" > ("ceiling-" bind ".md")
            }
        }
        print "| path (tcp;ofi_rxm) | put 8 B | get 8 B | fop 8 B | cas 8 B | floor |" > ("paths-" bind ".md")
        print "|---|---|---|---|---|---|" > ("paths-" bind ".md")
        fl = f(m["floor:tcp;ofi_rxm" SUBSEP "send" SUBSEP 8 SUBSEP "lat"])
        printf "| default | %s | %s | %s | %s | %s |\n", f(m["ours:tcp;ofi_rxm" SUBSEP "put" SUBSEP 8 SUBSEP "lat"]), f(m["ours:tcp;ofi_rxm" SUBSEP "get" SUBSEP 8 SUBSEP "lat"]), f(m["ours:tcp;ofi_rxm" SUBSEP "fop" SUBSEP 8 SUBSEP "lat"]), f(m["ours:tcp;ofi_rxm" SUBSEP "cas" SUBSEP 8 SUBSEP "lat"]), fl > ("paths-" bind ".md")
        for (w in paths) {
            printf "| %s | %s | %s | %s | %s | %s |\n", w, f(m["path:" w SUBSEP "put" SUBSEP 8 SUBSEP "lat"]), f(m["path:" w SUBSEP "get" SUBSEP 8 SUBSEP "lat"]), f(m["path:" w SUBSEP "fop" SUBSEP 8 SUBSEP "lat"]), f(m["path:" w SUBSEP "cas" SUBSEP 8 SUBSEP "lat"]), fl > ("paths-" bind ".md")
        }
    }' "$OUT/medians.tsv"
    [[ -s table-$1.md && -s goals-$1.md ]] || die "no table was made for --bind-to $1"
}
for bind in $BINDINGS; do
    tables "$bind"
done

# plots: latency and bandwidth against size, one line per contender, one
# file per binding and provider
if command -v gnuplot >/dev/null 2>&1; then
    for bind in $BINDINGS; do
        for prov in $PROVIDERS; do
            p=${prov//;/+}
            for what in put:lat get:lat acc:lat put:bw get:bw; do
                op=${what%:*} metric=${what#*:}
                for who in anchor "ours:$prov"; do
                    awk -F'\t' -v w="$bind/$who" -v o="$op" -v mt="$metric" \
                        '$1 == w && $2 == o && $4 == mt { print $3, $5 }' \
                        "$OUT/medians.tsv" >"$OUT/plots/.$op-$metric-${who//[:;]/+}.dat"
                done
            done
            gnuplot <<EOF 2>>"$OUT/plots/gnuplot.log"
set terminal png size 1200,420 noenhanced
set output "$OUT/plots/$bind-$p.png"
set multiplot layout 1,3 title "one-sided across two hosts, --bind-to $bind: osc/rdma over ours ($prov) against osc/pt2pt over ob1 + btl/tcp"
set logscale xy 2
set xtics ("8 B" 8, "64 B" 64, "1 KiB" 1024, "16 KiB" 16384, "256 KiB" 262144, "4 MiB" 4194304)
set key top left
set xlabel "size"
set ylabel "us per operation + flush"
set title "put and get latency"
plot "$OUT/plots/.put-lat-ours+$p.dat" w lp t "put, ours", "$OUT/plots/.get-lat-ours+$p.dat" w lp t "get, ours", \
     "$OUT/plots/.put-lat-anchor.dat" w lp t "put, osc/pt2pt", "$OUT/plots/.get-lat-anchor.dat" w lp t "get, osc/pt2pt"
set title "accumulate latency"
plot "$OUT/plots/.acc-lat-ours+$p.dat" w lp t "ours", "$OUT/plots/.acc-lat-anchor.dat" w lp t "osc/pt2pt"
set ylabel "MB/s"
set title "bandwidth"
set logscale y 10
plot "$OUT/plots/.put-bw-ours+$p.dat" w lp t "put, ours", "$OUT/plots/.get-bw-ours+$p.dat" w lp t "get, ours", \
     "$OUT/plots/.put-bw-anchor.dat" w lp t "put, osc/pt2pt", "$OUT/plots/.get-bw-anchor.dat" w lp t "get, osc/pt2pt"
unset multiplot
EOF
            # the same latencies as text, for the README
            gnuplot <<EOF >"$OUT/plots/$bind-$p.txt" 2>>"$OUT/plots/gnuplot.log"
set terminal dumb 78 24
set logscale xy 2
set xtics ("8B" 8, "64B" 64, "1K" 1024, "16K" 16384, "256K" 262144, "4M" 4194304)
set key top left
set title "us per put/get + flush, --bind-to $bind, $prov"
plot "$OUT/plots/.put-lat-ours+$p.dat" w lp t "put ours", "$OUT/plots/.get-lat-ours+$p.dat" w lp t "get ours", \
     "$OUT/plots/.put-lat-anchor.dat" w lp t "put pt2pt", "$OUT/plots/.get-lat-anchor.dat" w lp t "get pt2pt"
EOF
        done
    done
    rm -f "$OUT"/plots/.*.dat
else
    say "no gnuplot (apt-get install gnuplot-nox): no plots"
fi

# everything of one binding, for the terminal and the README
report() { # bind
    if [[ $1 == core ]]; then
        echo "--bind-to core (Open MPI's default for 2 ranks: here both ranks share core 0):"
    else
        echo "--bind-to $1 (scripts/ofirun's default: the ranks float over both cores):"
    fi
    echo
    cat "$OUT/table-$1.md"
    echo
    cat "$OUT/goals-$1.md"
    echo
    if [[ -s $OUT/plots/$1-tcp+ofi_rxm.txt ]]; then
        echo "Latency against size, tcp;ofi_rxm (plots/$1-*.png: every provider, accumulate, bandwidth):"
        echo
        sed 's/^/    /' "$OUT/plots/$1-tcp+ofi_rxm.txt"
        echo
    fi
    echo "Bandwidth (MB/s) against what the provider itself carries on this link (raw: bench/fi_floor, fi_write and fi_read with a window in flight):"
    echo
    cat "$OUT/ceiling-$1.md"
    echo
    echo "Other paths of ours (8 B, us per operation + flush):"
    echo
    cat "$OUT/paths-$1.md"
    echo
}

if [[ ${UPDATE_README:-0} == 1 ]] && ((!quick)); then
    block=$(
        echo "(hosts-bench begin)"
        echo
        echo "bench/hosts.sh, $(date -u +%F), commit $(sed -n 's/^commit: //p' "$OUT/env.txt" 2>/dev/null || git -C "$repo" rev-parse --short HEAD), $REPS repetition(s), medians; plots in ${OUT#"$repo"/}/plots/"
        echo
        for bind in $BINDINGS; do
            report "$bind"
        done
        echo "(hosts-bench end)"
    )
    BLOCK=$block awk 'BEGIN { b = ENVIRON["BLOCK"] } /^\(hosts-bench begin\)/ { print b; skip = 1; next }
        /^\(hosts-bench end\)/ { skip = 0; next } !skip' "$repo/README" >"$OUT/README.new" &&
        mv "$OUT/README.new" "$repo/README"
fi
for bind in $BINDINGS; do
    report "$bind"
done
say "results in $OUT"
exit $bad
