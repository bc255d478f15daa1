/*
 * dynhosts: dynamic windows between hosts.
 *
 * Every rank creates a dynamic window, attaches NREG buffers, and sends
 * their addresses around. Then, for each round, every rank puts into,
 * reads back from and accumulates into each buffer of its partner (the
 * rank half the job away: on the other host when ranks are placed by
 * slot on two hosts), under MPI_Win_lock (exclusive, then shared) and
 * MPI_Win_lock_all, and checks every byte. Between rounds each rank
 * detaches one buffer and attaches a new one, so the region table that
 * osc/rdma keeps on the target (with its lock word, reached through the
 * btl when the target is on another host) changes under the origin.
 */
#include "../common.h"

#define NREG 4
#define REGBYTES 4096
#define ROUNDS 6

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "dynhosts");
    CHECK(tc_size >= 2 && tc_size % 2 == 0, "needs an even number of ranks, has %d", tc_size);
    int partner = (tc_rank + tc_size / 2) % tc_size;
    MPI_Win win;
    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    unsigned char *bufs[NREG];
    MPI_Aint mine[NREG], theirs[NREG];
    unsigned char *out = malloc(REGBYTES), *back = malloc(REGBYTES);
    CHECK(out && back, "malloc failed");
    tc_counters_t c0, c1;
    tc_counters_read(&c0);

    for (int r = 0; r < NREG; ++r) {
        bufs[r] = calloc(1, REGBYTES);
        CHECK(bufs[r], "calloc failed");
        MPI_CHECK(MPI_Win_attach(win, bufs[r], REGBYTES));
        MPI_CHECK(MPI_Get_address(bufs[r], &mine[r]));
    }
    for (int round = 0; round < ROUNDS; ++round) {
        /* my partner's origin is partner's partner = me: exchange addresses */
        MPI_CHECK(MPI_Sendrecv(mine, NREG, MPI_AINT, partner, 1, theirs, NREG, MPI_AINT, partner, 1,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int r = 0; r < NREG; ++r) {
            size_t n = (size_t) (r + 1) * (REGBYTES - 8) / NREG; /* the last word: the counter */
            unsigned tag = (unsigned) (round * 16 + r);
            tc_fill(out, tc_rank, n, tag);
            int lock = round % 3; /* exclusive, shared, lock_all */
            if (2 == lock) {
                MPI_CHECK(MPI_Win_lock_all(0, win));
            } else {
                MPI_CHECK(MPI_Win_lock(0 == lock ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, partner, 0,
                                       win));
            }
            MPI_CHECK(MPI_Put(out, (int) n, MPI_BYTE, partner, theirs[r], (int) n, MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(partner, win));
            memset(back, 0, n);
            MPI_CHECK(MPI_Get(back, (int) n, MPI_BYTE, partner, theirs[r], (int) n, MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(partner, win));
            char what[128];
            snprintf(what, sizeof(what), "round %d region %d: get after put on rank %d", round, r,
                     partner);
            tc_verify(what, back, tc_rank, n, tag);
            /* 8-byte accumulate into the region's last word */
            int64_t one = 1, old = -1;
            MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, partner, theirs[r] + REGBYTES - 8,
                                       MPI_SUM, win));
            MPI_CHECK(MPI_Win_flush(partner, win));
            CHECK(old == round, "round %d region %d: counter on rank %d was %lld, expected %d",
                  round, r, partner, (long long) old, round);
            if (2 == lock) {
                MPI_CHECK(MPI_Win_unlock_all(win));
            } else {
                MPI_CHECK(MPI_Win_unlock(partner, win));
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        /* my buffers hold what my partner wrote: check, then renew one */
        for (int r = 0; r < NREG; ++r) {
            size_t n = (size_t) (r + 1) * (REGBYTES - 8) / NREG; /* the last word: the counter */
            char what[128];
            snprintf(what, sizeof(what), "round %d region %d: what rank %d wrote here", round, r,
                     partner);
            tc_verify(what, bufs[r], partner, n, (unsigned) (round * 16 + r));
        }
        int renew = round % NREG;
        int64_t count;
        memcpy(&count, bufs[renew] + REGBYTES - 8, 8);
        MPI_CHECK(MPI_Win_detach(win, bufs[renew]));
        unsigned char *fresh = calloc(1, REGBYTES);
        CHECK(fresh, "calloc failed");
        memcpy(fresh + REGBYTES - 8, &count, 8);
        free(bufs[renew]);
        bufs[renew] = fresh;
        MPI_CHECK(MPI_Win_attach(win, bufs[renew], REGBYTES));
        MPI_CHECK(MPI_Get_address(bufs[renew], &mine[renew]));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_counters_read(&c1);
    /* per round and region: one put, one get, one fetching atomic (or,
     * to another node, one message: osc-rdma/patches 0016) */
    tc_expect_t exp = {{0}};
    exp.min[TC_PUT_COUNT] = ROUNDS * NREG;
    exp.min[TC_GET_COUNT] = ROUNDS * NREG;
    exp.min_amo = ROUNDS * NREG;
    tc_counters_expect("dynhosts", &c0, &c1, &exp, 1);
    for (int r = 0; r < NREG; ++r) {
        MPI_CHECK(MPI_Win_detach(win, bufs[r]));
        free(bufs[r]);
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(out);
    free(back);
    tc_finish();
    return 0;
}
