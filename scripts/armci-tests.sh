#!/usr/bin/env bash
#
# scripts/armci-tests.sh: ARMCI-MPI's test programs over this btl/ofi, one
# configuration at a time. ARMCI-MPI (the one-sided library of Global
# Arrays and NWChem, built on MPI RMA) is a real client of osc/rdma: its
# locks, strided puts and accumulates, read-modify-writes and mutexes
# all go through MPI windows. Not part of the default suite.
#
#   bash scripts/armci-tests.sh CONFIG [NP]     (NP default 4)
#     CONFIG: PROVIDER        osc/rdma over btl/ofi on PROVIDER
#             vader           osc/rdma over btl/vader (Open MPI's own)
#             hosts:PROVIDER  across two simulated hosts, ranks alternating
#                             (tests/hosts/hosts.sh; root)
#
# Environment:
#   ARMCI_TESTS_DIR  a directory holding ARMCI-MPI's tests (tests/ of
#                    github.com/pmodels/armci-mpi, the programs below,
#                    with mpi/ and contrib/ as there); they are built into
#                    its bin/ against Debian's libarmci-mpi-dev (0.3.1,
#                    installed here as root) with Open MPI's mpicc. The
#                    sources are not part of this repository.
#   ARMCI_TESTS_TIME seconds per test before it counts as failed (300)
#
# A test passes when it exits 0 and prints its success line (the one its
# source prints; a test without one: exit code only), and no failure line.
# Prints one PASS/FAIL line per test and "armci CONFIG: N passed, N failed".
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cfg=${1:?usage: armci-tests.sh CONFIG [NP]}
np=${2:-4}
dir=${ARMCI_TESTS_DIR:?set ARMCI_TESTS_DIR to a directory with ARMCI-MPI tests (see the header)}
secs=${ARMCI_TESTS_TIME:-300}
logs=$repo/tests/logs/armci/${cfg//[:;]/_}
mkdir -p "$logs" "$dir/bin"

if [[ ! -f /usr/include/armci.h ]]; then
    if ((EUID == 0)); then
        apt-get install -y libarmci-mpi-dev >"$logs/apt.log" 2>&1 || {
            echo "armci-tests: apt-get install libarmci-mpi-dev failed (see $logs/apt.log)"
            exit 1
        }
    else
        echo "armci-tests: libarmci-mpi-dev is not installed (apt-get install libarmci-mpi-dev as root)"
        exit 1
    fi
fi

# name|source|success line (extended regex, empty: exit code only)|failure line
tests=(
    "test_onesided|test_onesided.c|Test complete: PASS|FAIL"
    "test_mutex|test_mutex.c|Test complete: PASS|FAIL"
    "test_mutex_rmw|test_mutex_rmw.c|Test complete: PASS|FAIL"
    "test_mutex_trylock|test_mutex_trylock.c|Test complete: PASS|FAIL"
    "test_rmw_fadd|test_rmw_fadd.c|Test complete: PASS|Test fail"
    "test_accs|test_accs.c|Success|Fail"
    "test_puts|test_puts.c|Success|Fail"
    "test_puts_gets|test_puts_gets.c|Success|Fail"
    "test_putv|test_putv.c|Success|Fail"
    "test_malloc|test_malloc.c|Test complete: PASS|Error:"
    "test_malloc_irreg|test_malloc_irreg.c|Test complete: PASS|Error:"
    "test_groups|test_groups.c||Error"
    "test_group_split|test_group_split.c||Error"
    "test_igop|test_igop.c|Pass|Fail"
    "test_location_consistency|test_location_consistency.c|PASS|FAIL"
    "test_acc_overlap|test_acc_overlap.c|PASS|FAIL"
    "test_mpi_accs|mpi/test_mpi_accs.c|Success|Fail"
    "test_mpi_indexed_accs|mpi/test_mpi_indexed_accs.c|Success|Fail"
    "test_mpi_indexed_gets|mpi/test_mpi_indexed_gets.c|Success|Fail"
    "test_mpi_indexed_puts_gets|mpi/test_mpi_indexed_puts_gets.c|Success|Fail"
    "test_mpi_subarray_accs|mpi/test_mpi_subarray_accs.c|Success|Fail"
    "test_dt|mpi/test_dt.c||rror"
    "armci-test|contrib/armci-test.c|All tests passed|FAIL|rror"
    "ARMCI_AccS_latency|ARMCI_AccS_latency.c||rror"
    "ARMCI_PutS_latency|ARMCI_PutS_latency.c||rror"
    "simple|contrib/non-blocking/simple.c||rror"
)

pass=0 fail=0
hosts_up=0
if [[ $cfg == hosts:* ]]; then
    bash "$repo/tests/hosts/hosts.sh" up 2 1 >"$logs/hosts-up.log" 2>&1 || {
        echo "armci-tests: the simulated hosts could not be set up (see $logs/hosts-up.log)"
        exit 1
    }
    hosts_up=1
    trap 'bash "$repo/tests/hosts/hosts.sh" down >/dev/null 2>&1' EXIT
fi

for t in "${tests[@]}"; do
    IFS='|' read -r name src ok bad <<<"$t"
    log=$logs/$name.log
    if [[ ! -x $dir/bin/$name ]]; then
        if [[ ! -f $dir/$src ]]; then
            echo "FAIL $cfg $name: no source $dir/$src"
            fail=$((fail + 1))
            continue
        fi
        if ! mpicc -O1 -g -I"$(dirname "$dir/$src")" -I"$dir" -o "$dir/bin/$name" "$dir/$src" \
            -l:libarmci-openmpi.a -lm >"$logs/$name.build.log" 2>&1; then
            echo "FAIL $cfg $name: does not build (see $logs/$name.build.log)"
            fail=$((fail + 1))
            continue
        fi
    fi
    case $cfg in
    vader) OFIRUN_BTLS=vader,self timeout "$secs" "$repo/scripts/ofirun" -np "$np" "$dir/bin/$name" ;;
    hosts:*)
        OFIRUN_BTLS=ofi,self BTL_OFI_PROVIDER=${cfg#hosts:} timeout "$secs" \
            bash "$repo/tests/hosts/hosts.sh" mpirun -np "$np" --map-by node "$dir/bin/$name"
        ;;
    *) BTL_OFI_PROVIDER=$cfg timeout "$secs" "$repo/scripts/ofirun" -np "$np" "$dir/bin/$name" ;;
    esac </dev/null >"$log" 2>&1
    rc=$?
    if ((rc == 0)) && { [[ -z $ok ]] || grep -qE "$ok" "$log"; } && ! grep -qE "$bad" "$log"; then
        echo "PASS $cfg $name"
        pass=$((pass + 1))
    else
        why="exit code $rc"
        ((rc == 124)) && why="over ${secs} s"
        echo "FAIL $cfg $name: $why $(grep -m1 -E "$bad|rror" "$log" | cut -c1-160)"
        fail=$((fail + 1))
    fi
done
((hosts_up)) && echo "(hosts taken down at exit)"
echo "armci $cfg: $pass passed, $fail failed"
