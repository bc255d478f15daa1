#!/usr/bin/env bash
#
# scripts/mpich-rma.sh: MPICH's one-sided test suite (test/mpi/rma) over
# this btl/ofi and osc/rdma, one provider at a time:
#
#   bash scripts/mpich-rma.sh [PROVIDER ...]   (default: shm sockets tcp;ofi_rxm udp;ofi_rxd)
#
# The same as scripts/mpich-tests.sh rma (which says what it does and
# reads MPICH_RMA_DIR, MPICH_RMA_NP and MPICH_RMA_TIME as before).
exec bash "$(dirname "${BASH_SOURCE[0]}")/mpich-tests.sh" rma "$@"
