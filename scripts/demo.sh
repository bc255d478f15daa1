#!/usr/bin/env bash
#
# The main job: install what is missing (as root on Debian 12), build and
# install btl/ofi, then run a one-sided MPI demo over it on the best local
# provider (shm by default; BTL_OFI_PROVIDER=NAME to pick another, NP=N ranks).
# The demo prints the component version, the provider that served it, its
# timings, and whether every byte and count checked out; its broadcast and
# allreduce run over coll/ofi (coll_ofi_priority 90), built beside btl/ofi.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
provider=${BTL_OFI_PROVIDER:-shm}
np=${NP:-2}

bash "$repo/scripts/build.sh"

bindir=$repo/_build/examples
mkdir -p "$bindir"
mpicc -O2 -Wall -o "$bindir/osc_demo" "$repo/examples/osc_demo.c"

echo "demo: running $np ranks over btl/ofi with provider $provider"
BTL_OFI_PROVIDER=$provider exec "$repo/scripts/ofirun" -np "$np" --mca coll_ofi_priority 90 \
    "$bindir/osc_demo"
