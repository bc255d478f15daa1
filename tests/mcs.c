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
 *    spinning in one-sided calls that complete locally must still drive
 *    the progress that remote operations into its memory need.
 *
 * Inside the lock every rank increments a counter on rank 0 with a plain
 * MPI_Get + flush, + 1, MPI_Put + flush: a non-atomic read-modify-write,
 * exact only if the mutex excludes. At the end rank 0's counter must be
 * ranks x MCS_ITERS and every rank must have seen its own increments land.
 *
 *   mpirun -np N tests/bin/mcs [iterations]     (default 200 per rank)
 *
 * A hang is a failure (the harness's timeout); a wrong count fails loudly.
 */
#include "common.h"

#define MCS_TAG 4242
enum { MCS_NEXT = 0, MCS_TAIL = 1, MCS_COUNT = 2, MCS_INTS = 3 };

static MPI_Win win;
static int *base;

static void flush(int rank)
{
    MPI_CHECK(MPI_Win_flush(rank, win));
}

static void mcs_lock(void)
{
    int nil = -1, prev = -1;

    /* my element says "no successor" before anyone can find me */
    MPI_CHECK(MPI_Accumulate(&nil, 1, MPI_INT, tc_rank, MCS_NEXT, 1, MPI_INT, MPI_REPLACE, win));
    flush(tc_rank);
    MPI_CHECK(MPI_Fetch_and_op(&tc_rank, &prev, MPI_INT, 0, MCS_TAIL, MPI_REPLACE, win));
    flush(0);
    if (-1 == prev) {
        return; /* the queue was empty: mine */
    }
    CHECK(prev >= 0 && prev < tc_size && prev != tc_rank, "tail held %d", prev);
    MPI_CHECK(MPI_Accumulate(&tc_rank, 1, MPI_INT, prev, MCS_NEXT, 1, MPI_INT, MPI_REPLACE, win));
    flush(prev);
    MPI_CHECK(MPI_Recv(NULL, 0, MPI_BYTE, prev, MCS_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

static long spins;

static void mcs_unlock(void)
{
    int nil = -1, next = -1, tail = -1;

    MPI_CHECK(MPI_Fetch_and_op(NULL, &next, MPI_INT, tc_rank, MCS_NEXT, MPI_NO_OP, win));
    flush(tc_rank);
    if (-1 == next) {
        MPI_CHECK(MPI_Compare_and_swap(&nil, &tc_rank, &tail, MPI_INT, 0, MCS_TAIL, win));
        flush(0);
        if (tail == tc_rank) {
            return; /* nobody queued behind me */
        }
        CHECK(-1 != tail, "the tail was empty while I held the lock");
        /* a successor took the tail but has not written my element yet */
        while (-1 == next) {
            int flag = 0;
            MPI_CHECK(MPI_Fetch_and_op(NULL, &next, MPI_INT, tc_rank, MCS_NEXT, MPI_NO_OP, win));
            flush(tc_rank);
            MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                 MPI_STATUS_IGNORE));
            ++spins;
        }
    }
    CHECK(next >= 0 && next < tc_size && next != tc_rank, "next held %d", next);
    MPI_CHECK(MPI_Send(NULL, 0, MPI_BYTE, next, MCS_TAG, MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "mcs");
    long iters = argc > 1 ? atol(argv[1]) : 200;
    CHECK(iters > 0, "iterations must be positive");

    MPI_CHECK(MPI_Win_allocate(MCS_INTS * sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    base[MCS_NEXT] = -1;
    base[MCS_TAIL] = -1;
    base[MCS_COUNT] = 0;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    for (long i = 0; i < iters; ++i) {
        int count = -1;
        mcs_lock();
        MPI_CHECK(MPI_Get(&count, 1, MPI_INT, 0, MCS_COUNT, 1, MPI_INT, win));
        flush(0);
        CHECK(count >= i && count < tc_size * iters,
              "iteration %ld: the counter read %d inside the lock", i, count);
        ++count;
        MPI_CHECK(MPI_Put(&count, 1, MPI_INT, 0, MCS_COUNT, 1, MPI_INT, win));
        flush(0);
        mcs_unlock();
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    tc_counters_read(&after);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (0 == tc_rank) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        int final = base[MCS_COUNT], tail = base[MCS_TAIL];
        MPI_CHECK(MPI_Win_unlock(0, win));
        CHECK(final == tc_size * iters,
              "the counter incremented under the mutex is %d, expected %ld: two ranks were "
              "inside the lock together (or an increment was lost)",
              final, tc_size * iters);
        CHECK(-1 == tail, "the queue's tail is %d after every rank released the lock", tail);
    }
    long all_spins = 0;
    MPI_CHECK(MPI_Reduce(&spins, &all_spins, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    tc_say("mcs: %d ranks x %ld lock/unlock, counter exact, %ld spins of a releasing holder on "
           "its own element (%.2fs)",
           tc_size, iters, all_spins, tc_now() - t0);
    tc_expect_t none = {{0}, 0};
    tc_counters_expect("mcs", &before, &after, &none, 0);
    MPI_CHECK(MPI_Win_free(&win));
    tc_finish();
    return 0;
}
