#!/usr/bin/env bash
#
# coll/ofi tests: tests/coll/colltest.c with coll/ofi raised above the
# other coll components (coll_ofi_priority 90), over btl ofi with every
# provider and over btl vader, on 2 and 4 ranks. Each case proves that
# coll/ofi served MPI_COMM_WORLD over the btl it names (its verbose line,
# its served-call counts at destruct, and colltest's check of its MPI_T
# counters) and that every result is right (colltest compares each
# element with a reference computed locally: every root, counts from 0 to
# 4 MiB across the data cache, every predefined type and op, MPI_IN_PLACE,
# a non-commutative user op, dup/split/create_group/reversed
# communicators, 1,000 back-to-back calls, traffic in between).
#
#   tests/coll/run.sh [CASE...]     every case, or the ones named
#   tests/coll/run.sh --list        the case names
#
# Cases:
#   ompi_info                  coll ofi v0.1.0 and its 9 parameters
#   coll:PROV:NP               btl ofi,self with provider PROV (shm,
#                              sockets, tcp+ofi_rxm, udp+ofi_rxd), NP ranks;
#                              the network providers with
#                              coll_ofi_shared_memory 0, so that every
#                              peer goes through their RDMA (on shm every
#                              peer is mapped: NP-1 peers through shared
#                              memory, checked)
#   coll:shm:4:btlonly         shm with coll_ofi_shared_memory 0 and
#                              coll_ofi_messages 0 (flags by put)
#   coll:vader:NP              btl vader,self (peers mapped, checked)
#   coll:vader:4:basic         on top of coll/basic, whose allreduce is
#                              built on the communicator's bcast and reduce
#                              (ours): the set-up exchange must not recurse
#   coll:shm:4:cache0          coll_ofi_shared_memory 0, coll_ofi_messages 0,
#                              coll_ofi_cache_pages 0 (the bounce page),
#                              coll_ofi_fanout 3 and coll_ofi_zcopy_chunk
#                              4096 (large broadcasts in many pieces)
#   coll:vader:2:nozc          coll_ofi_zcopy_size 0 where every peer is
#                              mapped: nothing without copies, reductions
#                              not split between the ranks either
#   coll:tcp+ofi_rxm:2:shmfull a private /dev/shm of 1 MiB (unshare -m), too
#                              small for a block: none made (no SIGBUS),
#                              every peer through the btl
#   coll:shm:4:chunked         coll_ofi_shared_memory 0 and
#                              coll_ofi_zcopy_size 0: every broadcast and
#                              reduction through the data caches
# Every case over an RDMA btl (but mt) also shows how many broadcasts and
# reductions went without copies: some (broadcasts of 8 KiB and more,
# reductions larger than half the data cache) where no peer is mapped,
# none in chunked; where every peer is mapped some reductions (split
# between the ranks: on 2 ranks above 32 KiB, allreduces on more from 256
# KiB) and on 2 ranks some broadcasts (on more every broadcast is flat,
# none), and rank 0 must have read some of its local peers' buffers with
# process_vm_readv.
#   coll:shm:2:badfanout       coll_ofi_fanout 0: named (help message, and
#                              coll/ofi's verbose line, as mpirun 4.1.4 now
#                              and then drops a help message) and replaced
#   coll:tcp:2:fallback        btl tcp,self (no RDMA btl): every rank agrees
#                              not to serve, results still right
#   coll:shm:4:mappings        tests/coll/collmany.c with
#                              coll_ofi_max_mappings 40 (4 per communicator
#                              of 4 local ranks): 30 duplicates alive at
#                              once, then 9 more after freeing them, each
#                              running bcast, allreduce, reduce and
#                              barrier (every value checked); exactly 9 of
#                              the 30 served beside MPI_COMM_WORLD, the 21
#                              others left to the previous component with
#                              the reason and the help message, all 9
#                              later ones served (freeing gave the
#                              mappings back)
#   coll:shm:4:manycomm        collmany with 20,000 duplicates alive at once
#                              and the default budget (half of
#                              vm.max_map_count): Open MPI crashed in
#                              MPI_Comm_dup at about 14,500 when coll/ofi
#                              served them all; as many served as the
#                              budget allows, the rest by the previous
#                              component
#   coll:tcp+ofi_rxm:2:manycomm  the same with no shared memory (one
#                              mapping per communicator: all served); each
#                              private block was zeroed whole, 1.1 MiB per
#                              communicator and rank, and the job was
#                              killed for lack of memory (24 GiB here).
#                              Both show rank 0's memory per communicator
#   coll:PROV:4:detached       tests/coll/colldetached.c: after each
#                              collective (bcast 8 B-1 MiB and reduce from
#                              every root, allreduce, barrier) every rank
#                              leaves MPI and waits, out of MPI, for all
#                              ranks to have returned: none may need
#                              another's later MPI call to complete (Open
#                              MPI's MPI_Comm_spawn broadcasts, then waits
#                              in PMIx_Connect). Every provider (the
#                              network ones without shared memory, as
#                              above), vader, and shm:4:detachedbtl (shm
#                              with coll_ofi_shared_memory 0). Without
#                              shared memory it hung at the first message
#                              to a peer on every provider, and on shm at
#                              a root's 8 B broadcast
#   coll:PROV:NP:mt            tests/coll/colltest_mt.c: MPI_THREAD_MULTIPLE,
#                              4 threads per rank, each running bcast,
#                              allreduce, reduce and barrier on its own
#                              duplicate of MPI_COMM_WORLD at the same time
#                              (every value checked); coll/ofi must serve
#                              each duplicate (shm, tcp+ofi_rxm, vader)
#
# Environment: BTL_OFI_PREFIX (install prefix, default <repo>/_install),
# PROVIDERS (default the four), BTL_OFI_TEST_TIMEOUT (seconds per job,
# default 120).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/lib.sh
source "$here/../lib.sh"
logdir=$tests/logs/coll
coll_wrap=()
runner_help "$0" "$@"

PROVIDERS=${PROVIDERS:-shm sockets tcp;ofi_rxm udp;ofi_rxd}
test_timeout=${BTL_OFI_TEST_TIMEOUT:-120}
prefix=${BTL_OFI_PREFIX:-$repo/_install}
compdir=$prefix/lib/openmpi

list_cases() {
    local p np
    echo ompi_info
    for np in 2 4; do
        for p in $PROVIDERS; do
            echo "coll:${p//;/+}:$np"
        done
        echo "coll:vader:$np"
    done
    echo "coll:vader:4:basic"
    echo "coll:shm:4:btlonly"
    echo "coll:shm:4:cache0"
    echo "coll:shm:4:chunked"
    echo "coll:vader:2:nozc"
    echo "coll:tcp+ofi_rxm:2:shmfull"
    echo "coll:shm:2:badfanout"
    echo "coll:tcp:2:fallback"
    echo "coll:shm:4:mappings"
    echo "coll:shm:4:manycomm"
    echo "coll:tcp+ofi_rxm:2:manycomm"
    for p in $PROVIDERS; do
        echo "coll:${p//;/+}:4:detached"
    done
    echo "coll:shm:4:detachedbtl"
    echo "coll:vader:4:detached"
    echo "coll:shm:4:mt"
    echo "coll:tcp+ofi_rxm:2:mt"
    echo "coll:vader:4:mt"
}

if [[ ${1:-} == --list ]]; then
    list_cases
    exit 0
fi

component_path() {
    local def
    def=$("$ofirun" --component-path) || return 1
    echo "$def"
}

mkdir -p "$bindir" "$logdir"
build_colltest() {
    local p
    for p in colltest colltest_mt collmany colldetached; do
        [[ -x $bindir/$p && $bindir/$p -nt $here/$p.c ]] && continue
        mpicc -O2 -Wall -pthread -o "$bindir/$p" "$here/$p.c" >"$logdir/compile-$p.log" 2>&1 || return 1
    done
}

# our names in /dev/shm: coll/ofi's blocks and btl/ofi's shm endpoints
shm_files() {
    (cd /dev/shm && ls -1 -d coll_ofi.* btlofi-* 2>/dev/null | sort)
}

# one job of colltest with coll/ofi raised; RC and LOG for the caller
coll_job() { # log np args...
    local log=$1 np=$2
    shift 2
    local -a prog=("$bindir/colltest")
    # colltest_mt (4 threads, 200 rounds) or collmany with COLL_ARGS;
    # colltest: its MPI_T check too
    if [[ -n ${COLL_PROG:-} ]]; then
        # shellcheck disable=SC2206 # words on purpose
        prog=("$COLL_PROG" ${COLL_ARGS:-})
    elif [[ ${EXPECT_BTL:--} != - ]]; then
        prog+=(expect-ofi)
    fi
    run_logged "$log" "$test_timeout" "${coll_wrap[@]}" mpirun --allow-run-as-root -np "$np" --oversubscribe \
        --bind-to none --mca mca_base_component_path "$(component_path)" \
        --mca pml ob1 --mca coll_ofi_priority 90 --mca coll_ofi_verbose 1 \
        "$@" "${prog[@]}"
}

# why a job of NP ranks did not show coll/ofi serving MPI_COMM_WORLD over
# BTL, or nothing
not_served() { # log np btl
    if ! grep -q "coll:ofi: serving communicator 0 with $2 ranks over btl $3" "$1"; then
        echo "coll/ofi did not serve MPI_COMM_WORLD over btl $3"
    elif ! grep -q "coll:ofi: communicator 0 rank 0: served [1-9][0-9]* bcast, [1-9][0-9]* reduce, [1-9][0-9]* allreduce, [1-9][0-9]* barrier" "$1"; then
        echo "no served-call counts for MPI_COMM_WORLD"
    fi
}

run_case() {
    local c=$1 group pname prov a b t0 log label rc why served
    local -a sel=()
    case_start "$c"
    if [[ $c == ompi_info ]]; then
        label="coll ompi_info"
        if OMPI_MCA_mca_base_component_path=$(component_path) ompi_info --param coll ofi --level 9 >"$log" 2>&1 &&
            grep -q 'MCA coll: ofi (.*Component v0.1.0)' "$log" &&
            [[ $(grep -c 'parameter "coll_ofi_\(priority\|verbose\|fanout\|cache_pages\|zcopy_size\|zcopy_chunk\|shared_memory\|messages\|max_mappings\)"' "$log") -eq 9 ]]; then
            report PASS "$label" $((SECONDS - t0)) "MCA coll: ofi (Component v0.1.0), 9 parameters"
        else
            report FAIL "$label" $((SECONDS - t0)) "coll ofi v0.1.0 or its 9 parameters missing" "$log"
        fi
        return
    fi
    label="coll $prov np $a${b:+ $b}"
    if [[ ! -f $compdir/mca_coll_ofi.so ]]; then
        report FAIL "$label" 0 "$compdir/mca_coll_ofi.so not found: build and install first (scripts/build.sh)"
        return
    fi
    if ! build_colltest; then
        report FAIL "$label" 0 "compiling colltest.c failed" "$logdir/compile-colltest.log"
        return
    fi
    local btl=ofi
    case $pname in
    vader) sel=(--mca btl vader,self) btl=vader ;;
    tcp) sel=(--mca btl tcp,self) btl=- ;;
    *)
        provider_ok "$label" "$prov" || return
        sel=(--mca btl ofi,self --mca btl_ofi_provider_include "$prov")
        ;;
    esac
    # peers mapped (rank 0's serving line): all on shm and vader, none
    # where shared memory is off
    local mapped=$((a - 1))
    local -a wrap=()
    if [[ $b == shmfull ]]; then
        # a private /dev/shm of 1 MiB, smaller than a block: no rank may
        # make one (or die of SIGBUS writing a page the tmpfs cannot
        # back); every peer through the btl
        wrap=(unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm && exec "$@"' sh)
        mapped=0
    elif [[ $b == btlonly || $b == cache0 || $b == chunked || $b == detachedbtl || ($pname != shm && $pname != vader && $pname != tcp) ]]; then
        sel+=(--mca coll_ofi_shared_memory 0)
        mapped=0
    fi
    # messages to peers that are not mapped: their largest payload (the
    # btl's eager limit less a header) where any peer is not mapped, none
    # in btlonly and cache0 (coll_ofi_messages 0: flags by put)
    local msgs='[1-9][0-9]*'
    if [[ $b == btlonly || $b == cache0 ]]; then
        sel+=(--mca coll_ofi_messages 0)
        msgs=0
    fi
    case $b in
    basic) sel+=(--mca coll ofi,basic,libnbc,self) ;;
    cache0) sel+=(--mca coll_ofi_cache_pages 0 --mca coll_ofi_fanout 3 --mca coll_ofi_zcopy_chunk 4096) ;;
    chunked | nozc) sel+=(--mca coll_ofi_zcopy_size 0) ;;
    badfanout) sel+=(--mca coll_ofi_fanout 0) ;;
    esac
    local cprog='' pargs='' own=0 marks=''
    # 4 threads per rank on 2 cores: yield when idle, as an oversubscribed
    # job should (spinning, the tcp;ofi_rxm case took 44 s instead of 1)
    [[ $b == mt ]] && cprog=$bindir/colltest_mt pargs="4 200" own=1 sel+=(--mca mpi_yield_when_idle 1)
    # the mapping budget: 40 (4 per communicator here), or the default
    local budget=$(($(cat /proc/sys/vm/max_map_count 2>/dev/null || echo 65530) / 2)) held=20000
    case $b in
    mappings) cprog=$bindir/collmany pargs="30 9" own=1 budget=40 held=30 sel+=(--mca coll_ofi_max_mappings 40) ;;
    manycomm) cprog=$bindir/collmany pargs="20000 0" own=1 sel+=(--mca mpi_yield_when_idle 1) ;;
    detached | detachedbtl)
        # the ranks' marker files (no MPI in the waits between steps)
        marks=$(mktemp -d) || {
            report FAIL "$label" 0 "mktemp -d failed"
            return
        }
        cprog=$bindir/colldetached pargs=$marks own=1
        ;;
    esac
    local before left
    before=$(shm_files)
    coll_wrap=("${wrap[@]}")
    EXPECT_BTL=$btl COLL_PROG=$cprog COLL_ARGS=$pargs coll_job "$log" "$a" "${sel[@]}"
    rc=$?
    [[ -n $marks ]] && rm -rf "$marks"
    why=""
    # coll/ofi removes a block's name once the local peers mapped it, and
    # btl/ofi its shm endpoints' names at close or exit, even when the
    # btl is never closed: colltest initialises MPI_T and never finalizes
    # it (Open MPI 4.1.4 crashes in MPI_T_finalize), which leaves every
    # component open at MPI_Finalize
    left=$(comm -13 <(echo "$before") <(shm_files) | tr '\n' ' ')
    if [[ -n $left ]]; then
        why="left in /dev/shm after the job: $left"
    elif ((rc == 124 || rc == 137)); then
        why="timed out after ${test_timeout}s (hang?)"
    elif ((rc != 0)); then
        why="exit code $rc: $(grep -m1 '^FAIL' "$log" || first_fail "$log")"
    elif grep -q '^FAIL' "$log"; then
        why=$(grep -m1 '^FAIL' "$log" | cut -c1-300)
    elif [[ $btl != - && $own == 0 ]]; then
        why=$(not_served "$log" "$a" "$btl")
        if [[ -z $why ]] && ! grep -q "coll:ofi: serving communicator 0 with $a ranks over btl $btl (rank 0, .*, $mapped peers through shared memory, messages of up to $msgs bytes to the others)" "$log"; then
            why="rank 0 did not map $mapped peers' blocks, or messages not as expected ($msgs): $(grep -m1 -o 'rank 0, .*to the others' "$log")"
        fi
        # large broadcasts and reductions without copies, except where
        # turned off
        local zc zr line
        line=$(grep -m1 -o "coll:ofi: communicator 0 rank 0: served .*; [0-9]* broadcasts without copies, [0-9]* reductions without copies" "$log")
        zc=$(sed -n 's/.*; \([0-9]*\) broadcasts without copies.*/\1/p' <<<"$line")
        zr=$(sed -n 's/.*, \([0-9]*\) reductions without copies/\1/p' <<<"$line")
        if [[ -z $why && (-z $zc || -z $zr) ]]; then
            why="no count of broadcasts and reductions without copies for MPI_COMM_WORLD"
        elif [[ -z $why && ($b == chunked || $b == nozc) && ($zc != 0 || $zr != 0) ]]; then
            why="$zc broadcasts and $zr reductions went without copies with coll_ofi_zcopy_size 0"
        elif [[ -z $why && $b != chunked && $mapped == 0 && ($zc == 0 || $zr == 0) ]]; then
            why="large broadcasts ($zc) or reductions ($zr) did not go without copies"
        elif [[ -z $why && $b != nozc && $mapped -gt 0 && $a -eq 2 && ($zc == 0 || $zr == 0) ]]; then
            # every peer mapped, 2 ranks: broadcasts without copies from
            # coll_ofi_zcopy_size, reductions split between the ranks
            # above 32 KiB (the gather slots)
            why="$zc broadcasts and $zr reductions went without copies with every peer of 2 ranks mapped (expected some of both)"
        elif [[ -z $why && $b != nozc && $mapped -gt 0 && $a -gt 2 && ($zc != 0 || $zr == 0) ]]; then
            # every peer mapped, more ranks: broadcasts flat at every
            # size, allreduces split between the ranks from 256 KiB
            why="$zc broadcasts and $zr reductions went without copies with every peer of $a ranks mapped (expected no broadcast, some reductions)"
        elif [[ -z $why && $b != nozc && $mapped -gt 0 ]] && ! grep -q "coll:ofi: communicator 0 rank 0: served .*; [1-9][0-9]* reads straight from local peers' buffers" "$log"; then
            why="rank 0 never read a local peer's buffer with process_vm_readv"
        fi
        # every peer mapped: small broadcasts flat (one copy out of the
        # root's slot) and barriers by the shared counter; with no peer
        # mapped neither
        local flat shb
        flat=$(grep -m1 -o "coll:ofi: communicator 0 rank 0: served .*; [0-9]* flat broadcasts" "$log" | sed 's/.*; \([0-9]*\) flat broadcasts/\1/')
        shb=$(grep -m1 -o "coll:ofi: communicator 0 rank 0: served .*, [0-9]* barriers by the shared counter" "$log" | sed 's/.*, \([0-9]*\) barriers by.*/\1/')
        if [[ -z $why && (-z $flat || -z $shb) ]]; then
            why="no count of flat broadcasts and shared-counter barriers for MPI_COMM_WORLD"
        elif [[ -z $why && $mapped -eq $((a - 1)) && ($flat == 0 || $shb == 0) ]]; then
            why="every peer mapped, but $flat flat broadcasts and $shb barriers by the shared counter (expected some of both)"
        elif [[ -z $why && $mapped -eq 0 && ($flat != 0 || $shb != 0) ]]; then
            why="no peer mapped, but $flat flat broadcasts and $shb barriers by the shared counter"
        fi
    fi
    case $b in
    badfanout)
        if [[ -z $why ]] && ! grep -q "coll:ofi: coll_ofi_fanout 0 is out of range (1 or more); using 2" "$log"; then
            why="no verbose line naming coll_ofi_fanout 0 and the value used"
        elif [[ -z $why ]] && ! grep -q "Parameter: coll_ofi_fanout" "$log"; then
            why="no help message naming coll_ofi_fanout"
        fi
        ;;
    fallback)
        if [[ -z $why ]] && ! grep -q "coll:ofi: not serving communicator 0" "$log"; then
            why="no line saying that every rank agreed not to serve"
        fi
        ;;
    mappings | manycomm)
        # MPI_COMM_WORLD first, then as many of the duplicates held at once
        # as the budget allows (PER mappings each: its block and one per
        # peer mapped), then every later one (the 9 after freeing, in
        # mappings)
        local per=$((1 + mapped)) later=0 nserved nrefused perkib
        local fits=$(((budget - per) / per))
        ((fits > held)) && fits=$held
        [[ $b == mappings ]] && later=9
        nserved=$(grep -c "coll:ofi: serving communicator [0-9]* with $a ranks over btl ofi (rank 0," "$log")
        perkib=$(grep -m1 -o "grew by [0-9.]* KiB per communicator" "$log" | grep -o "[0-9.]* KiB")
        nrefused=$(grep -c "coll:ofi: not serving communicator [0-9]* (rank 0): .*coll_ofi_max_mappings allows" "$log")
        if [[ -z $why ]] && ! grep -q "^OK collmany: $held communicators alive at once, then $later more" "$log"; then
            why="no OK line from collmany"
        elif [[ -z $why ]] && ((nserved != 1 + fits + later)); then
            why="coll/ofi served $nserved communicators, expected $((1 + fits + later)) (MPI_COMM_WORLD, $fits of $held held at once within $budget mappings, $later later)"
        elif [[ -z $why ]] && ((nrefused != held - fits)); then
            why="$nrefused communicators refused for the mapping budget, expected $((held - fits))"
        elif [[ -z $why && $b == mappings ]] && ! grep -q "coll_ofi_max_mappings: 40" "$log"; then
            why="no help message naming coll_ofi_max_mappings"
        fi
        [[ -z $why ]] && served="$held communicators alive at once, every value right: $fits served by coll/ofi within $budget mappings ($per each) beside MPI_COMM_WORLD, $nrefused by the previous component; $later more after freeing, all served; rank 0's memory ${perkib:-?} per communicator"
        ;;
    detached | detachedbtl)
        if [[ -z $why ]] && ! grep -q "^OK colldetached: 43 steps on $a ranks" "$log"; then
            why="no OK line from colldetached"
        fi
        [[ -z $why ]] && why=$(not_served "$log" "$a" "$btl")
        [[ -z $why ]] && served="$(grep -m1 -o 'OK colldetached: .*' "$log" | cut -c18-), served by coll/ofi; $mapped peers through shared memory"
        ;;
    mt)
        # the four duplicates (communicators other than 0), each served
        local dups
        dups=$(grep -o "coll:ofi: communicator [1-9][0-9]* rank 0: served [1-9][0-9]* bcast, [1-9][0-9]* reduce, [1-9][0-9]* allreduce, [1-9][0-9]* barrier" "$log" | sort -u | wc -l)
        if [[ -z $why ]] && ! grep -q "^OK colltest_mt: 4 threads x 200 rounds on $a ranks" "$log"; then
            why="no OK line from colltest_mt"
        elif [[ -z $why ]] && ((dups < 4)); then
            why="coll/ofi served $dups of the 4 duplicated communicators (verbose lines at their free)"
        fi
        [[ -z $why ]] && served="4 threads x 200 rounds, each on its own communicator, every value right; $dups duplicates served by coll/ofi, e.g. $(grep -m1 -o "communicator [1-9][0-9]* rank 0: served.*" "$log")"
        ;;
    esac
    if [[ -n $why ]]; then
        report FAIL "$label" $((SECONDS - t0)) "$why" "$log"
        return
    fi
    [[ $own == 1 ]] || served=$(grep -m1 'coll:ofi: communicator 0 rank 0: served' "$log" | sed 's/.*: served/served/')
    [[ $btl != - && $own == 0 ]] && served+="; $mapped peers through shared memory"
    report PASS "$label" $((SECONDS - t0)) "${served:-results right, served by the previous component}"
}

runner_main "$@"
