/*
 * collmany: many communicators alive at once, each running collectives.
 *
 *   mpirun -np N collmany HELD AGAIN
 *
 * A barrier on MPI_COMM_WORLD first (so it is set up before the others),
 * then HELD duplicates of MPI_COMM_WORLD made and kept; on each, as soon
 * as it exists: a 4 KiB MPI_Bcast from root i % size, an MPI_Allreduce
 * (sum of longs), an MPI_Reduce to root (i + 1) % size and an
 * MPI_Barrier, every value checked. Then all of them freed, and AGAIN
 * more made, used the same way and freed. coll/ofi serves as many as its
 * memory-mapping budget allows (coll_ofi_max_mappings) and leaves the
 * rest to the previous component; the results must be right either way,
 * and freeing must give the budget back (tests/coll/run.sh counts the
 * communicators served from coll/ofi's verbose lines).
 *
 * Prints "OK collmany: ..." and exits 0, or "FAIL ..." lines and exits 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES 4096

static int rank, size;
static long bad;

static void use(MPI_Comm comm, long i)
{
    unsigned char buf[BYTES];
    const int root = (int) (i % size), rroot = (int) ((i + 1) % size);
    long v = rank + i, sum = -1, red = -1;
    const long want = (long) size * (size - 1) / 2 + (long) size * i;

    for (int k = 0; k < BYTES; ++k) {
        buf[k] = (rank == root) ? (unsigned char) (k * 7 + i) : 0;
    }
    MPI_Bcast(buf, BYTES, MPI_BYTE, root, comm);
    for (int k = 0; k < BYTES; ++k) {
        if (buf[k] != (unsigned char) (k * 7 + i)) {
            printf("FAIL collmany: rank %d communicator %ld: bcast byte %d is %u, not %u\n", rank,
                   i, k, buf[k], (unsigned char) (k * 7 + i));
            ++bad;
            break;
        }
    }
    MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, comm);
    if (sum != want) {
        printf("FAIL collmany: rank %d communicator %ld: allreduce %ld, not %ld\n", rank, i, sum,
               want);
        ++bad;
    }
    MPI_Reduce(&v, &red, 1, MPI_LONG, MPI_SUM, rroot, comm);
    if (rank == rroot && red != want) {
        printf("FAIL collmany: rank %d communicator %ld: reduce %ld, not %ld\n", rank, i, red,
               want);
        ++bad;
    }
    MPI_Barrier(comm);
}

/* This process's resident memory in KiB (VmRSS), or -1. */
static long rss_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");

    if (NULL == f) {
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        if (0 == strncmp(line, "VmRSS:", 6)) {
            kib = atol(line + 6);
        }
    }
    fclose(f);
    return kib;
}

/* N communicators made and used, all alive at once, then freed; rank 0
 * says how much its resident memory grew per communicator meanwhile
 * (informational: what each served communicator costs). */
static void round_of(long n, long first)
{
    const long before = rss_kib();
    MPI_Comm *comms = malloc(sizeof(*comms) * (size_t) (n > 0 ? n : 1));

    if (NULL == comms) {
        printf("FAIL collmany: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < n; ++i) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
        use(comms[i], first + i);
    }
    if (0 == rank && n > 0 && before >= 0) {
        printf("collmany: rank 0's resident memory grew by %.1f KiB per communicator while "
               "%ld were alive\n",
               (double) (rss_kib() - before) / (double) n, n);
    }
    for (long i = 0; i < n; ++i) {
        MPI_Comm_free(&comms[i]);
    }
    free(comms);
}

int main(int argc, char **argv)
{
    long held = (argc > 1) ? atol(argv[1]) : 100, again = (argc > 2) ? atol(argv[2]) : 10;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    round_of(held, 0);
    round_of(again, held);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank && 0 == bad) {
        printf("OK collmany: %ld communicators alive at once, then %ld more after freeing them, "
               "on %d ranks; every value right\n",
               held, again, size);
    }
    MPI_Finalize();
    return 0 == bad ? 0 : 1;
}
