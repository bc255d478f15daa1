/*
 * selfspin: a rank that waits by polling its own window with one-sided
 * calls must still let the messages it already sent leave.
 *
 * Rank 0 sends each other rank a small message (ob1's eager send, which
 * returns once the btl has it), then waits for all of them to answer by
 * polling a counter in its own window: MPI_Fetch_and_op(MPI_NO_OP) on
 * itself + MPI_Win_flush on itself, nothing else. Each other rank
 * receives the message, then adds 1 to that counter with
 * MPI_Fetch_and_op(MPI_SUM) + flush. On one host osc/rdma does rank 0's
 * calls on its own memory with the CPU, and MPI_Win_flush's call into
 * the btl is the only one it makes; with manual progress (sockets) the
 * messages leave only when something drives the provider. Round after
 * round with fresh messages, every value checked: a message held back
 * is a hang, which the harness's timeout turns into a failure.
 *
 * The same pattern is MPICH's linked_list_bench (test/mpi/rma), whose
 * rank 0 chases its own list head with MPI_Get_accumulate(MPI_NO_OP)
 * while the others still wait in the barrier it has left.
 *
 *   mpirun -np N tests/bin/selfspin [rounds]     (default 200)
 */
#include "common.h"

#define SELFSPIN_TAG 4343

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "selfspin");
    long rounds = argc > 1 ? atol(argv[1]) : 200;
    CHECK(rounds > 0 && rounds < (1L << 30), "rounds: 1 .. 2^30");
    CHECK(tc_size >= 2, "needs 2 ranks or more, has %d", tc_size);

    int64_t *word = NULL;
    MPI_Win win;
    MPI_CHECK(MPI_Alloc_mem(sizeof(*word), MPI_INFO_NULL, &word));
    *word = 0;
    /* MPI_Win_create: on one host its traffic goes through the btl (an
     * allocated window would be mapped as shared memory instead) */
    MPI_CHECK(MPI_Win_create(word, sizeof(*word), sizeof(*word), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &win));
    MPI_CHECK(MPI_Win_lock_all(0, win));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    long polls = 0;
    for (long r = 1; r <= rounds; ++r) {
        const int64_t want = r * (tc_size - 1);
        if (0 == tc_rank) {
            for (int peer = 1; peer < tc_size; ++peer) {
                int64_t msg = r * 1000 + peer;
                MPI_CHECK(MPI_Send(&msg, 1, MPI_INT64_T, peer, SELFSPIN_TAG, MPI_COMM_WORLD));
            }
            int64_t seen = -1;
            do {
                MPI_CHECK(MPI_Fetch_and_op(NULL, &seen, MPI_INT64_T, 0, 0, MPI_NO_OP, win));
                MPI_CHECK(MPI_Win_flush(0, win));
                CHECK(seen <= want, "round %ld: the counter holds %lld, more than %lld", r,
                      (long long) seen, (long long) want);
                ++polls;
            } while (seen != want);
        } else {
            int64_t msg = 0, one = 1, old = -1;
            MPI_CHECK(MPI_Recv(&msg, 1, MPI_INT64_T, 0, SELFSPIN_TAG, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            CHECK(msg == r * 1000 + tc_rank, "round %ld: message %lld, expected %lld", r,
                  (long long) msg, (long long) (r * 1000 + tc_rank));
            MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win));
            MPI_CHECK(MPI_Win_flush(0, win));
            CHECK(old >= (r - 1) * (tc_size - 1) && old < want,
                  "round %ld: fetched %lld, outside [%lld, %lld)", r, (long long) old,
                  (long long) ((r - 1) * (tc_size - 1)), (long long) want);
        }
    }
    tc_counters_read(&after);
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (0 == tc_rank) {
        CHECK(*word == rounds * (tc_size - 1), "the counter holds %lld, expected %lld",
              (long long) *word, (long long) (rounds * (tc_size - 1)));
        tc_say("selfspin: %ld rounds x %d messages, each answered by a fetch-and-add while rank "
               "0 polled its own window (%ld polls, %.2fs)",
               rounds, tc_size - 1, polls, tc_now() - t0);
    }
    /* every other rank's additions went through the btl (rank 0's own
     * calls need not, so it prints no counter line) */
    tc_expect_t exp = {{0}, 0 == tc_rank ? 0 : (unsigned long long) rounds};
    tc_counters_check("selfspin", &before, &after, &exp, 0 != tc_rank, 0);
    MPI_CHECK(MPI_Win_free(&win));
    MPI_CHECK(MPI_Free_mem(word));
    tc_finish();
    return 0;
}
