date_str=2026-11-23\ 14:02\ UTC
machine=2\ cores\ \(Intel\(R\)\ Xeon\(R\)\ Processor\)\,\ Linux\ 6.18.44-fc-v669
load_start=1.04\ 1.22\ 1.71
load_end=1.37\ 1.41\ 1.69
REPS=3
PROVIDERS=shm\ sockets\ tcp\;ofi_rxm\ udp\;ofi_rxd
quick=0
