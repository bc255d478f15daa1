#!/bin/bash
# gsz.sh: put/get bandwidth and latency across hosts for several gather sizes, one run
cd /work/main
bind=${BIND:-core}
for g in 1024 4096 16384; do
  for prov in "tcp;ofi_rxm" sockets; do
    echo "== gather $g $prov bind $bind"
    BTL_OFI_PROVIDER=$prov OFIRUN_OSC=rdma OFIRUN_BTLS=ofi,self timeout 300 bash tests/hosts/hosts.sh mpirun -np 2 --map-by node --bind-to $bind \
      --mca btl_ofi_put_gather_size $g --mca btl_ofi_get_gather_size $g \
      bench/bin/osc_bench -ops putbw,getbw,put,get -bw 1k:32k -wbytes 16777216 -lat 1k:32k -runs 3 -run-ms 20 2>&1 | grep -v "^#" 
  done
done
