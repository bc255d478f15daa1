date_str=2026-11-26\ 16:41\ UTC
machine=2\ cores\ \(AMD\ EPYC\)\,\ Linux\ 6.18.44-fc-v782
load_start=1.69\ 1.81\ 2.39
load_end=2.10\ 1.89\ 2.40
REPS=1
PROVIDERS=udp\;ofi_rxd
quick=0
