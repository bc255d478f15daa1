/*
 * colldetached: a collective must complete at every rank although the
 * ranks that returned from it call MPI no more.
 *
 *   mpirun -np N colldetached DIR
 *
 * For each collective below (every root of MPI_Bcast and MPI_Reduce in
 * turn): every rank runs it, checks its result, then leaves MPI and
 * creates the file DIR/done.<step>.<rank>, and waits, without any MPI
 * call, until all N ranks' files of that step exist. A rank whose
 * collective still needs another rank to drive its transport (a message
 * left queued in the sender's provider, a piece of a message moved by the
 * sender's progress) never gets out while that rank waits here: the wait
 * gives up after 30 s, names the step and the ranks missing, and aborts.
 * This is what Open MPI itself relies on: MPI_Comm_spawn broadcasts
 * through the communicator's collectives and then waits in PMIx_Connect,
 * without progress; with coll/ofi on shm and no shared memory the spawn
 * hung there (MPI_Bcast of 8 B and 1 KB: the other ranks got the root's
 * message only when the root called MPI again), and on every provider
 * without shared memory the first message to a peer waited for the
 * provider's connection, which needs the sender's progress.
 *
 * Steps: MPI_Bcast of 8 B, 1000 B, 3000 B, 8000 B, 30,000 B, 200,000 B
 * and 1 MiB from every root; MPI_Reduce (sum of longs) of 1, 1,000 and
 * 30,000 elements to every root; MPI_Allreduce of 1 and 1,000;
 * MPI_Barrier. Every value checked.
 *
 * Prints "OK colldetached: ..." and exits 0, or "FAIL ..." and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_S 30

static int rank, size, step;
static long bad;
static const char *dir;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static void marker(char *path, size_t len, int step_no, int r)
{
    snprintf(path, len, "%s/done.%d.%d", dir, step_no, r);
}

/* Out of MPI until every rank finished step WHAT; aborts after WAIT_S. */
static void detach(const char *what)
{
    char path[4096];
    int fd;
    double t0 = now();

    marker(path, sizeof(path), step, rank);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    if (fd < 0) {
        printf("FAIL colldetached: rank %d: cannot create %s: %s\n", rank, path, strerror(errno));
        fflush(stdout);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    close(fd);
    for (int r = 0; r < size; ++r) {
        marker(path, sizeof(path), step, r);
        while (0 != access(path, F_OK)) {
            if (now() - t0 > WAIT_S) {
                printf("FAIL colldetached: rank %d: after %s (step %d), rank %d has not returned "
                       "within %d s while the ranks that returned stayed out of MPI: its "
                       "completion depends on another rank calling MPI again\n",
                       rank, what, step, r, WAIT_S);
                fflush(stdout);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            usleep(1000); /* polling a file: no MPI here on purpose */
        }
    }
    ++step;
}

static void bcast(size_t bytes, int root)
{
    unsigned char *buf = malloc(bytes);
    char what[96];

    for (size_t k = 0; k < bytes; ++k) {
        buf[k] = (rank == root) ? (unsigned char) (k * 13 + step) : 0;
    }
    MPI_Bcast(buf, (int) bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    for (size_t k = 0; k < bytes; ++k) {
        if (buf[k] != (unsigned char) (k * 13 + step)) {
            printf("FAIL colldetached: rank %d: MPI_Bcast of %zu B from %d: byte %zu is %u, not "
                   "%u\n",
                   rank, bytes, root, k, buf[k], (unsigned char) (k * 13 + step));
            ++bad;
            break;
        }
    }
    free(buf);
    snprintf(what, sizeof(what), "MPI_Bcast of %zu B from rank %d", bytes, root);
    detach(what);
}

static void reduce(int count, int root, int all)
{
    long *in = malloc(sizeof(long) * (size_t) count), *out = malloc(sizeof(long) * (size_t) count);
    char what[96];

    for (int k = 0; k < count; ++k) {
        in[k] = (long) rank * 1000003L + k + step;
        out[k] = -1;
    }
    if (all) {
        MPI_Allreduce(in, out, count, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Reduce(in, out, count, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD);
    }
    if (all || rank == root) {
        for (int k = 0; k < count; ++k) {
            long want = 1000003L * size * (size - 1) / 2 + (long) size * (k + step);
            if (out[k] != want) {
                printf("FAIL colldetached: rank %d: %s of %d longs: element %d is %ld, not %ld\n",
                       rank, all ? "MPI_Allreduce" : "MPI_Reduce", count, k, out[k], want);
                ++bad;
                break;
            }
        }
    }
    free(in);
    free(out);
    if (all) {
        snprintf(what, sizeof(what), "MPI_Allreduce of %d longs", count);
    } else {
        snprintf(what, sizeof(what), "MPI_Reduce of %d longs to rank %d", count, root);
    }
    detach(what);
}

int main(int argc, char **argv)
{
    static const size_t bsizes[] = {8, 1000, 3000, 8000, 30000, 200000, 1 << 20};
    static const int rcounts[] = {1, 1000, 30000};
    long total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2) {
        if (0 == rank) {
            printf("FAIL colldetached: usage: colldetached DIR\n");
        }
        MPI_Finalize();
        return 1;
    }
    dir = argv[1];
    for (size_t i = 0; i < sizeof(bsizes) / sizeof(bsizes[0]); ++i) {
        for (int root = 0; root < size; ++root) {
            bcast(bsizes[i], root);
        }
    }
    for (size_t i = 0; i < sizeof(rcounts) / sizeof(rcounts[0]); ++i) {
        for (int root = 0; root < size; ++root) {
            reduce(rcounts[i], root, 0);
        }
    }
    reduce(1, 0, 1);
    reduce(1000, 0, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    detach("MPI_Barrier");
    MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank && 0 == total) {
        printf("OK colldetached: %d steps on %d ranks, each completed at every rank while the "
               "others stayed out of MPI\n",
               step, size);
    }
    MPI_Finalize();
    return 0 == total ? 0 : 1;
}
