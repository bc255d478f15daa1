/*
 * progress: does passive-target RMA complete while the target computes
 * outside MPI? (btl_ofi_progress_thread)
 *
 *   progress [-level single|multiple] [-rounds R] [-busy S] [-max M]
 *
 * 2 ranks. After a warm-up round (connections and registrations made while
 * both ranks are in MPI) and a barrier:
 *  - rank 1 (target) busy-loops on clock_gettime for -busy seconds
 *    (default 3) without any MPI call;
 *  - rank 0 (origin) runs -rounds (default 100) rounds of MPI_Win_lock
 *    (exclusive) / MPI_Put of 1 KiB into slot r / MPI_Win_flush / MPI_Get
 *    of slot r / (every 10th round) MPI_Fetch_and_op(SUM, +1) on a 64-bit
 *    counter / MPI_Win_unlock on an MPI_Win_create window of rank 1, and
 *    compares the bytes got with the bytes put and the fetched count with
 *    r / 10 (atomics too must be served: on udp;ofi_rxd they are messages
 *    the target applies).
 * Then both enter MPI again; rank 1 checks every slot in its memory and the
 * counter (= number of rounds with an atomic).
 * Rank 0 prints both times. The origin's counters btl_ofi_put_count and
 * get_count must grow by at least one per round, atomic_count and
 * send_count together by one per fetch-and-add (an atomic, or to another
 * node one message: osc-rdma/patches 0016; taking the lock needs none: on
 * one node osc/rdma's default two-level locking keeps lock words in shared
 * memory).
 *
 * The progress thread is taken to be on when the cvar btl_ofi_progress_thread
 * reads true. Then the origin must have finished within -max seconds
 * (default 1.5, or env BTL_OFI_PROGRESS_MAX_S) and before the target came
 * back to MPI (-max 0: not checked, for runs under valgrind). With it off,
 * the times are only reported. When the runner
 * sets BTL_OFI_EXPECT_PROGRESS_THREAD=1 (or 0), the cvar must exist and say
 * so: a missing parameter fails instead of silently testing nothing.
 *
 * -level: MPI_THREAD_SINGLE (MPI_Init_thread, default: what most
 * applications ask for, so the component's thread must be safe without MPI
 * threads) or MPI_THREAD_MULTIPLE.
 */
#include <stdbool.h>
/* libopen-pal's switch behind opal_using_threads() (opal/threads/thread_usage.h) */
extern bool opal_uses_threads;
#include "mt_util.h"

#define SLOT 1024

static int read_progress_cvar(int *on)
{
    /* bool cvars read as int in Open MPI */
    return mt_cvar_read_int("btl_ofi_progress_thread", on);
}

int main(int argc, char **argv)
{
    int level = MPI_THREAD_SINGLE;
    int rounds = 100;
    double busy = 3.0;
    double max_s = 1.5;
    const char *env_max = getenv("BTL_OFI_PROGRESS_MAX_S");

    /* -level must be known before MPI starts */
    for (int a = 1; a + 1 < argc; ++a) {
        if (0 == strcmp(argv[a], "-level")) {
            if (0 == strcmp(argv[a + 1], "multiple")) {
                level = MPI_THREAD_MULTIPLE;
            } else if (0 != strcmp(argv[a + 1], "single")) {
                fprintf(stderr, "progress: -level single|multiple\n");
                return 2;
            }
        }
    }
    mt_init(&argc, &argv, "progress", level);
    for (int a = 1; a < argc; ++a) {
        if (0 == strcmp(argv[a], "-level") && a + 1 < argc) {
            ++a;
        } else if (0 == strcmp(argv[a], "-rounds") && a + 1 < argc) {
            rounds = mt_atoi("-rounds", argv[++a], 1, 100000);
        } else if (0 == strcmp(argv[a], "-busy") && a + 1 < argc) {
            busy = mt_atoi("-busy", argv[++a], 1, 3600);
        } else if (0 == strcmp(argv[a], "-max") && a + 1 < argc) {
            max_s = atof(argv[++a]);
        } else {
            FAILF("unknown argument '%s' (usage: progress [-level single|multiple] [-rounds R] "
                  "[-busy S] [-max M])",
                  argv[a]);
        }
    }
    if (env_max != NULL && env_max[0] != '\0') {
        max_s = atof(env_max);
    }
    CHECK(tc_size == 2, "needs exactly 2 ranks, got %d", tc_size);
    CHECK(max_s < busy, "-max %.2f must be below -busy %.0f", max_s, busy);

    int on = 0;
    int crc = read_progress_cvar(&on);
    const char *expect = getenv("BTL_OFI_EXPECT_PROGRESS_THREAD");
    tc_say("progress: btl_ofi_progress_thread %s; %d rounds of lock/put/flush/get/unlock of "
           "%d B while the target computes %.0f s outside MPI",
           crc == 0 ? (on ? "on" : "off") : "<no such parameter>", rounds, SLOT, busy);
    if (expect != NULL && expect[0] != '\0') {
        CHECK(crc == 0,
              "BTL_OFI_EXPECT_PROGRESS_THREAD=%s but cvar btl_ofi_progress_thread %s (has the "
              "parameter landed in the installed component?)",
              expect, crc == -1 ? "does not exist" : "cannot be read");
        CHECK((on != 0) == (atoi(expect) != 0),
              "btl_ofi_progress_thread is %d, the runner expected %s", on, expect);
    }
    if (crc != 0) {
        on = 0;
    }
    if (on) {
        /* The progress thread serves emulated atomics beside the
         * application's thread, both taking objects from Open MPI's free
         * lists and retaining endpoints: those are thread-safe only while
         * opal_using_threads() is true, which MPI_THREAD_SINGLE leaves
         * false unless the component says threads are in use. */
        CHECK(opal_uses_threads,
              "btl_ofi_progress_thread is on but opal_using_threads() is false: Open MPI's "
              "free lists and reference counts are not thread-safe against the progress thread");
        tc_say("progress: opal_using_threads() is true (the progress thread made Open MPI's "
               "lists thread-safe)");
    }

    /* slots 0..rounds (the last one for the warm-up), then the counter */
    size_t cnt_off = (size_t) (rounds + 1) * SLOT;
    size_t wsize = cnt_off + 8;
    unsigned char *mem = calloc(1, wsize);
    unsigned char *src = malloc(SLOT), *dst = malloc(SLOT);
    CHECK(mem && src && dst, "out of memory");
    MPI_Win win;
    MPI_CHECK(MPI_Win_create(mem, (MPI_Aint) wsize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    /* warm-up: slot `rounds', while both ranks are in MPI */
    if (tc_rank == 0) {
        tc_fill(src, 0, SLOT, 999999);
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        MPI_CHECK(MPI_Put(src, SLOT, MPI_BYTE, 1, (MPI_Aint) rounds * SLOT, SLOT, MPI_BYTE, win));
        MPI_CHECK(MPI_Win_flush(1, win));
        MPI_CHECK(MPI_Get(dst, SLOT, MPI_BYTE, 1, (MPI_Aint) rounds * SLOT, SLOT, MPI_BYTE, win));
        MPI_CHECK(MPI_Win_unlock(1, win));
        tc_verify("warm-up round", dst, 0, SLOT, 999999);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t[2] = {0, 0}; /* elapsed, absolute end (CLOCK_MONOTONIC, same node) */
    double start = tc_now();
    if (tc_rank == 1) {
        volatile unsigned long spins = 0;
        while (tc_now() - start < busy) {
            ++spins;
        }
    } else {
        for (int r = 0; r < rounds; ++r) {
            MPI_Aint disp = (MPI_Aint) r * SLOT;
            tc_fill(src, 0, SLOT, (unsigned) r);
            memset(dst, 0, SLOT);
            MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
            MPI_CHECK(MPI_Put(src, SLOT, MPI_BYTE, 1, disp, SLOT, MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(1, win));
            MPI_CHECK(MPI_Get(dst, SLOT, MPI_BYTE, 1, disp, SLOT, MPI_BYTE, win));
            const uint64_t one = 1;
            uint64_t old = ~(uint64_t) 0;
            if (r % 10 == 0) {
                MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, (MPI_Aint) cnt_off,
                                           MPI_SUM, win));
            }
            MPI_CHECK(MPI_Win_unlock(1, win));
            tc_verify(tc_fmt("round %d: get after put", r), dst, 0, SLOT, (unsigned) r);
            CHECK(r % 10 != 0 || old == (uint64_t) (r / 10),
                  "round %d: fetch-and-add fetched %" PRIu64 ", expected %d", r, old, r / 10);
        }
    }
    double end = tc_now();
    t[0] = end - start;
    t[1] = end;
    tc_counters_read(&after);

    double all[4];
    MPI_CHECK(MPI_Gather(t, 2, MPI_DOUBLE, all, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (tc_rank == 1) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win));
        MPI_CHECK(MPI_Win_sync(win));
        for (int r = 0; r < rounds; ++r) {
            tc_verify(tc_fmt("slot %d in the target's memory", r), mem + (size_t) r * SLOT, 0,
                      SLOT, (unsigned) r);
        }
        uint64_t cnt;
        memcpy(&cnt, mem + cnt_off, 8);
        CHECK(cnt == (uint64_t) ((rounds + 9) / 10),
              "counter in the target's memory is %" PRIu64 ", expected %d", cnt,
              (rounds + 9) / 10);
        MPI_CHECK(MPI_Win_unlock(1, win));
    } else {
        tc_expect_t exp;
        memset(&exp, 0, sizeof(exp));
        exp.min[TC_PUT_COUNT] = (unsigned long long) rounds;
        exp.min[TC_GET_COUNT] = (unsigned long long) rounds;
        exp.min_amo = (unsigned long long) ((rounds + 9) / 10); /* atomics, or messages (0016) */
        tc_counters_expect("origin", &before, &after, &exp, 1);

        double origin_s = all[0], origin_end = all[1], target_s = all[2], target_end = all[3];
        printf("    timing: origin %.3f s for %d rounds; target %.3f s outside MPI; origin "
               "finished %.3f s %s the target came back (progress thread %s)\n",
               origin_s, rounds, target_s, (target_end > origin_end ? target_end - origin_end : origin_end - target_end),
               origin_end <= target_end ? "before" : "after", on ? "on" : "off");
        fflush(stdout);
        if (on && max_s <= 0) {
            printf("    (-max 0: timing not checked)\n");
        }
        if (on && max_s > 0) {
            CHECK(origin_s < max_s && origin_end < target_end,
                  "with btl_ofi_progress_thread on, the origin took %.3f s (limit %.2f s) and "
                  "finished %.3f s %s the target returned to MPI after %.3f s: the target's "
                  "progress thread did not serve the passive-target operations",
                  origin_s, max_s, (target_end > origin_end ? target_end - origin_end : origin_end - target_end),
                  origin_end <= target_end ? "before" : "after", target_s);
        }
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(mem);
    free(src);
    free(dst);
    mt_finish();
    return 0;
}
