/*
 * roundtrip: thousands of one-sided operations across the hosts, each
 * waited for on its own, every result checked.
 *
 *   roundtrip [-n N]     (default 4000 of each operation)
 *
 * Rank 0 (first host) works on rank 1's window (second host) in one
 * passive-target epoch (MPI_Win_lock, shared, as OSU's one-sided latency
 * tests do): N times each
 *   put    8 bytes + MPI_Win_flush, slot i % 512
 *   get    8 bytes + MPI_Win_flush of a word rank 1 wrote, checked
 *   fop    MPI_Fetch_and_op(MPI_SUM, int64) + flush: the result must be i
 *   cas    MPI_Compare_and_swap(int64) i -> i + 1 + flush: the result
 *          must be i (so every swap happened)
 *   acc    MPI_Accumulate(MPI_SUM, int64) + flush
 * then rank 1 checks its window: the last word put in every slot, the
 * counters at N. Rank 1 waits in MPI_Barrier meanwhile.
 *
 * What it proves is that each operation completes in about a network
 * round trip, without asserting any time: tests/hosts/run.sh runs it with
 * both ranks bound to the same core (a node whose ranks share cores) under
 * a job limit the old wait, one scheduler tick per operation, could not
 * meet (4,000 x 4 ms per operation type), while a round trip on these
 * links is tens of microseconds.
 */
#include "../common.h"

#define SLOTS 512
enum { RT_FOP = SLOTS, RT_CAS, RT_ACC, RT_WORDS };

static uint64_t word_of(long i)
{
    return 0x5100000000000000ull ^ ((uint64_t) i * 0x9E3779B97F4A7C15ull);
}

int main(int argc, char **argv)
{
    long n = 4000;
    tc_init(&argc, &argv, "roundtrip");
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-n")) {
            n = atol(argv[i + 1]);
        }
    }
    CHECK(tc_size >= 2 && n > 0, "needs 2 ranks and N > 0");

    uint64_t *mem = calloc(RT_WORDS, sizeof(uint64_t));
    CHECK(NULL != mem, "calloc failed");
    if (1 == tc_rank) {
        for (int s = 0; s < SLOTS; ++s) {
            mem[s] = word_of(-1 - s); /* what the gets read */
        }
    }
    MPI_Win win;
    MPI_CHECK(MPI_Win_create(mem, RT_WORDS * sizeof(uint64_t), sizeof(uint64_t), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (0 == tc_rank) {
        const int t = 1;
        double t0 = tc_now(), tg, tp, tf, tc;
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        for (long i = 0; i < n; ++i) {
            uint64_t got = 0;
            MPI_CHECK(MPI_Get(&got, 1, MPI_UINT64_T, t, i % SLOTS, 1, MPI_UINT64_T, win));
            MPI_CHECK(MPI_Win_flush(t, win));
            CHECK(got == word_of(-1 - i % SLOTS), "get %ld of slot %ld: 0x%016llx", i,
                  i % SLOTS, (unsigned long long) got);
        }
        tg = tc_now();
        for (long i = 0; i < n; ++i) {
            uint64_t w = word_of(i);
            MPI_CHECK(MPI_Put(&w, 1, MPI_UINT64_T, t, i % SLOTS, 1, MPI_UINT64_T, win));
            MPI_CHECK(MPI_Win_flush(t, win));
        }
        tp = tc_now();
        for (long i = 0; i < n; ++i) {
            int64_t one = 1, old = -1;
            MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, RT_FOP, MPI_SUM, win));
            MPI_CHECK(MPI_Win_flush(t, win));
            CHECK(old == i, "fetch-and-add %ld returned %lld", i, (long long) old);
        }
        tf = tc_now();
        for (long i = 0; i < n; ++i) {
            int64_t cmp = i, val = i + 1, old = -1;
            MPI_CHECK(MPI_Compare_and_swap(&val, &cmp, &old, MPI_INT64_T, t, RT_CAS, win));
            MPI_CHECK(MPI_Win_flush(t, win));
            CHECK(old == i, "compare-and-swap %ld returned %lld", i, (long long) old);
        }
        tc = tc_now();
        for (long i = 0; i < n; ++i) {
            int64_t two = 2;
            MPI_CHECK(MPI_Accumulate(&two, 1, MPI_INT64_T, t, RT_ACC, 1, MPI_INT64_T, MPI_SUM,
                                     win));
            MPI_CHECK(MPI_Win_flush(t, win));
        }
        MPI_CHECK(MPI_Win_unlock(t, win));
        double te = tc_now();
        /* for the log only: nothing is asserted on time */
        printf("roundtrip: %ld each, us per operation + flush: get %.1f put %.1f fop %.1f "
               "cas %.1f acc %.1f\n",
               n, (tg - t0) * 1e6 / n, (tp - tg) * 1e6 / n, (tf - tp) * 1e6 / n,
               (tc - tf) * 1e6 / n, (te - tc) * 1e6 / n);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (1 == tc_rank) {
        for (long s = 0; s < SLOTS && s < n; ++s) {
            long last = s + ((n - 1 - s) / SLOTS) * SLOTS;
            CHECK(mem[s] == word_of(last), "slot %ld holds 0x%016llx, not put %ld's word", s,
                  (unsigned long long) mem[s], last);
        }
        CHECK((int64_t) mem[RT_FOP] == n, "fetch-and-add counter %lld, expected %ld",
              (long long) mem[RT_FOP], n);
        CHECK((int64_t) mem[RT_CAS] == n, "compare-and-swap counter %lld, expected %ld",
              (long long) mem[RT_CAS], n);
        CHECK((int64_t) mem[RT_ACC] == 2 * n, "accumulate counter %lld, expected %ld",
              (long long) mem[RT_ACC], 2 * n);
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(mem);
    tc_finish();
    return 0;
}
