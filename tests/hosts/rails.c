/*
 * rails: bandwidth between two hosts, one-sided and two-sided, for the
 * byte counts of each link (tests/hosts/run.sh rails cases).
 *
 *   rails put|send [-mib M | -kib K] [-n N] [-warm W] [-secs S [-stop-file F -tail T]]
 *   rails amo -secs S [-stop-file F -tail T]
 *                      (defaults 4 MiB, 16 timed transfers, 2 before them)
 *
 * -kib K: transfers of K KiB instead (send -kib 1: eager messages, so
 * that thousands are in flight or just completed when a link is cut).
 *
 * -secs S: transfer for S seconds after the warm-up instead of N times,
 * each transfer with a pattern of its own (round k for the k-th), so that
 * one lost, doubled or stale transfer shows: rank 1 checks every message
 * it receives, or the window against the last put's round. For the rail
 * cut cases, where a link fails while the transfers go on.
 *
 * -stop-file F -tail T (with -secs): stop T seconds after file F appears
 * (the runner creates it the moment it sees the failover), S seconds
 * after the start at the latest: the traffic after a failover is what a
 * cut case proves, not the time before it.
 *
 * amo: rank 0 adds 1 to a counter in rank 1's window with
 * MPI_Fetch_and_op for S seconds, each followed by a flush: every fetched
 * value must be the number of adds before it, and the counter at the end
 * their number (an atomic lost, or applied twice, shows).
 *
 * Rank 0 prints "rails: streaming" once the warm-up transfers are done.
 *
 * Two ranks, one per host. put: rank 0 puts M MiB into rank 1's window
 * W + N times, each followed by MPI_Win_flush (lock_all epoch); send: rank
 * 0 sends M MiB to rank 1 W + N times. Rank 1 then checks every byte of
 * its window (zero before the puts), or of the last message (received into
 * a zeroed buffer). Prints "rails: MODE M MiB x N: X MB/s" from rank 0,
 * timing the last N only: the first transfers on a rail pay for setting
 * it up (tcp;ofi_rxm connects each rail on its first message, ~0.1 s
 * here), which would otherwise be counted as bandwidth. The pattern is
 * written before the clock starts.
 */
#include "../common.h"

#include <unistd.h>

/* every rail in use: the runner may now cut one (rails:PROV:cut cases) */
static void streaming(void)
{
    printf("rails: streaming\n");
    fflush(stdout);
}

static const char *stop_file; /* -stop-file */
static double stop_tail = 3.0; /* -tail */
static double stop_seen, stop_checked;

/* Whether rank 0 stops streaming: SECS after T0, or STOP_TAIL seconds
 * after STOP_FILE appeared (looked for every 50 ms at most). */
static int rails_over(double t0, double secs)
{
    double now = tc_now();

    if (now - t0 >= secs) {
        return 1;
    }
    if (NULL == stop_file) {
        return 0;
    }
    if (0.0 == stop_seen && now - stop_checked >= 0.05) {
        stop_checked = now;
        if (0 == access(stop_file, F_OK)) {
            stop_seen = now;
        }
    }
    return stop_seen > 0.0 && now - stop_seen >= stop_tail;
}

/* rank 1's window on BUF, in a lock_all epoch every rank has entered */
static MPI_Win rails_window(unsigned char *buf, size_t len)
{
    MPI_Win win;

    MPI_CHECK(MPI_Win_create(buf, (MPI_Aint) len, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    return win;
}

/* -secs: puts for SECS seconds, each with its own round; rank 1 checks
 * the window against the last one's. Returns the number of timed puts. */
static int rails_put_for(unsigned char *buf, size_t len, int warm, double secs, double *t0,
                         double *t1)
{
    MPI_Win win = rails_window(buf, len);
    unsigned rounds = 0;

    if (0 == tc_rank) {
        unsigned char *src = malloc(len);
        CHECK(NULL != src, "malloc failed");
        for (int i = -warm; 0 == rounds || !rails_over(*t0, secs); ++i) {
            if (0 == i) {
                *t0 = tc_now();
                streaming();
            }
            tc_fill(src, 0, len, ++rounds);
            MPI_CHECK(MPI_Put(src, (int) len, MPI_BYTE, 1, 0, (int) len, MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(1, win));
            if (i < 0) {
                *t0 = tc_now();
            }
        }
        *t1 = tc_now();
        free(src);
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Bcast(&rounds, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD));
    if (1 == tc_rank) {
        tc_verify("rails: window after the last put", buf, 0, len, rounds);
        printf("rails: rank 1: window holds put %u of %u\n", rounds, rounds);
    }
    MPI_CHECK(MPI_Win_free(&win));
    return (int) rounds - warm;
}

/* -secs: messages for SECS seconds, the k-th with round k, the last one
 * tagged 1; rank 1 checks each. Returns the number of timed messages. */
static int rails_send_for(unsigned char *buf, size_t len, int warm, double secs, double *t0,
                          double *t1)
{
    unsigned rounds = 0;
    int last = 0;

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (0 == tc_rank) {
        for (int i = -warm; !last; ++i) {
            if (0 == i) {
                *t0 = tc_now();
                streaming();
            }
            last = i >= 0 && rails_over(*t0, secs);
            tc_fill(buf, 0, len, ++rounds);
            MPI_CHECK(MPI_Send(buf, (int) len, MPI_BYTE, 1, last, MPI_COMM_WORLD));
        }
    } else {
        while (!last) {
            MPI_Status st;
            memset(buf, 0, len);
            MPI_CHECK(MPI_Recv(buf, (int) len, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            tc_verify("rails: a message received", buf, 0, len, ++rounds);
            last = 1 == st.MPI_TAG;
        }
        printf("rails: rank 1: %u messages received, each checked\n", rounds);
    }
    /* the last message is only sent when rank 1 has it all */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    *t1 = tc_now();
    return (int) rounds - warm;
}

/* amo -secs: fetch-and-adds for SECS seconds, each result checked; rank 1
 * checks the counter against their number at the end. */
static void rails_amo_for(int warm, double secs)
{
    uint64_t counter = 0, done = 0, one = 1, old = 0;
    MPI_Win win = rails_window((unsigned char *) &counter, sizeof(counter));
    double t0 = 0.0, t1;

    if (0 == tc_rank) {
        for (int i = -warm;; ++i) {
            if (0 == i) {
                t0 = tc_now();
                streaming();
            } else if (i > 0 && rails_over(t0, secs)) {
                break;
            }
            MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, 0, MPI_SUM, win));
            MPI_CHECK(MPI_Win_flush(1, win));
            CHECK(old == done, "fetch-and-add %" PRIu64 " fetched %" PRIu64 " (expected %" PRIu64 ")",
                  done + 1, old, done);
            ++done;
        }
        t1 = tc_now();
        printf("rails: amo x %" PRIu64 ": %.1f per ms, each fetched value checked\n", done,
               (double) done / ((t1 - t0) * 1e3));
        fflush(stdout);
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Bcast(&done, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
    if (1 == tc_rank) {
        CHECK(counter == done, "counter %" PRIu64 " after %" PRIu64 " fetch-and-adds", counter, done);
        printf("rails: rank 1: counter %" PRIu64 " after %" PRIu64 " fetch-and-adds\n", counter,
               done);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    size_t mib = 4, kib = 0;
    int n = 16, warm = 2;
    double secs = 0.0;
    const char *mode = argc > 1 ? argv[1] : "";

    tc_init(&argc, &argv, "rails");
    CHECK(2 == tc_size, "needs exactly 2 ranks, has %d", tc_size);
    CHECK(0 == strcmp(mode, "put") || 0 == strcmp(mode, "send") || 0 == strcmp(mode, "amo"),
          "mode '%s': put, send or amo", mode);
    for (int i = 2; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-mib")) {
            mib = (size_t) atol(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-kib")) {
            kib = (size_t) atol(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-n")) {
            n = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-warm")) {
            warm = atoi(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-secs")) {
            secs = atof(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-stop-file")) {
            stop_file = argv[i + 1];
        } else if (0 == strcmp(argv[i], "-tail")) {
            stop_tail = atof(argv[i + 1]);
        }
    }
    CHECK(mib >= 1 && n >= 1 && warm >= 0, "-mib and -n must be at least 1, -warm at least 0");
    const size_t len = kib > 0 ? kib << 10 : mib << 20;
    char size[32];
    snprintf(size, sizeof(size), kib > 0 ? "%zu KiB" : "%zu MiB", kib > 0 ? kib : mib);
    unsigned char *buf = malloc(len);
    CHECK(NULL != buf, "malloc of %zu bytes failed", len);
    memset(buf, 0, len);
    double t0 = 0.0, t1 = 0.0;
    tc_counters_t before, after;
    tc_counters_read(&before);

    if (0 == strcmp(mode, "amo")) {
        CHECK(secs > 0.0, "amo needs -secs");
        rails_amo_for(warm, secs);
        free(buf);
        tc_finish();
        return 0;
    }
    if (secs > 0.0) {
        n = 0 == strcmp(mode, "put") ? rails_put_for(buf, len, warm, secs, &t0, &t1)
                                     : rails_send_for(buf, len, warm, secs, &t0, &t1);
    } else if (0 == strcmp(mode, "put")) {
        MPI_Win win = rails_window(buf, len);
        if (0 == tc_rank) {
            unsigned char *src = malloc(len);
            CHECK(NULL != src, "malloc failed");
            tc_fill(src, 0, len, 1);
            for (int i = -warm; i < n; ++i) {
                if (0 == i) {
                    t0 = tc_now();
                    streaming();
                }
                MPI_CHECK(MPI_Put(src, (int) len, MPI_BYTE, 1, 0, (int) len, MPI_BYTE, win));
                MPI_CHECK(MPI_Win_flush(1, win));
            }
            t1 = tc_now();
            free(src);
        }
        MPI_CHECK(MPI_Win_unlock_all(win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (1 == tc_rank) {
            tc_verify("rails: window after the puts", buf, 0, len, 1);
        }
        MPI_CHECK(MPI_Win_free(&win));
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (0 == tc_rank) {
            tc_fill(buf, 0, len, 1);
        }
        for (int i = -warm; i < n; ++i) {
            if (0 == i) {
                t0 = tc_now();
                if (0 == tc_rank) {
                    streaming();
                }
            }
            if (0 == tc_rank) {
                MPI_CHECK(MPI_Send(buf, (int) len, MPI_BYTE, 1, i + warm, MPI_COMM_WORLD));
            } else {
                if (i == n - 1) {
                    memset(buf, 0, len); /* the check below sees the last message only */
                }
                MPI_CHECK(MPI_Recv(buf, (int) len, MPI_BYTE, 0, i + warm, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
            }
        }
        /* the last message is only sent when rank 1 has it all */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        t1 = tc_now();
        if (1 == tc_rank) {
            tc_verify("rails: last message received", buf, 0, len, 1);
        }
    }
    tc_counters_read(&after);
    if (0 == tc_rank) {
        /* which btl operations carried it (sends, gets or puts) */
        printf("rails: %s %s x %d: %.1f MB/s (rank 0: %s)\n", mode, size, n,
               (double) len * n / (t1 - t0) / 1e6, tc_delta_str(&before, &after));
        fflush(stdout);
    } else {
        printf("rails: rank 1: %s\n", tc_delta_str(&before, &after));
        fflush(stdout);
    }
    free(buf);
    tc_finish();
    return 0;
}
