/*
 * collfinal: MPI_Finalize right after collectives whose last messages may
 * still be waiting in the btl.
 *
 *   mpirun -np N collfinal [calls]      (default 16)
 *
 * CALLS MPI_Reduce of one int (every rank's rank + 1 + call, summed at
 * rank 0, checked there), then MPI_Finalize at once, no barrier. A rank
 * that is not the root returns from MPI_Reduce as soon as its
 * contribution is handed to the transport; the root tells every other
 * rank, every few calls (coll/ofi's gather_sets / 2), how many calls it
 * has finished. To a rank on the other host that is a message, the
 * root's first to it, which the provider may refuse for the moment
 * (tcp;ofi_rxm while it connects): btl/ofi queues it and posts it from
 * its progress, at the latest when MPI_Finalize drains the module. ob1's
 * del_procs ran before that drain and released the endpoint the queued
 * message named: the drain read freed memory (a segfault in MPI_Finalize
 * on every run with 8 calls or more, across two hosts with tcp;ofi_rxm,
 * before 787068c; MPICH's opband/opbor/opbxor found it).
 *
 * Prints "OK collfinal: ..." (rank 0, before MPI_Finalize) or "FAIL ...";
 * the harness also fails a crash or a non-zero exit of any rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, calls = argc > 1 ? atoi(argv[1]) : 16;
    int bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < calls; ++i) {
        int mine = rank + 1 + i, sum = -1;
        if (MPI_SUCCESS != MPI_Reduce(&mine, &sum, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD)) {
            printf("FAIL collfinal: rank %d: MPI_Reduce %d returned an error\n", rank, i);
            bad = 1;
            break;
        }
        /* sum over r of (r + 1 + i) */
        if (0 == rank && sum != size * (size + 1) / 2 + size * i) {
            printf("FAIL collfinal: MPI_Reduce %d: sum %d, expected %d\n", i, sum,
                   size * (size + 1) / 2 + size * i);
            bad = 1;
            break;
        }
    }
    if (0 == rank && !bad) {
        printf("OK collfinal: %d reductions on %d ranks, then MPI_Finalize at once\n", calls, size);
    }
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
