#!/usr/bin/env bash
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
bindir=$repo/bench/bin
source "$repo/tests/hosts/hosts.sh"
hosts_up 2 1 >/tmp/bwexp-up.log 2>&1 || { echo "hosts_up failed"; exit 1; }
trap 'hosts_down >/dev/null 2>&1' EXIT
link=$(hosts_addr h1 0); link=${link%.*}.0/24
for rep in $(seq 1 ${REPS:-2}); do
 for who in "$@"; do
  name=${who%%=*}; extra=${who#*=}
  case $name in
   anchor*) prov=""; osc=pt2pt; btls=tcp,self;;
   tcp*) prov="tcp;ofi_rxm"; osc=rdma; btls=ofi,self;;
   sockets*) prov=sockets; osc=rdma; btls=ofi,self;;
  esac
  prog=$bindir/osc_bench; args="-ops ${OPS:-putbw,getbw} -bw ${BW:-64k:4m} -wbytes 16777216 -lat ${LAT:-8:8} ${RUNARGS:-}"
  [[ $name == *p2p ]] && { prog=$bindir/p2p_bench; args="-ops lat -lat ${LAT:-8:8} ${RUNARGS:-}"; }
  BTL_OFI_PROVIDER=$prov OFIRUN_OSC=$osc OFIRUN_BTLS=$btls timeout -k 10 300 \
        bash "$repo/tests/hosts/hosts.sh" mpirun -np 2 --map-by node \
        --mca btl_tcp_if_include "$link" --bind-to ${BIND:-core} $extra $prog $args > /tmp/bwexp-$name-$rep.log 2>&1
  echo "== $name rep $rep rc=$?"; grep -v '^#' /tmp/bwexp-$name-$rep.log | awk 'NF==4 && $3!="rate"{printf "%s %s %s  ", $1,$2,$4}'; echo
 done
done
