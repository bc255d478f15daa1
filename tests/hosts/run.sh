#!/usr/bin/env bash
#
# Tests across simulated hosts (tests/hosts/hosts.sh): 2 hosts x 2 ranks,
# the daemons started by Open MPI's rsh launcher through tests/hosts/agent.
#
#   tests/hosts/run.sh              every case, then "N passed, N failed"
#   tests/hosts/run.sh --list       case names
#   tests/hosts/run.sh CASE...      these cases
#
# Cases (PROV is a provider with ';' written '+', BTLS a btl list with ','
# written '+'):
#   onesided:PROV:BTLS:PROG  tests/bin/PROG (putget, atomics, sync,
#                            canary): every window flavour and
#                            synchronisation, ranks 1->2 and 3->0 cross
#                            the hosts; with ofi,self and ofi,vader,self
#                            (vader then carries what stays on a host);
#                            PROG atomics-intrinsic (ofi,self): atomics
#                            on windows with acc_single_intrinsic, one
#                            btl atomic per single-element accumulate;
#                            PROG atomics-message (ofi,self): atomics
#                            message, btl_ofi_global_atomics -1: each
#                            accumulate to another node one message
#                            (osc-rdma/patches 0016), no btl atomic;
#                            one of 56,000 B read by its target with btl
#                            gets (0018); 20 of 24,000 B from every rank
#                            answered once each, not once a piece (0019:
#                            the target's btl_ofi_send_count); a
#                            get-accumulate of 56,000 B and an MPI_NO_OP
#                            read, written back by the target (0020);
#                            PROG sync-message (ofi,self): sync message,
#                            btl_ofi_global_atomics -1: PSCW's posts and
#                            completes to another node as messages (0017);
#                            PROG mcs64 (ofi,self): tests/mcs.c on
#                            MPI_INT64_T; PROG atomics-global (ofi,self):
#                            atomics intrinsic; PROG sync-global
#                            (tcp;ofi_rxm): sync; PROG llist-global:
#                            tests/llist.c locked, 4 ranks; these four
#                            with btl_ofi_global_atomics -1 (the default
#                            since 0015, set and checked: osc-rdma/patches
#                            0013, 0014, 0015); PROG sync-noglobal and
#                            atomics-noglobal (tcp;ofi_rxm): the same with
#                            it at 0;
#                            PROG pairs (ofi,self): accumulates of MPI's
#                            pair types (osc-rdma/patches 0009); PROG
#                            gather (ofi,self): small puts gathered into
#                            messages (btl_ofi_putv.c)
#   dynattach:PROV           tests/dynattach.c (ofi,self): attachments
#                            that touch merged into one region
#                            (osc-rdma/patches 0010), accesses across
#                            them, the region tables read through the btl
#   dynamic:PROV:BTLS        tests/bin/dynhosts: MPI_Win_create_dynamic,
#                            attach, put/get/accumulate to a rank on the
#                            other host (the region table and its lock
#                            live on the target and go through the btl),
#                            through our osc/rdma (osc-rdma/: Open MPI
#                            4.1.4's own deadlocks there by itself, ompi
#                            issue 10328, fixed in 4.1.5); the job's
#                            component path must reach it (ompi_info
#                            lists osc_rdma_patches). The other one-sided
#                            cases set BTL_OFI_NO_DYNAMIC=1 (putget and
#                            canary leave dynamic windows to these)
#   dynchurn:PROV            tests/bin/dynchurn, ofi,self: every rank
#                            detaches and attaches half of its 8 regions
#                            every round, then every rank puts, gets and
#                            fetch-and-adds into every region of every
#                            other rank, every value checked
#   dynhang:tcp+ofi_rxm      the dynchurn job with Debian's osc/rdma
#                            (a component path with our btl only): it
#                            must hang (killed after 10 s), proving what
#                            the patch fixes
#   twosided:PROV:PROG       tests/twosided PROG (pingpong get, flood,
#                            mixed, late) with btl ofi,self
#   threads:PROV             tests/threads/mt: MPI_THREAD_MULTIPLE, 4
#                            threads per rank, 2 contexts, one- and
#                            two-sided traffic across the hosts
#   shm:BTLS                 provider shm cannot reach the other host:
#                            btl/ofi must say so and step aside; with
#                            ofi,self the job must end with Open MPI's
#                            "unreachable" report, never hang
#   roundtrip:PROV           tests/bin/roundtrip: one rank per host, both
#                            bound to one core; 4000 puts, gets, fetch-
#                            and-adds, compare-and-swaps and accumulates,
#                            each + flush, every result checked, within
#                            a 60 s job limit (each used to wait a
#                            scheduler tick: over 100 s)
#   busy:PROV                tests/bin/busy: rank 2 (on h2) computes 20 s
#                            outside MPI while ranks 0 and 1 put into its
#                            window and flush; nothing may be declared
#                            lost, every byte arrives (the probes' wait
#                            doubles from 0.5 s and reaches its 8 s cap
#                            15.5 s in: 20 s see every step of it)
#   rails:PROV:POLICY:MODE   two links per host pair (rail0 10.77.0.0/24,
#                            rail1 10.77.1.0/24), tests/bin/rails MODE
#                            (put: 4 MiB MPI_Put + flush; send: 4 MiB
#                            messages) x 18 from h1 to h2 (2 untimed, 16 timed); the kernel's
#                            tx_bytes of both links of both hosts counted
#                            around the job. POLICY include: btl_ofi_if_include
#                            names rail1's subnet; exclude:
#                            btl_ofi_if_exclude names the interface rail0;
#                            either way rail0 must carry under 1 % of the
#                            bytes and the verbose output must show rail0's
#                            domain refused for that reason; one:
#                            btl_ofi_max_rails 1, the link not taken under
#                            1 %; all (the
#                            default): both rails taken, each link at least
#                            30 % of the bytes (osc/rdma drives one module,
#                            which splits puts of 256 KiB and more over the
#                            rails; ob1's RDMA transfers split the same way)
#                            and the verbose output must show each rail's
#                            bandwidth taken from its veth's speed;
#                            weighted: btl_ofi_bandwidth_rail0 3000 and
#                            _rail1 1000, rail0 must carry 65 to 85 %;
#                            cut0, cut1 (MODE put, send of 4 MiB, msg:
#                            sends of 1 KiB, amo: fetch-and-adds): both
#                            rails streaming (until 3 s after both hosts
#                            failed over, 60 s at most; each transfer
#                            checked), then h2's link of rail 0 or 1 cut:
#                            btl/ofi must name the cut link's address and
#                            the one that still answers, carry on over
#                            that rail and end normally, nothing lost
#                            (by default cut0 put and cut1 send on every
#                            provider, cut0 msg, cut0 amo and cut1 put on
#                            tcp;ofi_rxm; every pair with BTL_OFI_FULL=1)
#   leave:PROV               two links, tests/bin/leave with
#                            async_mpi_finalize 1: rank 0 (h1) sends 100
#                            messages and finalizes; rank 1 (h2) takes
#                            them after rank 0 left and acknowledges them
#                            to it (several rails number messages): no
#                            peer may be declared lost (a late
#                            acknowledgement ended a CI job that way)
#   coll:PROV                tests/coll/colltest.c with coll/ofi raised
#                            (coll_ofi_priority 90) over ofi,self: every
#                            result checked, coll/ofi must serve
#   collfinal:PROV           tests/coll/collfinal.c the same way: 16
#                            small reductions, then MPI_Finalize at once,
#                            the root's done counts to the other host
#                            maybe still queued in the btl (it crashed
#                            in MPI_Finalize on tcp;ofi_rxm before 787068c);
#                            their failure once the peer left is no error
#                            (reported, and once fatal, before 2026-12-01),
#                            nor waited for (10 s on tcp;ofi_rxm before)
#   colldetached:PROV        tests/coll/colldetached.c the same way: after
#                            each collective every rank leaves MPI and
#                            waits for the others outside it (marker files
#                            in a directory both hosts see); none may need
#                            another's later MPI call, across the hosts
#                            too (the first message to a peer waits for
#                            the provider's connection)
#   lost:PROV:MODE:FAULT     tests/bin/death MODE (rma|msg) with the
#                            victim on h2, then FAULT: rank (the victim,
#                            rank 3, SIGKILLed; its host lives on), kill
#                            (every process of h2 SIGKILLed) or cut (h2's
#                            link unplugged: no reset ever arrives); the job
#                            must end within 30 s and name h2 (rank: and
#                            the dead rank); each twice, as a user runs it
#                            and with orte_enable_recovery 1 (after a cut
#                            the first only on tcp;ofi_rxm rma unless
#                            BTL_OFI_FULL=1; kill and cut under msg only
#                            on tcp;ofi_rxm unless BTL_OFI_FULL=1)
# Matrix: PROV in tcp;ofi_rxm, sockets, udp;ofi_rxd; lost ranks and lost
# hosts (killed, cut off); busy on tcp;ofi_rxm; rails all, include and
# weighted put and leave on every provider, exclude, one and weighted send on
# tcp;ofi_rxm; the ofi+vader+self one-sided cases on tcp;ofi_rxm.
# BTL_OFI_FULL=1 adds busy on every provider, rails exclude, one and
# weighted send on every provider, and ofi+vader+self on every provider.
#
# Environment: PROVIDERS (default the three network providers),
# BTL_OFI_TEST_TIMEOUT (seconds per job, default 300). Needs root; the
# hosts are removed on every exit path.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/hosts
# shellcheck source=tests/hosts/hosts.sh
source "$here/hosts.sh"

PROVIDERS=${PROVIDERS:-tcp;ofi_rxm sockets udp;ofi_rxd}
full=${BTL_OFI_FULL:-0}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-300}
lost_limit=30

list_cases() {
    local prov p b prog
    for prov in $PROVIDERS; do
        [[ $prov == shm ]] && continue
        p=${prov//;/+}
        for b in ofi+self ofi+vader+self; do
            # vader for the peers of one's own host, ours for the other:
            # osc/rdma's choice of BTL per peer, the same on every
            # provider; tcp;ofi_rxm by default (CI time: 40 s for the
            # other two)
            [[ $b == ofi+vader+self && $prov != "tcp;ofi_rxm" && $full != 1 ]] && continue
            for prog in putget atomics sync canary; do
                echo "onesided:$p:$b:$prog"
            done
            # the MCS mutex (tests/mcs.c): its window's state, the tail
            # and the hand-over all cross the hosts
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:mcs"
            # ... on MPI_INT64_T: the tail given back by a compare-and-swap
            # without osc/rdma's lock, taken under it, on rank 0's host
            # by processor atomics (osc-rdma/patches 0013)
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:mcs64"
            # atomics with btl_ofi_global_atomics -1: osc/rdma on the
            # target's host with processor atomics (0013)
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:atomics-global"
            # PSCW posts as one atomic OR in that mode (0014; with
            # osc_rdma_acc_message 0, else they are messages)
            [[ $b == ofi+self && $prov == "tcp;ofi_rxm" ]] && echo "onesided:$p:$b:sync-global"
            # ... and by default PSCW's posts and completes to another
            # node as btl messages (0017): counted, no btl atomic
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:sync-message"
            # ... and with it off (btl_ofi_global_atomics 0, osc/rdma
            # through the provider for its own node too), the verbose line
            # must not claim it
            [[ $b == ofi+self && $prov == "tcp;ofi_rxm" ]] && echo "onesided:$p:$b:sync-noglobal"
            [[ $b == ofi+self && $prov == "tcp;ofi_rxm" ]] && echo "onesided:$p:$b:atomics-noglobal"
            # appends under exclusive locks, the losers polling the tail
            # under the lock the winner needs, 4 ranks, in that mode: a
            # node's ranks took its locks with processor atomics while the
            # other host's attempts failed inside their epochs (hung
            # without 0015)
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:llist-global"
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:atomics-intrinsic"
            # without the promise, in that mode: each accumulate to another
            # node one message the target applies (osc-rdma/patches 0016),
            # no btl atomic, values exact
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:atomics-message"
            # accumulates of MPI's pair types, whose padding osc/rdma 4.1.4
            # took for data (osc-rdma/patches 0009)
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:pairs"
            # small puts gathered into messages (btl_ofi_putv.c), every
            # byte checked, the counter must move (udp;ofi_rxd: must not)
            [[ $b == ofi+self ]] && echo "onesided:$p:$b:gather"
            # through our osc/rdma with the upstream fix (osc-rdma/):
            # Open MPI 4.1.4's own deadlocks there (ompi issue 10328)
            echo "dynamic:$p:$b"
        done
        echo "dynattach:$p"
        for prog in pingpong flood mixed late; do
            echo "twosided:$p:$prog"
        done
        echo "threads:$p"
        echo "roundtrip:$p"
        echo "coll:$p"
        echo "colldetached:$p"
        echo "collfinal:$p"
        echo "dynchurn:$p"
        for m in rma msg; do
            # (udp;ofi_rxd msg: the victim, flooded while it still starts,
            # lost a message of several datagrams with "Truncation error"
            # in 2 of 3 runs until btl/ofi sent one-datagram messages only)
            echo "lost:$p:$m:rank"
            # a link cut under messages: tcp;ofi_rxm by default (CI time:
            # 8 s a case)
            [[ $m == rma || $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "lost:$p:$m:cut"
            # every process of h2 killed: the runtime sees its daemon's
            # launcher exit and ends the job about 1 s later, without
            # naming the host: btl/ofi must name it first (a failed
            # operation and a refused probe, or its liveness connection
            # closed without a goodbye). Until the error report came after
            # the lost-peer line (showing a help message held a rank for
            # the second the runtime took to end the job) two-sided kills
            # were named in 0 of 2 runs on tcp;ofi_rxm. The host killed
            # under messages: tcp;ofi_rxm by default (CI time: 10 s a
            # case), every provider under RMA
            [[ $m == rma || $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "lost:$p:$m:kill"
        done
        # 30 s each (60 s until 2026-11-26: the probes back off to 8 s, so 30 s
        # still see several): one provider by default
        [[ $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "busy:$p"
    done
    echo "shm:ofi+self"
    echo "shm:ofi+vader+self"
    # Debian's own osc/rdma on the same dynamic-window job: must hang
    [[ " $PROVIDERS " == *" tcp;ofi_rxm "* ]] && echo "dynhang:tcp+ofi_rxm"
    # last: the hosts are set up again with two links
    for prov in $PROVIDERS; do
        [[ $prov == shm ]] && continue
        for pol in include exclude one; do
            # exclude and one choose the rail the way include does, before
            # any provider is involved: tcp;ofi_rxm proves them by default
            [[ $pol != include && $prov != "tcp;ofi_rxm" && $full != 1 ]] && continue
            for m in put send; do
                echo "rails:${prov//;/+}:$pol:$m"
            done
        done
        echo "rails:${prov//;/+}:all:send"
        echo "rails:${prov//;/+}:all:put"
        # a peer that finalized first, its messages received after it
        # left and acknowledged to it (several rails number them)
        echo "leave:${prov//;/+}"
        # rails of unequal bandwidth: parts and messages in proportion
        echo "rails:${prov//;/+}:weighted:put"
        [[ $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "rails:${prov//;/+}:weighted:send"
        # one of the two links cut while both carry traffic (see
        # run_rails_cut); 4 MiB sends with link 0 cut only with
        # BTL_OFI_FULL=1. ob1 carries its eager messages on one of the
        # two rails, here link 0's: cutting link 1 under them would find
        # nothing to fail over
        # puts with link 1 cut fail over as with link 0 cut (parts of
        # both rails either way): tcp;ofi_rxm proves it by default (CI
        # time: 8-9 s a case)
        for l in 0 1; do
            ((l == 0 || full)) || [[ $prov == "tcp;ofi_rxm" ]] && echo "rails:${prov//;/+}:cut$l:put"
            # small messages and atomics (several rails carry atomics as
            # messages, see README, Rails) fail over in btl/ofi's own
            # code, the same on every provider: tcp;ofi_rxm proves them by
            # default (CI time: 8-13 s a case)
            ((l == 0)) && [[ $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "rails:${prov//;/+}:cut$l:msg"
            ((l == 1 || full)) && echo "rails:${prov//;/+}:cut$l:send"
            ((l == 0)) && [[ $prov == "tcp;ofi_rxm" || $full == 1 ]] && echo "rails:${prov//;/+}:cut$l:amo"
            ((l == 1 && full)) && echo "rails:${prov//;/+}:cut$l:amo"
        done
    done
}

# hosts for the whole run; removed on every exit path
hosts_ready=0
need_hosts() { # [rails]
    local rails=${1:-1}
    ((hosts_ready == rails)) && return 0
    if ! hosts_up 2 "$rails" >"$logdir/hosts-up.log" 2>&1; then
        hosts_ready=0
        return 1
    fi
    hosts_ready=$rails
}
trap 'hosts_down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

# a job on the hosts: 4 ranks, ranks 0,1 on h1 and 2,3 on h2
# (NP=2 with --map-by node: one rank per host)
hosts_job() { # log secs btls prov args...
    local log=$1 secs=$2 btls=$3 prov=$4
    shift 4
    OFIRUN_BTLS=$btls BTL_OFI_EXPECT_PROVIDER=$prov BTL_OFI_NO_DYNAMIC=${no_dynamic:-1} run_logged "$log" "$secs" \
        bash "$here/hosts.sh" mpirun -np "${NP:-4}" -x BTL_OFI_EXPECT_PROVIDER -x BTL_OFI_NO_DYNAMIC \
        --mca btl_ofi_provider_include "$prov" "$@"
}

# compile tests/coll/PROG.c, run it across the hosts with coll/ofi raised
# (log, prov from the caller) and say why it failed the common checks, or
# nothing
coll_program_why() { # prog okre args...
    local prog=$1 okre=$2 rc
    shift 2
    if ! mpicc -O2 -Wall -o "$bindir/$prog" "$tests/coll/$prog.c" >>"$log" 2>&1; then
        echo "compiling $prog failed"
        return
    fi
    hosts_job "$log" "$test_timeout" ofi,self "$prov" --mca coll_ofi_priority 90 \
        --mca coll_ofi_verbose 1 --mca btl_ofi_verbose 1 "$bindir/$prog" "$@"
    rc=$?
    coll_common_why "$log" "$rc" "$okre"
}

# why a coll/ofi job across the hosts fails the checks every such job
# has (a hang, a crash, no line matching OKRE, no proof that our btl/ofi
# ran), or nothing
coll_common_why() { # log rc okre
    local log=$1 rc=$2 okre=$3
    if ((rc == 124 || rc == 137)); then
        echo "timed out after ${test_timeout}s (hang?)"
    elif [[ -n $(crash_of "$log") ]]; then
        echo "crash: $(crash_of "$log")"
    elif ((rc != 0)) || ! grep -q "$okre" "$log"; then
        echo "exit code $rc: $(grep -m1 '^FAIL' "$log" || first_fail "$log")"
    elif ! grep -q 'btl/ofi: candidate .* taken (rail 0)' "$log"; then
        echo "no proof that our btl/ofi ran (its verbose selection line)"
    fi
}

judge_job() { # label log rc prog t0 [note]
    local label=$1 log=$2 rc=$3 prog=$4 t0=$5 note=${6:-} crash
    crash=$(crash_of "$log")
    if ((rc == 124 || rc == 137)); then
        report FAIL "$label" $((SECONDS - t0)) "timed out after ${test_timeout}s (hang?)" "$log"
    elif [[ -n $crash ]]; then
        report FAIL "$label" $((SECONDS - t0)) "crash: $crash" "$log"
    elif ((rc != 0)); then
        report FAIL "$label" $((SECONDS - t0)) "exit code $rc: $(first_fail "$log")" "$log"
    elif ! grep -qx "OK $prog" "$log"; then
        report FAIL "$label" $((SECONDS - t0)) "exit code 0 but no 'OK $prog' line" "$log"
    elif ! grep -q "^$prog: np=${NP:-4} btl_ofi_version=0.1.0" "$log"; then
        report FAIL "$label" $((SECONDS - t0)) "no proof that our btl/ofi ran (btl_ofi_version line)" "$log"
    else
        report PASS "$label" $((SECONDS - t0)) "$note"
    fi
}

# our osc/rdma (scripts/build-ompi-fixes.sh), and whether a job's component
# path reaches it: ompi_info through the same path lists osc_rdma_patches
osc_ours=${BTL_OFI_PREFIX:-$repo/_install}/lib/openmpi/mca_osc_rdma.so
osc_is_ours() { # log
    local cp patches
    cp=$("$ofirun" --component-path 2>/dev/null) || return 1
    patches=$(ompi_patches osc rdma "$cp")
    [[ -n $patches ]] || return 1
    echo "osc/rdma: ours ($patches)" >>"$1"
}

# ------------------------------------------------------------------ lost
# seconds (one decimal) between two date +%s%N stamps
secs_between() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'
}

# A job started in the background (PID, output in LOG): await_line waits
# up to 60 s for a line matching RE while it runs (1: it ended or the time
# passed without one); await_end waits up to lost_limit s for its end (1:
# it still runs); stop_job ends it (TERM, KILL a second later). JOB_RC is
# its exit code once it ended or was stopped.
await_line() { # pid log re
    local i
    for ((i = 0; i < 600; i++)); do
        grep -qE "$3" "$2" && return 0
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    grep -qE "$3" "$2"
}
await_end() { # pid
    local i
    for ((i = 0; i < lost_limit * 10; i++)); do
        kill -0 "$1" 2>/dev/null || {
            wait "$1"
            JOB_RC=$?
            return 0
        }
        sleep 0.1
    done
    return 1
}
stop_job() { # pid
    kill -TERM "$1" 2>/dev/null
    sleep 1
    kill -KILL "$1" 2>/dev/null
    wait "$1"
    JOB_RC=$?
}

# One job with the victim on h2: stream, fault h2, wait. Sets L_ENDED
# (1: the job ended within lost_limit s), L_SECS (fault to end), L_RC,
# L_WHY (when the job never streamed). Every run gets fresh hosts.
lost_run() { # prov mode fault recovery(0|1) log
    local prov=$1 mode=$2 fault=$3 recovery=$4 log=$5 pid i t_fault
    local -a extra=()
    ((recovery)) && extra=(--mca orte_enable_recovery 1)
    L_ENDED=0 L_SECS="" L_RC="" L_WHY="" L_NAMED=""
    hosts_down >/dev/null 2>&1
    hosts_ready=0
    if ! need_hosts; then
        L_WHY="the simulated hosts could not be set up"
        return 1
    fi
    OFIRUN_BTLS=ofi,self BTL_OFI_EXPECT_PROVIDER=$prov \
        timeout -k 10 180 bash "$here/hosts.sh" mpirun -np 4 -x BTL_OFI_EXPECT_PROVIDER \
        --mca btl_ofi_provider_include "$prov" "${keepalive[@]}" "${extra[@]}" \
        "$bindir/death" "$mode" shell -after 2 </dev/null >>"$log" 2>&1 &
    pid=$!
    if ! await_line "$pid" "$log" 'death: victim rank 3 pid [0-9]* ready'; then
        if kill -0 "$pid" 2>/dev/null; then
            stop_job "$pid"
            L_WHY="the victim, rank 3, was not streaming 60 s after the start: $(first_fail "$log")"
        else
            wait "$pid"
            JOB_RC=$?
            L_WHY="the job never streamed (exit code $JOB_RC): $(first_fail "$log")"
        fi
        L_RC=$JOB_RC
        return 1
    fi
    t_fault=$(date +%s%N)
    case $fault in
    kill) hosts_kill h2 ;;
    cut) hosts_cut h2 0 ;;
    rank)
        # the victim's pid as h2's pid namespace numbers it
        hosts_run h2 kill -KILL "$(grep -m1 -oE 'death: victim rank 3 pid [0-9]+' "$log" | awk '{ print $NF }')"
        ;;
    esac
    echo "==== $(date +%T.%N) fault: $fault h2" >>"$log"
    for ((i = 0; i < lost_limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        if [[ -z $L_NAMED ]] && grep -qE "$ours_re" "$log"; then
            L_NAMED=$(secs_between "$t_fault" "$(date +%s%N)")
            # with recovery on, mpirun may wait on for a daemon it cannot
            # reach: what btl/ofi had to do is done
            ((recovery)) && break
        fi
        sleep 0.1
    done
    L_SECS=$(secs_between "$t_fault" "$(date +%s%N)")
    # a line written as the job ended (the 0.1 s polls above missed it)
    [[ -z $L_NAMED ]] && grep -qE "$ours_re" "$log" && L_NAMED="<= $L_SECS"
    if kill -0 "$pid" 2>/dev/null; then
        stop_job "$pid"
    else
        L_ENDED=1
        wait "$pid"
        JOB_RC=$?
    fi
    L_RC=$JOB_RC
    return 0
}

# The runtime's keepalive on its own connections (the defaults wait 300 s
# plus 9 x 20 s): without it mpirun waits for a daemon it cannot reach
# even after every rank ended, as it would on a real cluster.
# mpirun's own crash: every crash line of LOG comes from the head node h0,
# which runs mpirun only (it never loads btl/ofi), and no frame of
# mca_btl_ofi.so is anywhere. Seen once: mpirun segfaulted in
# PMIx_Finalize (ess_hnp) while it aborted a job whose host had been
# killed, after btl/ofi had named the host. Prints its first line; a
# crash on any other host, or in our component, prints nothing.
head_crash_of() { # log
    local lines
    lines=$(grep -E "$lib_crash_re" "$1" | grep -v 'exited on signal 9')
    [[ -z $lines ]] && return 0
    grep -q 'mca_btl_ofi\.so(' "$1" && return 0
    grep -qv '^\[h0:' <<<"$lines" && return 0
    head -n1 <<<"$lines" | cut -c1-120
}

keepalive=(--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1
    --mca oob_tcp_keepalive_probes 3)

# btl/ofi's line naming a peer on h2, or mpirun's naming h2
# (FAULT rank: rank 3 itself must be named)
ours_re="btl/ofi on h1 lost contact with peer \[\[[0-9]+,1\],[23]\] on h2: .*"
orte_re="(process rank [23] with PID [0-9]+ on node h2 exited on signal 9|Remote daemon: .* on node h2|lost communication with a remote daemon).*"
set_res() { # fault
    if [[ $1 == rank ]]; then
        # a survivor on either host may be first (rank 2 shares h2)
        ours_re="btl/ofi on h[12] lost contact with peer \[\[[0-9]+,1\],3\] on h2: .*"
        orte_re="process rank 3 with PID [0-9]+ on node h2 exited on signal 9.*"
    else
        ours_re="btl/ofi on h1 lost contact with peer \[\[[0-9]+,1\],[23]\] on h2: .*"
        orte_re="(process rank [23] with PID [0-9]+ on node h2 exited on signal 9|Remote daemon: .* on node h2|lost communication with a remote daemon).*"
    fi
}

run_lost() { # label prov mode fault log t0
    local label=$1 prov=$2 mode=$3 fault=$4 log=$5 t0=$6
    local rlog=${log%.log}-runtime.log clog=${log%.log}-recovery.log what crash head
    local -a why=() oks=()
    set_res "$fault"
    : >"$rlog"
    : >"$clog"
    # 1. as a user runs it: whoever ends the job, it must end and name h2.
    #    After a cut the runtime ends the job about 17 s after the fault,
    #    whatever the provider and traffic (20 s a case): by default only
    #    tcp;ofi_rxm's rma case runs it; the recovery run (2.) shows what
    #    btl/ofi does on every one
    if [[ $fault == cut && $full != 1 && ! ($prov == "tcp;ofi_rxm" && $mode == rma) ]]; then
        oks+=("runtime run not made (after a cut only on tcp;ofi_rxm rma unless BTL_OFI_FULL=1)")
    elif ! lost_run "$prov" "$mode" "$fault" 0 "$rlog"; then
        why+=("runtime run: $L_WHY")
    else
        what=$(grep -m1 -oE "$ours_re" "$rlog" | cut -c1-200)
        [[ -z $what ]] && what=$(grep -m1 -oE "$orte_re" "$rlog" | cut -c1-120)
        [[ $what == *"lost communication with a remote daemon"* ]] &&
            ! grep -q 'on node h2' "$rlog" && what=""
        crash=$(crash_of "$rlog")
        [[ $crash == *"exited on signal 9"* ]] && crash=""
        head=$(head_crash_of "$rlog")
        [[ -n $head ]] && crash="" && oks+=("runtime run: mpirun itself crashed as it aborted (Open MPI's runtime, no frame of ours: '$head')")
        if ((!L_ENDED)); then
            why+=("runtime run: the job still ran ${lost_limit} s after the fault")
        elif [[ -z $what ]]; then
            why+=("runtime run: ended $L_SECS s after the fault without naming h2: $(first_fail "$rlog")")
        else
            oks+=("runtime: ended $L_SECS s after the fault ('$what')")
        fi
        [[ -n $crash ]] && why+=("runtime run: crash: $crash")
    fi
    # 2. the runtime keeps the job (orte_enable_recovery 1): btl/ofi must
    #    tell the survivors, naming h2, within the limit (mpirun may then
    #    still wait for a daemon it cannot reach: its business)
    if ! lost_run "$prov" "$mode" "$fault" 1 "$clog"; then
        why+=("recovery run: $L_WHY")
    else
        what=$(grep -m1 -oE "$ours_re" "$clog" | cut -c1-200)
        crash=$(crash_of "$clog")
        [[ $crash == *"exited on signal 9"* ]] && crash=""
        head=$(head_crash_of "$clog")
        [[ -n $head ]] && crash="" && oks+=("recovery run: mpirun itself crashed as it aborted (Open MPI's runtime, no frame of ours: '$head')")
        if [[ -z $what || -z $L_NAMED ]]; then
            why+=("recovery run: btl/ofi did not name h2 within ${lost_limit} s of the fault ($( ((L_ENDED)) && echo "the job ended after $L_SECS s: $(first_fail "$clog")" || echo "the survivors still ran"))")
        else
            oks+=("recovery: btl/ofi named it $L_NAMED s after the fault ('$what')")
        fi
        [[ -n $crash ]] && why+=("recovery run: crash: $crash")
    fi
    cat "$rlog" "$clog" >"$log"
    hosts_down >/dev/null 2>&1
    hosts_ready=0
    if ((${#why[@]})); then
        report FAIL "$label" $((SECONDS - t0)) "$(printf '%s; ' "${why[@]}" | sed 's/; $//')" "$clog"
    else
        report PASS "$label" $((SECONDS - t0)) "$(printf '%s; ' "${oks[@]}" | sed 's/; $//')"
    fi
}

# ------------------------------------------------------------------ rails
# tx_bytes of h1 rail0, h1 rail1, h2 rail0, h2 rail1
rail_bytes() {
    local h r
    for h in h1 h2; do
        for r in 0 1; do
            hosts_bytes "$h" "$r" || echo 0
        done
    done | paste -sd ' ' -
}

run_rails() { # label prov policy mode log t0
    local label=$1 prov=$2 pol=$3 mode=$4 log=$5 t0=$6 before after rc bw share refused idle=""
    local -a sel
    case $pol in
    include) sel=(--mca btl_ofi_if_include 10.77.1.0/24) ;;
    exclude) sel=(--mca btl_ofi_if_exclude rail0) ;;
    one) sel=(--mca btl_ofi_max_rails 1) ;;
    weighted) sel=(--mca btl_ofi_bandwidth_rail0 3000 --mca btl_ofi_bandwidth_rail1 1000) ;;
    all) sel=() ;;
    esac
    before=$(rail_bytes)
    NP=2 hosts_job "$log" 120 ofi,self "$prov" --map-by node --mca btl_ofi_verbose 1 "${sel[@]}" \
        "$bindir/rails" "$mode" -mib 4 -n 16
    rc=$?
    after=$(rail_bytes)
    # bytes per rail (both hosts' transmit counters), then rail0's share
    # in hundredths of a percent
    read -r r0 r1 < <(echo "$before $after" | awk '{ print ($5 - $1) + ($7 - $3), ($6 - $2) + ($8 - $4) }')
    share=$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.2f", (a + b) ? 100 * a / (a + b) : 100 }')
    bw=$(grep -m1 -oE "rails: $mode 4 MiB x 16: [0-9.]+ MB/s" "$log" | awk '{ print $(NF-1) }')
    case $pol in
    include | exclude)
        refused=$(grep -m1 -oE "candidate [^ ]+ domain rail0 \(interface rail0, 10\.77\.0\.[0-9]+\): refused, interface (not in btl_ofi_if_include|listed in btl_ofi_if_exclude)" "$log")
        ;;
    one)
        # the interface libfabric lists first is taken, the other refused
        # and idle (r0 and r1 below: the idle link first)
        idle=$(grep -m1 -oE "candidate [^ ]+ domain rail[01] \(interface rail[01], 10\.77\.[01]\.[0-9]+\): refused, btl_ofi_max_rails rails are taken already" "$log" | grep -oE "rail[01]" | head -n 1)
        refused=$idle
        [[ $idle == rail1 ]] && read -r r0 r1 <<<"$r1 $r0"
        share=$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.2f", (a + b) ? 100 * a / (a + b) : 100 }')
        ;;
    all)
        # both rails taken on both hosts, each weighed by the speed the
        # kernel reports for its veth (10000 Mbit/s)
        refused=$(grep -c -E "candidate [^ ]+ domain rail[01] \(interface rail[01], 10\.77\.[01]\.[0-9]+\): taken \(rail [01]\)" "$log")
        ((refused >= 4)) || refused=""
        (($(grep -c -E "rail [01] \(interface rail[01]\): bandwidth 1250 MB/s \(the interface's speed\)" "$log") >= 4)) || refused=""
        ;;
    weighted)
        refused=$(grep -c -E "rail [01] \(interface rail(0\): bandwidth 3000|1\): bandwidth 1000) MB/s \(btl_ofi_bandwidth_IF\)" "$log")
        ((refused >= 4)) || refused=""
        ;;
    esac
    if ((rc == 0)) && [[ -z $refused ]]; then
        report FAIL "$label" $((SECONDS - t0)) "no verbose line showing the rails chosen as asked ($pol)" "$log"
    elif ((rc == 0)) && [[ $pol == weighted ]] && awk -v s="$share" 'BEGIN { exit !(s < 65 || s > 85) }'; then
        report FAIL "$label" $((SECONDS - t0)) "rail0, weighed 3 to 1, carried $share % of the bytes ($r0 of $((r0 + r1))): it must carry 65 to 85 %" "$log"
    elif ((rc == 0)) && [[ $pol != all && $pol != weighted ]] && awk -v s="$share" 'BEGIN { exit !(s >= 1) }'; then
        report FAIL "$label" $((SECONDS - t0)) "the idle link carried $share % of the bytes ($r0 of $((r0 + r1))): the selection was not honoured" "$log"
    elif ((rc == 0)) && [[ $pol == all ]] && awk -v s="$share" 'BEGIN { exit !(s < 30 || s > 70) }'; then
        report FAIL "$label" $((SECONDS - t0)) "rail0 carried $share % of the bytes ($r0 of $((r0 + r1))): each link must carry at least 30 %" "$log"
    else
        NP=2 judge_job "$label" "$log" "$rc" rails "$t0" "$([[ $pol == one ]] && echo "idle $idle $r0 bytes, the other $r1 bytes ($idle" || echo "rail0 $r0 bytes, rail1 $r1 bytes (rail0") $share %); $bw MB/s"
    fi
}

# link L (0 or 1) of h2 cut while both rails carry transfers (rails MODE
# -secs 15: each transfer with its own pattern, every one checked by rank
# 1; MODE put, send of 4 MiB, or msg: sends of 1 KiB, eager, thousands a
# second): btl/ofi must name the cut link (its address 10.77.L.x, and the
# one that still answers) and carry on over the other rail, nothing lost:
# the job ends normally, every message or the window checked, and both
# hosts print a failover line (each finds the cut or hears of it from the other).
# Messages caught in flight on the cut link, or completed by the provider
# before delivery (ofi_rxm), are sent again on the other rail and taken
# once. The runtime's own connections take the other link
# (oob_tcp_if_include), as on a cluster whose management network is not
# the cut one. Each link is the other's module: cutting both ways shows
# that every rail's peers are watched, not only the first module's. The
# cut comes as soon as the transfers stream; failover takes 3-4 s (7-8 s
# for atomics, when the keepalive finds the cut first). The transfers go
# on for 1 s after the runner sees the failover (it creates the job's
# stop file then: rails -stop-file), 60 s at most: traffic on the other
# rail after the failover is what is proven, not a fixed time (25 s until
# 2026-11-26, then 15 s, then 3 s after the failover until 2026-12-03:
# waiting, not coverage; 1 s is hundreds of 4 MiB puts or thousands of
# messages, each checked).
run_rails_cut() { # label prov mode link log t0
    local label=$1 prov=$2 mode=$3 link=$4 log=$5 t0=$6 pid t_cut secs what moved sides i h
    local cut_re="its address 10\.77\.$link\.[12] on rail [01] does not answer while 10\.77\.$((1 - link))\.[12] on rail [01] does: the link of rail [01] is cut or down"
    local over_re="btl/ofi on h[12]: peer \[\[[0-9]+,1\],[01]\] on h[12]: $cut_re; traffic to this peer takes rail [01] from now on"
    local heard_re="btl/ofi on h[12]: peer \[\[[0-9]+,1\],[01]\] on h[12] finds the link between its rail [01] and our rail [01] cut or down; traffic to this peer takes rail [01] from now on"
    local lost_re="btl/ofi on h[12] lost contact with peer \[\[[0-9]+,1\],[01]\] on h[12]: ($cut_re|it finds the link between its rail [01] and our rail [01] cut or down)"
    local size=(-mib 4) again stopf=${log%.log}.stop
    [[ $mode == msg ]] && size=(-kib 1) && mode=send
    [[ $mode == amo ]] && size=()
    : >"$log"
    rm -f "$stopf"
    OFIRUN_BTLS=ofi,self BTL_OFI_EXPECT_PROVIDER=$prov timeout -k 10 240 bash "$here/hosts.sh" \
        mpirun -np 2 -x BTL_OFI_EXPECT_PROVIDER --map-by node --mca btl_ofi_provider_include "$prov" \
        --mca oob_tcp_if_include "10.77.$((1 - link)).0/24" \
        "${keepalive[@]}" "$bindir/rails" "$mode" "${size[@]}" -secs 60 -stop-file "$stopf" -tail 1 \
        </dev/null >>"$log" 2>&1 &
    pid=$!
    if ! await_line "$pid" "$log" '^rails: streaming'; then
        stop_job "$pid"
        report FAIL "$label" $((SECONDS - t0)) "the transfer never streamed: $(first_fail "$log")" "$log"
        hosts_down >/dev/null 2>&1
        hosts_ready=0
        return
    fi
    t_cut=$(date +%s%N)
    hosts_cut h2 "$link"
    echo "==== $(date +%T.%N) cut: h2 rail $link" >>"$log"
    moved=
    for ((i = 0; i < lost_limit * 10; i++)); do
        if [[ -z $moved ]] && grep -qE "$over_re|$lost_re" "$log"; then
            moved=$(secs_between "$t_cut" "$(date +%s%N)")
        fi
        # both hosts left the link (or a peer was declared lost): the
        # transfers may end 1 s from now
        if [[ -n $moved ]] && { grep -qE "$lost_re" "$log" ||
            (($(grep -oE "$over_re|$heard_re" "$log" | grep -oE '^btl/ofi on h[12]' | sort -u | wc -l) >= 2)); }; then
            touch "$stopf"
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    lost_limit=120 await_end "$pid" || {
        # what the sockets of both hosts hold (for the hang's cause)
        for h in h1 h2; do
            echo "==== ss -tnoi on $h" >>"$log"
            hosts_run "$h" ss -tnoi >>"$log" 2>&1
        done
        stop_job "$pid"
        report FAIL "$label" $((SECONDS - t0)) "the job still ran 120 s after the failover (or $lost_limit s after the cut of rail $link of h2 with no failover)" "$log"
        hosts_down >/dev/null 2>&1
        hosts_ready=0
        return
    }
    secs=$(secs_between "$t_cut" "$(date +%s%N)")
    what=$(grep -m1 -oE "$over_re" "$log" | cut -c1-240)
    # each host leaves the link: it found the cut itself, or heard of it
    # from the other (traffic both ways lets both find it)
    sides=$(grep -oE "$over_re|$heard_re" "$log" | grep -oE '^btl/ofi on h[12]' | sort -u | wc -l)
    if [[ -n $(crash_of "$log") ]]; then
        report FAIL "$label" $((SECONDS - t0)) "crash: $(crash_of "$log")" "$log"
    elif [[ -z $what ]]; then
        report FAIL "$label" $((SECONDS - t0)) "no failover line naming the cut link: $(first_fail "$log")" "$log"
    elif ((sides < 2)); then
        report FAIL "$label" $((SECONDS - t0)) "one host failed over but the other neither found the cut nor said it heard of it" "$log"
    elif grep -q 'lost contact with peer' "$log"; then
        report FAIL "$label" $((SECONDS - t0)) "failed over, yet a peer was declared lost: $(grep -m1 -o 'btl/ofi on .*lost contact.*' "$log" | cut -c1-200)" "$log"
    else
        again=$(grep -oE 'sent again on it: [0-9]+ messages? and [0-9]+ puts? or gets?' "$log" | sed 's/sent again on it: //' | paste -sd '+')
        NP=2 judge_job "$label" "$log" "$JOB_RC" rails "$t0" "failed over $moved s after the cut, job ended normally $secs s after it; sent again (h1, h2): ${again:-none}; $(grep -m1 -oE 'rails: rank 1: [^(]*' "$log"); $(grep -m1 -oE 'rails: ((put|send) [0-9]+ [KM]iB x [0-9]+: [0-9.]+ MB/s|amo x [0-9]+: [0-9.]+ per ms)' "$log")"
    fi
    hosts_down >/dev/null 2>&1
    hosts_ready=0
}

# ------------------------------------------------------------------ one case
run_case() {
    local c=$1 group pname prov a b label log t0 rc btls why
    case_start "$c"
    case $group in
    onesided) label="hosts $prov ${a//+/,} $b" ;;
    dynamic) label="hosts $prov ${a//+/,} dynamic windows" ;;
    dynchurn) label="hosts $prov dynamic windows, regions attached and detached every round" ;;
    dynattach) label="hosts $prov dynamic windows, neighbouring attachments as one region" ;;
    dynhang) label="hosts $prov dynamic windows through Debian's own osc/rdma: the deadlock of ompi issue 10328" ;;
    twosided) label="hosts $prov twosided $a" ;;
    lost) label="hosts $prov lost $([[ $b == rank ]] && echo "rank 3 on h2" || echo host) during $a ($b)" ;;
    busy) label="hosts $prov target busy 20 s outside MPI" ;;
    rails) label="hosts $prov rails $a $b" ;;
    leave) label="hosts $prov rails: the peer finalized first, its messages taken after it left" ;;
    threads) label="hosts $prov threads N=2 T=4" ;;
    roundtrip) label="hosts $prov roundtrip: 4000 x put, get, fop, cas, acc + flush, ranks on one core" ;;
    coll) label="hosts $prov coll/ofi" ;;
    colldetached) label="hosts $prov coll/ofi, ranks out of MPI after each collective" ;;
    collfinal) label="hosts $prov coll/ofi, MPI_Finalize right after reductions" ;;
    shm) label="hosts shm ${pname//+/,} across hosts" ;;
    *)
        report FAIL "$c" 0 "unknown case (see --list)"
        return
        ;;
    esac
    if [[ $group != shm ]]; then
        why=$(provider_problem "$prov")
        if [[ -n $why ]]; then
            report FAIL "$label" 0 "$why"
            return
        fi
    fi
    if ! need_hosts "$([[ $group == rails || $group == leave ]] && echo 2 || echo 1)"; then
        report FAIL "$label" $((SECONDS - t0)) "the simulated hosts could not be set up" "$logdir/hosts-up.log"
        return
    fi
    case $group in
    onesided)
        local prog=$b args=()
        # atomics on windows with acc_single_intrinsic: one btl atomic per
        # single-element accumulate, no accumulate lock (osc-rdma/patches
        # 0008), counted
        [[ $b == atomics-intrinsic ]] && prog=atomics args=(intrinsic)
        # mcs64, atomics-global, sync-global, llist-global: in btl_ofi_global_atomics'
        # mode (osc-rdma/patches 0013, 0014), which the verbose line
        # must show
        # *-noglobal: the same with it at 0, which the line must not claim
        local -a mode=()
        local global=
        [[ $b == mcs64 || $b == *-global || $b == *-message ]] && global=-1
        [[ $b == *-noglobal ]] && global=0
        [[ -n $global ]] && mode=(--mca btl_ofi_global_atomics "$global" --mca btl_ofi_verbose 5)
        local dyn=1 secs=$test_timeout
        case $b in
        atomics-global | atomics-noglobal) prog=atomics args=(intrinsic) ;;
        atomics-message) prog=atomics args=(message) ;;
        sync-global) prog=sync mode+=(--mca osc_rdma_acc_message 0) ;;
        sync-noglobal) prog=sync ;;
        sync-message) prog=sync args=(message) ;;
        mcs64) prog=mcs args=(400 64) ;;
        llist-global)
            # a dynamic window (ours carries them across the hosts, with
            # 0001). Ranks 0 and 2 on one host, 1 and 3 on the other.
            # Without 0015 the ranks starved each other: tcp;ofi_rxm's
            # case hung (60 s) 3 runs of 3, udp;ofi_rxd's took 39 s (the
            # liveness probes of a stalled peer stir them), sockets' 2 s
            # (its progress thread applies the atomics); 3 s with 0015.
            # Times are not asserted: the case fails on a hang (60 s) or
            # a wrong list.
            prog=llist args=(32 locked) dyn=0 secs=60 mode+=(--map-by node)
            ;;
        gather) args=("$([[ $prov == "udp;ofi_rxd" ]] && echo no || echo yes)") ;;
        esac
        compile "$prog" >>"$log" || { report FAIL "$label" 0 "compiling $prog failed" "$log"; return; }
        no_dynamic=$dyn hosts_job "$log" "$secs" "${a//+/,}" "$prov" "${mode[@]}" "$bindir/$prog" "${args[@]}"
        rc=$?
        if [[ $b == atomics-intrinsic || $b == pairs || ${#mode[@]} -gt 0 ]] && ! osc_is_ours "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "the job did not run our osc/rdma (no osc_rdma_patches in ompi_info through the job's component path)" "$log"
        elif [[ $global == -1 ]] && ! grep -q "atomic with processor atomics: btl_ofi_global_atomics" "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "btl_ofi_global_atomics -1 did not take effect (no verbose line saying so)" "$log"
        elif [[ $global == 0 ]] && { ! grep -q "atomic flags 0x" "$log" || grep -q "atomic with processor atomics" "$log"; }; then
            report FAIL "$label" $((SECONDS - t0)) "btl_ofi_global_atomics 0 did not take effect (no verbose line with the atomic flags, or one claiming processor atomics)" "$log"
        else
            test_timeout=$secs judge_job "$label" "$log" "$rc" "$prog" "$t0"
        fi
        ;;
    dynamic | dynchurn | dynattach)
        local prog=dynhosts btls=${a//+/,}
        [[ $group == dynchurn ]] && prog=dynchurn btls=ofi,self
        [[ $group == dynattach ]] && prog=dynattach btls=ofi,self
        if [[ ! -f $osc_ours ]]; then
            report FAIL "$label" 0 "no osc/rdma of ours in $osc_ours (built with BTL_OFI_OMPI_FIXES=0?): Debian's deadlocks on dynamic windows across hosts (scripts/build-ompi-fixes.sh)"
            return
        fi
        if [[ $group == dynattach ]]; then
            # tests/dynattach.c: the region tables it merges are read
            # through the btl from the other host (dynamic windows on)
            compile dynattach >>"$log" || { report FAIL "$label" 0 "compiling dynattach failed" "$log"; return; }
        else
            build "$prog" "$here/$prog.c" >>"$log" || { report FAIL "$label" 0 "compiling $prog failed" "$log"; return; }
        fi
        no_dynamic=0 hosts_job "$log" 120 "$btls" "$prov" "$bindir/$prog"
        rc=$?
        if ! osc_is_ours "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "the job did not run our osc/rdma (no osc_rdma_patches in ompi_info through the job's component path)" "$log"
        else
            judge_job "$label" "$log" "$rc" "$prog" "$t0" "through osc/rdma with osc-rdma/patches"
        fi
        ;;
    dynhang)
        # the same job through Debian's osc/rdma: a component path that
        # holds our btl only. It must hang (no "OK"), or the fix and the
        # README's word for it are out of date
        build dynchurn "$here/dynchurn.c" >>"$log" || { report FAIL "$label" 0 "compiling dynchurn failed" "$log"; return; }
        local debian_prefix=$logdir/debian-osc
        rm -rf "$debian_prefix"
        mkdir -p "$debian_prefix/lib/openmpi"
        cp "${osc_ours%/*}/mca_btl_ofi.so" "$debian_prefix/lib/openmpi/"
        BTL_OFI_PREFIX=$debian_prefix hosts_job "$log" 10 ofi,self "$prov" "$bindir/dynchurn"
        rc=$?
        if ((rc == 124 || rc == 137)) && ! grep -qx 'OK dynchurn' "$log" &&
            grep -q '^dynchurn: np=4 btl_ofi_version=0.1.0' "$log"; then
            report PASS "$label" $((SECONDS - t0)) "hung as expected: killed after 10 s (the job reaches its first access across the hosts in about a second), with our btl/ofi and Debian's osc/rdma 4.1.4 (the fix of osc-rdma/patches is what makes the dynamic cases pass)"
        elif grep -qx 'OK dynchurn' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "Debian's osc/rdma did not hang: is the patch still needed? (README, osc/rdma)" "$log"
        else
            report FAIL "$label" $((SECONDS - t0)) "the job ended (exit code $rc) without the hang: $(first_fail "$log")" "$log"
        fi
        ;;
    twosided)
        compile "$a" >>"$log" || { report FAIL "$label" 0 "compiling $a failed" "$log"; return; }
        local -a args=()
        [[ $a == pingpong ]] && args=(-proto get -max 1m)
        [[ $a == flood ]] && args=(-n 600)
        [[ $a == late ]] && args=(-n 150 -r 2)
        hosts_job "$log" "$test_timeout" ofi,self "$prov" "$bindir/$a" "${args[@]}"
        judge_job "$label" "$log" $? "$a" "$t0"
        ;;
    threads)
        compile mt >>"$log" || { report FAIL "$label" 0 "compiling mt failed" "$log"; return; }
        BTL_OFI_EXPECT_CONTEXTS=2 hosts_job "$log" "$test_timeout" ofi,self "$prov" \
            -x BTL_OFI_EXPECT_CONTEXTS --mca btl_ofi_num_contexts_per_module 2 \
            "$bindir/mt" -t 4 -n 12 -l 4
        judge_job "$label" "$log" $? threads "$t0"
        ;;
    roundtrip)
        # one rank per host, both bound to core 0 (each host's daemon binds
        # its rank to its first core: the hosts share this machine's), as
        # on a node whose ranks share cores. A wait that spins without
        # giving the core away lets the peer run once a scheduler tick
        # (4 ms): 4,000 operations of each kind then take over 100 s, and
        # the job limit of 60 s fails them; a network round trip here is
        # tens of microseconds (the log line says how many)
        compile roundtrip >>"$log" || { report FAIL "$label" 0 "compiling roundtrip failed" "$log"; return; }
        NP=2 hosts_job "$log" 60 ofi,self "$prov" --map-by node --bind-to core "$bindir/roundtrip" -n 4000
        NP=2 test_timeout=60 judge_job "$label" "$log" $? roundtrip "$t0" "$(grep -m1 -oE 'us per operation \+ flush: .*' "$log")"
        ;;
    coll)
        # coll/ofi raised over our btl across the hosts (tests/coll/colltest.c:
        # every result checked element by element)
        if ! mpicc -O2 -Wall -o "$bindir/colltest" "$tests/coll/colltest.c" >>"$log" 2>&1; then
            report FAIL "$label" 0 "compiling colltest failed" "$log"
            return
        fi
        hosts_job "$log" "$test_timeout" ofi,self "$prov" --mca coll_ofi_priority 90 \
            --mca coll_ofi_verbose 1 --mca btl_ofi_verbose 1 "$bindir/colltest" expect-ofi
        rc=$?
        local served
        served=$(grep -m1 'coll:ofi: communicator 0 rank 0: served' "$log" | sed 's/.*: served/served/')
        why=$(coll_common_why "$log" "$rc" '^colltest: all checks passed on 4 ranks')
        if [[ -n $why ]]; then
            report FAIL "$label" $((SECONDS - t0)) "$why" "$log"
        elif ! grep -q 'coll:ofi: serving communicator 0 with 4 ranks over btl ofi' "$log" || [[ -z $served ]]; then
            report FAIL "$label" $((SECONDS - t0)) "coll/ofi did not serve MPI_COMM_WORLD over btl ofi" "$log"
        elif ! grep -q 'coll:ofi: serving communicator 0 with 4 ranks over btl ofi (rank 0, .*, 1 peers through shared memory, messages of up to [1-9][0-9]* bytes to the others)' "$log"; then
            # the rank on the same host is mapped, the two on the other
            # go through our btl, flags and small payloads as messages
            report FAIL "$label" $((SECONDS - t0)) "rank 0 did not map its one peer on the same host: $(grep -m1 -o 'rank 0, .*peers through shared memory' "$log")" "$log"
        elif ! grep -q 'coll:ofi: communicator 0 rank 0: served .*; [1-9][0-9]* small reductions gathered for the node group' "$log"; then
            # ranks 0 and 2 (h1) and 1 and 3 (h2) are node groups: rank
            # 0 leads its own, and gathers rank 2's part of every small
            # commutative reduction rooted on h2
            report FAIL "$label" $((SECONDS - t0)) "rank 0 gathered no small reduction for its node group: $served" "$log"
        elif ! grep -q 'coll:ofi: communicator 0 rank 0: served .*; [1-9][0-9]* done counts told' "$log"; then
            # a root of small reductions tells the ranks on other nodes
            # that it finished, every gather_sets / 2 of its calls
            report FAIL "$label" $((SECONDS - t0)) "rank 0, root of small reductions, never told the other ranks its done count: $served" "$log"
        else
            report PASS "$label" $((SECONDS - t0)) "$served; 1 peer on the same host through shared memory, 2 through the btl (flags and small payloads as messages), small reductions across the hosts once per node"
        fi
        ;;
    colldetached)
        local marks
        marks=$(mktemp -d) || {
            report FAIL "$label" 0 "mktemp -d failed"
            return
        }
        why=$(coll_program_why colldetached '^OK colldetached: 43 steps on 4 ranks' "$marks")
        rm -rf "$marks"
        if [[ -n $why ]]; then
            report FAIL "$label" $((SECONDS - t0)) "$why" "$log"
        elif ! grep -q 'coll:ofi: serving communicator 0 with 4 ranks over btl ofi (rank 0, .*, 1 peers through shared memory' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "coll/ofi did not serve MPI_COMM_WORLD with its one peer on the same host mapped" "$log"
        else
            report PASS "$label" $((SECONDS - t0)) "$(grep -m1 -o 'OK colldetached: .*' "$log" | cut -c18-); 1 peer on the same host through shared memory, 2 through the btl"
        fi
        ;;
    collfinal)
        # the same job as colldetached's, another program
        local finalize_errors='an operation completed with an error|lost contact with peer|INVALID|still in flight when the BTL was closed'
        why=$(coll_program_why collfinal '^OK collfinal: 16 reductions on 4 ranks' 16)
        if [[ -n $why ]]; then
            report FAIL "$label" $((SECONDS - t0)) "$why" "$log"
        elif grep -q -E "$finalize_errors" "$log"; then
            # the root's done counts may fail once their peers left
            # MPI_Finalize: no error of theirs (a fresh CI run ended with
            # exit code 255 on it), and the peer they named must still be
            # a process, not freed memory ("[[INVALID],INVALID] on ?");
            # nor may finalize wait for them (tcp;ofi_rxm, connecting to
            # a peer that had left, held them: 10 s and a help message)
            report FAIL "$label" $((SECONDS - t0)) "an error was reported in MPI_Finalize: $(grep -m1 -E "$finalize_errors" "$log" | cut -c1-200)" "$log"
        elif ! grep -q 'coll:ofi: communicator 0 rank 0: served .* [1-9][0-9]* reduce.*; [1-9][0-9]* done counts told' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "coll/ofi's root told no done count (the messages this case is about were not sent)" "$log"
        else
            report PASS "$label" $((SECONDS - t0)) "16 reductions, every sum right, MPI_Finalize at once on every rank, clean exit; $(grep -m1 -o '[0-9]* done counts told' "$log") by the root"
        fi
        ;;
    busy)
        compile busy >>"$log" || { report FAIL "$label" 0 "compiling busy failed" "$log"; return; }
        hosts_job "$log" 180 ofi,self "$prov" "$bindir/busy" -secs 20
        rc=$?
        if grep -q 'lost contact with peer' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "a busy peer was declared lost: $(grep -m1 -o 'btl/ofi on .*lost contact.*' "$log" | cut -c1-200)" "$log"
        else
            judge_job "$label" "$log" "$rc" busy "$t0" "$(grep -m1 -o 'put + flush to the busy rank 2 took [0-9.]* s' "$log")"
        fi
        ;;
    rails)
        compile rails >>"$log" || { report FAIL "$label" 0 "compiling rails failed" "$log"; return; }
        if [[ $a == cut* ]]; then
            run_rails_cut "$label" "$prov" "$b" "${a#cut}" "$log" "$t0"
        else
            run_rails "$label" "$prov" "$a" "$b" "$log" "$t0"
        fi
        ;;
    leave)
        compile leave >>"$log" || { report FAIL "$label" 0 "compiling leave failed" "$log"; return; }
        local flag=$logdir/leave.flag
        rm -f "$flag"
        NP=2 hosts_job "$log" 60 ofi,self "$prov" --map-by node --mca async_mpi_finalize 1 \
            --mca btl_ofi_verbose 1 "$bindir/leave" -flag "$flag" -n 100
        rc=$?
        if grep -q 'lost contact with peer' "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "a peer that finalized was declared lost: $(grep -m1 -o 'btl/ofi on .*lost contact.*' "$log" | cut -c1-200)" "$log"
        elif ((rc == 0)) && (($(grep -c -E 'candidate [^ ]+ domain rail[01] .*: taken \(rail 1\)' "$log") < 2)); then
            report FAIL "$label" $((SECONDS - t0)) "not both rails taken on both hosts (its verbose selection lines): one rail numbers nothing and acknowledges nothing" "$log"
        else
            NP=2 judge_job "$label" "$log" "$rc" leave "$t0" "$(grep -m1 -o 'rank 1 received .*' "$log")"
        fi
        ;;
    lost)
        compile death >>"$log" || { report FAIL "$label" 0 "compiling death failed" "$log"; return; }
        run_lost "$label" "$prov" "$a" "$b" "$log" "$t0"
        ;;
    shm)
        compile putget >>"$log" || { report FAIL "$label" 0 "compiling putget failed" "$log"; return; }
        btls=${pname//+/,}
        OFIRUN_BTLS=$btls run_logged "$log" 120 bash "$here/hosts.sh" mpirun -np 4 \
            --mca btl_ofi_provider_include shm "$bindir/putget"
        rc=$?
        local said
        said=$(grep -m1 -oE "btl/ofi: provider shm reaches only processes on this host.*" "$log" | cut -c1-200)
        if ((rc == 124 || rc == 137)); then
            report FAIL "$label" $((SECONDS - t0)) "hung (killed after 120 s)" "$log"
        elif [[ -n $(crash_of "$log") ]]; then
            report FAIL "$label" $((SECONDS - t0)) "crash: $(crash_of "$log")" "$log"
        elif [[ -z $said ]]; then
            report FAIL "$label" $((SECONDS - t0)) "btl/ofi did not say that shm cannot reach the other host (exit code $rc)" "$log"
        elif ((rc == 0)); then
            report FAIL "$label" $((SECONDS - t0)) "the job passed, yet only shm was allowed to cross hosts" "$log"
        elif ! grep -qiE "unreachable|could not reach|No available|cannot reach" "$log"; then
            report FAIL "$label" $((SECONDS - t0)) "the job ended (exit code $rc) without Open MPI's unreachable report: $(first_fail "$log")" "$log"
        else
            report PASS "$label" $((SECONDS - t0)) "btl/ofi: '$said'; the job ended with Open MPI's unreachable report (exit code $rc)"
        fi
        ;;
    esac
}

if [[ ${1:-} == --list ]]; then
    list_cases
    exit 0
fi
runner_help "$0" "$@"
mkdir -p "$bindir" "$logdir"
if ((EUID != 0)); then
    echo "FAIL hosts: needs root (network and pid namespaces)"
    exit 1
fi
if (($#)); then
    cases=("$@")
else
    mapfile -t cases < <(list_cases)
fi
for c in "${cases[@]}"; do
    run_case "$c"
done
summary
