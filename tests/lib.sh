# shellcheck shell=bash
#
# tests/lib.sh: what every test runner of tests/ shares. Source it after
# setting `repo', `tests', `bindir' and `logdir'.
#
#   provider_problem PROV [CAPS]
#                              why PROV cannot be tested here, or nothing
#   build NAME SRC [DEP|-FLAG...]
#                              mpicc SRC into $bindir/NAME when stale
#   report PASS|FAIL|SKIP LABEL SECS TEXT [LOG]
#                              one result line (a FAIL shows LOG's end);
#                              counts in $passed $failed $skipped
#   run_logged LOG SECS CMD... run CMD (timeout SECS), command and output
#                              appended to LOG; returns CMD's status
#   first_fail LOG             the first line that says why a job failed
#   crash_of LOG               the first crash line, or nothing
#   summary                    "N passed, N failed"; status 1 on failure
#   runner_help SCRIPT [ARGS]  with -h or --help first in ARGS: print the
#                              SCRIPT's header comment and exit

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
    hello | putget | atomics | sync | canary | mcs | llist) build "$1" "$tests/$1.c" ;;
    workload | death) build "$1" "$tests/faults/$1.c" ;;
    regexpose)
        # it includes ompi_config.h and drives the BTL API: Open MPI's
        # devel headers (include/openmpi) and libopen-pal
        inc=$(mpicc --showme:incdirs | tr ' ' '\n' | grep '/openmpi$' | head -n 1)
        build regexpose "$tests/faults/regexpose.c" \
            "-I${inc:-/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi}" -lopen-pal
        ;;
    pingpong | flood | mixed | late | match | coll)
        build "$1" "$tests/twosided/$1.c" "$tests/twosided/ts.h"
        ;;
    dynhosts | busy | rails | roundtrip) build "$1" "$tests/hosts/$1.c" ;;
    # progress reads libopen-pal's opal_uses_threads
    mt) build mt "$tests/threads/mt.c" "$tests/threads/mt_util.h" -pthread ;;
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
            echo "---- last 40 lines of ${log#"$repo"/} ----"
            grep -v 'ORTE_ERROR_LOG.*show_help\.c' "$log" | tail -n 40
            echo "---- end of ${log#"$repo"/} ----"
        fi
        ;;
    esac
}

run_logged() { # log secs cmd...
    local log=$1 secs=$2
    shift 2
    printf '$' >>"$log"
    printf ' %q' "$@" >>"$log"
    echo >>"$log"
    timeout -k 20 "$secs" "$@" </dev/null >>"$log" 2>&1
}

first_fail() { # log
    local what
    what=$(grep -m1 -o 'FAIL \[rank .*' "$1" | cut -c1-400)
    if [[ -z $what ]]; then
        what=$(grep -m1 -E 'symbol lookup error|Segmentation|Aborted|signal|MPI error|MPI_ERR|WRONG DATA|fi call failed|btl/ofi|unreachable|No route' "$1" | cut -c1-300)
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

runner_help() { # script [args...]
    case ${2:-} in
    -h | --help)
        awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$1"
        exit 0
        ;;
    esac
}
