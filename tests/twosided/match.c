/*
 * match: wildcard matching, probing and cancellation through pml/ob1.
 *
 * Phase 1 (MPI_ANY_SOURCE, posted first): every rank in turn is the
 *   receiver. It posts all its MPI_Irecv(MPI_ANY_SOURCE, tag) before a
 *   barrier, the others send after it, so every message meets a posted
 *   wildcard receive. Sizes cycle through eager, just above the eager limit
 *   and rendezvous (300 KiB). Receives complete in posting order, so the
 *   k-th receive that matched sender s must hold s's k-th message: source,
 *   count and every byte are checked.
 *
 * Phase 2 (MPI_Iprobe, MPI_Improbe/MPI_Mrecv): rank 0 polls MPI_Iprobe
 *   (MPI_ANY_SOURCE, MPI_ANY_TAG) until a message shows, checks the probed
 *   source, tag and size against what that sender sends next, allocates
 *   exactly that size and receives it (MPI_Recv by source and tag, or
 *   MPI_Improbe + MPI_Mrecv every other message). MPI_Iprobe of a tag that
 *   nobody sends must say no message. The polling has a deadline
 *   (-deadline seconds, default 60): a message that never shows is a
 *   failure, not a hang.
 *
 * Phase 3 (MPI_Cancel):
 *   a) receives nobody sends to (MPI_ANY_SOURCE and a given source, small
 *      and large buffers) are cancelled: MPI_Test_cancelled must say so and
 *      their buffers must be untouched;
 *   b) a cancelled receive must not swallow a later message: rank 0 posts
 *      and cancels MPI_Irecv(1, tag), then rank 1 sends with that tag
 *      (eager and rendezvous sizes); a fresh MPI_Recv must get the message
 *      and the cancelled buffer must be untouched;
 *   c) a receive that has already matched cannot be cancelled:
 *      MPI_Test_cancelled must be false and the data must be there.
 *
 * Options: -n COUNT messages per sender in phases 1 and 2 (default 200),
 *          -deadline SECONDS.
 */
#include "ts.h"

#define UNTOUCHED 0x77

static const size_t sizes_cycle[] = {0, 17, 1000, 8150, 8193, 20000, 300 * 1024, 64};
#define NCYCLE (sizeof(sizes_cycle) / sizeof(sizes_cycle[0]))
#define MAXSZ (300 * 1024)

static size_t msize(int src, long i)
{
    size_t s = sizes_cycle[(size_t) (i + src) % NCYCLE];
    return s ? s + (size_t) (src % 3) : 0;
}

static double deadline_s = 60;

/* ------------------------------------------------------------------ */

static void phase1(long n)
{
    double t0 = tc_now();
    for (int recv = 0; recv < tc_size; ++recv) {
        int tag = 100 + recv;
        if (tc_rank == recv) {
            long total = n * (tc_size - 1);
            MPI_Request *rq = ts_malloc(sizeof(*rq) * (size_t) total);
            unsigned char **bufs = ts_malloc(sizeof(*bufs) * (size_t) total);
            MPI_Status *st = ts_malloc(sizeof(*st) * (size_t) total);
            for (long k = 0; k < total; ++k) {
                bufs[k] = ts_malloc(MAXSZ + 8);
                MPI_CHECK(MPI_Irecv(bufs[k], MAXSZ + 8, MPI_BYTE, MPI_ANY_SOURCE, tag,
                                    MPI_COMM_WORLD, &rq[k]));
            }
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            MPI_CHECK(MPI_Waitall((int) total, rq, st));
            long *next = calloc((size_t) tc_size, sizeof(long));
            CHECK(next != NULL, "calloc");
            for (long k = 0; k < total; ++k) {
                int s = st[k].MPI_SOURCE;
                CHECK(s >= 0 && s < tc_size && s != recv,
                      "phase 1: wildcard receive %ld on rank %d matched source %d", k, recv, s);
                long i = next[s]++;
                CHECK(i < n, "phase 1: more than %ld messages from rank %d", n, s);
                char what[160];
                snprintf(what, sizeof(what),
                         "phase 1: receive %ld (MPI_ANY_SOURCE, posted before the send) on rank "
                         "%d = message %ld of rank %d",
                         k, recv, i, s);
                ts_check_status(what, &st[k], MPI_BYTE, s, tag, (long long) msize(s, i));
                tc_verify(what, bufs[k], s, msize(s, i), (unsigned) (recv * 100000 + i));
                free(bufs[k]);
            }
            for (int s = 0; s < tc_size; ++s) {
                CHECK(s == recv || next[s] == n,
                      "phase 1: rank %d received %ld messages from rank %d, expected %ld", recv,
                      next[s], s, n);
            }
            free(next);
            free(rq);
            free(bufs);
            free(st);
        } else {
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            unsigned char *b = ts_malloc(MAXSZ + 8);
            for (long i = 0; i < n; ++i) {
                size_t sz = msize(tc_rank, i);
                tc_fill(b, tc_rank, sz, (unsigned) (recv * 100000 + i));
                MPI_CHECK(MPI_Send(b, (int) sz, MPI_BYTE, recv, tag, MPI_COMM_WORLD));
            }
            free(b);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_say("phase 1: every rank in turn received %ld messages per sender through pre-posted "
           "MPI_ANY_SOURCE receives, all checked, in %.2fs",
           n, tc_now() - t0);
}

/* ------------------------------------------------------------------ */

static int p2_tag(int src, long i)
{
    return (int) ((i * 7 + src) % 50);
}

static void phase2(long n)
{
    double t0 = tc_now();
    long iprobe_calls = 0, mrecvs = 0;
    if (tc_rank == 0) {
        long total = n * (tc_size - 1);
        long *next = calloc((size_t) tc_size, sizeof(long));
        CHECK(next != NULL, "calloc");
        int flag = 1;
        MPI_Status st;
        /* nothing has been sent yet with this tag, nor ever will be */
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0, "phase 2: MPI_Iprobe found a message with tag 999 (source %d), "
                         "which nobody sends",
              st.MPI_SOURCE);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (long k = 0; k < total; ++k) {
            double start = tc_now();
            flag = 0;
            while (!flag) {
                MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
                ++iprobe_calls;
                if (!flag && tc_now() - start > deadline_s) {
                    FAILF("phase 2: MPI_Iprobe found no message for %.0fs (%ld of %ld received)",
                          deadline_s, k, total);
                }
            }
            int s = st.MPI_SOURCE;
            CHECK(s > 0 && s < tc_size, "phase 2: MPI_Iprobe reported source %d", s);
            long i = next[s]++;
            CHECK(i < n, "phase 2: more than %ld messages from rank %d", n, s);
            size_t sz = msize(s, i);
            char what[160];
            snprintf(what, sizeof(what), "phase 2: probed message %ld of rank %d (tag %d, %zu B)",
                     i, s, p2_tag(s, i), sz);
            /* per-source order: the probe of ANY_TAG shows the sender's
             * oldest message */
            ts_check_status(what, &st, MPI_BYTE, s, p2_tag(s, i), (long long) sz);
            unsigned char *b = ts_malloc(sz + 8);
            memset(b + sz, UNTOUCHED, 8);
            MPI_Status rs;
            if (k % 2) {
                MPI_Message msg;
                flag = 0;
                /* the probed message is still there and still the oldest */
                MPI_CHECK(MPI_Improbe(s, st.MPI_TAG, MPI_COMM_WORLD, &flag, &msg, &rs));
                CHECK(flag, "%s: MPI_Improbe by source and tag does not find it", what);
                ts_check_status(what, &rs, MPI_BYTE, s, p2_tag(s, i), (long long) sz);
                MPI_CHECK(MPI_Mrecv(b, (int) sz, MPI_BYTE, &msg, &rs));
                CHECK(msg == MPI_MESSAGE_NULL, "%s: MPI_Mrecv left the message handle set", what);
                ++mrecvs;
            } else {
                MPI_CHECK(MPI_Recv(b, (int) sz, MPI_BYTE, s, st.MPI_TAG, MPI_COMM_WORLD, &rs));
            }
            ts_check_status(what, &rs, MPI_BYTE, s, p2_tag(s, i), (long long) sz);
            tc_verify(what, b, s, sz, (unsigned) (7000000 + i));
            for (int g = 0; g < 8; ++g) {
                CHECK(b[sz + g] == UNTOUCHED, "%s: received past its probed size", what);
            }
            free(b);
        }
        for (int s = 1; s < tc_size; ++s) {
            CHECK(next[s] == n, "phase 2: %ld messages from rank %d, expected %ld", next[s], s, n);
        }
        flag = 1;
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
        CHECK(flag == 0, "phase 2: after all messages were received MPI_Iprobe still finds one "
                         "(source %d tag %d)",
              st.MPI_SOURCE, st.MPI_TAG);
        free(next);
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        unsigned char *b = ts_malloc(MAXSZ + 8);
        for (long i = 0; i < n; ++i) {
            size_t sz = msize(tc_rank, i);
            tc_fill(b, tc_rank, sz, (unsigned) (7000000 + i));
            MPI_CHECK(MPI_Send(b, (int) sz, MPI_BYTE, 0, p2_tag(tc_rank, i), MPI_COMM_WORLD));
        }
        free(b);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("phase 2: %ld messages found by MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG) (%ld Iprobe "
           "calls), %ld of them taken by MPI_Improbe/MPI_Mrecv, all checked, in %.2fs",
           n * (tc_size - 1), iprobe_calls, mrecvs, tc_now() - t0);
}

/* ------------------------------------------------------------------ */

static void check_untouched(const char *what, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        if (b[i] != UNTOUCHED) {
            FAILF("%s: byte %zu of the cancelled receive's buffer was written (0x%02x)", what, i,
                  b[i]);
        }
    }
}

static void cancel_unmatched(int source, size_t size, int tag)
{
    char what[128];
    snprintf(what, sizeof(what), "phase 3a: cancel of MPI_Irecv(source %s, tag %d, %zu B)",
             source == MPI_ANY_SOURCE ? "ANY" : tc_fmt("%d", source), tag, size);
    unsigned char *b = ts_malloc(size);
    memset(b, UNTOUCHED, size);
    MPI_Request rq;
    MPI_Status st;
    int cancelled = 0;
    MPI_CHECK(MPI_Irecv(b, (int) size, MPI_BYTE, source, tag, MPI_COMM_WORLD, &rq));
    MPI_CHECK(MPI_Cancel(&rq));
    MPI_CHECK(MPI_Wait(&rq, &st));
    CHECK(rq == MPI_REQUEST_NULL, "%s: request not freed by MPI_Wait", what);
    MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
    CHECK(cancelled, "%s: MPI_Test_cancelled says it was not cancelled (source %d tag %d)", what,
          st.MPI_SOURCE, st.MPI_TAG);
    check_untouched(what, b, size);
    free(b);
}

static void phase3(void)
{
    double t0 = tc_now();
    /* a) nobody sends these tags */
    int peer = (tc_rank + 1) % tc_size;
    cancel_unmatched(MPI_ANY_SOURCE, 1, 2000);
    cancel_unmatched(MPI_ANY_SOURCE, 1 * TS_MIB, 2001);
    cancel_unmatched(peer, 100, 2002);
    cancel_unmatched(peer, 4 * TS_MIB + 1, 2003);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* b) a cancelled receive does not take a later message */
    static const size_t bsizes[] = {0, 100, 8193, 600 * 1024};
    for (size_t k = 0; k < sizeof(bsizes) / sizeof(bsizes[0]); ++k) {
        size_t sz = bsizes[k];
        int tag = 2100 + (int) k;
        char what[128];
        snprintf(what, sizeof(what), "phase 3b: %zu-byte message after a cancelled receive", sz);
        if (tc_rank == 0) {
            unsigned char *cb = ts_malloc(sz + 16), *rb = ts_malloc(sz + 1);
            memset(cb, UNTOUCHED, sz + 16);
            MPI_Request rq;
            MPI_Status st;
            int cancelled = 0;
            MPI_CHECK(MPI_Irecv(cb, (int) (sz + 16), MPI_BYTE, k % 2 ? MPI_ANY_SOURCE : 1, tag,
                                MPI_COMM_WORLD, &rq));
            MPI_CHECK(MPI_Cancel(&rq));
            MPI_CHECK(MPI_Wait(&rq, &st));
            MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
            CHECK(cancelled, "%s: the receive was not cancelled although nothing was sent yet",
                  what);
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD)); /* now rank 1 sends */
            MPI_CHECK(MPI_Recv(rb, (int) sz, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st));
            ts_check_status(what, &st, MPI_BYTE, 1, tag, (long long) sz);
            tc_verify(what, rb, 1, sz, 3000 + (unsigned) k);
            check_untouched(what, cb, sz + 16);
            free(cb);
            free(rb);
        } else {
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            if (tc_rank == 1) {
                unsigned char *sb = ts_malloc(sz + 1);
                tc_fill(sb, 1, sz, 3000 + (unsigned) k);
                MPI_CHECK(MPI_Send(sb, (int) sz, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
                free(sb);
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }

    /* c) a matched receive cannot be cancelled */
    static const size_t csizes[] = {10, 700 * 1024};
    for (size_t k = 0; k < sizeof(csizes) / sizeof(csizes[0]); ++k) {
        size_t sz = csizes[k];
        int tag = 2200 + (int) k;
        char what[128];
        snprintf(what, sizeof(what), "phase 3c: cancel of a completed %zu-byte receive", sz);
        if (tc_rank == 0) {
            unsigned char *rb = ts_malloc(sz);
            MPI_Request rq;
            MPI_Status st;
            int flag = 0, cancelled = 1;
            MPI_CHECK(MPI_Irecv(rb, (int) sz, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &rq));
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            double start = tc_now();
            while (!flag) {
                /* completes without freeing the request */
                MPI_CHECK(MPI_Request_get_status(rq, &flag, &st));
                if (!flag && tc_now() - start > deadline_s) {
                    FAILF("%s: receive not complete after %.0fs", what, deadline_s);
                }
            }
            MPI_CHECK(MPI_Cancel(&rq));
            MPI_CHECK(MPI_Wait(&rq, &st));
            MPI_CHECK(MPI_Test_cancelled(&st, &cancelled));
            CHECK(!cancelled, "%s: MPI_Test_cancelled says cancelled", what);
            ts_check_status(what, &st, MPI_BYTE, 1, tag, (long long) sz);
            tc_verify(what, rb, 1, sz, 4000 + (unsigned) k);
            free(rb);
        } else {
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            if (tc_rank == 1) {
                unsigned char *sb = ts_malloc(sz);
                tc_fill(sb, 1, sz, 4000 + (unsigned) k);
                MPI_CHECK(MPI_Send(sb, (int) sz, MPI_BYTE, 0, tag, MPI_COMM_WORLD));
                free(sb);
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_say("phase 3: cancelled unmatched receives (4 per rank), cancelled receive followed by "
           "a message (4 sizes), cancel of a matched receive (2 sizes): all checked in %.2fs",
           tc_now() - t0);
}

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "match");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    long n = (long) ts_arg_size(argc, argv, "-n", 200);
    deadline_s = (double) ts_arg_size(argc, argv, "-deadline", 60);
    CHECK(n >= 1 && n <= 100000, "-n %ld out of range", n);

    ts_snap_t s0, s1;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    ts_snap(&s0);
    phase1(n);
    phase2(n);
    phase3();
    ts_snap(&s1);

    ts_delta_t d = ts_delta(&s0, &s1);
    ts_print_deltas(MPI_COMM_WORLD, "match", &d);
    /* every rank sends n messages to every other rank in phase 1 */
    unsigned long long sent = (unsigned long long) n * (unsigned long long) (tc_size - 1);
    if (ts_have_send && tc_check_ours_enabled()) {
        CHECK(d.sends >= sent,
              "btl_ofi_send_count grew by %llu, fewer than the %llu messages this rank sent in "
              "phase 1: two-sided traffic did not go through our btl/ofi?",
              d.sends, sent);
    }
    ts_finish();
    return 0;
}
