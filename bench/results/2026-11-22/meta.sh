date_str=2026-11-22\ 11:36\ UTC
machine=2\ cores\ \(AMD\ EPYC\)\,\ Linux\ 6.18.44-fc-v769
load_start=15.84\ 15.91\ 13.71
load_end=17.52\ 14.14\ 13.57
REPS=3
PROVIDERS=shm\ sockets\ tcp\;ofi_rxm\ udp\;ofi_rxd
quick=0
