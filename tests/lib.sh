# shellcheck shell=bash
#
# tests/lib.sh: what every test runner of tests/ shares. Source it, then
# set `logdir'; `tests', `repo', `bindir' and `ofirun' default to this
# tree's when the runner did not set them first.
#
#   provider_problem PROV [CAPS]
#                              why PROV cannot be tested here, or nothing
#   provider_ok LABEL PROV [CAPS]
#                              status 1 when PROV cannot be tested here,
#                              after reporting LABEL SKIP or FAIL
#   case_start CASE            the caller's group, pname, prov, a, b, t0 and
#                              log (emptied) for a case GROUP:PNAME:A[:B]
#   build NAME SRC [DEP|-FLAG...]
#                              mpicc SRC into $bindir/NAME when stale
#   report PASS|FAIL|SKIP LABEL SECS TEXT [LOG]
#                              one result line (a FAIL shows LOG's end);
#                              counts in $passed $failed $skipped
#   run_logged LOG SECS CMD... run CMD (timeout SECS), command and output
#                              appended to LOG; returns CMD's status (124
#                              after a hang, the stacks of its programs
#                              in LOG: dump_stacks)
#   dump_stacks LOG PID        every thread's stack of the programs under
#                              PID appended to LOG
#   check_result LABEL LOG RC OKNAME T0 DETAIL
#                              PASS or FAIL for a run of RC whose program
#                              must print "OK OKNAME"
#   run_jobs LABEL LOG JLOG T0 COUNT OKNAME CMD...
#                              COUNT runs of CMD back to back, each must
#                              print "OK OKNAME"; status 1 after reporting
#                              the first failure
#   first_fail LOG             the first line that says why a job failed
#   crash_of LOG               the first crash line, or nothing
#   summary                    "N passed, N failed"; status 1 on failure
#   runner_exit                exit 1 on a failure, 77 when all skipped
#   runner_main [CASE...]      run_case for each CASE (none: list_cases),
#                              then summary and runner_exit
#   header_of SCRIPT           print SCRIPT's header comment
#   ompi_patches FW NAME [PATH]
#                              the fixes our build of Open MPI's FW/NAME
#                              carries (its read-only FW_NAME_patches, as
#                              scripts/build-ompi-fixes.sh names them), or
#                              nothing for another build; PATH: the
#                              component path ompi_info is given
#   runner_help SCRIPT [ARGS]  with -h or --help first in ARGS: print the
#                              SCRIPT's header comment and exit

# the tree around this file, unless the runner set its own (tests/run.sh,
# badinput.sh)
: "${tests:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${repo:=$(cd "$tests/.." && pwd)}"
: "${bindir:=$tests/bin}"
: "${ofirun:=$repo/scripts/ofirun}"

# (read on first use: tests/run.sh sources this before it installs libfabric)
lib_fi_list=""

provider_problem() { # prov [caps, default FI_RMA|FI_ATOMIC]
    local prov=$1 caps=${2:-FI_RMA|FI_ATOMIC} part info
    local -a parts
    [[ -n $lib_fi_list ]] || lib_fi_list=$(fi_info -l 2>&1)
    IFS=';' read -r -a parts <<<"$prov"
    for part in "${parts[@]}"; do
        if ! grep -q "^$part:" <<<"$lib_fi_list"; then
            echo "libfabric provider '$part' is not in 'fi_info -l'"
            return
        fi
    done
    info=$(fi_info -p "$prov" -t FI_EP_RDM -c "$caps" 2>&1)
    if ! grep -qx "provider: $prov" <<<"$info"; then
        echo "'fi_info -p $prov -t FI_EP_RDM -c $caps' reports no such endpoint"
    fi
}

# the check every runner makes before a case: a provider missing here
# fails the case, or skips it with BTL_OFI_ALLOW_SKIP=1
provider_ok() { # label prov [caps]
    local why
    why=$(provider_problem "$2" "${3:-}")
    [[ -z $why ]] && return 0
    if [[ ${BTL_OFI_ALLOW_SKIP:-0} == 1 ]]; then
        report SKIP "$1" 0 "$why (allowed by BTL_OFI_ALLOW_SKIP=1)"
    else
        report FAIL "$1" 0 "$why (BTL_OFI_ALLOW_SKIP=1 to allow)"
    fi
    return 1
}

# A case name is GROUP:PNAME:A[:B], PNAME a provider with ';' written '+'
# (a case name is one word). Sets the caller's locals group, pname, prov,
# a, b, t0 (now) and log ($logdir/CASE.log, emptied).
# shellcheck disable=SC2034 # the caller's locals
case_start() { # case
    IFS=: read -r group pname a b <<<"$1"
    prov=${pname//+/;}
    t0=$SECONDS
    log=$logdir/${1//:/-}.log
    : >"$log"
}

build() { # name src [deps and flags...]
    local name=$1 src=$2 out=$bindir/$1 dep stale=0
    shift 2
    local -a deps=("$src" "$tests/common.h") flags=()
    for dep in "$@"; do
        if [[ $dep == -* ]]; then
            flags+=("$dep")
        else
            deps+=("$dep")
        fi
    done
    [[ -x $out ]] || stale=1
    for dep in "${deps[@]}"; do
        [[ $out -nt $dep ]] || stale=1
    done
    ((stale)) || return 0
    mkdir -p "$bindir" "$logdir"
    if ! mpicc -g -O2 -Wall -o "$out" "$src" "${flags[@]}" >"$logdir/compile-$name.log" 2>&1; then
        cat "$logdir/compile-$name.log"
        return 1
    fi
}

# Every test program, by name: its source, the headers it depends on and
# its flags, built into tests/bin/NAME by build() when stale. The one list
# all runners share.
compile() { # prog
    local inc
    case $1 in
    hello | putget | atomics | pairs | dynattach | gather | sync | canary | mcs | llist | selfspin) build "$1" "$tests/$1.c" ;;
    workload | death | soak) build "$1" "$tests/faults/$1.c" ;;
    regexpose)
        # it includes ompi_config.h and drives the BTL API: Open MPI's
        # devel headers (include/openmpi) and libopen-pal
        inc=$(mpicc --showme:incdirs | tr ' ' '\n' | grep '/openmpi$' | head -n 1)
        build regexpose "$tests/faults/regexpose.c" \
            "-I${inc:-/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi}" -lopen-pal
        ;;
    pingpong | flood | mixed | late | match | coll | stream | spawn)
        build "$1" "$tests/twosided/$1.c" "$tests/twosided/ts.h"
        ;;
    dynhosts | busy | rails | roundtrip | leave) build "$1" "$tests/hosts/$1.c" ;;
    # progress reads libopen-pal's opal_uses_threads
    mt) build mt "$tests/threads/mt.c" "$tests/threads/mt_util.h" -pthread ;;
    colltest_mt) build colltest_mt "$tests/coll/colltest_mt.c" -pthread ;;
    progress) build progress "$tests/threads/progress.c" "$tests/threads/mt_util.h" -pthread -lopen-pal ;;
    *)
        echo "compile: no test program '$1' (tests/lib.sh lists them)"
        return 1
        ;;
    esac
}

passed=0
failed=0
skipped=0

# btl/ofi's provider selection (btl_ofi_verbose): dozens of lines per rank
# at start, never the cause of a failure
lib_selection_re='btl/ofi: (candidate |rail [0-9]+ \(interface)'

report() { # PASS|FAIL|SKIP label secs text [log]
    local what=$1 label=$2 secs=$3 text=$4 log=${5:-}
    case $what in
    PASS)
        passed=$((passed + 1))
        echo "PASS $label (${secs}s)${text:+ -- $text}"
        ;;
    SKIP)
        skipped=$((skipped + 1))
        echo "SKIP $label: $text"
        ;;
    *)
        failed=$((failed + 1))
        echo "FAIL $label (${secs}s): $text"
        if [[ -n $log && -f $log ]]; then
            # a CI failure once showed nothing but btl/ofi's selection
            echo "---- last 40 lines of ${log#"$repo"/}, btl/ofi's candidate and rail lines left out ----"
            grep -v -E "ORTE_ERROR_LOG.*show_help\\.c|$lib_selection_re" "$log" | tail -n 40
            echo "---- end of ${log#"$repo"/} ----"
        fi
        ;;
    esac
}

# mpirun's own verbose output (pmix_server_verbose, once used here) now
# and then carried stray NUL bytes; grep then takes the whole log for binary
# and prints "binary file matches" instead of the line a check looks for
# (coll shm np 2 badfanout failed so in a CI run): they are dropped
text_only() { # file...
    local f
    for f in "$@"; do
        if grep -qaP '\x00' "$f" 2>/dev/null; then
            tr -d '\000' <"$f" >"$f.text" && mv -f "$f.text" "$f"
        fi
    done
}

# PID and every process below it, one per line.
job_tree() { # pid
    local p
    local -a queue=("$1")
    while ((${#queue[@]})); do
        p=${queue[0]}
        queue=("${queue[@]:1}")
        echo "$p"
        # shellcheck disable=SC2207 # pids: words
        queue+=($(ps -o pid= --ppid "$p" 2>/dev/null))
    done
}

# The stacks of every thread of the programs under job PID (not the shells
# and launchers between), appended to LOG: what a hung job was waiting
# for, read before it is killed, so that a rare hang leaves its cause.
dump_stacks() { # log pid
    local log=$1 p comm rank stacks where
    local -a all=() summary=()
    mapfile -t all < <(job_tree "$2")
    for p in "${all[@]}"; do
        comm=$(ps -o comm= -p "$p" 2>/dev/null) || continue
        case $comm in
        bash | sh | timeout | setsid | sleep | mpirun | orterun | orted | ssh) continue ;;
        esac
        rank=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
        echo "---- hung: stacks of pid $p ($comm, rank ${rank:-?}) ----"
        if ! command -v gdb >/dev/null 2>&1; then
            echo "(no gdb: apt-get install gdb for the stacks of a hung job)"
            continue
        fi
        # the stacks, then btl/ofi's counters and queues (tests/btl-state.py)
        stacks=$(timeout -k 5 60 gdb -p "$p" -batch -nx -ex 'thread apply all bt' \
            -x "$repo/tests/btl-state.py" </dev/null 2>&1 | grep -E '^(#|Thread |btl/ofi|  peer )')
        grep -vE '^(btl/ofi|  peer )' <<<"$stacks"
        # the main thread's MPI call and line of the test, for the summary
        where=$(sed -n '/^Thread 1 /,/^Thread /p' <<<"$stacks" |
            grep -oE 'in P?MPI_[A-Za-z_]+|in main \(.*\) at [^ ]*' | sed 's/^in //; s/ (.*) at / at /' |
            tr '\n' ' ')
        summary+=("pid $p rank ${rank:-?}: ${where:-no MPI call on the main thread}")
        mapfile -t -O "${#summary[@]}" summary < <(grep -E '^(btl/ofi|  peer )' <<<"$stacks")
    done >>"$log"
    # last, so that the lines a FAIL shows (the log's tail) hold it
    if ((${#summary[@]})); then
        echo "---- hung: where each process waits, btl/ofi's state ----"
        printf '%s\n' "${summary[@]}"
    fi >>"$log"
}

# A watchdog for job PID: after SECS it touches FLAG, dumps the job's stacks
# into LOG, then TERMs the job's process group and every process below it,
# KILLs them 20 s later. The MPI processes too, one by one: mpirun starts
# them in process groups of their own, and a hung one it did not end kept
# spinning through the rest of a CI run (2026-12-03: twosided 4.5 -> 9.5
# min). Ended with TERM while the job still runs in time.
hang_watch() { # secs pid log flag
    local s=""
    local -a tree=()
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    sleep "$1" &
    s=$!
    wait "$s"
    trap - TERM
    : >"$4"
    echo "---- the job runs beyond its ${1}s: taken to be hung ----" >>"$3"
    dump_stacks "$3" "$2"
    mapfile -t tree < <(job_tree "$2")
    kill -TERM -- "-$2" "${tree[@]}" 2>/dev/null
    sleep 20 &
    s=$!
    trap 'kill "$s" 2>/dev/null; exit 0' TERM
    wait "$s"
    kill -KILL -- "-$2" "${tree[@]}" 2>/dev/null
}

# CMD in its own process group (setsid), so that a hang ends all of it; a
# job beyond SECS returns 124 as timeout(1) would, with its stacks in LOG
run_logged() { # log secs cmd...
    local log=$1 secs=$2 job watch rc flag
    shift 2
    printf '$' >>"$log"
    printf ' %q' "$@" >>"$log"
    echo >>"$log"
    flag=$(mktemp)
    rm -f "$flag"
    setsid "$@" </dev/null >>"$log" 2>&1 &
    job=$!
    hang_watch "$secs" "$job" "$log" "$flag" &
    watch=$!
    wait "$job"
    rc=$?
    kill -TERM "$watch" 2>/dev/null
    wait "$watch" 2>/dev/null
    if [[ -e $flag ]]; then
        rc=124
        rm -f "$flag"
    fi
    text_only "$log"
    return $rc
}

# a run of a program that prints "OK OKNAME" when all its checks passed:
# a timeout (rc 124, or 137 after the kill) is a hang
# shellcheck disable=SC2154 # test_timeout: the runner's, seconds per run
check_result() { # label log rc okname t0 detail
    local label=$1 log=$2 rc=$3 okname=$4 t0=$5 detail=$6 secs what
    secs=$((SECONDS - t0))
    if ((rc == 124 || rc == 137)); then
        report FAIL "$label" $secs "timed out after ${test_timeout}s (hang?)" "$log"
    elif ((rc != 0)); then
        what=$(first_fail "$log")
        report FAIL "$label" $secs "exit code $rc${what:+: $what}" "$log"
    elif ! grep -qx "OK $okname" "$log"; then
        report FAIL "$label" $secs "exit code 0 but no 'OK $okname' line" "$log"
    else
        report PASS "$label" $secs "$detail"
    fi
}

# Back-to-back jobs: start-up and teardown races show as one job in many
# failing. Each job's output replaces the last in JLOG; the first failed
# job's goes into LOG and ends the case with a FAIL. All passed: "N of
# COUNT jobs passed" in LOG and status 0, the PASS line (with the time
# per job) is the caller's. Runs CMD with the caller's environment
# (BTL_OFI_EXPECT_PROVIDER=PROV run_jobs ...).
# shellcheck disable=SC2154 # test_timeout: the runner's, seconds per job
run_jobs() { # label log jlog t0 count okname cmd...
    local label=$1 log=$2 jlog=$3 t0=$4 count=$5 okname=$6 i ok=0 rc
    shift 6
    for ((i = 1; i <= count; i++)); do
        : >"$jlog"
        run_logged "$jlog" "$test_timeout" "$@"
        rc=$?
        if ((rc != 0)) || ! grep -qx "OK $okname" "$jlog"; then
            {
                echo "job $i of $count failed (exit code $rc); $ok passed before it"
                cat "$jlog"
            } >>"$log"
            if ((rc == 124 || rc == 137)); then
                report FAIL "$label" $((SECONDS - t0)) \
                    "job $i of $count timed out after ${test_timeout}s (hang?); $ok passed" "$log"
            else
                report FAIL "$label" $((SECONDS - t0)) \
                    "job $i of $count failed, exit code $rc: $(first_fail "$jlog"); $ok passed" "$log"
            fi
            return 1
        fi
        ok=$((ok + 1))
    done
    echo "$ok of $count jobs passed" >>"$log"
}

first_fail() { # log
    local what
    what=$(grep -m1 -o 'FAIL \[rank .*' "$1" | cut -c1-400)
    if [[ -z $what ]]; then
        what=$(grep -E 'symbol lookup error|Segmentation|Aborted|signal|MPI error|MPI_ERR|WRONG DATA|fi call failed|btl/ofi|unreachable|No route' "$1" |
            grep -v -m1 -E "$lib_selection_re" | cut -c1-300)
    fi
    echo "$what"
}

# a crash of a process (Open MPI's signal handler, the shell, mpirun's
# report) or a frame of our component in a backtrace; signal 9 is the
# SIGKILL fault cases send, signal 15 the teardown of a hung job
lib_crash_re='\*\*\* Process received signal|Segmentation fault|core dumped|exited on signal ([0-8]|1[0-4]|1[6-9]|[2-9][0-9]) |mca_btl_ofi\.so\('
crash_of() { # log
    grep -m1 -E "$lib_crash_re" "$1" | cut -c1-200
}

summary() {
    echo "$passed passed, $failed failed"
    ((failed == 0))
}

# 77: tests/run.sh counts a runner whose every case was skipped as skipped
runner_exit() {
    ((failed)) && exit 1
    ((skipped && !passed)) && exit 77
    exit 0
}

# the main of a runner with list_cases and run_case
runner_main() { # [case...]
    local c
    # shellcheck disable=SC2046 # a case name is one word
    (($#)) || set -- $(list_cases)
    for c in "$@"; do
        run_case "$c"
    done
    summary
    runner_exit
}

ompi_patches() { # framework component [component path]
    local fw=$1 name=$2
    [[ -n ${3:-} ]] && local -x OMPI_MCA_mca_base_component_path=$3
    ompi_info --param "$fw" "$name" --level 3 2>/dev/null |
        grep -o "${fw}_${name}_patches\" (current value: \"[^\"]*" | sed 's/.*value: "//'
}

# the comment under a script's #! line, without the '#'
header_of() { # script
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"
}

runner_help() { # script [args...]
    case ${2:-} in
    -h | --help)
        header_of "$1"
        exit 0
        ;;
    esac
}
