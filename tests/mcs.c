/*
 * mcs: an MCS queue mutex in an MPI_Win_allocate window under
 * MPI_Win_lock_all, the way one-sided applications build locks:
 *
 *  - the queue's tail lives on rank 0 and is taken with MPI_Fetch_and_op
 *    (MPI_REPLACE) and given back with MPI_Compare_and_swap, on MPI_INT;
 *  - a waiter writes its rank into its predecessor's `next' element with
 *    MPI_Accumulate(MPI_REPLACE) + flush, then waits for a zero-byte
 *    message from it (the hand-over);
 *  - a releasing holder that finds no successor yet, but lost the tail to
 *    one, spins on its own `next' element: MPI_Fetch_and_op(MPI_NO_OP) on
 *    itself, MPI_Win_flush on itself, MPI_Iprobe. The successor's
 *    accumulate into that element must complete meanwhile: a process
 *    spinning in one-sided calls must still let the others run and drive
 *    the progress that remote operations into its memory need.
 *
 * Inside the lock every rank increments a counter on rank 0 with a plain
 * MPI_Get + flush, + 1, MPI_Put + flush, in a second window made with
 * MPI_Win_create (so that it goes through the btl on one node too, where
 * osc/rdma maps MPI_Win_allocate memory and bypasses it): a non-atomic
 * read-modify-write, exact only if the mutex excludes. At the end rank
 * 0's counter must be ranks x iterations and the tail empty.
 *
 *   mpirun -np N tests/bin/mcs [iterations] [64]     (default 1200 per rank)
 *
 * With "64" the tail and the `next' elements are MPI_INT64_T: osc/rdma
 * then gives the tail back with a btl compare-and-swap that takes no
 * accumulate lock (it has no 32-bit one from btl/ofi), while the tail is
 * taken under that lock; on rank 0's node, over several nodes with a btl
 * that mixes its atomics with CPU atomics, the taking used to be a plain
 * CPU read-modify-write (osc-rdma/patches 0013).
 *
 * With 4 ranks on 2 cores it hung on b3ff0a0 (still running after 60 s:
 * a flush that spun without giving its core away); a hang is a failure
 * (the harness's timeout), a wrong count fails loudly.
 */
#include "common.h"

#define MCS_TAG 4242
enum { MCS_NEXT = 0, MCS_TAIL = 1, MCS_INTS = 2 };

static MPI_Win win;
static int wide; /* elements are MPI_INT64_T, else MPI_INT */
static MPI_Datatype dt;
static char *base;
static MPI_Win cwin; /* the counter's window */
static int counter;

/* One element of the window, as a value: VAL's storage in the width in use. */
typedef union {
    int i;
    int64_t l;
} elem_t;

static elem_t elem(long long v)
{
    elem_t e;
    if (wide) {
        e.l = v;
    } else {
        e.i = (int) v;
    }
    return e;
}

static long long value(const elem_t *e)
{
    return wide ? (long long) e->l : (long long) e->i;
}

static void store(int idx, long long v)
{
    elem_t e = elem(v);
    memcpy(base + (size_t) idx * (wide ? 8 : 4), &e, wide ? 8 : 4);
}

static long long load(int idx)
{
    elem_t e;
    memcpy(&e, base + (size_t) idx * (wide ? 8 : 4), wide ? 8 : 4);
    return value(&e);
}

static void flush(int rank)
{
    MPI_CHECK(MPI_Win_flush(rank, win));
}

static void mcs_lock(int dawdle)
{
    elem_t me = elem(tc_rank), prev = elem(-1);

    /* my element says "no successor" before anyone can find me: a local
     * store, made visible by MPI_Win_sync, is safe as nobody writes it
     * until my rank is in the tail */
    store(MCS_NEXT, -1);
    MPI_CHECK(MPI_Win_sync(win));
    MPI_CHECK(MPI_Fetch_and_op(&me, &prev, dt, 0, MCS_TAIL, MPI_REPLACE, win));
    flush(0);
    if (-1 == value(&prev)) {
        return; /* the queue was empty: mine */
    }
    CHECK(value(&prev) >= 0 && value(&prev) < tc_size && value(&prev) != tc_rank, "tail held %lld",
          value(&prev));
    if (dawdle) {
        /* take a while to link in, so that the holder, if it releases
         * meanwhile, has to spin on its element (the path under test) */
        for (int k = 0, flag; k < 64; ++k) {
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                 MPI_STATUS_IGNORE));
        }
    }
    MPI_CHECK(MPI_Accumulate(&me, 1, dt, (int) value(&prev), MCS_NEXT, 1, dt, MPI_REPLACE, win));
    flush((int) value(&prev));
    MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, (int) value(&prev), MCS_TAG, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
}

static long spins;

static void mcs_unlock(void)
{
    elem_t nil = elem(-1), me = elem(tc_rank), next = elem(-1), tail = elem(-1);

    MPI_CHECK(MPI_Fetch_and_op(NULL, &next, dt, tc_rank, MCS_NEXT, MPI_NO_OP, win));
    flush(tc_rank);
    if (-1 == value(&next)) {
        MPI_CHECK(MPI_Compare_and_swap(&nil, &me, &tail, dt, 0, MCS_TAIL, win));
        flush(0);
        if (value(&tail) == tc_rank) {
            return; /* nobody queued behind me */
        }
        CHECK(-1 != value(&tail), "the tail was empty while I held the lock");
        /* a successor took the tail but has not written my element yet */
        while (-1 == value(&next)) {
            int flag = 0;
            MPI_CHECK(MPI_Fetch_and_op(NULL, &next, dt, tc_rank, MCS_NEXT, MPI_NO_OP, win));
            flush(tc_rank);
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                 MPI_STATUS_IGNORE));
            ++spins;
        }
    }
    CHECK(value(&next) >= 0 && value(&next) < tc_size && value(&next) != tc_rank,
          "next held %lld", value(&next));
    MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, (int) value(&next), MCS_TAG, MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "mcs");
    long iters = argc > 1 ? atol(argv[1]) : 1200;
    CHECK(iters > 0, "iterations must be positive");
    wide = argc > 2 && 0 == strcmp(argv[2], "64");
    dt = wide ? MPI_INT64_T : MPI_INT;
    const int esz = wide ? 8 : 4;

    MPI_CHECK(MPI_Win_allocate((tc_rank ? 1 : MCS_INTS) * esz, esz, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &win));
    store(MCS_NEXT, -1);
    if (0 == tc_rank) {
        store(MCS_TAIL, -1);
    }
    counter = 0;
    MPI_CHECK(MPI_Win_create(&counter, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &cwin));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    MPI_CHECK(MPI_Win_lock_all(0, cwin));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    for (long i = 0; i < iters; ++i) {
        int count = -1;
        /* the last sixth dawdles every other time (see mcs_lock) */
        mcs_lock(i >= iters - iters / 6 && (i & 1));
        MPI_CHECK(MPI_Get(&count, 1, MPI_INT, 0, 0, 1, MPI_INT, cwin));
        MPI_CHECK(MPI_Win_flush(0, cwin));
        CHECK(count >= i && count < tc_size * iters,
              "iteration %ld: the counter read %d inside the lock", i, count);
        ++count;
        MPI_CHECK(MPI_Put(&count, 1, MPI_INT, 0, 0, 1, MPI_INT, cwin));
        MPI_CHECK(MPI_Win_flush(0, cwin));
        mcs_unlock();
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Win_unlock_all(cwin));
    tc_counters_read(&after);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (0 == tc_rank) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int final = counter;
        long long tail = load(MCS_TAIL);
        MPI_CHECK(MPI_Win_unlock(0, win));
        CHECK(final == tc_size * iters,
              "the counter incremented under the mutex is %d, expected %ld: two ranks were "
              "inside the lock together (or an increment was lost)",
              final, tc_size * iters);
        CHECK(-1 == tail, "the queue's tail is %lld after every rank released the lock", tail);
    }
    long all_spins = 0;
    MPI_CHECK(MPI_Reduce(&spins, &all_spins, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    tc_say("mcs: %d ranks x %ld lock/unlock on %s, counter exact, %ld spins of a releasing holder "
           "on its own element (%.2fs)",
           tc_size, iters, wide ? "MPI_INT64_T" : "MPI_INT", all_spins, tc_now() - t0);
    /* the counter's gets and puts cross the btl from every rank but 0
     * (rank 0's own reach its memory directly) */
    tc_expect_t exp = {{0}, 0};
    exp.min[TC_PUT_COUNT] = (unsigned long long) iters;
    exp.min[TC_GET_COUNT] = (unsigned long long) iters;
    tc_counters_check("mcs", &before, &after, &exp, 0 != tc_rank, 0);
    MPI_CHECK(MPI_Win_free(&cwin));
    MPI_CHECK(MPI_Win_free(&win));
    tc_finish();
    return 0;
}
