#!/usr/bin/env bash
#
# bench/compare.sh: THE benchmark comparison of this project's btl/ofi.
#
#   bash bench/compare.sh              full comparison (~20 min here)
#   QUICK=1 bash bench/compare.sh      seconds-long smoke (tests/run.sh runs it
#                                      as its `bench' test)
#
# Contenders, run round-robin in one invocation over REPS repetitions (odd
# repetitions in list order, even ones in reverse), each run under timeout:
#   ours        this repository's btl/ofi (installed in ./_install, found
#               first on mca_base_component_path), pml ob1 + osc rdma,
#               btl ofi,self, btl_ofi_provider_include PROVIDER
#   reference   Debian's Open MPI 4.1.4 btl/ofi (no component path of ours),
#               osc rdma, btl ofi,vader,self with btl_vader_flags send (it
#               carries no two-sided traffic, ob1 needs vader to start),
#               btl_ofi_provider_include PROVIDER (its default exclude list
#               names every provider here)
#   osc-ucx     osc ucx, pml ob1, btl vader,self (one-sided; no provider)
#   ob1-vader   pml ob1 over btl vader,self (two-sided; no provider)
#   ob1-tcp     pml ob1 over btl tcp,self (two-sided; no provider)
#   raw         bench/fi_floor on PROVIDER: libfabric directly
# Programs: bench/osc_bench (one-sided), bench/p2p_bench (two-sided),
# bench/fi_floor (raw); see their headers for what exactly is timed.
#
# Environment:
#   PROVIDERS   space-separated (default "shm sockets tcp;ofi_rxm udp;ofi_rxd")
#   REPS        repetitions (default 3; 5 takes about 40 min here)
#   CONTENDERS  subset of "ours reference osc-ucx ob1-vader ob1-tcp raw"
#   TIMEOUT     seconds per program run (default 90; QUICK: 30)
#   OUT         result folder (default bench/results/<date>, QUICK:
#               bench/results/quick-<date>)
#   QUICK=1     shm only, 1 repetition, 3 sizes, tiny iteration counts
#   REPORT_ONLY=1  measure nothing: make table, targets, plots and summary
#               again from the data of the run in OUT (after report.awk
#               changes)
#   UPDATE_README=1  replace README's benchmark block (between the lines
#               "(bench-summary begin)" and "(bench-summary end)") with
#               summary.md; never for QUICK runs
#
# Writes OUT/: raw/ (every run's output), runs.tsv (how every run ended),
# data.tsv (every measurement), medians.tsv, table.md (medians with ratios
# ours/reference, ours/osc-ucx, ours/raw, ...), targets.md (the project's
# targets, met or missed), plots/*.png (latency and bandwidth against size,
# one line per contender, one file per provider and op family), env.txt
# (machine, versions, exact command lines), summary.md (key points as
# speedups and the targets' verdicts: the README's block), failures.txt.
#
# Exit status: 0, or 1 when a benchmark program does not build, when the
# component cannot be found, or when a run of OUR component or of the raw
# floor did not end well (crashed, hung, refused, wrong data). Failures of
# the reference, osc/ucx and ob1 are recorded in the table, not failures.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
quick=${QUICK:-0}
[[ $quick == 1 ]] || quick=0
if ((quick)); then
    PROVIDERS=${PROVIDERS:-shm}
    REPS=${REPS:-1}
    TIMEOUT=${TIMEOUT:-30}
    OUT=${OUT:-$here/results/quick-$(date +%Y-%m-%d)}
else
    PROVIDERS=${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}
    REPS=${REPS:-3}
    TIMEOUT=${TIMEOUT:-90}
    OUT=${OUT:-$here/results/$(date +%Y-%m-%d)}
fi
CONTENDERS=${CONTENDERS:-ours reference osc-ucx ob1-vader ob1-tcp raw}
read -r -a providers <<<"$PROVIDERS"
read -r -a contenders <<<"$CONTENDERS"

# Benchmark options. Full: 10 sizes from 1 B to 4 MiB, median of 9 timed
# runs of ~5 ms each (many short runs: on a shared machine a preempted run
# is an outlier the median drops; a point stops after 3 runs when they take
# far longer than planned), 64 operations in flight (at most 16 MiB).
# udp;ofi_rxd moves about 30 MB/s here, so it gets longer runs and at most
# 4 MiB in flight.
FULL_OPTS=(-runs 9 -run-ms 5 -warm-ms 5 -window 64 -wbytes 16m
    -sizes 1,8,64,512,4k,16k,64k,256k,1m,4m)
UDP_OPTS=(-runs 5 -run-ms 10 -warm-ms 5 -window 64 -wbytes 4m
    -sizes 1,8,64,512,4k,32k,64k,256k,1m,4m)
QUICK_OPTS=(-runs 1 -run-ms 1 -warm-ms 0 -iters 1:200 -window 8 -wbytes 1m -sizes 8,64k,1m)

bindir=$here/bin
t_start=$SECONDS
failures=()

say() { echo "compare: $*"; }
die() {
    say "FAILED: $*"
    mkdir -p "$OUT" && echo "$*" >>"$OUT/failures.txt"
    exit 1
}

# Settings from the caller's environment would change what is measured.
unset_vars=$(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p' | tr '\n' ' ')
for v in $unset_vars; do unset "$v"; done

report_only=${REPORT_ONLY:-0}
[[ $report_only == 1 ]] || report_only=0
if ((report_only)); then
    [[ -s $OUT/runs.tsv && -s $OUT/data.tsv && -s $OUT/meta.sh ]] ||
        { say "REPORT_ONLY=1: $OUT has no runs.tsv, data.tsv and meta.sh of a run"; exit 1; }
    # shellcheck source=/dev/null
    . "$OUT/meta.sh"
    read -r -a providers <<<"$PROVIDERS"
    rm -rf "$OUT/plots"
    mkdir -p "$OUT/plots/data" || exit 1
else
    rm -rf "$OUT/raw" "$OUT/plots" "$OUT/failures.txt"
    mkdir -p "$OUT/raw" "$OUT/plots/data" "$bindir" || exit 1
    : >"$OUT/failures.txt"
fi
ptok() { local p=${1//;/+}; echo "${p:--}"; } # file-name form of a provider

# ------------------------------------------------------------------
# 1. tools: gnuplot (installed when missing, as root)
# ------------------------------------------------------------------
have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        say "installing gnuplot-nox"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends gnuplot-nox </dev/null >"$OUT/apt.log" 2>&1 ||
            { apt-get update >>"$OUT/apt.log" 2>&1 &&
                apt-get install -y --no-install-recommends gnuplot-nox </dev/null >>"$OUT/apt.log" 2>&1; }
    fi
    if ! command -v gnuplot >/dev/null 2>&1; then
        have_gnuplot=0
        say "warning: no gnuplot (apt-get install gnuplot-nox as root): no plots"
    fi
fi

# Steps 2 to 5 measure; REPORT_ONLY=1 skips them (and env.txt) and makes
# the tables, targets, plots and summary again from OUT's data.
if ((!report_only)); then
# ------------------------------------------------------------------
# 2. the benchmark programs
# ------------------------------------------------------------------
: >"$OUT/build.log"
for prog in osc_bench p2p_bench fi_floor; do
    libs=()
    [[ $prog == fi_floor ]] && libs=(-lfabric)
    if ! mpicc -O2 -Wall -o "$bindir/$prog" "$here/$prog.c" "${libs[@]}" >>"$OUT/build.log" 2>&1; then
        cat "$OUT/build.log"
        die "$prog does not build (see $OUT/build.log)"
    fi
done
say "built bench/bin/{osc_bench,p2p_bench,fi_floor}"

# ------------------------------------------------------------------
# 3. our component
# ------------------------------------------------------------------
prefix=${BTL_OFI_PREFIX:-$repo/_install}
so=$prefix/lib/openmpi/mca_btl_ofi.so
if [[ ! -f $so ]]; then
    say "no $so: building it with scripts/build.sh"
    bash "$repo/scripts/build.sh" >"$OUT/component-build.log" 2>&1 ||
        die "scripts/build.sh failed (see $OUT/component-build.log)"
fi
cpath=$("$repo/scripts/ofirun" --component-path) || die "scripts/ofirun --component-path failed"
ours_line=$(OMPI_MCA_mca_base_component_path=$cpath ompi_info 2>/dev/null | grep 'MCA btl: ofi' | head -n 1)
ref_line=$(ompi_info 2>/dev/null | grep 'MCA btl: ofi' | head -n 1)
[[ $ours_line == *"Component v0."* ]] || die "ompi_info does not see our btl/ofi through $cpath: $ours_line"
say "ours: ${ours_line#"${ours_line%%[! ]*}"}"

mpirun_base=(mpirun)
[[ $(id -u) -eq 0 ]] && mpirun_base+=(--allow-run-as-root)
if (($(nproc) >= 2)); then
    mpirun_base+=(-np 2 --bind-to core --map-by core)
else
    mpirun_base+=(-np 2 --oversubscribe --bind-to none)
fi

# ------------------------------------------------------------------
# 4. the jobs: contender|provider|group[+group...]
# ------------------------------------------------------------------
ops_of_group() {
    case $1 in
    lat) echo put,get,acc,fop ;;
    cas) echo cas ;;
    bw) echo putbw,getbw ;;
    p2plat) echo lat ;;
    stream) echo stream ;;
    rma) echo put,get,acc,fop,cas,putbw,getbw ;;
    msg) echo lat,stream ;;
    esac
}

wanted() { [[ " ${contenders[*]} " == *" $1 "* ]]; }

jobs=()
if ((quick)); then
    osc_groups=(lat+bw cas)
    p2p_groups=(p2plat+stream)
    raw_groups=(rma msg) # separate processes: see fi_floor.c on shm and fi_inject
    ucx_groups=(lat+bw+cas)
else
    osc_groups=(lat cas bw)
    p2p_groups=(p2plat stream)
    raw_groups=(rma msg)
    ucx_groups=(lat cas bw)
fi
for p in "${providers[@]}"; do
    for g in "${osc_groups[@]}"; do wanted ours && jobs+=("ours|$p|$g"); done
    for g in "${osc_groups[@]}"; do wanted reference && jobs+=("reference|$p|$g"); done
    for g in "${p2p_groups[@]}"; do wanted ours && jobs+=("ours|$p|$g"); done
    for g in "${raw_groups[@]}"; do wanted raw && jobs+=("raw|$p|$g"); done
done
for g in "${ucx_groups[@]}"; do wanted osc-ucx && jobs+=("osc-ucx|-|$g"); done
for g in "${p2p_groups[@]}"; do wanted ob1-vader && jobs+=("ob1-vader|-|$g"); done
for g in "${p2p_groups[@]}"; do wanted ob1-tcp && jobs+=("ob1-tcp|-|$g"); done

# The command of a job, in the array cmd.
build_cmd() { # contender provider groups
    local c=$1 p=$2 groups=$3 g ops="" prog sel=() opts=()
    for g in ${groups//+/ }; do ops+=${ops:+,}$(ops_of_group "$g"); done
    case $groups in
    *rma* | *msg*) prog=$bindir/fi_floor ;;
    *p2plat* | *stream*) prog=$bindir/p2p_bench ;;
    *) prog=$bindir/osc_bench ;;
    esac
    case $c in
    ours)
        sel=(--mca mca_base_component_path "$cpath" --mca pml ob1 --mca btl ofi,self
            --mca btl_ofi_provider_include "$p")
        [[ $prog == */osc_bench ]] && sel+=(--mca osc rdma)
        ;;
    reference)
        sel=(--mca pml ob1 --mca osc rdma --mca btl ofi,vader,self --mca btl_vader_flags send
            --mca btl_ofi_provider_include "$p")
        ;;
    osc-ucx) sel=(--mca pml ob1 --mca osc ucx --mca btl vader,self) ;;
    ob1-vader) sel=(--mca pml ob1 --mca btl vader,self) ;;
    ob1-tcp) sel=(--mca pml ob1 --mca btl tcp,self) ;;
    raw) sel=(--mca pml ob1 --mca btl vader,self) ;;
    esac
    if ((quick)); then
        opts=("${QUICK_OPTS[@]}")
    elif [[ $p == "udp;ofi_rxd" ]]; then
        opts=("${UDP_OPTS[@]}")
    else
        opts=("${FULL_OPTS[@]}")
    fi
    cmd=("${mpirun_base[@]}" "${sel[@]}" "$prog")
    [[ $c == raw ]] && cmd+=(-p "$p")
    cmd+=(-ops "$ops" "${opts[@]}")
}

# How a run ended: ok, hung, refused, crashed, wrong-data, not-ours, ...
classify() { # rc out err contender
    local rc=$1 out=$2 err=$3 c=$4
    if ((rc == 124 || rc == 137)); then
        echo hung
    elif grep -q '^# verify FAILED' "$out"; then
        echo wrong-data
    elif [[ $c == ours ]] && grep -q '^# btl_ofi_version ' "$out" &&
        ! grep -q '^# btl_ofi_version 0\.' "$out"; then
        echo not-ours
    elif [[ $c == reference ]] && grep -q '^# btl_ofi_version [0-9]' "$out"; then
        echo not-reference
    elif ((rc == 0)) && grep -q '^# verify ok' "$out"; then
        echo ok
    # 53 is MPI_ERR_WIN, mpirun's exit code when MPI_Win_create failed
    # (Open MPI's forwarding of the message to the terminal sometimes loses it)
    elif ((rc == 53)) || grep -q -E 'MPI_ERR_WIN|unable to reach each other|unreachable|pml-add-procs-fail|offers no FI_EP_RDM|No components were able' "$out" "$err"; then
        echo refused
    elif ((rc >= 128)) || grep -q -E 'Segmentation fault|signal [0-9]+|Aborted|core dumped' "$out" "$err"; then
        echo crashed
    else
        echo "failed-rc$rc"
    fi
}

# ------------------------------------------------------------------
# 5. run, round-robin over the repetitions
# ------------------------------------------------------------------
printf 'contender\tprovider\tgroup\trep\trc\tseconds\tstatus\n' >"$OUT/runs.tsv"
printf 'contender\tprovider\top\tsize\tmetric\trep\tvalue\n' >"$OUT/data.tsv"
: >"$OUT/commands.txt"
declare -A hangs=()
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
njobs=${#jobs[@]}
say "$njobs program runs per repetition, $REPS repetition(s), timeout ${TIMEOUT}s each, results in $OUT"

for ((rep = 1; rep <= REPS; rep++)); do
    order=()
    if ((rep % 2)); then
        order=("${jobs[@]}")
    else
        for ((k = njobs - 1; k >= 0; k--)); do order+=("${jobs[k]}"); done
    fi
    for job in "${order[@]}"; do
        IFS='|' read -r c p groups <<<"$job"
        pt=$(ptok "$p")
        name="${c}__${pt}__${groups}__r$rep"
        out=$OUT/raw/$name.out
        err=$OUT/raw/$name.err
        if ((${hangs[$job]:-0} >= 2)); then
            for g in ${groups//+/ }; do
                printf '%s\t%s\t%s\t%d\t-\t0\thung\n' "$c" "$p" "$g" "$rep" >>"$OUT/runs.tsv"
            done
            say "[rep $rep/$REPS] $c $p $groups: hung twice before, not run again (counted hung)"
            continue
        fi
        build_cmd "$c" "$p" "$groups"
        if ((rep == 1)); then
            printf '%q ' "${cmd[@]}" >>"$OUT/commands.txt"
            echo >>"$OUT/commands.txt"
        fi
        t0=$SECONDS
        sidfile=$OUT/raw/.sid
        # own session, so that whatever the run leaves behind can be found
        setsid --wait bash -c 'echo $$ >"$1"; shift; exec timeout -k 5 "$@"' _ "$sidfile" \
            "$TIMEOUT" "${cmd[@]}" >"$out" 2>"$err" </dev/null
        rc=$?
        secs=$((SECONDS - t0))
        sid=$(cat "$sidfile" 2>/dev/null)
        rm -f "$sidfile"
        if [[ -n $sid ]]; then
            left=$(ps -e -o pid=,sid= | awk -v s="$sid" '$2 == s { print $1 }')
            if [[ -n $left ]]; then
                # shellcheck disable=SC2086 # one pid per word
                kill -KILL $left 2>/dev/null
            fi
        fi
        status=$(classify "$rc" "$out" "$err" "$c")
        [[ $status == hung ]] && hangs[$job]=$((${hangs[$job]:-0} + 1))
        for g in ${groups//+/ }; do
            printf '%s\t%s\t%s\t%d\t%d\t%d\t%s\n' "$c" "$p" "$g" "$rep" "$rc" "$secs" "$status" >>"$OUT/runs.tsv"
        done
        case $status in
        wrong-data | not-ours | not-reference) ;; # its numbers are worthless
        *)
            awk -v c="$c" -v p="$p" -v r="$rep" -v OFS='\t' \
                'NF == 4 && $1 ~ /^[a-z]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^(lat|bw|rate)$/ \
                 { print c, p, $1, $2, $3, r, $4 }' "$out" >>"$OUT/data.tsv"
            ;;
        esac
        if [[ $status != ok && ($c == ours || $c == raw) ]]; then
            failures+=("$c $p $groups (repetition $rep): $status")
            echo "$c $p $groups (repetition $rep): $status, see raw/$name.out" >>"$OUT/failures.txt"
        fi
        say "[rep $rep/$REPS] $c $p $groups: $status (${secs}s)"
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
date_str=$(date '+%Y-%m-%d %H:%M %Z')
machine="$(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)), $(uname -sr)"
printf 'date_str=%q\nmachine=%q\nload_start=%q\nload_end=%q\nREPS=%q\nPROVIDERS=%q\nquick=%q\n' \
    "$date_str" "$machine" "$load_start" "$load_end" "$REPS" "$PROVIDERS" "$quick" >"$OUT/meta.sh"
fi # !report_only

# ------------------------------------------------------------------
# 6. medians, table, targets
# ------------------------------------------------------------------
{
    printf 'contender\tprovider\top\tsize\tmetric\tmedian\tn\n'
    tail -n +2 "$OUT/data.tsv" | sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3 -k4,4n -k5,5 -k7,7g |
        awk -F '\t' -v OFS='\t' '
            function flush() { if (n) print key, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2), n }
            { k = $1 OFS $2 OFS $3 OFS $4 OFS $5
              if (k != key) { flush(); key = k; n = 0 }
              v[++n] = $7 }
            END { flush() }'
} >"$OUT/medians.tsv"

{
    echo "# btl/ofi benchmark comparison, $date_str"
    echo
    echo "Machine: $machine. Load average at start $load_start, at end $load_end."
    echo "Repetitions: $REPS (round-robin). Details: env.txt; every run: runs.tsv."
    echo
    awk -v mode=table -v providers="${providers[*]}" -f "$here/report.awk" \
        "$OUT/medians.tsv" "$OUT/runs.tsv"
    echo "### How the runs ended"
    echo
    echo "| contender | provider | group | runs |"
    echo "|---|---|---|---|"
    tail -n +2 "$OUT/runs.tsv" | awk -F '\t' '
        { k = $1 "|" $2 "|" $3; if (!(k in seen)) { seen[k] = 1; keys[++n] = k }
          c[k, $7]++; if (index(" " st[k] " ", " " $7 " ") == 0) st[k] = st[k] " " $7 }
        END { for (i = 1; i <= n; i++) { k = keys[i]; m = split(st[k], w, " "); s = ""
                for (j = 1; j <= m; j++) s = s (j > 1 ? ", " : "") w[j] " " c[k, w[j]]
                split(k, f, "|"); printf "| %s | %s | %s | %s |\n", f[1], f[2], f[3], s } }'
} >"$OUT/table.md"
{
    echo "# Targets, $date_str"
    echo
    awk -v mode=targets -v providers="${providers[*]}" -f "$here/report.awk" \
        "$OUT/medians.tsv" "$OUT/runs.tsv"
} >"$OUT/targets.md"

# ------------------------------------------------------------------
# 7. plots: per provider and op family, latency and bandwidth vs size
# ------------------------------------------------------------------
# most frequent way the runs of a contender/provider/group ended, if not ok
run_status() { # contender provider group
    awk -F '\t' -v c="$1" -v p="$2" -v g="$3" '
        $1 == c && $2 == p && $3 == g { n[$7]++ }
        END { best = ""; for (s in n) if (s != "ok" && n[s] > bn) { best = s; bn = n[s] }
              print (best == "" ? "no data" : best) }' "$OUT/runs.tsv"
}

color_of() {
    case $1 in
    ours) echo '#1f4e9c' ;; reference) echo '#d62728' ;; osc-ucx) echo '#2ca02c' ;;
    ob1-vader) echo '#ff7f0e' ;; ob1-tcp) echo '#9467bd' ;; raw) echo '#000000' ;;
    esac
}

plot_one() { # provider family
    local p=$1 f=$2 pt gp png c pk dat m series notes g
    local -a cs
    pt=$(ptok "$p")
    png=$OUT/plots/${pt}_$f.png
    gp=$OUT/plots/${pt}_$f.gp
    if [[ $f == send ]]; then cs=(ours ob1-vader ob1-tcp raw); else cs=(ours reference osc-ucx raw); fi
    {
        echo "set terminal pngcairo size 1400,560 font ',11' noenhanced"
        echo "set output '$png'"
        echo "set multiplot layout 1,2 title '$f over $p: medians of $REPS repetitions ($(date +%Y-%m-%d), $(nproc) cores)'"
        echo "set logscale xy; set grid xtics ytics mytics; set key top left box opaque"
        echo "set xtics ('1' 1, '8' 8, '64' 64, '512' 512, '4K' 4096, '32K' 32768, '256K' 262144, '2M' 2097152)"
        echo "set xrange [0.7:6e6]; set xlabel 'message size (bytes)'"
        for m in lat bw; do
            if [[ $m == lat ]]; then
                echo "set title 'latency (lower is better)'; set ylabel 'microseconds'"
            else
                echo "set title 'bandwidth (higher is better)'; set ylabel 'MB/s (1e6 bytes/s)'"
            fi
            series=()
            notes=""
            for c in "${cs[@]}"; do
                pk=$p
                [[ $c == osc-ucx || $c == ob1-vader || $c == ob1-tcp ]] && pk=-
                dat=$OUT/plots/data/${c}_${pt}_${f}_$m.dat
                awk -F '\t' -v c="$c" -v p="$pk" -v o="$f" -v m="$m" \
                    '$1 == c && $2 == p && $3 == o && $5 == m { print $4, $6 }' \
                    "$OUT/medians.tsv" | sort -n >"$dat"
                if [[ -s $dat ]]; then
                    series+=("'$dat' using 1:2 with linespoints lw $([[ $c == ours ]] && echo 3 || echo 2) pt 7 ps 0.8 lc rgb '$(color_of "$c")' title '$c'")
                else
                    if [[ $c == raw ]]; then g=$([[ $f == send ]] && echo msg || echo rma)
                    elif [[ $f == send ]]; then g=$([[ $m == lat ]] && echo p2plat || echo stream)
                    else g=$([[ $m == lat ]] && echo lat || echo bw); fi
                    notes+="${notes:+, }$c: $(run_status "$c" "$pk" "$g")"
                fi
            done
            echo "unset label"
            [[ -n $notes ]] && echo "set label 1 'no line for $notes' at graph 0.02, graph 0.04 font ',10'"
            if ((${#series[@]})); then
                printf 'plot %s' "${series[0]}"
                printf ', %s' "${series[@]:1}"
                echo
            else
                echo "set yrange [1:10]; plot 1/0 notitle; set autoscale y"
            fi
        done
        echo "unset multiplot"
    } >"$gp"
    gnuplot "$gp" >>"$OUT/plots/gnuplot.log" 2>&1 || say "warning: gnuplot failed on $gp"
}

if ((have_gnuplot)); then
    for p in "${providers[@]}"; do
        for f in put get send; do plot_one "$p" "$f"; done
    done
    say "plots: $(ls "$OUT"/plots/*.png 2>/dev/null | wc -l) PNG files in $OUT/plots"
fi

# ------------------------------------------------------------------
# 8. env.txt (not for REPORT_ONLY=1: it describes the measuring run)
# ------------------------------------------------------------------
((report_only)) || {
    echo "date: $date_str"
    echo "command: QUICK=$quick PROVIDERS='$PROVIDERS' REPS=$REPS CONTENDERS='$CONTENDERS' TIMEOUT=$TIMEOUT bash bench/compare.sh"
    echo "duration: $((SECONDS - t_start)) s"
    echo "load average (1/5/15 min) at start: $load_start; at end: $load_end"
    echo "unset from the environment: ${unset_vars:-nothing}"
    echo
    echo "== machine"
    echo "nproc: $(nproc)"
    echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
    echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel: $(uname -a)"
    echo "os: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") (debian_version $(cat /etc/debian_version 2>/dev/null))"
    echo
    echo "== versions"
    echo "--- ompi_info | head -n 12"
    ompi_info 2>/dev/null | head -n 12
    echo "--- fi_info --version"
    fi_info --version 2>&1
    echo "--- our component (ompi_info with OMPI_MCA_mca_base_component_path=$cpath)"
    echo "${ours_line#"${ours_line%%[! ]*}"}"
    echo "file: $so ($(md5sum <"$so" | cut -d' ' -f1), $(date -r "$so" '+%Y-%m-%d %H:%M'))"
    echo "repository HEAD: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null) $(git -C "$repo" log -1 --format=%s 2>/dev/null)"
    echo "--- the reference (ompi_info, default component path)"
    echo "${ref_line#"${ref_line%%[! ]*}"}"
    echo "file: $(ompi_info --path pkglibdir 2>/dev/null | sed -n 's/^ *Pkglibdir: *//p')/mca_btl_ofi.so"
    echo "--- packages"
    dpkg-query -W -f='${Package} ${Version}\n' openmpi-bin libopenmpi3 libfabric1 libucx0 gnuplot-nox 2>/dev/null
    echo
    echo "== benchmark options"
    echo "full: ${FULL_OPTS[*]}"
    echo "udp;ofi_rxd: ${UDP_OPTS[*]}"
    echo "quick: ${QUICK_OPTS[*]}"
    echo
    echo "== exact command lines (repetition 1, in order; each under timeout -k 5 $TIMEOUT)"
    cat "$OUT/commands.txt"
} >"$OUT/env.txt"
((report_only)) || rm -f "$OUT/commands.txt"

# ------------------------------------------------------------------
# 9. summary.md (the README's benchmark block) and, with UPDATE_README=1,
#    README itself between its "bench-summary" marker lines
# ------------------------------------------------------------------
rel=${OUT#"$repo"/}
{
    echo "Latest comparison: $date_str"
    echo "Machine: $machine"
    echo "Load average at start $load_start, at end $load_end (shared machine)"
    echo "Command: REPS=$REPS PROVIDERS='$PROVIDERS' bash bench/compare.sh ($REPS repetitions, medians)"
    echo "Full table: $rel/table.md"
    echo "Targets: $rel/targets.md"
    echo "Machine, versions, exact command lines: $rel/env.txt"
    echo "Plots (latency and bandwidth against size, one line per contender):"
    echo "    $rel/plots/<provider>_{put,get,send}.png"
    echo
    awk -v mode=summary -v providers="${providers[*]}" -f "$here/report.awk" \
        "$OUT/medians.tsv" "$OUT/runs.tsv"
    echo
    echo "Targets (details and every check in targets.md):"
    echo
    awk '/^\| target \| provider \| checks/ { on = 1 } on && /^$/ { exit } on' "$OUT/targets.md"
} >"$OUT/summary.md"
if [[ ${UPDATE_README:-0} == 1 ]]; then
    if ((quick)); then
        say "UPDATE_README=1 ignored for a QUICK run"
    elif [[ $(grep -c '^(bench-summary [a-z]*)$' "$repo/README") -eq 2 ]]; then
        awk -v f="$OUT/summary.md" '
            /^\(bench-summary end\)$/ { skip = 0 }
            !skip { print }
            /^\(bench-summary begin\)$/ { while ((getline l < f) > 0) print l; skip = 1 }' \
            "$repo/README" >"$OUT/README.new" && mv "$OUT/README.new" "$repo/README" &&
            say "README: benchmark block updated from $rel/summary.md"
    else
        say "warning: README has no (bench-summary begin)/(bench-summary end) lines; not updated"
    fi
fi

say "table: $OUT/table.md; targets: $OUT/targets.md; env: $OUT/env.txt ($((SECONDS - t_start))s)"
if ((${#failures[@]})); then
    say "runs of ours or of the raw floor that did not end well:"
    printf '  %s\n' "${failures[@]}"
    exit 1
fi
exit 0
