/*
 * dynchurn: dynamic windows whose regions come and go between the other
 * ranks' accesses (tests/hosts/run.sh dynamic cases).
 *
 * Every rank keeps NREG regions attached to one dynamic window. In each
 * of ROUNDS rounds it first detaches SWAP of them and attaches fresh
 * buffers in their place (their contents carried over), so its region
 * table, which osc/rdma keeps on the target and reads through the btl
 * under the table's lock when the target is on another host, changed
 * since every origin last read it; the addresses go round with
 * MPI_Allgather. Then, inside one MPI_Win_lock_all epoch, every rank,
 * ITERS times, for every other rank and each of its regions:
 *   - puts 8 bytes into its own slot of the region (slot = origin rank)
 *     and gets them back: the value read must be the one written;
 *   - fetch-and-adds 1 on the region's counter (its last word): the value
 *     fetched must be below the most all origins can have added so far.
 * After a barrier every rank checks each region of its own: every other
 * rank's slot holds that rank's last value, and the counter is ITERS x
 * (ranks - 1) x (rounds so far).
 *
 * Open MPI 4.1.4's osc/rdma deadlocks here on the first access to a
 * region of a rank on another host (ompi issue 10328: the region lookup
 * takes the target's table lock exclusively, then waits for the same lock
 * shared); with osc-rdma/patches it must end, every value checked.
 * (Attaching and detaching while other ranks access the same window, with
 * no synchronisation between, still fails in 4.1.4 with or without the
 * fix, even on one host: README, "osc/rdma".)
 */
#include "../common.h"

#define NREG 8
#define SWAP 4
#define REGBYTES 4096
#define ROUNDS 4
#define ITERS 10

static unsigned char *region_new(void)
{
    unsigned char *r = calloc(1, REGBYTES);
    CHECK(NULL != r, "calloc failed");
    return r;
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "dynchurn");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    const int n = tc_size;
    MPI_Win win;
    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    unsigned char *regs[NREG];
    MPI_Aint mine[NREG], *theirs = malloc((size_t) n * NREG * sizeof(MPI_Aint));
    CHECK(NULL != theirs, "malloc failed");
    tc_counters_t c0, c1;
    tc_counters_read(&c0);

    for (int r = 0; r < NREG; ++r) {
        regs[r] = region_new();
        MPI_CHECK(MPI_Win_attach(win, regs[r], REGBYTES));
    }
    long swaps = 0;
    for (int round = 0; round < ROUNDS; ++round) {
        /* change the table: SWAP regions leave, fresh ones take their
         * place with the same contents */
        for (int k = 0; k < SWAP; ++k) {
            int r = (round * SWAP + k) % NREG;
            unsigned char *fresh = region_new();
            memcpy(fresh, regs[r], REGBYTES);
            MPI_CHECK(MPI_Win_detach(win, regs[r]));
            free(regs[r]);
            regs[r] = fresh;
            MPI_CHECK(MPI_Win_attach(win, regs[r], REGBYTES));
            ++swaps;
        }
        for (int r = 0; r < NREG; ++r) {
            MPI_CHECK(MPI_Get_address(regs[r], &mine[r]));
        }
        MPI_CHECK(MPI_Allgather(mine, NREG, MPI_AINT, theirs, NREG, MPI_AINT, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock_all(0, win));
        for (int it = 0; it < ITERS; ++it) {
            for (int d = 1; d < n; ++d) {
                int peer = (tc_rank + d) % n;
                for (int r = 0; r < NREG; ++r) {
                    MPI_Aint base = theirs[peer * NREG + r];
                    int64_t v = ((int64_t) round << 40) | ((int64_t) tc_rank << 20) | it, back = -1;
                    int64_t one = 1, old = -1, most = (int64_t) ITERS * (n - 1) * (round + 1);

                    MPI_CHECK(
                        MPI_Put(&v, 1, MPI_INT64_T, peer, base + 8 * tc_rank, 1, MPI_INT64_T, win));
                    MPI_CHECK(MPI_Win_flush(peer, win));
                    MPI_CHECK(MPI_Get(&back, 1, MPI_INT64_T, peer, base + 8 * tc_rank, 1,
                                      MPI_INT64_T, win));
                    MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, peer, base + REGBYTES - 8,
                                               MPI_SUM, win));
                    MPI_CHECK(MPI_Win_flush(peer, win));
                    CHECK(back == v,
                          "round %d iteration %d: rank %d region %d slot %d read %llx after "
                          "writing %llx",
                          round, it, peer, r, tc_rank, (unsigned long long) back,
                          (unsigned long long) v);
                    CHECK(old >= 0 && old < most,
                          "round %d iteration %d: counter of rank %d region %d fetched %lld "
                          "(fewer than %lld adds so far)",
                          round, it, peer, r, (long long) old, (long long) most);
                }
            }
        }
        MPI_CHECK(MPI_Win_unlock_all(win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int r = 0; r < NREG; ++r) {
            int64_t count, slot, want = (int64_t) ITERS * (n - 1) * (round + 1);
            memcpy(&count, regs[r] + REGBYTES - 8, 8);
            CHECK(count == want, "round %d: counter of my region %d is %lld, expected %lld", round,
                  r, (long long) count, (long long) want);
            for (int o = 0; o < n; ++o) {
                if (o == tc_rank) {
                    continue;
                }
                memcpy(&slot, regs[r] + 8 * o, 8);
                int64_t last = ((int64_t) round << 40) | ((int64_t) o << 20) | (ITERS - 1);
                CHECK(slot == last, "round %d: my region %d slot %d holds %llx, expected %llx",
                      round, r, o, (unsigned long long) slot, (unsigned long long) last);
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_counters_read(&c1);
    tc_expect_t exp = {{0}};
    exp.min[TC_PUT_COUNT] = ROUNDS * ITERS * (n - 1) * NREG;
    exp.min[TC_GET_COUNT] = ROUNDS * ITERS * (n - 1) * NREG;
    /* a fetching atomic each, or to another node one message (0016) */
    exp.min_amo = ROUNDS * ITERS * (n - 1) * NREG;
    tc_counters_expect("dynchurn", &c0, &c1, &exp, 1);
    printf("dynchurn: rank %d: %d rounds, %ld regions detached and attached, every value "
           "checked\n",
           tc_rank, ROUNDS, swaps);
    for (int r = 0; r < NREG; ++r) {
        MPI_CHECK(MPI_Win_detach(win, regs[r]));
        free(regs[r]);
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(theirs);
    tc_finish();
    return 0;
}
