#!/usr/bin/env bash
#
# Bad MCA parameter values given to btl/ofi: the user must get a clear
# message (on stderr, naming the offending parameter or provider) and the
# job must neither crash nor hang.
#
#   tests/badinput.sh              run every case
#   tests/badinput.sh CASE...      run these cases
#   tests/badinput.sh --list       print the case names
#
# Each case runs tests/bin/hello (MPI_Init, barrier, MPI_Finalize) on 2 ranks
# through scripts/ofirun under `timeout 120` and checks:
#   - exit code 0 (124 = hung and killed by timeout);
#   - stderr matches every pattern of the case (extended regexps,
#     case-insensitive: adjust them in the table below if the wording changes);
#   - no "Segmentation fault", "signal" or "core dumped" in the output;
#     (each case runs once: Debian's mpirun lost such messages in about one
#     run of three, fixed by our rml/oob, README "Messages mpirun lost";)
#   - where the component must still run: cvar btl_ofi_version is 0.1.0
#     (our btl/ofi loaded and selected), and the provider is the expected one;
#     where it must step aside: cvar btl_ofi_selected_provider is absent or
#     empty (no provider was selected).
# Prints "PASS badinput/<case>" or "FAIL badinput/<case>: <why>" (with the
# last 40 lines of output); exit status 1 if any case failed.
#
# Environment: BTL_OFI_TEST_BIN (compiled tests, default tests/bin),
# BTL_OFI_LOG_DIR (default tests/logs), BTL_OFI_BADINPUT_TIMEOUT (120).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
bindir=${BTL_OFI_TEST_BIN:-$here/bin}
logdir=${BTL_OFI_LOG_DIR:-$here/logs}
tmo=${BTL_OFI_BADINPUT_TIMEOUT:-120}
ofirun=$repo/scripts/ofirun
# Where btl/ofi rightly steps aside, the job must still be able to finish
# (the test is about the message and the absence of a crash or hang), so
# vader carries the traffic then; the cases where ours must run prove it
# was selected through its MPI_T cvars.
export OFIRUN_BTLS=ofi,vader,self

# A provider that is always there on Linux, for the cases where btl/ofi must
# run (plain endpoints); the contexts case is repeated with sockets, whose
# contexts live on a scalable endpoint.
good=shm

# ------------------------------------------------------------------
# The cases. Fields (separated by |):
#   name | mpirun MCA arguments | stderr patterns (';'-separated, all
#   required) | ours: "run:<provider>" if our btl/ofi must still be
#   selected with that provider, "aside" if it must step aside
# ------------------------------------------------------------------
cases=(
    "unknown_provider|--mca btl_ofi_provider_include nosuchprov|btl_ofi_provider_include;nosuchprov|aside"
    "include_and_exclude|--mca btl_ofi_provider_include $good --mca btl_ofi_provider_exclude $good|btl_ofi_provider_include;btl_ofi_provider_exclude|run:$good"
    "contexts_0|--mca btl_ofi_provider_include $good --mca btl_ofi_num_contexts_per_module 0|btl_ofi_num_contexts_per_module|run:$good"
    "contexts_-1|--mca btl_ofi_provider_include $good --mca btl_ofi_num_contexts_per_module -1|btl_ofi_num_contexts_per_module|run:$good"
    "contexts_100000|--mca btl_ofi_provider_include $good --mca btl_ofi_num_contexts_per_module 100000|btl_ofi_num_contexts_per_module|run:$good"
    "contexts_100000_sockets|--mca btl_ofi_provider_include sockets --mca btl_ofi_num_contexts_per_module 100000|btl_ofi_num_contexts_per_module|run:sockets"
    "provider_udp_lacks_rma|--mca btl_ofi_provider_include udp|udp;FI_RMA|FI_ATOMIC|not available|unavailable|aside"
    "provider_tcp_alone|--mca btl_ofi_provider_include tcp|tcp;FI_RMA|FI_ATOMIC|not available|unavailable|aside"
    "rxd_max_send_size|--mca btl_ofi_provider_include udp;ofi_rxd --mca btl_ofi_max_send_size 65536|btl_ofi_max_send_size;larger than one datagram;Used instead: *1240|run:udp;ofi_rxd"
    "if_include_and_exclude|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_if_include lo --mca btl_ofi_if_exclude lo|btl_ofi_if_include;btl_ofi_if_exclude;mutually exclusive|aside"
    "if_include_unknown|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_if_include nosuchif0|nosuchif0;no interface of that name;no usable libfabric provider|aside"
    "if_include_bad_subnet|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_if_include 10.1/8,lo|10.1/8;not a subnet in CIDR notation|run:tcp;ofi_rxm"
    "if_exclude_every|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_if_exclude 0.0.0.0/0,::/0|btl_ofi_if_exclude: *0.0.0.0/0;no usable libfabric provider|aside"
    "bandwidth_0|--mca btl_ofi_provider_include sockets --mca btl_ofi_if_include lo --mca btl_ofi_verbose 1 --mca btl_ofi_bandwidth 0|Parameter: *btl_ofi_bandwidth\$;rail 0 \\(interface lo\\): bandwidth 1 MB/s \\(btl_ofi_bandwidth\\)|run:sockets"
    "bandwidth_if_0|--mca btl_ofi_provider_include sockets --mca btl_ofi_if_include lo --mca btl_ofi_verbose 1 --mca btl_ofi_bandwidth 777 --mca btl_ofi_bandwidth_lo 0 --mca btl_ofi_latency_lo 4|Parameter: *btl_ofi_bandwidth_lo;rail 0 \\(interface lo\\): bandwidth 1 MB/s \\(btl_ofi_bandwidth_IF\\), latency 4 \\(btl_ofi_latency_IF\\)|run:sockets"
    "emulate_rma_5|--mca btl_ofi_provider_include sockets --mca btl_ofi_emulate_rma 5|Parameter: *btl_ofi_emulate_rma;Value: *5|run:sockets"
    "help_copy_verbose|--mca btl_ofi_provider_include sockets --mca btl_ofi_verbose 1 --mca btl_ofi_emulate_rma 5|btl/ofi: \\(show_help 'bad param'\\) an MCA parameter has a value out of range\\. [|] Host: +[^ ]+ [|] Parameter: btl_ofi_emulate_rma [|] Value: +5 [|]|run:sockets"
    "emulate_atomics_-2|--mca btl_ofi_provider_include sockets --mca btl_ofi_emulate_atomics -2|Parameter: *btl_ofi_emulate_atomics;Value: *-2|run:sockets"
    "global_atomics_2|--mca btl_ofi_provider_include sockets --mca btl_ofi_global_atomics 2|Parameter: *btl_ofi_global_atomics;Value: *2|run:sockets"
    "global_atomics_sockets|--mca btl_ofi_provider_include sockets --mca btl_ofi_verbose 5 --mca btl_ofi_global_atomics -1|atomic flags 0x[0-9a-f]* \\(atomic with processor atomics: btl_ofi_global_atomics\\)|run:sockets"
    "global_atomics_default|--mca btl_ofi_provider_include sockets --mca btl_ofi_verbose 5|atomic flags 0x[0-9a-f]* \\(atomic with processor atomics: btl_ofi_global_atomics\\)|run:sockets"
    "global_atomics_0|--mca btl_ofi_provider_include sockets --mca btl_ofi_verbose 5 --mca btl_ofi_global_atomics 0|atomic flags 0x[0-9a-f]*, messages injected|run:sockets"
    "emulate_rma_1|--mca btl_ofi_provider_include sockets --mca btl_ofi_verbose 5 --mca btl_ofi_emulate_rma 1|puts and gets carried as messages of 16320 data bytes|run:sockets"
    "rxm_rx_size_default|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_verbose 1|ofi_rxm receive queue: FI_OFI_RXM_MSG_RX_SIZE=1024 \\(btl/ofi's default|run:tcp;ofi_rxm"
    "rxm_rx_size_user|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_verbose 1 -x FI_OFI_RXM_MSG_RX_SIZE=2048|ofi_rxm receive queue: FI_OFI_RXM_MSG_RX_SIZE=2048 \\(the user's\\)|run:tcp;ofi_rxm"
    "rxm_buffers_default|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_verbose 1|ofi_rxm bounce buffers: FI_OFI_RXM_BUFFER_SIZE=2048, FI_OFI_RXM_EAGER_LIMIT=65552 \\(btl/ofi's default|run:tcp;ofi_rxm"
    "rxm_buffers_user|--mca btl_ofi_provider_include tcp;ofi_rxm --mca btl_ofi_verbose 1 -x FI_OFI_RXM_BUFFER_SIZE=4096|ofi_rxm bounce buffers: FI_OFI_RXM_BUFFER_SIZE=4096, FI_OFI_RXM_EAGER_LIMIT=libfabric's default \\(the user's\\)|run:tcp;ofi_rxm"
    "bandwidth_all|--mca btl_ofi_provider_include sockets --mca btl_ofi_if_include lo --mca btl_ofi_verbose 1 --mca btl_ofi_bandwidth 777 --mca btl_ofi_latency 3|rail 0 \\(interface lo\\): bandwidth 777 MB/s \\(btl_ofi_bandwidth\\), latency 3 \\(btl_ofi_latency\\)|run:sockets"
)

# The pattern field may itself contain '|' (alternatives), so split from
# both ends: name and args are the first two fields, ours the last.
case_name() { echo "${1%%|*}"; }
case_args() {
    local rest=${1#*|}
    echo "${rest%%|*}"
}
case_patterns() {
    local rest=${1#*|}
    rest=${rest#*|}
    echo "${rest%|*}"
}
case_ours() { echo "${1##*|}"; }

crash_re='segmentation fault|signal|core dumped'

if [[ ${1:-} == --list ]]; then
    for c in "${cases[@]}"; do
        case_name "$c"
    done
    echo verbose_candidates_once
    exit 0
fi
# shellcheck source=tests/lib.sh
source "$here/lib.sh"
runner_help "$0" "$@"

mkdir -p "$logdir"
if [[ ! -x $bindir/hello ]]; then
    mkdir -p "$bindir"
    mpicc -O2 -Wall -o "$bindir/hello" "$here/hello.c" || {
        echo "FAIL badinput: cannot compile tests/hello.c"
        exit 1
    }
fi

failed=0

fail() { # case why log
    echo "FAIL badinput/$1: $2"
    echo "---- last 40 lines of $3 ----"
    tail -n 40 "$3"
    echo "----"
    failed=1
}

run_case() {
    local spec=$1 name args patterns ours
    name=$(case_name "$spec")
    args=$(case_args "$spec")
    patterns=$(case_patterns "$spec")
    ours=$(case_ours "$spec")
    local out=$logdir/badinput-$name.out err=$logdir/badinput-$name.err
    local all=$logdir/badinput-$name.log
    local t0=$SECONDS rc

    # shellcheck disable=SC2086 # args is a list of words
    timeout -k 10 "$tmo" "$ofirun" -np 2 $args "$bindir/hello" </dev/null >"$out" 2>"$err"
    rc=$?
    text_only "$out" "$err"
    {
        echo "\$ scripts/ofirun -np 2 $args tests/bin/hello   (exit $rc)"
        echo "== stdout"
        cat "$out"
        echo "== stderr"
        cat "$err"
    } >"$all"
    local secs=$((SECONDS - t0))

    if ((rc == 124 || rc == 137)); then
        fail "$name" "hung: killed by timeout after ${tmo}s" "$all"
        return
    fi
    if grep -Eqi "$crash_re" "$out" "$err"; then
        fail "$name" "crash reported in the output: $(grep -Eih "$crash_re" "$out" "$err" | head -n 1)" "$all"
        return
    fi
    if ((rc != 0)); then
        fail "$name" "exit code $rc, expected 0" "$all"
        return
    fi
    local p
    IFS=';' read -r -a pats <<<"$patterns"
    for p in "${pats[@]}"; do
        if ! grep -Eqi -- "$p" "$err"; then
            fail "$name" "stderr has no message matching /$p/ (case-insensitive)" "$all"
            return
        fi
    done
    local line
    line=$(grep '^hello:' "$out" | head -n 1)
    if [[ -z $line ]]; then
        fail "$name" "hello printed no result line" "$all"
        return
    fi
    case $ours in
    run:*)
        local want=${ours#run:}
        if [[ $line != *"btl_ofi_version=0.1.0 "* ]]; then
            fail "$name" "our btl/ofi did not run (cvar btl_ofi_version missing): $line" "$all"
            return
        fi
        if [[ $line != *"btl_ofi_selected_provider=$want "* ]]; then
            fail "$name" "selected provider is not $want: $line" "$all"
            return
        fi
        ;;
    aside)
        # stepped aside: no provider selected (variable absent or empty)
        if [[ $line != *"btl_ofi_selected_provider=<absent> "* &&
            $line != *"btl_ofi_selected_provider= "* ]]; then
            fail "$name" "btl/ofi should have stepped aside but selected a provider: $line" "$all"
            return
        fi
        ;;
    esac
    echo "PASS badinput/$name (${secs}s) -- $line"
}

# Selection at btl_ofi_verbose 1 names each candidate (provider, domain,
# address) once per process, whatever number of times libfabric lists it
# (ofi_rxm lists one domain once per variant of the core provider).
verbose_once() {
    local name=verbose_candidates_once t0=$SECONDS rc dups n
    local all=$logdir/badinput-$name.log
    timeout -k 10 "$tmo" "$ofirun" -np 2 --mca btl_ofi_verbose 1 "$bindir/hello" </dev/null >"$all" 2>&1
    rc=$?
    if ((rc != 0)); then
        fail "$name" "exit code $rc, expected 0" "$all"
        return
    fi
    # "[host:pid] btl/ofi: candidate P domain D (...): verdict": one per pid
    n=$(grep -c 'btl/ofi: candidate ' "$all")
    dups=$(grep 'btl/ofi: candidate ' "$all" | sed 's/: \(taken\|refused\).*//' | sort | uniq -d | head -n 3)
    if ((n < 4)); then
        fail "$name" "only $n candidate lines (expected every provider's domains, for 2 processes)" "$all"
    elif [[ -n $dups ]]; then
        fail "$name" "candidates listed more than once by one process: $(echo "$dups" | tr '\n' ' ')" "$all"
    else
        echo "PASS badinput/$name ($((SECONDS - t0))s) -- $n candidate lines for 2 processes, each candidate once per process"
    fi
}

selected=("$@")
if ((${#selected[@]} == 0)) || [[ " ${selected[*]} " == *" verbose_candidates_once "* ]]; then
    verbose_once
fi
for spec in "${cases[@]}"; do
    name=$(case_name "$spec")
    if ((${#selected[@]})); then
        hit=0
        for s in "${selected[@]}"; do
            [[ $s == "$name" ]] && hit=1
        done
        ((hit)) || continue
    fi
    run_case "$spec"
done
exit $failed
