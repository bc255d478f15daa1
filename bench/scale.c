/*
 * scale: what a job costs at start-up and in memory, per process.
 *
 *   mpirun -np N bench/bin/scale [-create] [-rounds R]
 *
 * Every rank times its own MPI_Init and the creation of one window
 * (MPI_Win_allocate, or MPI_Win_create with -create: on one host
 * osc/rdma maps MPI_Win_allocate memory as shared memory, and the btl
 * carries the window's traffic only with -create or across hosts). Then
 * under MPI_Win_lock_all every rank puts its number into a slot of every
 * other rank's window and fetch-and-adds 1 on every other rank's counter,
 * with a flush after each, R rounds (default 1). Checked at the end, on
 * every rank: each slot holds what its writer put, the counter is R x
 * (N - 1), every fetched value lies below that. RSS is the process's
 * peak (getrusage ru_maxrss) after all of it.
 *
 * Output on rank 0, one "name value" per line:
 *   np N
 *   init_s_max, init_s_median   MPI_Init, slowest rank and median rank
 *   win_s_max                   window creation, slowest rank
 *   rss_kib_max, rss_kib_mean   peak RSS over the ranks
 *   fds_max                     open file descriptors after the traffic
 *                               (the provider's connections, ours)
 * then "# verify ok" (exit 0), or "# verify FAILED" and exit 3.
 */
#include <dirent.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (NULL == d) {
        return -1;
    }
    while (NULL != (e = readdir(d))) {
        n += '.' != e->d_name[0];
    }
    closedir(d);
    return n - 1; /* the directory's own */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    double t0 = now(), t_init, t_win, *inits = NULL;
    int rank, size, rounds = 1, create = 0, bad = 0, fds;
    int64_t *base, one = 1, fetched, mine;
    long rss, rss_max, rss_sum;
    double t_win_max, t_init_max;
    struct rusage ru;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    t_init = now() - t0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "-create")) {
            create = 1;
        } else if (0 == strcmp(argv[i], "-rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            if (0 == rank) {
                fprintf(stderr, "usage: scale [-create] [-rounds R]\n");
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }

    /* [0]: the counter; [1 + r]: rank r's slot */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    if (create) {
        base = calloc((size_t) size + 1, sizeof(*base));
        if (NULL == base) {
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Win_create(base, (MPI_Aint) ((size + 1) * sizeof(*base)), sizeof(*base),
                       MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else {
        MPI_Win_allocate((MPI_Aint) ((size + 1) * sizeof(*base)), sizeof(*base), MPI_INFO_NULL,
                         MPI_COMM_WORLD, &base, &win);
        memset(base, 0, (size_t) (size + 1) * sizeof(*base));
    }
    t_win = now() - t0;
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    for (int r = 0; r < rounds; ++r) {
        for (int k = 1; k < size; ++k) {
            int peer = (rank + k) % size;

            mine = 1000 * (int64_t) rank + r;
            MPI_Put(&mine, 1, MPI_INT64_T, peer, 1 + rank, 1, MPI_INT64_T, win);
            MPI_Win_flush(peer, win);
            MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, peer, 0, MPI_SUM, win);
            MPI_Win_flush(peer, win);
            if (fetched < 0 || fetched >= (int64_t) rounds * (size - 1)) {
                fprintf(stderr, "scale: rank %d: fetched %lld from rank %d, not in [0, %lld)\n",
                        rank, (long long) fetched, peer, (long long) rounds * (size - 1));
                bad = 1;
            }
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    if (base[0] != (int64_t) rounds * (size - 1)) {
        fprintf(stderr, "scale: rank %d: counter %lld, expected %lld\n", rank, (long long) base[0],
                (long long) rounds * (size - 1));
        bad = 1;
    }
    for (int q = 0; q < size; ++q) {
        int64_t want = q == rank ? 0 : 1000 * (int64_t) q + rounds - 1;
        if (base[1 + q] != want) {
            fprintf(stderr, "scale: rank %d: slot of rank %d holds %lld, expected %lld\n", rank, q,
                    (long long) base[1 + q], (long long) want);
            bad = 1;
        }
    }
    MPI_Win_unlock(rank, win);

    fds = open_fds();
    getrusage(RUSAGE_SELF, &ru);
    rss = ru.ru_maxrss;
    if (0 == rank) {
        inits = malloc((size_t) size * sizeof(*inits));
    }
    MPI_Gather(&t_init, 1, MPI_DOUBLE, inits, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t_init, &t_init_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t_win, &t_win_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &rss_max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &rss_sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &fds, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        qsort(inits, (size_t) size, sizeof(*inits), cmp_double);
        printf("np %d\n", size);
        printf("init_s_max %.3f\n", t_init_max);
        printf("init_s_median %.3f\n", inits[size / 2]);
        printf("win_s_max %.4f\n", t_win_max);
        printf("rss_kib_max %ld\n", rss_max);
        printf("rss_kib_mean %ld\n", rss_sum / size);
        printf("fds_max %d\n", fds);
        printf("# verify %s\n", bad ? "FAILED" : "ok");
        free(inits);
    }
    MPI_Win_free(&win);
    if (create) {
        free(base);
    }
    MPI_Finalize();
    return bad ? 3 : 0;
}
