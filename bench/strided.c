/*
 * strided: MPI_Put of a derived datatype of many small pieces (a column
 * of a matrix of doubles: MPI_Type_vector(N, 1, 2, MPI_DOUBLE) on both
 * sides) followed by MPI_Win_flush, rank 0 into rank 1, on an
 * MPI_Win_create window; and the same N doubles as one contiguous put,
 * for scale. Then the same with MPI_Get. osc/rdma makes one btl put or get
 * per piece; btl/ofi gathers them into messages (btl_ofi_put_gather_size,
 * btl_ofi_get_gather_size), osc/pt2pt packs the datatype.
 *
 *   mpirun -np 2 bench/bin/strided [N ...]        (default 1 16 256 1024)
 *
 * Prints two lines per N: "strided N vector_us contiguous_us" (puts) and
 * "gets N vector_us contiguous_us", each the median of 5 timed runs of
 * ITER calls after a warm-up. Rank 1 checks every element of the last
 * vector put and the doubles between (untouched), rank 0 every element of
 * the last vector get and the doubles between; a wrong value ends the run
 * with exit code 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUNS 5

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rank, size, nn = 0, ns[32], bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc && nn < 32; ++i) {
        ns[nn++] = atoi(argv[i]);
    }
    if (0 == nn) {
        const int def[] = {1, 16, 256, 1024};
        memcpy(ns, def, sizeof(def));
        nn = 4;
    }
    int maxn = 1;
    for (int i = 0; i < nn; ++i) {
        maxn = ns[i] > maxn ? ns[i] : maxn;
    }
    double *buf = calloc(2 * (size_t) maxn, sizeof(double)), *src = calloc(2 * (size_t) maxn, sizeof(double));
    double *got = calloc(2 * (size_t) maxn, sizeof(double));
    MPI_Win win;
    MPI_Win_create(buf, 2 * (MPI_Aint) maxn * sizeof(double), sizeof(double), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < nn; ++k) {
        const int n = ns[k], iter = n >= 256 ? 20 : 100;
        double tv[RUNS], tc[RUNS];
        MPI_Datatype v;

        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v);
        MPI_Type_commit(&v);
        for (int i = 0; i < 2 * n; ++i) {
            src[i] = 1000.0 * k + i;
            buf[i] = -1.0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            for (int w = 0; w < 3; ++w) {
                MPI_Put(src, 1, v, 1, 0, 1, v, win);
                MPI_Win_flush(1, win);
            }
            for (int r = 0; r < RUNS; ++r) {
                double t = MPI_Wtime();
                for (int i = 0; i < iter; ++i) {
                    MPI_Put(src, 1, v, 1, 0, 1, v, win);
                    MPI_Win_flush(1, win);
                }
                tv[r] = (MPI_Wtime() - t) / iter * 1e6;
            }
            /* the same bytes as one contiguous put (at the window's end
             * half: the vector's doubles stay as put) */
            for (int r = 0; r < RUNS; ++r) {
                double t = MPI_Wtime();
                for (int i = 0; i < iter; ++i) {
                    MPI_Put(src, n, MPI_DOUBLE, 1, maxn, n, MPI_DOUBLE, win);
                    MPI_Win_flush(1, win);
                }
                tc[r] = (MPI_Wtime() - t) / iter * 1e6;
            }
            qsort(tv, RUNS, sizeof(double), cmp);
            qsort(tc, RUNS, sizeof(double), cmp);
            printf("strided %d %.2f %.2f\n", n, tv[RUNS / 2], tc[RUNS / 2]);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (1 == rank) {
            MPI_Win_sync(win);
            for (int i = 0; i < 2 * n && i < maxn; ++i) {
                const double want = 0 == i % 2 ? 1000.0 * k + i : -1.0;
                if (buf[i] != want && !bad) {
                    fprintf(stderr, "strided: N=%d double %d is %g, expected %g\n", n, i, buf[i], want);
                    bad = 1;
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* the same column read back: rank 1's window holds it now */
        if (0 == rank) {
            for (int i = 0; i < 2 * n; ++i) {
                got[i] = -3.0;
            }
            for (int r = 0; r < RUNS; ++r) {
                double t = MPI_Wtime();
                for (int i = 0; i < iter; ++i) {
                    MPI_Get(got, 1, v, 1, 0, 1, v, win);
                    MPI_Win_flush(1, win);
                }
                tv[r] = (MPI_Wtime() - t) / iter * 1e6;
            }
            for (int r = 0; r < RUNS; ++r) {
                double t = MPI_Wtime();
                for (int i = 0; i < iter; ++i) {
                    MPI_Get(src, n, MPI_DOUBLE, 1, maxn, n, MPI_DOUBLE, win);
                    MPI_Win_flush(1, win);
                }
                tc[r] = (MPI_Wtime() - t) / iter * 1e6;
            }
            qsort(tv, RUNS, sizeof(double), cmp);
            qsort(tc, RUNS, sizeof(double), cmp);
            printf("gets %d %.2f %.2f\n", n, tv[RUNS / 2], tc[RUNS / 2]);
            fflush(stdout);
            /* below maxn: the contiguous put wrote the window from there */
            for (int i = 0; i < 2 * n && i < maxn; ++i) {
                const double want = 0 == i % 2 ? 1000.0 * k + i : -3.0;
                if (got[i] != want && !bad) {
                    fprintf(stderr, "strided: get of N=%d: double %d is %g, expected %g\n", n, i,
                            got[i], want);
                    bad = 1;
                }
            }
        }
        /* rank 1 resets its window for the next N only after the gets */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Type_free(&v);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(buf);
    free(src);
    free(got);
    MPI_Finalize();
    return bad;
}
