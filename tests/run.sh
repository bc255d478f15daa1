#!/usr/bin/env bash
#
# THE test command of btl/ofi:   bash tests/run.sh
#
#  1. builds and installs the component with scripts/build.sh, configured
#     with --enable-fault-injection for the faults cases (scripts/build.sh also
#     installs missing Debian packages when run as root);
#  2. compiles the MPI test programs (mpicc -O2 -Wall) into tests/bin/;
#  3. checks that ompi_info, through the component path scripts/ofirun uses,
#     lists `btl: ofi' as OUR component (Component v0.1.0);
#  4. runs every MPI test for every provider and rank count through
#     scripts/ofirun (timeout each), with BTL_OFI_EXPECT_PROVIDER set so
#     the test checks which provider our component selected; then putget
#     and canary with 4 ranks and btl_ofi_emulate_rma 1 on every provider
#     but udp;ofi_rxd (which carries puts and gets as messages anyway),
#     and atomics with 4 ranks and osc_rdma_network_max_amo 32 (Open
#     MPI's default, which osc-rdma/patches 0005 lowers to 1), and on
#     windows with acc_single_intrinsic (single-element cases only);
#  4b. twosided: the cases of tests/twosided/run.sh (pml ob1 over btl
#     ofi,self only: ping-pong with each protocol forced, unexpected-message
#     flood, collectives, matching/probe/cancel, one- and two-sided mixed),
#     one PASS/FAIL line each;
#  4b'. coll: the cases of tests/coll/run.sh (coll/ofi raised to priority
#     90 over btl ofi with every provider and over btl vader, 2 and 4 ranks:
#     every result checked element by element, and proof that coll/ofi
#     served), one line each;
#  4c. faults: the cases of tests/faults/run.sh (a peer SIGKILLed in a
#     passive-target epoch and in a two-sided flood, registration exposure
#     through the BTL API, injected provider failures, MCA fuzz, ASan,
#     memcheck, back-to-back jobs; about 10 minutes), one line each;
#  4d. hosts: the cases of tests/hosts/run.sh on 2 simulated hosts (network
#     namespaces with their own hostname, pid namespace, /proc and
#     /dev/shm) x 2 ranks, tcp;ofi_rxm, sockets and udp;ofi_rxd: putget,
#     atomics, sync, canary with ofi,self and ofi,vader,self; pingpong,
#     flood, mixed, late; shm across hosts; lost ranks and hosts; rails
#     (two links: interface lists, one rail, every rail); one line each;
#  5. runs the bad-input cases of tests/badinput.sh, each counted as a test;
#  6. threads, progress, helgrind: the cases of tests/threads/run.sh, one
#     PASS/FAIL line per (provider, contexts, threads) group
#     (every provider x 3 (contexts, threads) pairs; BTL_OFI_FULL=1: the
#     whole N=1,2,4 x T=1,2,4,8 matrix; see that script);
#  7. intree: builds this folder as opal/mca/btl/ofi of Debian's Open MPI
#     4.1 source with scripts/check-in-tree.sh (one test; about 3 minutes);
#  8. bench: the benchmark comparisons' smoke, so that the harnesses cannot
#     rot: QUICK=1 bench/compare.sh (shm, 3 sizes, every contender once;
#     about a minute), QUICK=1 bench/coll.sh (coll/ofi against coll/tuned),
#     QUICK=1 bench/scale.sh (start-up and memory, np 4 and 8) and, as
#     root, QUICK=1 bench/hosts.sh (one-sided
#     across the simulated hosts; ten seconds); one PASS/FAIL line each.
#     Timings are never asserted.
#  9. package: tests/package.sh (root): the Debian package built with
#     scripts/package.sh, installed, checked (ompi_info, the demo with no
#     component path), removed and purged; one line per step.
# Prints PASS/FAIL lines (a FAIL shows the last 40 lines of its output; full
# logs are kept in tests/logs/) and ends with the line `N passed, N failed'.
# Exit status 1 if anything failed.
#
# Environment:
#   TESTS="putget atomics pairs dynattach gather sync canary mcs llist selfspin twosided coll faults hosts badinput threads progress helgrind intree bench package"
#                                          which tests to run
#   PROVIDERS="shm sockets tcp;ofi_rxm udp;ofi_rxd"
#   NPS="2 4"                              rank counts
#   BTL_OFI_SKIP_BUILD=1                   use the installed component as is
#   BTL_OFI_ALLOW_SKIP=1                   an unavailable provider is not a failure
#   BTL_OFI_TEST_TIMEOUT=300               seconds per MPI test run
#   BTL_OFI_PREFIX                         install prefix (default <repo>/_install)
#   BTL_OFI_INTREE_TIMEOUT=1800            seconds for the in-tree build check
#   BTL_OFI_FULL=1                         the full matrices instead of the
#                                          default cut (README, "Tests"):
#                                          back-to-back jobs, threads pairs,
#                                          helgrind, fuzz, ASan and memcheck
#                                          on every provider, 64 MiB on rxd,
#                                          every host fault, libopen-pal in
#                                          the in-tree build (about an hour
#                                          more)
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
bindir=$here/bin
logdir=$here/logs
ofirun=$repo/scripts/ofirun

TESTS=${TESTS:-putget atomics pairs dynattach gather sync canary mcs llist selfspin twosided coll faults hosts badinput threads progress helgrind intree bench package}
PROVIDERS=${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}
NPS=${NPS:-2 4}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-300}
mpi_tests=(putget atomics pairs dynattach sync canary mcs llist selfspin)

export BTL_OFI_TEST_BIN=$bindir BTL_OFI_LOG_DIR=$logdir
# The debugging switch of the test programs must never be on here.
unset BTL_OFI_NO_CHECK_OURS

tests=$here
# shellcheck source=tests/lib.sh
source "$here/lib.sh"
runner_help "$0" "$@"
passed=0
failed=0
skipped=0
failures=()
t_start=$SECONDS
group_names=()
group_secs=()

group_done() { # name start-seconds: the group's time for the summary
    group_names+=("$1")
    group_secs+=($((SECONDS - $2)))
}

mkdir -p "$bindir" "$logdir"
rm -f "$logdir"/*.log "$logdir"/*.out "$logdir"/*.err

pass() { # label secs [detail]
    passed=$((passed + 1))
    echo "PASS $1 ($2s)${3:+ -- $3}"
}

fail() { # label secs why [log]
    failed=$((failed + 1))
    # the summary repeats why (its first 300 characters): a CI excerpt
    # that keeps only the end of the output still says what went wrong
    failures+=("$1: ${3:0:300}")
    echo "FAIL $1 ($2s): $3"
    if [[ -n ${4:-} && -f $4 ]]; then
        echo "---- last 40 lines of ${4#"$repo"/} ----"
        tail -n 40 "$4"
        echo "---- end of ${4#"$repo"/} ----"
    fi
}

finish() {
    local total=$((SECONDS - t_start))
    echo
    echo "==== summary: $((total / 60)) min $((total % 60)) s in all; tests/logs/ has the full logs"
    if ((${#group_names[@]})); then
        local i line="minutes per group:"
        for i in "${!group_names[@]}"; do
            line+=" ${group_names[$i]} $(awk -v s="${group_secs[$i]}" 'BEGIN { printf "%.1f", s / 60 }')"
            ((i < ${#group_names[@]} - 1)) && line+=","
        done
        echo "$line"
    fi
    if ((skipped)); then
        echo "$skipped provider(s) skipped (BTL_OFI_ALLOW_SKIP=1)"
    fi
    if ((failed)); then
        echo "failed:"
        printf '  %s\n' "${failures[@]}"
    fi
    echo "$passed passed, $failed failed"
    if ((failed)); then
        exit 1
    fi
    exit 0
}

wanted() { # is test $1 in TESTS?
    local t
    for t in $TESTS; do
        [[ $t == "$1" ]] && return 0
    done
    return 1
}

echo "==== btl/ofi test suite: TESTS='$TESTS' PROVIDERS='$PROVIDERS' NPS='$NPS'"

# ------------------------------------------------------------------
# 1. build
# ------------------------------------------------------------------
t0=$SECONDS
g0=$SECONDS
if [[ ${BTL_OFI_SKIP_BUILD:-0} == 1 ]]; then
    if "$repo/scripts/build.sh" --deps-only >"$logdir/build.log" 2>&1; then
        echo "build skipped (BTL_OFI_SKIP_BUILD=1); using ${BTL_OFI_PREFIX:-$repo/_install}"
    else
        fail build $((SECONDS - t0)) "required packages are missing" "$logdir/build.log"
        finish
    fi
else
    # the faults cases need the test-only fault switch (btl_ofi_inject_fault),
    # which a production build leaves out
    if BTL_OFI_CONFIGURE_ARGS="--enable-fault-injection ${BTL_OFI_CONFIGURE_ARGS:-}" \
        "$repo/scripts/build.sh" >"$logdir/build.log" 2>&1; then
        pass build $((SECONDS - t0)) "scripts/build.sh (configure --enable-fault-injection)"
    else
        fail build $((SECONDS - t0)) "scripts/build.sh failed" "$logdir/build.log"
        finish
    fi
fi

echo "Open MPI: $(ompi_info --version 2>/dev/null | head -n 1)"
echo "libfabric: $(fi_info --version 2>/dev/null | tr '\n' ' ')"

# ------------------------------------------------------------------
# 2. compile the test programs
# ------------------------------------------------------------------
t0=$SECONDS
compile_ok=1
for prog in hello "${mpi_tests[@]}" gather; do
    if ! compile "$prog" >/dev/null; then
        fail "compile $prog" $((SECONDS - t0)) "mpicc failed" "$logdir/compile-$prog.log"
        compile_ok=0
    elif [[ -s $logdir/compile-$prog.log ]]; then
        echo "warning: compiling $prog printed:"
        cat "$logdir/compile-$prog.log"
    fi
done
if ((compile_ok)); then
    pass "compile tests" $((SECONDS - t0)) "hello ${mpi_tests[*]} gather"
fi

# ------------------------------------------------------------------
# 3. ompi_info sees OUR component
# ------------------------------------------------------------------
t0=$SECONDS
cpath=$("$ofirun" --component-path 2>"$logdir/ompi_info.log")
# ompi_info takes the component path from the environment only.
OMPI_MCA_mca_base_component_path=$cpath OMPI_MCA_mca_base_component_show_load_errors=1 \
    ompi_info >>"$logdir/ompi_info.log" 2>&1
line=$(grep 'MCA btl: ofi' "$logdir/ompi_info.log")
if [[ $(grep -c 'MCA btl: ofi' "$logdir/ompi_info.log") -eq 1 && $line == *"Component v0.1.0"* ]]; then
    pass "ompi_info btl:ofi is ours" $((SECONDS - t0)) "${line#"${line%%[! ]*}"}"
else
    fail "ompi_info btl:ofi is ours" $((SECONDS - t0)) \
        "expected one 'MCA btl: ofi ... Component v0.1.0' line with path $cpath, got: ${line:-nothing}" \
        "$logdir/ompi_info.log"
fi

# osc/rdma and rml/oob: ours, with osc-rdma/ and rml-oob/patches
# (scripts/build-ompi-fixes.sh), so every one-sided test below runs through
# our osc/rdma, and mpirun prints every show_help message a rank sends
for fc in "osc rdma dynamic-region-deadlock" "rml oob self-send-copy-before-callback"; do
    read -r fw name fix <<<"$fc"
    t0=$SECONDS
    patches=$(ompi_patches "$fw" "$name" "$cpath")
    if [[ $patches == *"$fix"* ]]; then
        pass "ompi_info $fw:$name is ours" $((SECONDS - t0)) "${fw}_${name}_patches: $patches"
    else
        fail "ompi_info $fw:$name is ours" $((SECONDS - t0)) \
            "ompi_info with path $cpath lists no ${fw}_${name}_patches with $fix (built with BTL_OFI_OMPI_FIXES=0?)"
    fi
done

group_done build $g0

# ------------------------------------------------------------------
# 4. MPI tests, per provider and rank count
# ------------------------------------------------------------------
run_mpi_test() { # prov np test [emulated | each | locked | amo32 | intrinsic | gathered | direct | gathered-mt | direct-mt]
    local prov=$1 np=$2 t=$3 mode=${4:-} emu=
    local label="$prov np=$np $t" log=$logdir/$t-${prov//;/+}-np$np${mode:+-$mode}.log
    local t0=$SECONDS rc
    local -a extra=() args=()
    # emulated: btl_ofi_emulate_rma 1, the message path udp;ofi_rxd takes by
    # default, on a provider where it is not the default; verbose 5 says it
    # was taken. each: llist attaches every element on its own while the
    # other ranks walk the list (osc-rdma/patches/0003)
    case $mode in
    emulated)
        emu=1 label+=" (puts and gets as messages)"
        extra=(--mca btl_ofi_emulate_rma 1 --mca btl_ofi_verbose 5)
        ;;
    each) label+=" (each element attached on its own)" args=(40 each) ;;
    locked) label+=" (under exclusive locks, claim then link)" args=(32 locked) ;;
    amo32)
        # Open MPI's own default: accumulates of up to 32 elements by btl
        # atomics, all in flight at once (osc-rdma/patches 0004)
        label+=" (osc_rdma_network_max_amo 32)"
        extra=(--mca osc_rdma_network_max_amo 32)
        ;;
    gathered | direct | gathered-mt | direct-mt)
        # tests/gather.c: small puts gathered into messages (btl_ofi_putv.c)
        # where btl/ofi does that (gathered), or not at all (direct:
        # udp;ofi_rxd, whose puts are messages already); -mt: with
        # MPI_THREAD_MULTIPLE and 4 threads putting at once
        label+=" (small puts $([[ $mode == gathered* ]] && echo "gathered into messages" || echo "not gathered")"
        label+="$([[ $mode == *-mt ]] && echo ", 4 threads, MPI_THREAD_MULTIPLE"))"
        args=($([[ $mode == gathered* ]] && echo yes || echo no))
        [[ $mode == *-mt ]] && args+=(threads)
        ;;
    intrinsic)
        # windows with the info key acc_single_intrinsic, single-element
        # cases only; on one node osc/rdma keeps the accumulate lock (the
        # hosts group counts that it goes without it across hosts)
        label+=" (acc_single_intrinsic)" args=(intrinsic)
        ;;
    esac
    if [[ ! -x $bindir/$t ]]; then
        fail "$label" 0 "tests/bin/$t was not compiled"
        return
    fi
    : >"$log"
    BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$log" "$test_timeout" \
        "$ofirun" -np "$np" --mca btl_ofi_provider_include "$prov" "${extra[@]}" "$bindir/$t" \
        "${args[@]}"
    rc=$?
    local secs=$((SECONDS - t0))
    if ((rc == 124 || rc == 137)); then
        fail "$label" $secs "timed out after ${test_timeout}s (hang?)" "$log"
    elif ((rc != 0)); then
        local what
        what=$(grep -m1 -o 'FAIL \[rank .*' "$log" | cut -c1-400)
        fail "$label" $secs "exit code $rc${what:+: $what}" "$log"
    elif ! grep -qx "OK $t" "$log"; then
        fail "$label" $secs "exit code 0 but no 'OK $t' line" "$log"
    elif [[ -n $emu ]] && ! grep -q "puts and gets carried as messages" "$log"; then
        fail "$label" $secs "btl_ofi_emulate_rma 1 given, but no rank said puts and gets were carried as messages" "$log"
    else
        pass "$label" $secs
    fi
}

any_mpi=0
for t in "${mpi_tests[@]}" gather; do
    wanted "$t" && any_mpi=1
done

if ((any_mpi)); then
    g0=$SECONDS
    for prov in $PROVIDERS; do
        why=$(provider_problem "$prov")
        if [[ -n $why ]]; then
            if [[ ${BTL_OFI_ALLOW_SKIP:-0} == 1 ]]; then
                skipped=$((skipped + 1))
                echo "SKIP $prov: $why (allowed by BTL_OFI_ALLOW_SKIP=1)"
            else
                echo "SKIP $prov: $why"
                failed=$((failed + 1))
                failures+=("SKIP $prov (counted as failed; BTL_OFI_ALLOW_SKIP=1 to allow)")
            fi
            continue
        fi
        for np in $NPS; do
            for t in "${mpi_tests[@]}"; do
                wanted "$t" || continue
                run_mpi_test "$prov" "$np" "$t"
            done
        done
        # a dynamic window whose region tables move while the others look
        # addresses up in them (osc/rdma without patch 0003: MPI_ERR_RMA_RANGE,
        # a get with another region's key, or a hang on shm)
        wanted llist && run_mpi_test "$prov" 4 llist each
        # appends under exclusive locks, the losers polling the tail under
        # the lock the winner needs (MPICH's rma/linked_list pattern)
        wanted llist && run_mpi_test "$prov" 4 llist locked
        wanted atomics && run_mpi_test "$prov" 4 atomics amo32
        for np in $NPS; do
            wanted gather || continue
            run_mpi_test "$prov" "$np" gather \
                "$([[ $prov == "udp;ofi_rxd" ]] && echo direct || echo gathered)"
        done
        # with threads where puts and gets are gathered (the gathering
        # locks)
        [[ $prov != "udp;ofi_rxd" ]] && wanted gather && run_mpi_test "$prov" 2 gather gathered-mt
        wanted atomics && run_mpi_test "$prov" 4 atomics intrinsic
        # the message path of puts and gets, forced where it is not the
        # default (udp;ofi_rxd runs it above): larger pieces than rxd's
        if [[ $prov != "udp;ofi_rxd" ]]; then
            for t in putget canary; do
                wanted "$t" || continue
                run_mpi_test "$prov" 4 "$t" emulated
            done
        fi
    done
    group_done onesided $g0
fi

# ------------------------------------------------------------------
# 4b. two-sided tests: tests/twosided/run.sh runs each case and prints one
#     PASS/FAIL/SKIP line for it
# ------------------------------------------------------------------
run_sub_cases() { # script label-prefix case...
    local script=$1 prefix=$2 c t0 log line
    shift 2
    for c in "$@"; do
        t0=$SECONDS
        log=$logdir/$prefix-run-${c//[:;]/-}.log
        PROVIDERS=$PROVIDERS BTL_OFI_TEST_TIMEOUT=$test_timeout \
            "$script" "$c" </dev/null >"$log" 2>&1
        line=$(grep -m1 -E '^(PASS|FAIL|SKIP) ' "$log")
        if [[ $line =~ ^PASS\ (.*)\ \([0-9]+s\)(\ --\ (.*))?$ ]]; then
            pass "${BASH_REMATCH[1]}" $((SECONDS - t0)) "${BASH_REMATCH[3]}"
        elif [[ $line =~ ^SKIP\ ([^:]*):\ (.*)$ ]]; then
            skipped=$((skipped + 1))
            echo "SKIP ${BASH_REMATCH[1]}: ${BASH_REMATCH[2]}"
        elif [[ $line =~ ^FAIL\ (.*)\ \([0-9]+s\):\ (.*)$ ]]; then
            fail "${BASH_REMATCH[1]}" $((SECONDS - t0)) "${BASH_REMATCH[2]}" "$log"
        else
            fail "$prefix $c" $((SECONDS - t0)) "${script#"$repo"/} printed no result line" "$log"
        fi
    done
}

if wanted twosided; then
    g0=$SECONDS
    run_sub_cases "$here/twosided/run.sh" twosided \
        $(PROVIDERS=$PROVIDERS "$here/twosided/run.sh" --list)
    group_done twosided $g0
fi

# coll: tests/coll/run.sh (coll/ofi raised over every provider and vader)
if wanted coll; then
    g0=$SECONDS
    run_sub_cases "$here/coll/run.sh" coll \
        $(PROVIDERS=$PROVIDERS "$here/coll/run.sh" --list)
    group_done coll $g0
fi

# faults: tests/faults/run.sh (peer death, registration exposure, injected
# provider failures, MCA fuzz, AddressSanitizer, memcheck, endurance)
if wanted faults; then
    g0=$SECONDS
    if [[ -x $here/faults/run.sh ]]; then
        run_sub_cases "$here/faults/run.sh" faults \
            $(PROVIDERS=$PROVIDERS "$here/faults/run.sh" --list)
    else
        fail faults 0 "tests/faults/run.sh is missing"
    fi
    group_done faults $g0
fi

# hosts: tests/hosts/run.sh (2 simulated hosts x 2 ranks: one-sided and
# two-sided traffic across hosts, shm across hosts, lost hosts)
if wanted hosts; then
    g0=$SECONDS
    hprov=""
    for p in $PROVIDERS; do
        [[ $p == shm ]] || hprov="$hprov $p"
    done
    run_sub_cases "$here/hosts/run.sh" hosts \
        $(PROVIDERS=${hprov# } "$here/hosts/run.sh" --list)
    group_done hosts $g0
fi

# ------------------------------------------------------------------
# 5. bad input
# ------------------------------------------------------------------
if wanted badinput; then
    g0=$SECONDS
    for c in $("$here/badinput.sh" --list); do
        t0=$SECONDS
        log=$logdir/badinput-run-$c.log
        "$here/badinput.sh" "$c" >"$log" 2>&1
        rc=$?
        if ((rc == 0)) && grep -q "^PASS badinput/$c" "$log"; then
            note=$(grep "^PASS badinput/$c" "$log" | sed 's/^.* -- //')
            pass "badinput/$c" $((SECONDS - t0)) "$note"
        else
            detail=$logdir/badinput-$c.log
            [[ -f $detail ]] || detail=$log
            fail "badinput/$c" $((SECONDS - t0)) \
                "$(grep -m1 "^FAIL" "$log" | sed 's/^FAIL [^:]*: //')" "$detail"
        fi
    done
    group_done badinput $g0
fi

# ------------------------------------------------------------------
# 6. thread tests: tests/threads/run.sh runs each case and prints one
#    PASS/FAIL/SKIP line for it
# ------------------------------------------------------------------
for group in threads progress helgrind; do
    wanted "$group" || continue
    g0=$SECONDS
    run_sub_cases "$here/threads/run.sh" threads \
        $(PROVIDERS=$PROVIDERS "$here/threads/run.sh" --list "$group")
    group_done "$group" $g0
done

# ------------------------------------------------------------------
# 7. in-tree build (scripts/check-in-tree.sh; its work dir is removed
#    when it passes, kept when it fails; its phase logs go to tests/logs/)
#    With package (and bench) in TESTS it runs beside them: its autogen
#    and configure (a minute, one core, no MPI) overlap their builds and
#    smoke runs, whose times are not judged; package waits until the
#    in-tree build's apt-get phases (packages, fetch) are over, as both
#    use apt and dpkg.
# ------------------------------------------------------------------
intree_pid=
intree_pending=0
intree_start() {
    intree_t0=$SECONDS
    intree_log=$logdir/intree.log
    intree_apt=$logdir/intree-apt-done
    rm -f "$intree_apt"
    if ! intree_work=$(mktemp -d "${TMPDIR:-/tmp}/btl-ofi-intree.XXXXXX"); then
        intree_work=
        return
    fi
    BTL_OFI_INTREE_APT_DONE=$intree_apt timeout -k 30 "${BTL_OFI_INTREE_TIMEOUT:-1800}" \
        "$repo/scripts/check-in-tree.sh" "$intree_work" </dev/null >"$intree_log" 2>&1 &
    intree_pid=$!
}

# until the in-tree build's apt phases ended (or the build itself did)
intree_apt_wait() {
    [[ -n $intree_pid ]] || return 0
    while [[ ! -e $intree_apt ]] && kill -0 "$intree_pid" 2>/dev/null; do
        sleep 0.5
    done
}

intree_finish() {
    local rc times why f
    if [[ -z $intree_work ]]; then
        fail intree 0 "mktemp -d failed"
        group_done intree "$intree_t0"
        return
    fi
    wait "$intree_pid"
    rc=$?
    intree_pid=
    for f in "$intree_work"/logs/*.log; do
        [[ -f $f ]] && cp "$f" "$logdir/intree-${f##*/}"
    done
    times=$(sed -n '/^in-tree: phase times/,/^  total/s/^  \([a-z]*\) *\([0-9]*\).*/\1 \2s/p' "$intree_log" |
        paste -sd, - | sed 's/,/, /g')
    if ((rc == 0)) && grep -qx 'in-tree: PASS' "$intree_log"; then
        pass intree $((SECONDS - intree_t0)) "mca_btl_ofi.so built in Open MPI 4.1's tree ($times)"
        rm -rf "$intree_work"
    else
        why=$(grep -m1 '^in-tree: FAIL' "$intree_log" | sed 's/^in-tree: FAIL //')
        ((rc == 124 || rc == 137)) && why="timed out after ${BTL_OFI_INTREE_TIMEOUT:-1800}s${why:+; $why}"
        fail intree $((SECONDS - intree_t0)) "${why:-exit code $rc} (work dir $intree_work${times:+; $times})" "$intree_log"
    fi
    rm -f "$intree_apt"
    group_done intree "$intree_t0"
}

if wanted intree; then
    intree_start
    if ! wanted package || ((EUID != 0)); then
        intree_finish
    else
        intree_pending=1
    fi
fi

# ------------------------------------------------------------------
# 8. benchmark smoke (bench/compare.sh QUICK=1; results in tests/logs/bench/)
# ------------------------------------------------------------------
if wanted bench; then
    t0=$SECONDS
    log=$logdir/bench.log
    out=$logdir/bench
    rm -rf "$out"
    QUICK=1 OUT=$out timeout -k 15 300 bash "$repo/bench/compare.sh" </dev/null >"$log" 2>&1
    rc=$?
    runs=$(tail -n +2 "$out/runs.tsv" 2>/dev/null | wc -l)
    notok=$(tail -n +2 "$out/runs.tsv" 2>/dev/null | awk -F '\t' '$7 != "ok"' | wc -l)
    ours=$(awk -F '\t' '$1 == "ours"' "$out/medians.tsv" 2>/dev/null | wc -l)
    if ((rc == 0)) && [[ -s $out/table.md && -s $out/targets.md && -s $out/env.txt ]] && ((ours > 0)); then
        pass bench $((SECONDS - t0)) "QUICK=1 bench/compare.sh: $runs runs ($notok of them not ok, none of ours or raw), $ours values of ours, $(ls "$out"/plots/*.png 2>/dev/null | wc -l) plots"
    else
        why=$(grep -m1 'FAILED' "$log" || head -n 1 "$out/failures.txt" 2>/dev/null)
        ((rc == 124 || rc == 137)) && why="timed out after 300s"
        fail bench $((SECONDS - t0)) "${why:-exit code $rc; $ours values of ours in medians.tsv}" "$log"
    fi
    # the one-sided comparison across the simulated hosts (root only)
    if ((EUID == 0)); then
        t1=$SECONDS
        log=$logdir/bench-hosts.log
        out=$logdir/bench-hosts
        rm -rf "$out"
        # the harness's smoke: one provider, one binding
        QUICK=1 PROVIDERS="tcp;ofi_rxm" BINDINGS=core OUT=$out timeout -k 15 300 \
            bash "$repo/bench/hosts.sh" </dev/null >"$log" 2>&1
        rc=$?
        ours=$(awk -F '\t' '$1 ~ /^core\/ours:/' "$out/medians.tsv" 2>/dev/null | wc -l)
        anchor=$(awk -F '\t' '$1 == "core/anchor"' "$out/medians.tsv" 2>/dev/null | wc -l)
        if ((rc == 0)) && [[ -s $out/table-core.md && -s $out/goals-core.md ]] && ((ours > 0 && anchor > 0)); then
            pass "bench hosts" $((SECONDS - t1)) "QUICK=1 bench/hosts.sh: $ours values of ours, $anchor of the osc/pt2pt anchor"
        else
            fail "bench hosts" $((SECONDS - t1)) "exit code $rc; $ours values of ours, $anchor of the anchor" "$log"
        fi
    fi
    # QUICK=1 bench/NAME.sh into tests/logs/bench-NAME: its table.md and
    # goals.md made, and medians.tsv holding values of ours (AWK selects
    # them, WHAT names them)
    bench_smoke() { # name awk what
        local name=$1 sel=$2 what=$3 t1=$SECONDS log=$logdir/bench-$1.log out=$logdir/bench-$1 rc n
        rm -rf "$out"
        QUICK=1 OUT=$out timeout -k 15 300 bash "$repo/bench/$name.sh" </dev/null >"$log" 2>&1
        rc=$?
        n=$(awk -F '\t' "$sel" "$out/medians.tsv" 2>/dev/null | wc -l)
        if ((rc == 0)) && [[ -s $out/table.md && -s $out/goals.md ]] && ((n > 0)); then
            pass "bench $name" $((SECONDS - t1)) "QUICK=1 bench/$name.sh: $n values of $what, $(grep -c . "$out/table.md") table lines"
        else
            fail "bench $name" $((SECONDS - t1)) "exit code $rc; $n values of $what in medians.tsv" "$log"
        fi
    }
    # coll/ofi against coll/tuned (np 2 on ofi with shm, 3 sizes)
    bench_smoke coll '$3 == "ofi"' coll/ofi
    # start-up and memory as the job grows (one host, np 4 and 8)
    bench_smoke scale '$2 ~ /^ours:/' ours
    group_done bench $t0
fi

# ------------------------------------------------------------------
# 9. the Debian package (tests/package.sh, root only: build, install,
#    ompi_info and the demo with no component path, remove, purge; last,
#    because while it is installed Debian's btl/ofi is diverted)
# ------------------------------------------------------------------
if wanted package; then
    t0=$SECONDS
    log=$logdir/package.log
    if ((EUID != 0)); then
        fail package 0 "tests/package.sh installs a package system-wide: run the suite as root (CI does), or leave package out of TESTS"
    else
        intree_apt_wait
        BTL_OFI_LOG_DIR=$logdir timeout -k 30 900 bash "$here/package.sh" </dev/null >"$log" 2>&1
        rc=$?
        n=0
        nfail=0
        while IFS= read -r line; do
            if [[ $line =~ ^PASS\ (package\ [a-z]+)\ \(([0-9]+)s\)\ --\ (.*)$ ]]; then
                pass "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}"
                n=$((n + 1))
            elif [[ $line =~ ^FAIL\ (package\ [a-z]+)\ \(([0-9]+)s\):\ (.*)$ ]]; then
                fail "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "$log"
                n=$((n + 1))
                nfail=$((nfail + 1))
            fi
        done <"$log"
        if ((n == 0 || (rc != 0 && nfail == 0))); then
            fail package $((SECONDS - t0)) "tests/package.sh ended with exit code $rc and no verdict" "$log"
        fi
        grep '^ompi_info ' "$log"
    fi
    group_done package $t0
fi
((intree_pending)) && intree_finish

finish
