/*
 * mixed: one-sided and two-sided traffic interleaved in one job, both over
 * our btl/ofi (osc/rdma for the window, pml/ob1 for the messages).
 *
 * Window: MPI_Win_create on malloc'd memory (osc/rdma always reaches it
 * through the BTL): one slot per (origin, round) for puts, and one int64
 * counter per rank for atomics.
 *
 * Part 1 (passive target, MPI_Win_lock_all for the whole part): in every
 *   round each rank
 *     - posts MPI_Irecv from its left neighbour and MPI_Isend to its right
 *       neighbour (sizes cycle from 0 B to 1 MiB: eager and rendezvous);
 *     - while they are in flight: MPI_Put of a slot to a remote rank,
 *       MPI_Fetch_and_op(MPI_SUM, +1) on the counter of rank round%np and
 *       MPI_Accumulate(MPI_SUM, +1000) on the counter of another rank;
 *     - waits for its messages (every byte checked) and flushes every
 *       -flush-every rounds.
 *   Afterwards every slot of every window must hold its origin's pattern,
 *   every counter must equal the exact sum of what was added to it, and
 *   the values MPI_Fetch_and_op returned for a counter, over all ranks,
 *   reduced modulo 1000 (the accumulates add multiples of 1000), must be
 *   a permutation of 0..(number of +1 adds - 1): each fetch saw a
 *   different number of earlier +1 adds.
 *
 * Part 2 (active target): MPI_Win_fence epochs; inside each, MPI_Put to
 *   the right neighbour and MPI_Get from the left one while an MPI_Sendrecv
 *   ring exchange runs; everything checked after the closing fence.
 *
 * Counters: btl put, atomic (or put+get+atomic together, for providers
 * where osc/rdma chooses other paths) and send counts must all grow.
 *
 * Options: -rounds N (default 60), -flush-every N (default 4).
 */
#include "ts.h"

#define SLOT 4096
#define COUNTER_ADD 1
#define ACC_ADD 1000

static const size_t msg_sizes[] = {0, 100, 8193, 100 * 1024, 1024 * 1024 + 3, 33};
#define NMSG (sizeof(msg_sizes) / sizeof(msg_sizes[0]))

static int rounds = 60;

/* remote rank that rank `r' puts to in round `k' (never itself) */
static int put_target(int r, int k)
{
    return (r + 1 + k % (tc_size - 1)) % tc_size;
}

static int fop_target(int k)
{
    return k % tc_size;
}

static int acc_target(int r, int k)
{
    return (r + 2 + k) % tc_size;
}

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "mixed");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    rounds = (int) ts_arg_size(argc, argv, "-rounds", 60);
    int flush_every = (int) ts_arg_size(argc, argv, "-flush-every", 4);
    CHECK(rounds >= 1 && rounds <= 10000 && flush_every >= 1, "bad -rounds or -flush-every");

    size_t nslots = (size_t) tc_size * (size_t) rounds;
    size_t winsize = nslots * SLOT + sizeof(int64_t);
    unsigned char *base = ts_malloc(winsize);
    memset(base, 0, winsize);
    int64_t *counter = (int64_t *) (base + nslots * SLOT);
    MPI_Win win;
    MPI_CHECK(MPI_Win_create(base, (MPI_Aint) winsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    size_t maxmsg = msg_sizes[0];
    for (size_t i = 0; i < NMSG; ++i) {
        maxmsg = msg_sizes[i] > maxmsg ? msg_sizes[i] : maxmsg;
    }
    unsigned char *sbuf = ts_malloc(maxmsg), *rbuf = ts_malloc(maxmsg);
    unsigned char *slot = ts_malloc((size_t) rounds * SLOT);
    int64_t *fetched = ts_malloc(sizeof(int64_t) * (size_t) rounds);
    int left = (tc_rank + tc_size - 1) % tc_size, right = (tc_rank + 1) % tc_size;

    ts_snap_t s0, s1, s2;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    ts_snap(&s0);

    /* ---------------- part 1: passive target ---------------- */
    double t0 = tc_now();
    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int k = 0; k < rounds; ++k) {
        size_t n = msg_sizes[(size_t) k % NMSG];
        MPI_Request rq[2];
        MPI_Status st[2];
        memset(rbuf, 0xCC, n);
        MPI_CHECK(MPI_Irecv(rbuf, (int) n, MPI_BYTE, left, k, MPI_COMM_WORLD, &rq[0]));
        tc_fill(sbuf, tc_rank, n, (unsigned) k);
        MPI_CHECK(MPI_Isend(sbuf, (int) n, MPI_BYTE, right, k, MPI_COMM_WORLD, &rq[1]));

        /* one-sided while the messages are in flight */
        unsigned char *mine = slot + (size_t) k * SLOT;
        tc_fill(mine, tc_rank, SLOT, 5000 + (unsigned) k);
        int pt = put_target(tc_rank, k);
        MPI_CHECK(MPI_Put(mine, SLOT, MPI_BYTE, pt,
                          (MPI_Aint) (((size_t) tc_rank * (size_t) rounds + (size_t) k) * SLOT),
                          SLOT, MPI_BYTE, win));
        int64_t one = COUNTER_ADD, acc = ACC_ADD;
        MPI_CHECK(MPI_Fetch_and_op(&one, &fetched[k], MPI_INT64_T, fop_target(k),
                                   (MPI_Aint) (nslots * SLOT), MPI_SUM, win));
        MPI_CHECK(MPI_Accumulate(&acc, 1, MPI_INT64_T, acc_target(tc_rank, k),
                                 (MPI_Aint) (nslots * SLOT), 1, MPI_INT64_T, MPI_SUM, win));

        MPI_CHECK(MPI_Waitall(2, rq, st));
        char what[128];
        snprintf(what, sizeof(what), "part 1 round %d: %zu-byte message from rank %d", k, n,
                 left);
        ts_check_status(what, &st[0], MPI_BYTE, left, k, (long long) n);
        tc_verify(what, rbuf, left, n, (unsigned) k);
        if ((k + 1) % flush_every == 0) {
            MPI_CHECK(MPI_Win_flush_all(win));
        }
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    ts_snap(&s1);

    /* every slot that was put to this rank */
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tc_rank, 0, win)); /* sync the local view */
    long slots_checked = 0;
    for (int o = 0; o < tc_size; ++o) {
        for (int k = 0; k < rounds; ++k) {
            const unsigned char *s = base + ((size_t) o * (size_t) rounds + (size_t) k) * SLOT;
            char what[128];
            snprintf(what, sizeof(what), "part 1: window slot of origin %d round %d on rank %d", o,
                     k, tc_rank);
            if (put_target(o, k) == tc_rank) {
                tc_verify(what, s, o, SLOT, 5000 + (unsigned) k);
                ++slots_checked;
            } else {
                for (size_t i = 0; i < SLOT; ++i) {
                    CHECK(s[i] == 0, "%s: nobody put there, yet byte %zu is 0x%02x", what, i, s[i]);
                }
            }
        }
    }
    int64_t fops = 0, accs = 0;
    for (int k = 0; k < rounds; ++k) {
        /* in round k every rank adds +1 on the counter of rank k % np */
        fops += fop_target(k) == tc_rank ? tc_size : 0;
        for (int o = 0; o < tc_size; ++o) {
            accs += acc_target(o, k) == tc_rank;
        }
    }
    int64_t want = fops * COUNTER_ADD + accs * ACC_ADD;
    CHECK(*counter == want,
          "part 1: counter on rank %d is %" PRId64 ", expected %" PRId64 " (%" PRId64
          " fetch-and-op +%d and %" PRId64 " accumulate +%d)",
          tc_rank, *counter, want, fops, COUNTER_ADD, accs, ACC_ADD);
    MPI_CHECK(MPI_Win_unlock(tc_rank, win));

    /* fetched values: per target counter, (value mod ACC_ADD) over all
     * ranks must be a permutation of 0..adds-1 (each +1 saw a different
     * number of earlier +1s) */
    int64_t *all = ts_malloc(sizeof(int64_t) * (size_t) rounds * (size_t) tc_size);
    MPI_CHECK(MPI_Allgather(fetched, rounds, MPI_INT64_T, all, rounds, MPI_INT64_T,
                            MPI_COMM_WORLD));
    for (int t = 0; t < tc_size; ++t) {
        int64_t adds = 0;
        for (int k = 0; k < rounds; ++k) {
            adds += fop_target(k) == t;
        }
        adds *= tc_size;
        CHECK(adds < ACC_ADD, "too many rounds for the fetched-value check");
        unsigned char *seen = calloc((size_t) adds + 1, 1);
        CHECK(seen != NULL, "calloc");
        for (int o = 0; o < tc_size; ++o) {
            for (int k = 0; k < rounds; ++k) {
                if (fop_target(k) != t) {
                    continue;
                }
                int64_t v = all[(size_t) o * (size_t) rounds + (size_t) k] % ACC_ADD;
                CHECK(v >= 0 && v < adds && !seen[v],
                      "part 1: MPI_Fetch_and_op of rank %d in round %d on rank %d's counter "
                      "returned %" PRId64 " (mod %d: %" PRId64 "), %s",
                      o, k, t, all[(size_t) o * (size_t) rounds + (size_t) k], ACC_ADD, v,
                      v >= 0 && v < adds ? "a value another fetch also returned"
                                         : "more +1 adds than were ever made");
                seen[v] = 1;
            }
        }
        free(seen);
    }
    free(all);
    tc_say("part 1: %d rounds of Isend/Irecv interleaved with MPI_Put, MPI_Fetch_and_op and "
           "MPI_Accumulate under MPI_Win_lock_all: messages, %ld slots on rank 0, counters and "
           "fetched values checked in %.2fs",
           rounds, slots_checked, tc_now() - t0);

    /* ---------------- part 2: fence ---------------- */
    t0 = tc_now();
    int frounds = rounds / 4 > 2 ? rounds / 4 : 2;
    unsigned char *getbuf = ts_malloc(SLOT);
    memset(base, 0, nslots * SLOT);
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int k = 0; k < frounds; ++k) {
        size_t n = msg_sizes[(size_t) (k + 2) % NMSG];
        unsigned char *mine = slot + (size_t) (k % rounds) * SLOT;
        tc_fill(mine, tc_rank, SLOT, 9000 + (unsigned) k);
        /* slot index k of the right neighbour's window, written by us */
        MPI_CHECK(MPI_Put(mine, SLOT, MPI_BYTE, right, (MPI_Aint) ((size_t) k * SLOT), SLOT,
                          MPI_BYTE, win));
        tc_fill(sbuf, tc_rank, n, 9500 + (unsigned) k);
        memset(rbuf, 0xCC, n);
        MPI_Status st;
        MPI_CHECK(MPI_Sendrecv(sbuf, (int) n, MPI_BYTE, right, 7000 + k, rbuf, (int) n, MPI_BYTE,
                               left, 7000 + k, MPI_COMM_WORLD, &st));
        char what[128];
        snprintf(what, sizeof(what), "part 2 epoch %d: %zu-byte MPI_Sendrecv from rank %d", k, n,
                 left);
        ts_check_status(what, &st, MPI_BYTE, left, 7000 + k, (long long) n);
        tc_verify(what, rbuf, left, n, 9500 + (unsigned) k);
        MPI_CHECK(MPI_Win_fence(0, win));
        /* the put of our left neighbour has landed here; read what we
         * put on the right one back */
        snprintf(what, sizeof(what), "part 2 epoch %d: slot put by rank %d", k, left);
        tc_verify(what, base + (size_t) k * SLOT, left, SLOT, 9000 + (unsigned) k);
        memset(getbuf, 0, SLOT);
        MPI_CHECK(MPI_Get(getbuf, SLOT, MPI_BYTE, right, (MPI_Aint) ((size_t) k * SLOT), SLOT,
                          MPI_BYTE, win));
        MPI_CHECK(MPI_Win_fence(0, win));
        snprintf(what, sizeof(what), "part 2 epoch %d: MPI_Get of our own put from rank %d", k,
                 right);
        tc_verify(what, getbuf, tc_rank, SLOT, 9000 + (unsigned) k);
    }
    MPI_CHECK(MPI_Win_fence(0, win));
    ts_snap(&s2);
    tc_say("part 2: %d fence epochs with MPI_Put, MPI_Get and MPI_Sendrecv checked in %.2fs",
           frounds, tc_now() - t0);

    ts_delta_t d1 = ts_delta(&s0, &s1), d2 = ts_delta(&s1, &s2);
    ts_print_deltas(MPI_COMM_WORLD, "part 1", &d1);
    ts_print_deltas(MPI_COMM_WORLD, "part 2", &d2);
    if (tc_check_ours_enabled()) {
        CHECK(d1.puts >= (unsigned long long) rounds,
              "part 1: btl_ofi_put_count grew by %llu over %d MPI_Put to MPI_Win_create windows",
              d1.puts, rounds);
        /* osc/rdma carries a 64-bit fetching add on a remote rank as a btl
         * atomic, or to another node as one message (osc-rdma/patches
         * 0016), beside each round's two-sided send (the ones on this rank
         * itself need no btl) */
        unsigned long long remote_fops = 0;
        for (int k = 0; k < rounds; ++k) {
            remote_fops += fop_target(k) != tc_rank;
        }
        CHECK(d1.atomics + d1.sends >= remote_fops + (unsigned long long) rounds,
              "part 1: btl_ofi_atomic_count and btl_ofi_send_count grew by %llu over %llu "
              "MPI_Fetch_and_op(MPI_SUM, int64) on other ranks and %d two-sided sends",
              d1.atomics + d1.sends, remote_fops, rounds);
        CHECK(d2.puts >= (unsigned long long) frounds && d2.gets >= (unsigned long long) frounds,
              "part 2: %llu btl puts and %llu btl gets over %d epochs with one MPI_Put and one "
              "MPI_Get each",
              d2.puts, d2.gets, frounds);
        if (ts_have_send) {
            CHECK(d1.sends >= (unsigned long long) rounds && d2.sends >= (unsigned long long) frounds,
                  "btl_ofi_send_count grew by %llu in part 1 (%d messages sent) and %llu in part "
                  "2 (%d messages sent)",
                  d1.sends, rounds, d2.sends, frounds);
        }
    }

    MPI_CHECK(MPI_Win_free(&win));
    free(base);
    free(sbuf);
    free(rbuf);
    free(slot);
    free(fetched);
    free(getbuf);
    ts_finish();
    return 0;
}
