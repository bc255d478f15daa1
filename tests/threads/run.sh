#!/usr/bin/env bash
#
# Thread tests of btl/ofi (issue 4): MPI_THREAD_MULTIPLE traffic over 1, 2
# and 4 contexts, a helgrind race check, and the progress thread.
#
#   tests/threads/run.sh                   every case of every group, then
#                                          "N passed, N failed"
#   tests/threads/run.sh --list [GROUP..]  case names (groups: threads,
#                                          progress, helgrind)
#   tests/threads/run.sh CASE..            run these cases
#
# Each case prints one line: "PASS <label> (Ns) -- detail",
# "FAIL <label> (Ns): why" (then the end of its log) or "SKIP <label>: why"
# (a missing provider, only with BTL_OFI_ALLOW_SKIP=1). Exit status: 0 all
# passed, 1 something failed, 77 only skips. Full logs: tests/logs/threads/.
#
# Cases:
#   threads:PROV:N:T     tests/bin/mt, 2 ranks x T threads, N contexts
#                        (--mca btl_ofi_num_contexts_per_module N)
#   progress:PROV:MODE   tests/bin/progress, MODE on-single | on-multiple
#                        (btl_ofi_progress_thread 1, MPI_THREAD_SINGLE or
#                        MULTIPLE; origin must finish while the target
#                        computes) | off (timing reported only)
#   helgrind:PROV:N      tests/bin/mt -t 2 under valgrind --tool=helgrind on
#                        both ranks; fails on any data race whose racing
#                        access is in our component (see helgrind_scan)
#   helgrind:PROV:pt     tests/bin/progress -level single with
#                        btl_ofi_progress_thread 1 under helgrind (the
#                        progress thread against the main thread; timing
#                        not checked)
# PROV is a provider name with ';' written '+' (tcp+ofi_rxm).
#
# Matrix (default: about 3 minutes on an idle 2-core box):
#   threads   every provider x (N,T) = (1,8), (2,4), (4,8)
#             (BTL_OFI_THREADS_FULL=1 or BTL_OFI_FULL=1: N=1,2,4 x
#             T=1,2,4,8, 48 cases, 186 s)
#   progress  every provider: on-single, on-multiple, off
#   helgrind  shm: mt with N=2, progress thread; udp;ofi_rxd: mt with N=1,
#             progress thread
# BTL_OFI_THREADS_FULL=1 (or BTL_OFI_FULL=1): the whole threads matrix and
#   helgrind on every provider: mt with N=1 and 2, progress thread.
#
# Environment: PROVIDERS, BTL_OFI_TEST_TIMEOUT (seconds per run, default
# 300; helgrind runs get 4x), BTL_OFI_ALLOW_SKIP, BTL_OFI_PREFIX (through
# scripts/ofirun), BTL_OFI_THREADS_FULL, BTL_OFI_PROGRESS_MAX_S (origin time
# limit with the progress thread on, default 1.5 s).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/threads
supp=$here/helgrind.supp

PROVIDERS=${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-300}
full=${BTL_OFI_THREADS_FULL:-${BTL_OFI_FULL:-0}}

mkdir -p "$bindir" "$logdir"

# ------------------------------------------------------------------ cases
list_group() {
    local g=$1 prov p n t
    for prov in $PROVIDERS; do
        p=${prov//;/+}
        case $g in
        threads)
            if ((full)); then
                # the whole matrix: about 3 minutes on an idle 2-core box
                for n in 1 2 4; do
                    for t in 1 2 4 8; do
                        echo "threads:$p:$n:$t"
                    done
                done
            else
                # what found the bugs so far: threads sharing one context,
                # fewer threads than contexts' worth, more threads than
                # contexts (the rest of the matrix repeats these)
                echo "threads:$p:1:8"
                echo "threads:$p:2:4"
                echo "threads:$p:4:8"
            fi
            ;;
        progress)
            echo "progress:$p:on-single"
            echo "progress:$p:on-multiple"
            echo "progress:$p:off"
            ;;
        helgrind)
            if [[ $full == 1 ]]; then
                echo "helgrind:$p:1"
                echo "helgrind:$p:2"
                echo "helgrind:$p:pt"
            elif [[ $prov == shm ]]; then
                echo "helgrind:$p:2"
                echo "helgrind:$p:pt"
            elif [[ $prov == "udp;ofi_rxd" ]]; then
                # messages for every atomic: the busiest receive path; with
                # the progress thread, which serves them itself
                echo "helgrind:$p:1"
                echo "helgrind:$p:pt"
            fi
            ;;
        esac
    done
}

all_groups="threads progress helgrind"

if [[ ${1:-} == --list ]]; then
    shift
    for g in ${@:-$all_groups}; do
        case $g in
        threads | progress | helgrind) list_group "$g" ;;
        *)
            echo "run.sh: unknown group '$g' (threads, progress, helgrind)" >&2
            exit 2
            ;;
        esac
    done
    exit 0
fi

# ------------------------------------------------------------------ helpers
runner_help "$0" "$@"

# ------------------------------------------------------------------ one case
run_case() {
    local c=$1 group pname prov a b label log t0 rc
    case_start "$c"

    case $group in
    threads) label="threads $prov N=$a T=$b" ;;
    progress) label="progress $prov $a" ;;
    helgrind)
        if [[ $a == pt ]]; then
            label="helgrind $prov progress thread"
        else
            label="helgrind $prov N=$a T=2"
        fi
        ;;
    *)
        report FAIL "$c" 0 "unknown case (see --list)"
        return
        ;;
    esac

    provider_ok "$label" "$prov" || return

    case $group in
    threads)
        if ! compile mt >>"$log"; then
            report FAIL "$label" $((SECONDS - t0)) "compiling tests/threads/mt.c failed" "$log"
            return
        fi
        # rounds per thread: 24, 12 from 4 threads on, 6 from 8 threads on
        # (2 cores: every extra polling thread slows all of them)
        local rounds=24
        ((b >= 4)) && rounds=12
        ((b >= 8)) && rounds=6
        # verbose 1: a reply to an emulated atomic sent twice (two threads
        # retrying one parked reply) shows as "dropped an atomic reply with
        # unknown id" at the origin
        BTL_OFI_EXPECT_PROVIDER=$prov BTL_OFI_EXPECT_CONTEXTS=$a \
            run_logged "$log" "$test_timeout" "$ofirun" -np 2 \
            --mca btl_ofi_provider_include "$prov" \
            --mca btl_ofi_num_contexts_per_module "$a" --mca btl_ofi_verbose 1 \
            "$bindir/mt" -t "$b" -n "$rounds" -l 4
        rc=$?
        if grep -q 'dropped an atomic reply\|dropped a short atomic' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "an atomic reply arrived twice or garbled: $(grep -m1 'dropped an atomic reply\|dropped a short atomic' "$log")" "$log"
            return
        fi
        check_result "$label" "$log" "$rc" threads "$t0" \
            "$(sed -n 's/^    rank0: //p' "$log" | head -n 1)"
        ;;
    progress)
        if ! compile progress >>"$log"; then
            report FAIL "$label" $((SECONDS - t0)) "compiling tests/threads/progress.c failed" "$log"
            return
        fi
        local onoff=0 level=single
        case $a in
        on-single) onoff=1 ;;
        on-multiple) onoff=1 level=multiple ;;
        off) ;;
        *)
            report FAIL "$label" 0 "unknown progress mode '$a' (on-single, on-multiple, off)"
            return
            ;;
        esac
        BTL_OFI_EXPECT_PROVIDER=$prov BTL_OFI_EXPECT_PROGRESS_THREAD=$onoff \
            run_logged "$log" "$test_timeout" "$ofirun" -np 2 \
            --mca btl_ofi_provider_include "$prov" \
            --mca btl_ofi_progress_thread "$onoff" \
            "$bindir/progress" -level "$level"
        rc=$?
        check_result "$label" "$log" "$rc" progress "$t0" \
            "$(sed -n 's/^    timing: //p' "$log" | head -n 1)"
        ;;
    helgrind)
        run_helgrind "$label" "$log" "$prov" "$a" "$t0"
        ;;
    esac
}

# Helgrind logs: split into reports at the "-----" separators. Only data
# race reports are judged (lock-order reports come from libfabric's shm
# locks, which live in memory shared with the peer process where helgrind
# cannot follow them, and from our try-locks, which cannot deadlock). A race
# is in our code when, in one of its two access stacks, the innermost frame
# that is not valgrind's own wrapper executes our component: that frame or
# an inline caller at the same address is in a btl_ofi_*.c/h file (or, with
# no debug information, in mca_btl_ofi.so). Our functions merely calling
# into Open MPI or libfabric further down do not make a race ours, nor do the
# stacks that allocated the address or first saw a lock.
# Four kinds of our races are not counted, only listed, because helgrind
# does not model atomic instructions and so cannot see the ordering, and a
# fifth that is Open MPI's own protocol:
#  - handoff: accesses made by Open MPI's lock-free LIFO inlined into us
#    (opal_lifo.h), and races on objects of an opal_free_list (the address
#    was allocated by opal_free_list_grow): the object went from one thread
#    to the next through that LIFO's compare-and-swap;
#  - emulated-atomic: our access is mca_btl_ofi_atomic_apply, which touches
#    window memory only with __atomic builtins (emulated atomics, e.g.
#    udp;ofi_rxd); the plain access on the other side is osc/rdma's local
#    accumulate, serialised with it by osc/rdma's accumulate lock, itself
#    taken with (emulated) atomics;
#  - emulated-rma: our access is the copy of an emulated get's bytes into
#    the origin's buffer (mca_btl_ofi_rma_answer), of a put's into the
#    window (mca_btl_ofi_rma_serve), or of a put's or get's bytes into a
#    message (mca_btl_ofi_msg_send_copy, used by nothing else), where the
#    provider's own RMA would have moved them by DMA, unseen; the other side
#    reads or writes that memory after the upper layer saw the operation
#    complete, which osc/rdma signals with atomics;
#  - threads-switch: our one write of opal_uses_threads (opal_set_using_threads
#    in mca_btl_ofi_progress_thread_start, before our thread exists), read
#    by PMIx's thread: the same unsynchronised one-way switch Open MPI's own
#    MPI_Init makes for MPI_THREAD_MULTIPLE.
# Prints "counted not_counted races", then the counted reports, then one
# line per not-counted kind and frame pair.
helgrind_scan() { # logs...
    awk '
    function end_report() {
        if (is_race) {
            races++
            if (ours && (lifo_only || freelist)) {
                handoffs++
                pairs["handoff " pair]++
            } else if (ours && emu_only) {
                handoffs++
                pairs["emulated-atomic " pair]++
            } else if (ours && rma_only) {
                handoffs++
                pairs["emulated-rma " pair]++
            } else if (ours && switch_only) {
                handoffs++
                pairs["threads-switch " pair]++
            } else if (ours) {
                counted++
                out = out "---- " src "\n" text
            }
        }
        text = ""; ours = 0; is_race = 0; in_stack = 0; top = ""; freelist = 0
        lifo_only = 1; emu_only = 1; rma_only = 1; switch_only = 1; in_alloc = 0; pair = ""; nstack = 0
        split("", ours_in_stack)
    }
    FNR == 1 { end_report(); src = FILENAME }
    /^==[0-9]+== --------------------/ || /^==[0-9]+== ---Thread-Announcement/ { end_report(); next }
    {
        line = $0
        sub(/^==[0-9]+== /, "", line)
        text = text line "\n"
        if (line ~ /^Possible data race/) {
            is_race = 1
        }
        if (line ~ /^ *(Address|Location) 0x/ || line ~ /^ *Block was alloc/ || line ~ /^ *Lock at 0x/ || line ~ /was created$/) {
            in_stack = 0; top = ""
            in_alloc = (line ~ /^ *(Address|Location) 0x/)
            next
        }
        if (line ~ /^ *(Possible data race|This conflicts with)/) {
            in_stack = 1; top = ""; in_alloc = 0; nstack++
            next
        }
        if (in_alloc && line ~ /opal_free_list_grow/) {
            freelist = 1
        }
        if (!in_stack || line !~ /^ +(at|by) 0x[0-9A-Fa-f]+: /) {
            next
        }
        addr = line
        sub(/^ +(at|by) /, "", addr)
        sub(/:.*/, "", addr)
        if (top == "") {
            if (line ~ /vgpreload_/) {
                next
            }
            top = addr
            innermost = line
        }
        if (addr != top) {
            in_stack = 0
            next
        }
        if (line ~ /mca_btl_ofi\.so/ || line ~ /\(btl_ofi_[a-z_]*\.[ch]:[0-9]+\)/) {
            if (!ours_in_stack[nstack]++) {
                ours = 1
                if (innermost !~ /\(opal_lifo\.h:[0-9]+\)/) {
                    lifo_only = 0
                }
                if (innermost !~ /: mca_btl_ofi_atomic_apply \(/) {
                    emu_only = 0
                }
                if (innermost !~ /: mca_btl_ofi_(rma_answer|rma_serve|msg_send_copy) \(/) {
                    rma_only = 0
                }
                if (innermost !~ /: opal_set_using_threads \(/ || line !~ /mca_btl_ofi_progress_thread_start/) {
                    switch_only = 0
                }
                f = line
                sub(/^.*: /, "", f)
                pair = pair (pair == "" ? "" : "  <->  ") f
            }
        }
    }
    END {
        end_report()
        printf "%d %d %d\n", counted, handoffs, races
        printf "%s", out
        for (p in pairs) {
            printf "not counted: %d x %s\n", pairs[p], p
        }
    }' "$@"
}

run_helgrind() { # label log prov n t0
    local label=$1 log=$2 prov=$3 n=$4 t0=$5 rc secs hdir scan
    if ! command -v valgrind >/dev/null 2>&1; then
        report FAIL "$label" 0 "valgrind is not installed (apt-get install valgrind)" "$log"
        return
    fi
    # the scanner must find the one race of our code planted in its fixture
    local selftest
    selftest=$(helgrind_scan "$here/helgrind-selftest.log" | head -n 1)
    if [[ $selftest != "1 1 3" ]]; then
        report FAIL "$label" 0 "helgrind_scan self-test on tests/threads/helgrind-selftest.log gave '$selftest', expected '1 1 3' (counted, handoffs, races)" "$log"
        return
    fi
    local prog=mt okname=threads
    local args=(-t 2 -n 4 -l 2) mca=(--mca btl_ofi_num_contexts_per_module "$n")
    if [[ $n == pt ]]; then
        prog=progress okname=progress
        args=(-level single -rounds 8)
        mca=(--mca btl_ofi_progress_thread 1)
    fi
    if ! compile $prog >>"$log"; then
        report FAIL "$label" $((SECONDS - t0)) "compiling tests/threads/$prog.c failed" "$log"
        return
    fi
    hdir=$logdir/helgrind-${prov//;/+}-$n
    rm -rf "$hdir"
    mkdir -p "$hdir"
    BTL_OFI_EXPECT_PROVIDER=$prov BTL_OFI_PROGRESS_MAX_S=0 \
        run_logged "$log" $((test_timeout * 4)) "$ofirun" -np 2 \
        --mca btl_ofi_provider_include "$prov" "${mca[@]}" \
        valgrind --tool=helgrind --fair-sched=yes --suppressions="$supp" --num-callers=40 \
        --log-file="$hdir/rank-%q{OMPI_COMM_WORLD_RANK}.log" \
        "$bindir/$prog" "${args[@]}"
    rc=$?
    secs=$((SECONDS - t0))
    if ((rc == 124 || rc == 137)); then
        report FAIL "$label" $secs "timed out after $((test_timeout * 4))s under helgrind" "$log"
        return
    fi
    if ((rc != 0)) || ! grep -qx "OK $okname" "$log"; then
        report FAIL "$label" $secs "the program failed under helgrind (exit code $rc): $(first_fail "$log")" "$log"
        return
    fi
    local files=("$hdir"/rank-*.log)
    if ((${#files[@]} != 2)) || [[ ! -f ${files[0]} ]]; then
        report FAIL "$label" $secs "expected 2 helgrind logs in ${hdir#"$repo"/}, found ${#files[@]}" "$log"
        return
    fi
    scan=$(helgrind_scan "${files[@]}")
    local counted handoffs races
    read -r counted handoffs races <<<"$(head -n 1 <<<"$scan")"
    {
        echo "==== helgrind scan: $races data race reports (after tests/threads/helgrind.supp);"
        echo "==== $counted with the racing access in our component (counted),"
        echo "==== $handoffs not counted (free-list handoffs, emulated atomics, puts and gets, the threads switch; see helgrind_scan):"
        tail -n +2 <<<"$scan"
        grep -h "ERROR SUMMARY" "${files[@]}"
    } >>"$log"
    if ((counted > 0)); then
        report FAIL "$label" $secs "helgrind reports $counted data race(s) with the racing access in btl_ofi_*.c/h (stacks in ${log#"$repo"/})" "$log"
    else
        local timing
        timing=$(sed -n 's/^    timing: .*; origin finished \([0-9.]* s [a-z]*\) the target came back.*/; origin finished \1 the busy target returned/p' "$log" | head -n 1)
        report PASS "$label" $secs "no data race in our code; $handoffs report(s) not counted (free-list handoffs, emulated atomics, puts and gets, the threads switch), $races race report(s) in all (Open MPI, libfabric)$timing; see ${log#"$repo"/}"
    fi
}

# ------------------------------------------------------------------ main
cases=("$@")
standalone=0
if ((${#cases[@]} == 0)); then
    standalone=1
    mapfile -t cases < <(list_group threads; list_group progress; list_group helgrind)
fi
t_all=$SECONDS
for c in "${cases[@]}"; do
    run_case "$c"
done
if ((standalone)); then
    echo
    echo "==== tests/threads: $((SECONDS - t_all))s"
    echo "$passed passed, $failed failed${skipped:+, $skipped skipped}"
fi
runner_exit
