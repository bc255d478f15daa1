/*
 * sync: latency of one 8-byte MPI_Put or MPI_Get under each way MPI lets
 * an origin synchronise with its target (OSU's osu_put_latency and
 * osu_get_latency -s options), 2 ranks, MPI_Win_create window:
 *
 *   flush        MPI_Win_lock(SHARED) once; each op + MPI_Win_flush
 *   flush_local  the same with MPI_Win_flush_local
 *   lock_all     MPI_Win_lock_all once; each op + MPI_Win_flush
 *   lock         MPI_Win_lock(EXCLUSIVE), op, MPI_Win_unlock per op
 *   lockshared   MPI_Win_lock(SHARED), op, MPI_Win_unlock per op
 *   fence        op between two MPI_Win_fence (both ranks)
 *   pscw         start/op/complete on rank 0, post/wait on rank 1
 *
 *   mpirun -np 2 bench/bin/sync [ITERS]
 *
 * Prints "sync MODE put|get US" (microseconds per operation, rank 0's
 * loop, after a warmup of ITERS/10). Before each mode rank 0 puts a
 * pattern, reads it back through the same mode and checks it byte by
 * byte; "# verify ok" at the end, exit 0, else exit 3.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BYTES = 8 };
static int rank;
static MPI_Group peer_group;

static void op(MPI_Win win, int get, char *buf)
{
    if (get) {
        MPI_Get(buf, BYTES, MPI_BYTE, 1, 0, BYTES, MPI_BYTE, win);
    } else {
        MPI_Put(buf, BYTES, MPI_BYTE, 1, 0, BYTES, MPI_BYTE, win);
    }
}

/* ITERS operations of rank 0 on rank 1 under MODE; microseconds each. */
static double run(MPI_Win win, const char *mode, int get, int iters, char *buf)
{
    const int flush_each = !strcmp(mode, "flush") || !strcmp(mode, "flush_local")
                           || !strcmp(mode, "lock_all");
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (!strcmp(mode, "fence")) {
        MPI_Win_fence(0, win);
        for (int i = 0; i < iters; ++i) {
            if (0 == rank) {
                op(win, get, buf);
            }
            MPI_Win_fence(0, win);
        }
    } else if (!strcmp(mode, "pscw")) {
        for (int i = 0; i < iters; ++i) {
            if (0 == rank) {
                MPI_Win_start(peer_group, 0, win);
                op(win, get, buf);
                MPI_Win_complete(win);
            } else {
                MPI_Win_post(peer_group, 0, win);
                MPI_Win_wait(win);
            }
        }
    } else if (0 == rank && flush_each) {
        if (!strcmp(mode, "lock_all")) {
            MPI_Win_lock_all(0, win);
        } else {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        }
        for (int i = 0; i < iters; ++i) {
            op(win, get, buf);
            if (!strcmp(mode, "flush_local")) {
                MPI_Win_flush_local(1, win);
            } else {
                MPI_Win_flush(1, win);
            }
        }
        if (!strcmp(mode, "lock_all")) {
            MPI_Win_unlock_all(win);
        } else {
            MPI_Win_unlock(1, win);
        }
    } else if (0 == rank) {
        const int type = !strcmp(mode, "lock") ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED;

        for (int i = 0; i < iters; ++i) {
            MPI_Win_lock(type, 1, 0, win);
            op(win, get, buf);
            MPI_Win_unlock(1, win);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return (MPI_Wtime() - t0) / iters * 1e6;
}

int main(int argc, char **argv)
{
    static const char *modes[] = {"flush", "flush_local", "lock_all", "lock",
                                  "lockshared", "fence", "pscw"};
    int iters = (argc > 1) ? atoi(argv[1]) : 2000, peer, size;
    char *base, buf[BYTES];
    long bad = 0;
    MPI_Group world;
    MPI_Win win;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (2 != size || iters < 10) {
        if (0 == rank) {
            fprintf(stderr, "sync: 2 ranks and at least 10 iterations\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = 1 - rank;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &peer, &peer_group);
    base = calloc(1, 4096);
    MPI_Win_create(base, 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    for (int m = 0; m < 7; ++m) {
        /* the mode's own put and get carry a pattern there and back */
        for (int k = 0; k < BYTES; ++k) {
            buf[k] = (char) (m * 16 + k + 1);
        }
        run(win, modes[m], 0, 1, buf);
        memset(buf, 0, BYTES);
        run(win, modes[m], 1, 1, buf);
        for (int k = 0; 0 == rank && k < BYTES; ++k) {
            if (buf[k] != (char) (m * 16 + k + 1) && bad++ < 5) {
                fprintf(stderr, "sync: %s: byte %d is %d, not %d\n", modes[m], k, buf[k],
                        m * 16 + k + 1);
            }
        }
        for (int get = 0; get < 2; ++get) {
            double t;

            run(win, modes[m], get, iters / 10, buf);
            t = run(win, modes[m], get, iters, buf);
            if (0 == rank) {
                printf("sync %s %s %.2f\n", modes[m], get ? "get" : "put", t);
                fflush(stdout);
            }
        }
    }
    MPI_Win_free(&win);
    MPI_Group_free(&peer_group);
    MPI_Group_free(&world);
    free(base);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# verify %s\n", 0 == bad ? "ok" : "FAILED");
    }
    MPI_Finalize();
    return 0 == bad ? 0 : 3;
}
