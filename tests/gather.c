/*
 * gather: small puts that btl/ofi gathers into messages (btl_ofi_putv.c,
 * btl_ofi_put_gather_size) land where they should, every byte.
 *
 *   mpirun -np N tests/bin/gather yes|no [threads]
 *
 * yes: btl/ofi must have gathered puts and gets (its counters
 * btl_ofi_put_gathered and btl_ofi_get_gathered grow); no: it must not
 * have (shm, puts carried as messages anyway, btl_ofi_put_gather_size and
 * btl_ofi_get_gather_size 0). Gets: step 1 reads every vector back
 * (gathered gets), and step 7 checks gets on their own. threads:
 * MPI_THREAD_MULTIPLE, and step 8 runs too. On an MPI_Win_create window
 * (every peer, this process included, through the btl), each rank:
 *  1. puts a vector of N doubles, every other one (MPI_Type_vector), into
 *     the next rank, N = 1, 7, 300 and 2000 (2000 pieces: several
 *     messages), flushes, gets the vector back and checks it, and checks
 *     that the doubles between stay untouched;
 *  2. puts 8 bytes to the next rank, to the one after and to itself in
 *     turn, 100 times, then one MPI_Win_flush_all (the message changes
 *     peer at every put);
 *  3. puts alternately into two windows (another registration each time);
 *  4. puts of 0, 1023, 1024, 1025, 4095, 4096, 4097, 16384 and 16385
 *     bytes (both sides of every size limit: the parameter's 1 KiB when
 *     set so, a quarter of tcp;ofi_rxm's and of sockets' messages);
 *  5. puts and then MPI_Win_unlock_all, no flush of its own;
 *  6. accumulates of a vector of 300 doubles (every other one) with
 *     MPI_REPLACE and MPI_SUM into the next rank, flush, read back: their
 *     pieces go back without callbacks (osc-rdma/patches 0011), so they
 *     are gathered too where puts are (yes: the counter grows in this
 *     step alone);
 *  7. gets of vectors of 1 to 2000 doubles (every other one) from the
 *     next rank, each checked and the doubles between left alone, a get
 *     of one double alone, gets from 3 peers in turn, and gets of the
 *     sizes of step 4: every byte compared;
 *  8. (threads) 4 threads at once, each 40 rounds of: a vector of 150
 *     doubles into its own part of the next rank's window, or one double
 *     (a flush that finds one piece posts it as a put of its own), then
 *     MPI_Win_flush and a get of it back, compared.
 * The owner checks its memory after a barrier in every step.
 */
#include "common.h"

#include <pthread.h>

#define NMAX 2000
/* steps 4 and 7: sizes on both sides of the limits btl/ofi gathers up to
 * (btl_ofi_put_gather_size and btl_ofi_get_gather_size, capped at a
 * quarter of the provider's message size: 16 KiB on tcp;ofi_rxm, 4 KiB
 * on sockets), each at its own SPACING bytes of the window */
#define NSIZES 9
static const int sz[NSIZES] = {0, 1023, 1024, 1025, 4095, 4096, 4097, 16384, 16385};
#define SPACING 20480
#define SLOT (NSIZES * SPACING / 8) /* doubles of each window */

static MPI_Win win, win2;
static double *mem, *mem2;
static int next_rank, prev_rank;

static double value(int origin, int step, int i)
{
    return (double) origin * 1e6 + (double) step * 1e4 + (double) i + 0.25;
}

/* step 1: vectors into the next rank */
static void vectors(void)
{
    static const int ns[] = {1, 7, 300, NMAX};
    double *src = malloc(2 * NMAX * sizeof(double)), *back = malloc(2 * NMAX * sizeof(double));

    CHECK(NULL != src && NULL != back, "malloc");
    for (int k = 0; k < 4; ++k) {
        const int n = ns[k];
        MPI_Datatype v;

        MPI_CHECK(MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &v));
        MPI_CHECK(MPI_Type_commit(&v));
        for (int i = 0; i < 2 * n; ++i) {
            src[i] = value(tc_rank, k, i);
        }
        for (int i = 0; i < SLOT; ++i) {
            mem[i] = -1.0;
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock_all(0, win));
        MPI_CHECK(MPI_Put(src, 1, v, next_rank, 0, 1, v, win));
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        for (int i = 0; i < 2 * n; ++i) {
            back[i] = -2.0;
        }
        MPI_CHECK(MPI_Get(back, 1, v, next_rank, 0, 1, v, win));
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        MPI_CHECK(MPI_Win_unlock_all(win));
        for (int i = 0; i < 2 * n; i += 2) {
            CHECK(back[i] == src[i], "vector of %d: element %d read back from rank %d is %g, put %g",
                  n, i / 2, next_rank, back[i], src[i]);
            CHECK(back[i + 1] == -2.0, "vector of %d: the get wrote between its pieces (%d)", n, i);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int i = 0; i < SLOT; ++i) {
            const double want = (i < 2 * n && 0 == i % 2) ? value(prev_rank, k, i) : -1.0;
            CHECK(mem[i] == want, "vector of %d from rank %d: double %d of this window is %g, expected %g",
                  n, prev_rank, i, mem[i], want);
        }
        MPI_CHECK(MPI_Type_free(&v));
    }
    free(src);
    free(back);
}

/* step 2: puts to three peers in turn; step 3: two windows in turn */
static void turns(void)
{
    const int peers[3] = {next_rank, (tc_rank + 2) % tc_size, tc_rank};
    double src[300][2];

    for (int i = 0; i < SLOT; ++i) {
        mem[i] = -1.0;
        mem2[i] = -1.0;
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    MPI_CHECK(MPI_Win_lock_all(0, win2));
    for (int j = 0; j < 100; ++j) {
        for (int p = 0; p < 3; ++p) {
            /* each origin its own doubles at every target: slot 3 * origin + p */
            src[3 * j + p][0] = value(tc_rank, 20 + p, j);
            MPI_CHECK(MPI_Put(&src[3 * j + p][0], 1, MPI_DOUBLE, peers[p],
                              (MPI_Aint) (tc_rank * 300 + 3 * j + p), 1, MPI_DOUBLE, win));
        }
        src[3 * j][1] = value(tc_rank, 30, j);
        MPI_CHECK(MPI_Put(&src[3 * j][1], 1, MPI_DOUBLE, next_rank, (MPI_Aint) (tc_rank * 300 + j), 1,
                          MPI_DOUBLE, win2));
    }
    MPI_CHECK(MPI_Win_flush_all(win));
    MPI_CHECK(MPI_Win_flush_all(win2));
    MPI_CHECK(MPI_Win_unlock_all(win2));
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int o = 0; o < tc_size; ++o) {
        for (int j = 0; j < 100; ++j) {
            for (int p = 0; p < 3; ++p) {
                /* origin o's p-th peer */
                const int t = 0 == p ? (o + 1) % tc_size : 1 == p ? (o + 2) % tc_size : o;
                const double got = mem[o * 300 + 3 * j + p];
                if (t == tc_rank) {
                    CHECK(got == value(o, 20 + p, j), "turns: double %d from rank %d (its peer %d) is %g, expected %g",
                          3 * j + p, o, p, got, value(o, 20 + p, j));
                }
            }
            if ((o + 1) % tc_size == tc_rank) {
                CHECK(mem2[o * 300 + j] == value(o, 30, j),
                      "second window: double %d from rank %d is %g, expected %g", j, o,
                      mem2[o * 300 + j], value(o, 30, j));
            }
        }
    }
}

/* step 4: sizes around the limits, each at its own SPACING bytes of the
 * window; step 5: no flush before the unlock */
static void sizes(void)
{
    static unsigned char bufs[NSIZES][SPACING]; /* one per put: none reused before the flush */
    unsigned char *at = (unsigned char *) mem;

    for (int round = 0; round < 2; ++round) {
        memset(mem, 0, SLOT * sizeof(double));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock_all(0, win));
        for (int k = 0; k < NSIZES; ++k) {
            tc_fill(bufs[k], tc_rank, (size_t) sz[k], (unsigned) (100 * round + k));
            MPI_CHECK(MPI_Put(bufs[k], sz[k], MPI_BYTE, next_rank, (MPI_Aint) k * SPACING / 8,
                              sz[k], MPI_BYTE, win));
        }
        if (0 == round) {
            MPI_CHECK(MPI_Win_flush(next_rank, win));
        }
        MPI_CHECK(MPI_Win_unlock_all(win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int k = 0; k < NSIZES; ++k) {
            tc_verify(tc_fmt("%d bytes from rank %d (%s)", sz[k], prev_rank,
                             0 == round ? "flushed" : "unlocked without a flush"),
                      at + (size_t) k * SPACING, prev_rank, (size_t) sz[k],
                      (unsigned) (100 * round + k));
        }
    }
}

/* step 6: accumulates of a vector; returns the puts gathered meanwhile */
#define ACC_N 300

static unsigned long long accumulates(void)
{
    double *src = malloc(2 * ACC_N * sizeof(double)), *back = malloc(2 * ACC_N * sizeof(double));
    tc_counters_t before, after;
    MPI_Datatype v;

    CHECK(NULL != src && NULL != back, "malloc");
    MPI_CHECK(MPI_Type_vector(ACC_N, 1, 2, MPI_DOUBLE, &v));
    MPI_CHECK(MPI_Type_commit(&v));
    for (int i = 0; i < SLOT; ++i) {
        mem[i] = -1.0;
    }
    for (int i = 0; i < 2 * ACC_N; ++i) {
        src[i] = value(tc_rank, 60, i);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_counters_read(&before);
    MPI_CHECK(MPI_Win_lock_all(0, win));
    MPI_CHECK(MPI_Accumulate(src, 1, v, next_rank, 0, 1, v, MPI_REPLACE, win));
    MPI_CHECK(MPI_Win_flush(next_rank, win));
    MPI_CHECK(MPI_Accumulate(src, 1, v, next_rank, 0, 1, v, MPI_SUM, win));
    MPI_CHECK(MPI_Win_flush(next_rank, win));
    for (int i = 0; i < 2 * ACC_N; ++i) {
        back[i] = -2.0;
    }
    MPI_CHECK(MPI_Get(back, 1, v, next_rank, 0, 1, v, win));
    MPI_CHECK(MPI_Win_flush(next_rank, win));
    MPI_CHECK(MPI_Win_unlock_all(win));
    tc_counters_read(&after);
    for (int i = 0; i < 2 * ACC_N; i += 2) {
        CHECK(back[i] == 2 * src[i], "accumulates: element %d read back from rank %d is %g, expected %g",
              i / 2, next_rank, back[i], 2 * src[i]);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 2 * ACC_N; ++i) {
        const double want = 0 == i % 2 ? 2 * value(prev_rank, 60, i) : -1.0;
        CHECK(mem[i] == want, "accumulates from rank %d: double %d of this window is %g, expected %g",
              prev_rank, i, mem[i], want);
    }
    MPI_CHECK(MPI_Type_free(&v));
    free(src);
    free(back);
    return after.v[TC_PUT_GATHERED] - before.v[TC_PUT_GATHERED];
}

/* step 7: gets, on their own */
static void gets(void)
{
    static const int ns[] = {1, 7, 300, NMAX};
    const int peers[3] = {next_rank, (tc_rank + 2) % tc_size, tc_rank};
    double *back = malloc(2 * NMAX * sizeof(double)), one = 0.0, three[3];
    unsigned char *bytes = malloc(NSIZES * SPACING);

    CHECK(NULL != back && NULL != bytes, "malloc");
    /* every rank's window: value(owner, 80, i) at double i */
    for (int i = 0; i < SLOT; ++i) {
        mem[i] = value(tc_rank, 80, i);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < 4; ++k) {
        MPI_Datatype v;

        MPI_CHECK(MPI_Type_vector(ns[k], 1, 2, MPI_DOUBLE, &v));
        MPI_CHECK(MPI_Type_commit(&v));
        for (int i = 0; i < 2 * ns[k]; ++i) {
            back[i] = -2.0;
        }
        MPI_CHECK(MPI_Get(back, 1, v, next_rank, 1, 1, v, win));
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        for (int i = 0; i < 2 * ns[k]; ++i) {
            const double want = 0 == i % 2 ? value(next_rank, 80, i + 1) : -2.0;
            CHECK(back[i] == want, "get of a vector of %d from rank %d: double %d is %g, expected %g",
                  ns[k], next_rank, i, back[i], want);
        }
        MPI_CHECK(MPI_Type_free(&v));
    }
    MPI_CHECK(MPI_Get(&one, 1, MPI_DOUBLE, next_rank, 5, 1, MPI_DOUBLE, win));
    MPI_CHECK(MPI_Win_flush(next_rank, win));
    CHECK(one == value(next_rank, 80, 5), "get of one double from rank %d is %g, expected %g",
          next_rank, one, value(next_rank, 80, 5));
    for (int p = 0; p < 3; ++p) {
        MPI_CHECK(MPI_Get(&three[p], 1, MPI_DOUBLE, peers[p], 10 + p, 1, MPI_DOUBLE, win));
    }
    MPI_CHECK(MPI_Win_flush_all(win));
    for (int p = 0; p < 3; ++p) {
        CHECK(three[p] == value(peers[p], 80, 10 + p), "get from rank %d (peer %d of 3) is %g, expected %g",
              peers[p], p, three[p], value(peers[p], 80, 10 + p));
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    /* sizes around the limit: the window's bytes as a pattern */
    for (int k = 0; k < NSIZES; ++k) {
        tc_fill((unsigned char *) mem + (size_t) k * SPACING, tc_rank, (size_t) sz[k],
                300u + (unsigned) k);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < NSIZES; ++k) {
        MPI_CHECK(MPI_Get(bytes + (size_t) k * SPACING, sz[k], MPI_BYTE, next_rank,
                          (MPI_Aint) k * SPACING / 8, sz[k], MPI_BYTE, win));
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    for (int k = 0; k < NSIZES; ++k) {
        tc_verify(tc_fmt("get of %d bytes from rank %d", sz[k], next_rank), bytes + (size_t) k * SPACING,
                  next_rank, (size_t) sz[k], 300u + (unsigned) k);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(back);
    free(bytes);
}

/* step 8: threads putting at once, each into its own part of the window */
#define NTHREADS 4
#define TPIECES 150
#define TROUNDS 40
#define TPART (2 * TPIECES) /* doubles of a thread's part */

static MPI_Datatype tvec;

static double tvalue(int origin, int thread, int round, int i)
{
    return (double) origin * 1e7 + (double) thread * 1e6 + (double) round * 1e3 + (double) i + 0.5;
}

static void *putter(void *arg)
{
    const int t = (int) (intptr_t) arg;
    const MPI_Aint disp = (MPI_Aint) t * TPART;
    double src[TPART], back[TPART];

    for (int r = 0; r < TROUNDS; ++r) {
        const int one = 1 == r % 3; /* every third round a single double */
        for (int i = 0; i < TPART; ++i) {
            src[i] = tvalue(tc_rank, t, r, i);
            back[i] = -3.0;
        }
        if (one) {
            MPI_CHECK(MPI_Put(src, 1, MPI_DOUBLE, next_rank, disp, 1, MPI_DOUBLE, win));
        } else {
            MPI_CHECK(MPI_Put(src, 1, tvec, next_rank, disp, 1, tvec, win));
        }
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        if (one) {
            MPI_CHECK(MPI_Get(back, 1, MPI_DOUBLE, next_rank, disp, 1, MPI_DOUBLE, win));
        } else {
            MPI_CHECK(MPI_Get(back, 1, tvec, next_rank, disp, 1, tvec, win));
        }
        MPI_CHECK(MPI_Win_flush(next_rank, win));
        for (int i = 0; i < (one ? 1 : TPART); i += one ? 1 : 2) {
            CHECK(back[i] == src[i],
                  "thread %d round %d: double %d read back from rank %d is %g, put %g", t, r, i,
                  next_rank, back[i], src[i]);
        }
    }
    return NULL;
}

static void threads(void)
{
    pthread_t tid[NTHREADS];

    for (int i = 0; i < SLOT; ++i) {
        mem[i] = -1.0;
    }
    MPI_CHECK(MPI_Type_vector(TPIECES, 1, 2, MPI_DOUBLE, &tvec));
    MPI_CHECK(MPI_Type_commit(&tvec));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int t = 0; t < NTHREADS; ++t) {
        CHECK(0 == pthread_create(&tid[t], NULL, putter, (void *) (intptr_t) t), "pthread_create");
    }
    for (int t = 0; t < NTHREADS; ++t) {
        CHECK(0 == pthread_join(tid[t], NULL), "pthread_join");
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    /* the last round (TROUNDS - 1, a vector) of every thread of the
     * previous rank, and the doubles between untouched */
    for (int t = 0; t < NTHREADS; ++t) {
        for (int i = 0; i < TPART; ++i) {
            const double want = 0 == i % 2 ? tvalue(prev_rank, t, TROUNDS - 1, i) : -1.0;
            CHECK(mem[t * TPART + i] == want,
                  "threads: double %d of thread %d's part (from rank %d) is %g, expected %g", i, t,
                  prev_rank, mem[t * TPART + i], want);
        }
    }
    MPI_CHECK(MPI_Type_free(&tvec));
}

int main(int argc, char **argv)
{
    const int with_threads = argc > 2 && 0 == strcmp(argv[2], "threads");

    if (with_threads) {
        tc_thread_required = MPI_THREAD_MULTIPLE;
    }
    tc_init(&argc, &argv, "gather");
    const int expect = argc > 1 && 0 == strcmp(argv[1], "yes");
    CHECK(argc > 1 && (expect || 0 == strcmp(argv[1], "no")), "usage: gather yes|no [threads]");
    CHECK(NTHREADS * TPART <= SLOT && (TROUNDS - 1) % 3 != 1, "step 8 does not fit the window");
    next_rank = (tc_rank + 1) % tc_size;
    prev_rank = (tc_rank + tc_size - 1) % tc_size;
    /* steps 4 and 7 reach byte (NSIZES - 1) * SPACING + 16385 of it */
    CHECK(SLOT * sizeof(double) >= (NSIZES - 1) * SPACING + 16385 && SLOT >= (size_t) tc_size * 300
              && SLOT >= 2 * NMAX + 2,
          "window too small for %d ranks", tc_size);
    mem = calloc(SLOT, sizeof(double));
    mem2 = calloc(SLOT, sizeof(double));
    CHECK(NULL != mem && NULL != mem2, "calloc");
    MPI_CHECK(MPI_Win_create(mem, SLOT * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Win_create(mem2, SLOT * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win2));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    vectors();
    turns();
    sizes();
    const unsigned long long acc_gathered = accumulates();
    gets();
    if (with_threads) {
        threads();
    }
    tc_counters_read(&after);
    if (tc_check_ours_enabled()) {
        const unsigned long long g = after.v[TC_PUT_GATHERED] - before.v[TC_PUT_GATHERED];
        CHECK(expect ? g > 0 : 0 == g, "btl_ofi_put_gathered grew by %llu on rank %d, expected %s", g,
              tc_rank, expect ? "more than 0" : "0");
        CHECK(expect ? acc_gathered > 0 : 0 == acc_gathered,
              "btl_ofi_put_gathered grew by %llu during the accumulates on rank %d, expected %s "
              "(their pieces go without callbacks since osc-rdma/patches 0011)",
              acc_gathered, tc_rank, expect ? "more than 0" : "0");
        const unsigned long long gg = after.v[TC_GET_GATHERED] - before.v[TC_GET_GATHERED];
        CHECK(expect ? gg > 0 : 0 == gg, "btl_ofi_get_gathered grew by %llu on rank %d, expected %s",
              gg, tc_rank, expect ? "more than 0" : "0");
        tc_say("gather: %llu gets gathered into messages on rank 0 (of %llu)", gg,
               after.v[TC_GET_COUNT] - before.v[TC_GET_COUNT]);
        tc_say("gather: %llu puts gathered into messages on rank 0 (of %llu)", g,
               after.v[TC_PUT_COUNT] - before.v[TC_PUT_COUNT]);
    }
    MPI_CHECK(MPI_Win_free(&win2));
    MPI_CHECK(MPI_Win_free(&win));
    free(mem);
    free(mem2);
    tc_say("gather: vectors of 1 to %d pieces, puts to 3 peers and 2 windows in turn, sizes 0 to 16385, unlock without flush, accumulates of a vector%s: every byte right (%.2fs)",
           NMAX, with_threads ? ", 4 threads at once (MPI_THREAD_MULTIPLE)" : "", tc_now() - t0);
    tc_finish();
    return 0;
}
