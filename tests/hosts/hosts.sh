#!/usr/bin/env bash
#
# hosts.sh: simulated hosts on this machine, for tests that cross hosts.
#
#   tests/hosts/hosts.sh up [N [RAILS]]   N hosts (2 by default, up to 4),
#                                         RAILS links each (1 or 2)
#   tests/hosts/hosts.sh down             remove everything `up' made
#   tests/hosts/hosts.sh status           what exists now
#   tests/hosts/hosts.sh run HOST cmd...  run cmd on HOST (h1, h2, ...)
#   tests/hosts/hosts.sh mpirun ARGS...   scripts/ofirun ARGS on h0 (the
#                                         head node: no ranks there), the
#                                         hosts in a hostfile
#   tests/hosts/hosts.sh cut HOST RAIL    unplug HOST's link of rail RAIL
#   tests/hosts/hosts.sh kill HOST        SIGKILL every process of HOST
#   tests/hosts/hosts.sh bytes HOST RAIL  tx_bytes of HOST's rail RAIL
#
# A host is a network namespace with its own hostname and pid namespace; a
# process `sleep infinity' started by unshare is its init. Whatever runs on
# a host is started by tests/hosts/enter, which joins the host's network,
# hostname and pid namespaces and, in a mount namespace of its own, mounts
# the host's /proc and binds the host's /dev/shm (a directory of a tmpfs
# made for the hosts) and /etc/hosts (the hosts' names): the daemons and
# ranks of one host share one pid namespace and one /dev/shm, like a real
# machine, and nothing of the machine's own mounts changes.
#
# Links: rail R is a switch (a bridge in the namespace bofi-sw) and every
# host has one veth pair to it: `railR' in the host, addresses
# 10.77.R.<host number>/24. Only these addresses are used; nothing in the
# machine's own namespace changes. `cut' sets the switch's end of the pair
# down: the host's side keeps its address and route, its packets go
# nowhere and no reset ever arrives (a pulled cable).
#
# Jobs: Open MPI's own rsh launcher starts the daemons through
# tests/hosts/agent (plm_rsh_agent), which enters the host named by its
# first argument. --leave-session-attached keeps the daemon in the
# foreground of the agent. mpi_yield_when_idle 1 is passed because on a
# 2-core machine a rank that polls without yielding starves the veth's
# packet processing (ob1+tcp 8-byte latency 4,000 us polling, 24 us
# yielding): across these links correctness and byte counts are measured,
# never latency.
#
# State lives in $BTL_OFI_HOSTS_DIR (default /tmp/bofi-hosts), namespaces
# are named $BTL_OFI_HOSTS_NS-h<i> and -sw (default bofi): two sets of hosts
# can then exist side by side (hosts made by another checkout). `up' first
# removes whatever a previous run left. Needs root (namespaces, veth).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
state=${BTL_OFI_HOSTS_DIR:-/tmp/bofi-hosts}
sw=${BTL_OFI_HOSTS_NS:-bofi}-sw
nsprefix=${BTL_OFI_HOSTS_NS:-bofi}-h

hosts_die() {
    echo "hosts.sh: $*" >&2
    exit 1
}

hosts_count() {
    [[ -f $state/hosts ]] && wc -l <"$state/hosts" || echo 0
}

hosts_rails() {
    [[ -f $state/rails ]] && cat "$state/rails" || echo 0
}

# the init pid of host $1 (h1, h2, ...)
hosts_pid() {
    local f=$state/$1.pid
    [[ -s $f ]] || hosts_die "no host $1 (run: hosts.sh up)"
    cat "$f"
}

hosts_addr() { # host rail (h0, the head node, is .100)
    local i=${1#h}
    ((i == 0)) && i=100
    echo "10.77.$2.$i"
}

hosts_down() {
    local f pid ns
    for f in "$state"/h*.pid; do
        [[ -f $f ]] || continue
        pid=$(cat "$f")
        # everything in the host's pid namespace dies with its init
        [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
    done
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
        if [[ $ns == "$sw" || $ns == "$nsprefix"* ]]; then
            ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
            ip netns del "$ns" 2>/dev/null
        fi
    done
    for f in "$state"/ns/*; do
        [[ -e $f ]] && umount -l "$f" 2>/dev/null
    done
    [[ -d $state/shm ]] && umount -l "$state/shm" 2>/dev/null
    rm -rf "$state"
}

hosts_up() {
    local n=${1:-2} rails=${2:-1} i r ns pid upid tries
    [[ $n =~ ^[2-4]$ ]] || hosts_die "host count must be 2, 3 or 4 (got '$n')"
    [[ $rails =~ ^[12]$ ]] || hosts_die "rails must be 1 or 2 (got '$rails')"
    ((EUID == 0)) || hosts_die "needs root (network and pid namespaces)"
    for tool in ip nsenter unshare; do
        command -v "$tool" >/dev/null || hosts_die "'$tool' is missing (apt-get install iproute2 util-linux)"
    done
    hosts_down
    mkdir -p "$state/ns" "$state/shm"
    # every host's /dev/shm: a directory of one tmpfs
    mount -t tmpfs -o size=8g,mode=755 tmpfs "$state/shm" || hosts_die "cannot mount a tmpfs on $state/shm"
    echo "$rails" >"$state/rails"
    {
        echo "127.0.0.1 localhost"
        for ((i = 0; i <= n; i++)); do
            echo "$(hosts_addr h$i 0) h$i"
        done
    } >"$state/etc-hosts"
    ip netns add "$sw" || hosts_die "ip netns add $sw failed"
    for ((r = 0; r < rails; r++)); do
        ip -n "$sw" link add "br$r" type bridge || hosts_die "no bridge for rail $r"
        ip -n "$sw" link set "br$r" up
    done
    for ((i = 0; i <= n; i++)); do
        ns=$nsprefix$i
        ip netns add "$ns" || hosts_die "ip netns add $ns failed"
        ip -n "$ns" link set lo up
        for ((r = 0; r < rails; r++)); do
            ip link add "rail$r" netns "$ns" type veth peer name "h${i}r$r" netns "$sw" ||
                hosts_die "veth for h$i rail $r failed"
            ip -n "$ns" addr add "$(hosts_addr h$i $r)/24" dev "rail$r"
            ip -n "$ns" link set "rail$r" up
            ip -n "$sw" link set "h${i}r$r" master "br$r"
            ip -n "$sw" link set "h${i}r$r" up
        done
        # the host's init: own hostname, pid namespace with its /proc, a
        # private /dev/shm and /etc/hosts
        mkdir -m 1777 "$state/shm/h$i"
        # h0, the head node where mpirun runs, stays in the machine's pid
        # namespace: a process can join only pid namespaces below its own,
        # and mpirun's agent must join each host's
        local -a pidns=(--pid --fork --mount-proc)
        ((i == 0)) && pidns=()
        ip netns exec "$ns" unshare --uts "${pidns[@]}" \
            sh -c "hostname h$i && touch '$state/h$i.ready' && exec sleep infinity" \
            </dev/null >/dev/null 2>"$state/h$i.err" &
        upid=$!
        for ((tries = 0; tries < 100; tries++)); do
            [[ -f $state/h$i.ready ]] && break
            kill -0 "$upid" 2>/dev/null || hosts_die "host h$i did not start: $(cat "$state/h$i.err")"
            sleep 0.05
        done
        [[ -f $state/h$i.ready ]] || hosts_die "host h$i did not start within 5 s"
        if ((i == 0)); then
            pid=$upid
        else
            pid=$(pgrep -P "$upid" | head -n 1)
        fi
        [[ -n $pid ]] || hosts_die "host h$i: no init process under unshare $upid"
        echo "$pid" >"$state/h$i.pid"
        # bound under $state/ns, so that a process on another host (whose
        # /proc shows its own host's processes only) can enter this one
        for t in net uts pid; do
            ((i == 0)) && [[ $t == pid ]] && continue
            touch "$state/ns/h$i.$t"
            mount --bind "/proc/$pid/ns/$t" "$state/ns/h$i.$t" ||
                hosts_die "cannot bind the $t namespace of h$i"
        done
        ((i > 0)) && echo "h$i" >>"$state/hosts"
    done
    # Once a job aborts, Open MPI 4.1's mpirun sends every daemon the order
    # to kill its ranks and waits for each to answer. A daemon behind a cut
    # link never answers, and the runtime's keepalive (run.sh lowers it)
    # no longer applies to a connection with data in flight: mpirun then
    # waits until TCP gives up retransmitting (net.ipv4.tcp_retries2,
    # 15 by default: about 15 minutes). Measured: a job btl/ofi stopped
    # 3.5 s after h2's link was cut still ran 120 s later. The head node
    # gives up after 5 retransmissions (about 13 s; 3 also ended jobs
    # whose daemon merely waited behind ranks polling on this 2-core
    # machine: udp;ofi_rxd busy, 1 of 1), as a site that wants jobs to end
    # when a host is lost would configure it (README: a lost host).
    ip netns exec "${nsprefix}0" sysctl -q -w net.ipv4.tcp_retries2=5 ||
        hosts_die "cannot set net.ipv4.tcp_retries2 on h0"
    {
        for ((i = 1; i <= n; i++)); do
            echo "h$i slots=2"
        done
    } >"$state/hostfile"
}

hosts_run() { # host cmd...
    BTL_OFI_HOSTS_DIR=$state "$here/enter" "$@"
}

hosts_status() {
    local h
    echo "state: $state ($(hosts_count) hosts, $(hosts_rails) rails)"
    for h in $(cat "$state/hosts" 2>/dev/null); do
        echo "$h: init pid $(cat "$state/$h.pid"), $(hosts_run "$h" hostname)," \
            "$(hosts_run "$h" ip -br addr show | awk '$1 != "lo" {print $1, $3}' | paste -sd ' ' -)"
    done
}

hosts_mpirun() { # ofirun args...
    [[ -f $state/hostfile ]] || hosts_die "no hosts (run: hosts.sh up)"
    hosts_run h0 env BTL_OFI_HOSTS_DIR="$state" "$repo/scripts/ofirun" \
        --hostfile "$state/hostfile" --nolocal \
        --mca plm_rsh_agent "$here/agent" --leave-session-attached \
        --mca mpi_yield_when_idle 1 "$@"
}

hosts_cut() { # host rail
    local i=${1#h} r=$2
    ip -n "$sw" link set "h${i}r$r" down
}

hosts_kill() { # host: every process but the host's init
    local h=$1 pid p
    pid=$(hosts_pid "$h")
    for p in $(pgrep --ns "$pid" --nslist pid); do
        [[ $p == "$pid" ]] || kill -KILL "$p" 2>/dev/null
    done
}

hosts_bytes() { # host rail
    hosts_run "$1" cat "/sys/class/net/rail$2/statistics/tx_bytes"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    cmd=${1:-}
    shift || true
    case $cmd in
    up) hosts_up "$@" ;;
    down) hosts_down ;;
    status) hosts_status ;;
    run) hosts_run "$@" ;;
    mpirun) hosts_mpirun "$@" ;;
    cut) hosts_cut "$@" ;;
    kill) hosts_kill "$@" ;;
    bytes) hosts_bytes "$@" ;;
    -h | --help | "")
        awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
        ;;
    *) hosts_die "unknown command '$cmd' (see --help)" ;;
    esac
fi
