/*
 * colltest_mt: collectives on several communicators at once, one thread
 * each, under MPI_THREAD_MULTIPLE (run with coll_ofi_priority raised).
 *
 *   mpirun -np N tests/bin/colltest_mt [THREADS [ROUNDS]]
 *
 * Every rank makes THREADS (default 4) duplicates of MPI_COMM_WORLD, in
 * order, before starting its threads; thread t then runs ROUNDS (default
 * 200) rounds on duplicate t, all threads at once: MPI_Bcast (root and
 * size change every round, 8 B to 256 KiB, past coll/ofi's data cache),
 * MPI_Allreduce and MPI_Reduce (MPI_SUM over int64_t, 1 to 4096
 * elements) and MPI_Barrier. Every byte and element is compared with what
 * it must be; a mismatch prints "FAIL ..." (the first few). Each
 * communicator's values carry its thread's number, so data crossing from
 * one communicator's collective into another's is caught. At the end,
 * rank 0 prints "OK colltest_mt: T threads x R rounds on N ranks" when
 * every rank agreed, and the communicators are freed (coll/ofi's verbose
 * line then counts what it served on each).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 16
#define MAX_BYTES (256 * 1024)
#define MAX_ELEMS 4096

static int rank, size, rounds = 200;
static MPI_Comm comms[MAX_THREADS];
static long fails[MAX_THREADS];

static unsigned char pattern(int t, int round, size_t k)
{
    return (unsigned char) (k * 131u + (unsigned) round * 17u + (unsigned) t * 101u + 7u);
}

static void bad(int t, long *n, const char *what, int round, size_t at, long long got,
                long long want)
{
    if ((*n)++ < 3) {
        printf("FAIL colltest_mt: rank %d thread %d round %d: %s at %zu: %lld, expected %lld\n",
               rank, t, round, what, at, got, want);
        fflush(stdout);
    }
}

static void *run(void *arg)
{
    int t = (int) (intptr_t) arg;
    MPI_Comm comm = comms[t];
    unsigned char *buf = malloc(MAX_BYTES);
    int64_t *in = malloc(MAX_ELEMS * sizeof(int64_t)), *out = malloc(MAX_ELEMS * sizeof(int64_t));
    long n = 0;

    if (NULL == buf || NULL == in || NULL == out) {
        printf("FAIL colltest_mt: rank %d thread %d: out of memory\n", rank, t);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int r = 0; r < rounds; ++r) {
        int root = (r + t) % size;
        size_t bytes = (size_t) 8 << ((r + t) % 16);
        int count = 1 + (r * 37 + t * 11) % MAX_ELEMS;

        if (bytes > MAX_BYTES) {
            bytes = MAX_BYTES;
        }
        for (size_t k = 0; k < bytes; ++k) {
            buf[k] = rank == root ? pattern(t, r, k) : 0;
        }
        MPI_Bcast(buf, (int) bytes, MPI_BYTE, root, comm);
        for (size_t k = 0; k < bytes; ++k) {
            if (buf[k] != pattern(t, r, k)) {
                bad(t, &n, "bcast byte", r, k, buf[k], pattern(t, r, k));
                break;
            }
        }

        for (int k = 0; k < count; ++k) {
            in[k] = (int64_t) rank * 1000003 + (int64_t) k * 7 + (int64_t) t * 100000007 + r;
        }
        MPI_Allreduce(in, out, count, MPI_INT64_T, MPI_SUM, comm);
        for (int k = 0; k < count; ++k) {
            int64_t want = (int64_t) size * (size - 1) / 2 * 1000003
                           + (int64_t) size * ((int64_t) k * 7 + (int64_t) t * 100000007 + r);
            if (out[k] != want) {
                bad(t, &n, "allreduce element", r, (size_t) k, out[k], want);
                break;
            }
        }

        memset(out, 0, (size_t) count * sizeof(int64_t));
        MPI_Reduce(in, out, count, MPI_INT64_T, MPI_SUM, root, comm);
        if (rank == root) {
            for (int k = 0; k < count; ++k) {
                int64_t want = (int64_t) size * (size - 1) / 2 * 1000003
                               + (int64_t) size * ((int64_t) k * 7 + (int64_t) t * 100000007 + r);
                if (out[k] != want) {
                    bad(t, &n, "reduce element", r, (size_t) k, out[k], want);
                    break;
                }
            }
        }
        MPI_Barrier(comm);
    }
    fails[t] = n;
    free(buf);
    free(in);
    free(out);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[MAX_THREADS];
    int provided, nthreads = argc > 1 ? atoi(argv[1]) : 4;
    long total = 0, all;

    if (argc > 2) {
        rounds = atoi(argv[2]);
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (MPI_THREAD_MULTIPLE != provided) {
        printf("FAIL colltest_mt: MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 1) {
        printf("FAIL colltest_mt: usage: colltest_mt [THREADS (1-%d) [ROUNDS]]\n", MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int t = 0; t < nthreads; ++t) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    }
    for (int t = 0; t < nthreads; ++t) {
        if (0 != pthread_create(&th[t], NULL, run, (void *) (intptr_t) t)) {
            printf("FAIL colltest_mt: rank %d: pthread_create failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    for (int t = 0; t < nthreads; ++t) {
        pthread_join(th[t], NULL);
        total += fails[t];
    }
    MPI_Allreduce(&total, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int t = 0; t < nthreads; ++t) {
        MPI_Comm_free(&comms[t]);
    }
    if (0 == rank) {
        if (0 == all) {
            printf("OK colltest_mt: %d threads x %d rounds on %d ranks\n", nthreads, rounds, size);
        } else {
            printf("FAIL colltest_mt: %ld mismatches in all\n", all);
        }
    }
    MPI_Finalize();
    return 0 == all ? 0 : 1;
}
