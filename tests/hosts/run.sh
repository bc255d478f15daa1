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
#                            (vader then carries what stays on a host)
#   dynamic:PROV:BTLS        tests/bin/dynhosts: MPI_Win_create_dynamic,
#                            attach, put/get/accumulate to a rank on the
#                            other host (the region table and its lock
#                            live on the target and go through the btl).
#                            Only with BTL_OFI_HOSTS_DYNAMIC=1: Open MPI
#                            4.1.4's osc/rdma deadlocks there by itself
#                            (find_dynamic_region holds the table's lock
#                            exclusively, then waits for it shared; ompi
#                            issue 10328, fixed in 4.1.5), whatever the
#                            btl; the other cases set BTL_OFI_NO_DYNAMIC=1
#                            so putget and canary leave dynamic windows out
#   twosided:PROV:PROG       tests/twosided PROG (pingpong get, flood,
#                            mixed, late) with btl ofi,self
#   shm:BTLS                 provider shm cannot reach the other host:
#                            btl/ofi must say so and step aside; with
#                            ofi,self the job must end with Open MPI's
#                            "unreachable" report, never hang
#   lost:PROV:MODE:FAULT     tests/bin/death MODE (rma|msg) with the
#                            victim on h2, then FAULT: kill (every process
#                            of h2 SIGKILLed) or cut (h2's link unplugged:
#                            no reset ever arrives); the job must end
#                            within 30 s and name h2
# Matrix: PROV in tcp;ofi_rxm, sockets, udp;ofi_rxd.
#
# Environment: PROVIDERS (default the three network providers),
# BTL_OFI_TEST_TIMEOUT (seconds per job, default 300). Needs root; the
# hosts are removed on every exit path.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tests=$(cd "$here/.." && pwd)
repo=$(cd "$tests/.." && pwd)
bindir=$tests/bin
logdir=$tests/logs/hosts
# shellcheck source=tests/lib.sh
source "$tests/lib.sh"
# shellcheck source=tests/hosts/hosts.sh
source "$here/hosts.sh"

PROVIDERS=${PROVIDERS:-tcp;ofi_rxm sockets udp;ofi_rxd}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-300}
lost_limit=30

list_cases() {
    local prov p b prog
    for prov in $PROVIDERS; do
        [[ $prov == shm ]] && continue
        p=${prov//;/+}
        for b in ofi+self ofi+vader+self; do
            for prog in putget atomics sync canary; do
                echo "onesided:$p:$b:$prog"
            done
            # Open MPI 4.1.4's osc/rdma deadlocks on dynamic windows across
            # hosts (ompi issue 10328, fixed in 4.1.5): only on request
            [[ ${BTL_OFI_HOSTS_DYNAMIC:-0} == 1 ]] && echo "dynamic:$p:$b"
        done
        for prog in pingpong flood mixed late; do
            echo "twosided:$p:$prog"
        done
        for m in rma msg; do
            echo "lost:$p:$m:kill"
            echo "lost:$p:$m:cut"
        done
    done
    echo "shm:ofi+self"
    echo "shm:ofi+vader+self"
}

compile() { # prog
    case $1 in
    putget | atomics | sync | canary) build "$1" "$tests/$1.c" ;;
    dynhosts) build dynhosts "$here/dynhosts.c" ;;
    death) build death "$tests/faults/death.c" ;;
    pingpong | flood | mixed | late) build "$1" "$tests/twosided/$1.c" "$tests/twosided/ts.h" ;;
    esac
}

# hosts for the whole run; removed on every exit path
hosts_ready=0
need_hosts() {
    ((hosts_ready)) && return 0
    if ! hosts_up 2 1 >"$logdir/hosts-up.log" 2>&1; then
        return 1
    fi
    hosts_ready=1
}
trap 'hosts_down >/dev/null 2>&1' EXIT
trap 'exit 130' INT TERM

# a job on the hosts: 4 ranks, ranks 0,1 on h1 and 2,3 on h2
hosts_job() { # log secs btls prov args...
    local log=$1 secs=$2 btls=$3 prov=$4
    shift 4
    OFIRUN_BTLS=$btls BTL_OFI_EXPECT_PROVIDER=$prov BTL_OFI_NO_DYNAMIC=1 run_logged "$log" "$secs" \
        bash "$here/hosts.sh" mpirun -np 4 -x BTL_OFI_EXPECT_PROVIDER -x BTL_OFI_NO_DYNAMIC \
        --mca btl_ofi_provider_include "$prov" "$@"
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
    elif ! grep -q "^$prog: np=4 btl_ofi_version=0.1.0" "$log"; then
        report FAIL "$label" $((SECONDS - t0)) "no proof that our btl/ofi ran (btl_ofi_version line)" "$log"
    else
        report PASS "$label" $((SECONDS - t0)) "$note"
    fi
}

# ------------------------------------------------------------------ lost
# seconds (one decimal) between two date +%s%N stamps
secs_between() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'
}

run_lost() { # label prov mode fault log t0
    local label=$1 prov=$2 mode=$3 fault=$4 log=$5 t0=$6
    local pid ready=0 t_fault t_end rc what crash i
    : >"$log"
    OFIRUN_BTLS=ofi,self BTL_OFI_EXPECT_PROVIDER=$prov \
        timeout -k 10 180 bash "$here/hosts.sh" mpirun -np 4 -x BTL_OFI_EXPECT_PROVIDER \
        --mca btl_ofi_provider_include "$prov" "$bindir/death" "$mode" shell -after 2 \
        </dev/null >>"$log" 2>&1 &
    pid=$!
    for ((i = 0; i < 600; i++)); do
        if grep -q 'death: victim rank 3 pid [0-9]* ready' "$log"; then
            ready=1
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if ((!ready)); then
        wait "$pid"
        report FAIL "$label" $((SECONDS - t0)) "the job never streamed (exit code $?): $(first_fail "$log")" "$log"
        return
    fi
    t_fault=$(date +%s%N)
    case $fault in
    kill) hosts_kill h2 ;;
    cut) hosts_cut h2 0 ;;
    esac
    echo "==== $(date +%T.%N) fault: $fault h2" >>"$log"
    for ((i = 0; i < lost_limit * 10; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    t_end=$(date +%s%N)
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null
        wait "$pid"
        report FAIL "$label" $((SECONDS - t0)) "the job still ran ${lost_limit} s after the fault ($fault h2)" "$log"
        return
    fi
    wait "$pid"
    rc=$?
    # what named the lost host: btl/ofi, or Open MPI's runtime
    what=$(grep -m1 -oE "btl/ofi on h1 lost contact with peer \[\[[0-9]+,1\],[23]\] on h2: .*" "$log" | cut -c1-200)
    [[ -z $what ]] && what=$(grep -m1 -oE "(process rank [23] with PID [0-9]+ on node h2 exited on signal 9|lost communication with a remote daemon|ORTE has lost communication).*" "$log" | cut -c1-160)
    crash=$(crash_of "$log")
    if [[ -n $crash && $crash != *"exited on signal 9"* ]]; then
        report FAIL "$label" $((SECONDS - t0)) "crash: $crash" "$log"
    elif [[ -z $what ]] || ! grep -q "h2" <<<"$what$(grep -A3 'lost communication' "$log")"; then
        report FAIL "$label" $((SECONDS - t0)) "ended $(secs_between "$t_fault" "$t_end") s after the fault (exit code $rc) without naming h2: $(first_fail "$log")" "$log"
    else
        report PASS "$label" $((SECONDS - t0)) "ended $(secs_between "$t_fault" "$t_end") s after the fault: '$what'"
    fi
    # the next case needs the link back and h2 clean
    hosts_down >/dev/null 2>&1
    hosts_ready=0
}

# ------------------------------------------------------------------ one case
run_case() {
    local c=$1 group pname prov a b label log t0 rc btls why
    IFS=: read -r group pname a b <<<"$c"
    prov=${pname//+/;}
    t0=$SECONDS
    log=$logdir/${c//:/-}.log
    : >"$log"
    case $group in
    onesided) label="hosts $prov ${a//+/,} $b" ;;
    dynamic) label="hosts $prov ${a//+/,} dynamic windows" ;;
    twosided) label="hosts $prov twosided $a" ;;
    lost) label="hosts $prov lost host during $a ($b)" ;;
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
    if ! need_hosts; then
        report FAIL "$label" $((SECONDS - t0)) "the simulated hosts could not be set up" "$logdir/hosts-up.log"
        return
    fi
    case $group in
    onesided)
        compile "$b" >>"$log" || { report FAIL "$label" 0 "compiling $b failed" "$log"; return; }
        hosts_job "$log" "$test_timeout" "${a//+/,}" "$prov" "$bindir/$b"
        judge_job "$label" "$log" $? "$b" "$t0"
        ;;
    dynamic)
        compile dynhosts >>"$log" || { report FAIL "$label" 0 "compiling dynhosts failed" "$log"; return; }
        hosts_job "$log" 120 "${a//+/,}" "$prov" "$bindir/dynhosts"
        judge_job "$label" "$log" $? dynhosts "$t0"
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
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
    exit 0
fi
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
