#!/usr/bin/env bash
#
# Two-sided tests of btl/ofi (issue 3): pml/ob1 over `btl ofi,self' only, on
# every provider, with every protocol of ob1 forced in turn.
#
#   tests/twosided/run.sh                   every case, then "N passed, N failed"
#   tests/twosided/run.sh --list            case names
#   tests/twosided/run.sh CASE..            run these cases
#
# Each case prints one line: "PASS <label> (Ns) -- detail",
# "FAIL <label> (Ns): why" (then the end of its log) or "SKIP <label>: why"
# (a missing provider, only with BTL_OFI_ALLOW_SKIP=1). Exit status: 0 all
# passed, 1 something failed. Full logs: tests/logs/twosided/.
#
# Cases (PROV is a provider name with ';' written '+'):
#   pingpong:PROV:PROTO  tests/bin/pingpong, 2 ranks: every size 0 B..64 MiB
#                        (0, 2^k-1, 2^k, 2^k+1), contiguous and strided
#                        (MPI_Type_vector) up to 64 MiB of payload (32 MiB
#                        on shm, 4 MiB on udp;ofi_rxd, 16 MiB on the others, unless
#                        BTL_OFI_FULL=1), every
#                        byte checked, with ob1's protocol forced:
#                          eager  sizes up to 3 KiB only (1 KiB on
#                                 udp;ofi_rxd, whose messages are one
#                                 datagram; below every provider's eager
#                                 limit): no put and no get may happen
#                          send   btl_ofi_flags without put and get: ob1's
#                                 copy pipeline (rendezvous in send
#                                 fragments); no put/get may happen
#                          get    RGET: default flags; large messages must be
#                                 read with btl get, never put
#                          put    RPUT: btl_ofi_flags without get; large
#                                 messages must be written with put
#   flood:PROV:NP        tests/bin/flood: thousands of unexpected messages
#                        from every sender before any receive is posted
#   coll:PROV:NP         tests/bin/coll: bcast, allreduce, alltoallv, gather,
#                        reduce_scatter, every result checked
#   match:PROV:NP        tests/bin/match: MPI_ANY_SOURCE, MPI_Iprobe,
#                        MPI_Improbe/MPI_Mrecv, MPI_Cancel
#   mixed:PROV:NP        tests/bin/mixed: osc/rdma and ob1 traffic interleaved
#   stream:PROV:NP       tests/bin/stream: 4 x 40000 small MPI_Bcast (8 to
#                        512 bytes) back to back through coll/tuned, every
#                        byte checked: the root's eager sends run ahead, many
#                        messages wait unexpected while the receiver posts
#                        its buffers again (shm with multi-receive buffers
#                        hung so: README, "Two-sided traffic")
#   late:PROV:NP         tests/bin/late: every sender floods rank 0 with
#                        every size class (segment-sized, eager, max_send,
#                        rendezvous) while rank 0 computes outside MPI; the
#                        providers' unexpected paths and retransmission
#                        carry it all, every byte checked
#   lateget:PROV:NP      late with every message one size above the
#                        provider's eager limit (1250 bytes on udp;ofi_rxd:
#                        just over one datagram, 2000 per sender and round;
#                        70000 elsewhere, 200), so each is an ob1 RDMA get
#                        by the away receiver, whose socket drops packets
#                        on udp;ofi_rxd (rxd's own reads then lost data:
#                        README, Providers, note 3); rank 0's get count
#                        must cover every message
#   lateput:PROV:NP      the same with 70000-byte messages (100) and
#                        btl_ofi_flags without get: ob1 writes each with
#                        puts from the senders (rxd's own writes stalled
#                        there); every sender's put count must cover its
#                        messages
#   spawn:PROV:NP        tests/bin/spawn: NP ranks spawn 2 more
#                        (MPI_Comm_spawn; btl/ofi adds them as peers after
#                        start-up) and merge with them: ring exchanges of 0
#                        B to 1 MiB, bcast/allreduce/reduce/barrier and a
#                        fence epoch of puts and accumulates on the merged
#                        communicator, every byte and value checked; every
#                        rank's btl/ofi send and put counts must grow
#   spawncoll:PROV:NP    spawn with coll/ofi raised (coll_ofi_priority 90)
#                        and coll_ofi_shared_memory 0: Open MPI's spawn
#                        broadcasts through coll/ofi's messages, then waits
#                        in PMIx_Connect without progress (it hung on
#                        sockets while the messages stayed queued there);
#                        coll/ofi must serve the merged communicator. On
#                        shm it hung too: btl_send handed coll/ofi's
#                        messages to fi_send, whose protocol there needs
#                        the sender again, and the first message to a
#                        peer waits for the provider's connection (now
#                        injected, and the first one waited for)
#   jobs:PROV:COUNT      COUNT short jobs back to back (tests/bin/mixed
#                        -rounds 2 on 2 ranks: init, one- and two-sided
#                        traffic, finalize); every one must pass
#
# Matrix: every provider: pingpong with eager, send, get and put; flood,
# coll, match and mixed with 4 ranks; coll also with 3 ranks (odd rank
# counts take other collective algorithms); flood with 2; late and
# lateget with 4; stream with 2; spawn with 2 (4 after the spawn).
# BTL_OFI_FULL=1 adds jobs on sockets and shm, BTL_OFI_JOBS each (default
# 200; tests/faults/run.sh runs 20 back-to-back jobs on every provider by
# default).
#
# Environment: PROVIDERS, BTL_OFI_TEST_TIMEOUT (seconds per run, default
# 300), BTL_OFI_ALLOW_SKIP, BTL_OFI_PREFIX (through scripts/ofirun),
# BTL_OFI_JOBS (jobs per jobs case), BTL_OFI_FULL.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/twosided

PROVIDERS=${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-300}
njobs=${BTL_OFI_JOBS:-200}
progs="pingpong flood coll match mixed late stream"

mkdir -p "$bindir" "$logdir"

# ------------------------------------------------------------------ cases
list_cases() {
    local prov p proto
    for prov in $PROVIDERS; do
        p=${prov//;/+}
        for proto in eager send get put; do
            echo "pingpong:$p:$proto"
        done
        echo "flood:$p:2"
        echo "flood:$p:4"
        echo "coll:$p:3"
        echo "coll:$p:4"
        echo "match:$p:4"
        echo "mixed:$p:4"
        echo "late:$p:4"
        echo "lateget:$p:4"
        echo "lateput:$p:4"
        echo "stream:$p:2"
        echo "spawn:$p:2"
        echo "spawncoll:$p:2"
        # (tests/faults/run.sh runs back-to-back jobs on every provider)
        if [[ ${BTL_OFI_FULL:-0} == 1 ]] && [[ $prov == shm || $prov == sockets ]]; then
            echo "jobs:$p:$njobs"
        fi
    done
}

if [[ ${1:-} == --list ]]; then
    list_cases
    exit 0
fi

# ------------------------------------------------------------------ helpers
runner_help "$0" "$@"

# rank 0's counter line of a run, as the detail of its PASS line
counters_of() {
    sed -n 's/^ *counters rank 0 [^:]*: /rank 0: /p' "$1" | head -n 1 | cut -c1-160
}

# btl_ofi_flags: our default flags (ompi_info --param btl ofi) without the
# given comma-separated ones
flags_without() { # drop...
    local all=send,put,get,atomics,fetching-atomics,rdma-flush f out=""
    for f in ${all//,/ }; do
        [[ ",$1," == *",$f,"* ]] && continue
        out=${out:+$out,}$f
    done
    echo "$out"
}

# ------------------------------------------------------------------ one case
run_case() {
    # shellcheck disable=SC2034 # b: case_start's, no case here has one
    local c=$1 group pname prov a b label log t0 rc
    case_start "$c"

    case $group in
    pingpong) label="twosided $prov pingpong $a" ;;
    flood | coll | match | mixed | late | lateget | lateput | stream | spawn | spawncoll) label="twosided $prov $group np=$a" ;;
    jobs) label="twosided $prov $a back-to-back jobs" ;;
    *)
        report FAIL "$c" 0 "unknown case (see --list)"
        return
        ;;
    esac

    provider_ok "$label" "$prov" "FI_RMA|FI_ATOMIC|FI_MSG" || return

    local prog=$group
    [[ $group == jobs ]] && prog=mixed
    [[ $group == spawncoll ]] && prog=spawn
    [[ $group == late* ]] && prog=late
    if ! compile "$prog" >>"$log"; then
        report FAIL "$label" $((SECONDS - t0)) "compiling tests/twosided/$prog.c failed" "$log"
        return
    fi

    local -a sel=(--mca btl_ofi_provider_include "$prov")
    case $group in
    pingpong)
        local -a args=() big_max=()
        # 16 MiB is eight of ob1's RDMA pipeline fragments already: the
        # sizes above repeat them and are three quarters of the bytes
        # (about 10 s a case). Up to 32 MiB on shm only (64 MiB took 5 s
        # more a case, CI budget); 64 MiB on every provider with
        # BTL_OFI_FULL=1
        if [[ ${BTL_OFI_FULL:-0} != 1 ]]; then
            big_max=(-max 16m -vmax 16m)
            [[ $prov == shm ]] && big_max=(-max 32m -vmax 32m)
            # udp;ofi_rxd carries every byte in one-datagram messages
            # (1240 B), each acknowledged: 4 MiB is already thousands of
            # them per message and many windows of emulated gets; 16 MiB
            # took 12-14 s a case
            [[ $prov == "udp;ofi_rxd" ]] && big_max=(-max 4m -vmax 4m)
        fi
        case $a in
        eager)
            # udp;ofi_rxd's messages are one datagram (1240 B of payload)
            local m=3k
            [[ $prov == "udp;ofi_rxd" ]] && m=1k
            args=(-max "$m" -vmax "$m" -proto send)
            ;;
        send)
            sel+=(--mca btl_ofi_flags "$(flags_without put,get)")
            args=(-proto send "${big_max[@]}")
            ;;
        get) args=(-proto get "${big_max[@]}") ;;
        put)
            sel+=(--mca btl_ofi_flags "$(flags_without get)")
            args=(-proto put "${big_max[@]}")
            ;;
        *)
            report FAIL "$label" 0 "unknown protocol '$a' (eager, send, get, put)"
            return
            ;;
        esac
        BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$log" "$test_timeout" "$ofirun" -np 2 "${sel[@]}" \
            "$bindir/pingpong" "${args[@]}"
        rc=$?
        check_result "$label" "$log" "$rc" pingpong "$t0" \
            "$(counters_of "$log")"
        ;;
    flood | coll | match | mixed | late | stream | spawn)
        # stream: receivers that give the core away let the root run
        # further ahead (as in a job with more ranks than cores)
        [[ $group == stream ]] && sel+=(--mca mpi_yield_when_idle 1)
        BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$log" "$test_timeout" "$ofirun" -np "$a" --oversubscribe \
            "${sel[@]}" "$bindir/$group"
        rc=$?
        check_result "$label" "$log" "$rc" "$group" "$t0" "$(counters_of "$log")"
        ;;
    spawncoll)
        sel+=(--mca coll_ofi_priority 90 --mca coll_ofi_shared_memory 0 --mca coll_ofi_verbose 1)
        BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$log" "$test_timeout" "$ofirun" -np "$a" --oversubscribe \
            "${sel[@]}" "$bindir/spawn"
        rc=$?
        local merged=$((a + 2))
        if ((rc == 0)) && ! grep -q "coll:ofi: serving communicator [0-9]* with $merged ranks over btl ofi" "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "coll/ofi did not serve the merged communicator of $merged ranks" "$log"
        else
            check_result "$label" "$log" "$rc" spawn "$t0" "merged communicator of $merged ranks served by coll/ofi; $(counters_of "$log")"
        fi
        ;;
    lateget | lateput)
        local size=70000 n=200 rounds=3 want rank=0 kind=gets got
        if [[ $group == lateput ]]; then
            n=100 rank=1 kind=puts
            sel+=(--mca btl_ofi_flags "$(flags_without get)")
        elif [[ $prov == "udp;ofi_rxd" ]]; then
            size=1250 n=2000
        fi
        BTL_OFI_EXPECT_PROVIDER=$prov run_logged "$log" "$test_timeout" "$ofirun" -np "$a" --oversubscribe \
            "${sel[@]}" "$bindir/late" -size "$size" -n "$n" -r "$rounds"
        rc=$?
        # rank 0 gets every message (lateget); rank 1 puts each of its own
        want=$((n * rounds * (rank == 0 ? a - 1 : 1)))
        got=$(sed -n "s/^ *counters rank $rank [^:]*:.* $kind+\([0-9]*\) .*/\1/p" "$log" | head -n 1)
        if ((rc == 0)) && grep -qx "OK late" "$log" && ((${got:-0} < want)); then
            report FAIL "$label" $((SECONDS - t0)) \
                "rank $rank counted ${got:-no} $kind for $want messages of $size bytes: not the path under test" "$log"
        else
            check_result "$label" "$log" "$rc" late "$t0" \
                "$n x $size bytes per sender and round; rank $rank: $kind+${got:-?} (>= $want)"
        fi
        ;;
    jobs)
        BTL_OFI_EXPECT_PROVIDER=$prov run_jobs "$label" "$log" "$logdir/jobs-$pname-last.log" "$t0" "$a" mixed \
            "$ofirun" -np 2 "${sel[@]}" "$bindir/mixed" -rounds 2 || return
        echo "OK mixed" >>"$log"
        check_result "$label" "$log" 0 mixed "$t0" "$a of $a jobs passed, $(((SECONDS - t0) * 10 / (a > 0 ? a : 1)))/10 s per job"
        ;;
    esac
}

# ------------------------------------------------------------------ main
runner_main "$@"
