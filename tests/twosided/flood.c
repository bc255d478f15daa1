/*
 * flood: unexpected messages in bulk.
 *
 * Phase 1 (many-to-one): ranks 1..n-1 each post -n (default 3000) MPI_Isend
 * to rank 0 with varying tags and sizes: mostly 0 B to 1 KiB, every 100th
 * 20 KiB (+ a few bytes, above the eager limit: rendezvous), every 500th
 * 100 KiB. Then everybody enters MPI_Barrier: rank 0 has posted no receive
 * yet, so everything that arrives is unexpected. After the barrier rank 0
 * receives all of it with MPI_ANY_SOURCE / MPI_ANY_TAG and checks, per
 * sender, that messages arrive in the order they were sent (MPI's
 * non-overtaking rule), with the right tag, size and every byte; the
 * senders then MPI_Waitall.
 *
 * Phase 2 (matching by tag): every sender posts 64 messages with tags 0..63
 * (one of them 20 KiB) before a barrier; rank 0 then receives them
 * by explicit (source, tag) in reverse order: last sender first, tag 63
 * first, so each receive has to search the unexpected queue.
 *
 * Phase 3 (all-to-all): every rank posts -n/6 messages to every other rank,
 * barrier, then receives from each with MPI_ANY_SOURCE and checks order
 * per sender, as in phase 1.
 *
 * Options: -n COUNT (messages per sender in phase 1).
 */
#include "ts.h"

#define MAXMSG (100 * 1024 + 64)

static size_t msg_size(int src, long i)
{
    if (i % 500 == 499) {
        return 100 * TS_KIB + (size_t) src;
    }
    if (i % 100 == 99) {
        return 20 * TS_KIB + (size_t) (i % 7);
    }
    return (size_t) ((i * 37 + src * 11) % 1025);
}

static int msg_tag(int src, long i)
{
    return (int) ((i * 13 + src) % 1000);
}

/* a distinct round number per phase, so that no phase can be confused with
 * another: the pattern also depends on the sender and the size */
static unsigned msg_round(int phase, long i)
{
    return (unsigned) (phase * 1000003L + i);
}

typedef struct {
    MPI_Request *reqs;
    unsigned char **bufs;
    long count;
} posted_t;

static void posted_alloc(posted_t *p, long count)
{
    p->count = count;
    p->reqs = ts_malloc(sizeof(*p->reqs) * (size_t) (count ? count : 1));
    p->bufs = ts_malloc(sizeof(*p->bufs) * (size_t) (count ? count : 1));
}

static void posted_wait_free(posted_t *p, const char *what)
{
    MPI_Status *sts = ts_malloc(sizeof(*sts) * (size_t) (p->count ? p->count : 1));
    int rc = MPI_Waitall((int) p->count, p->reqs, sts);
    if (rc != MPI_SUCCESS) {
        for (long i = 0; i < p->count; ++i) {
            CHECK(sts[i].MPI_ERROR == MPI_SUCCESS || sts[i].MPI_ERROR == MPI_ERR_PENDING,
                  "%s: send %ld of %ld failed with error %d", what, i, p->count,
                  sts[i].MPI_ERROR);
        }
        FAILF("%s: MPI_Waitall returned %d", what, rc);
    }
    for (long i = 0; i < p->count; ++i) {
        free(p->bufs[i]);
    }
    free(sts);
    free(p->reqs);
    free(p->bufs);
}

/* Receive `total' messages with ANY_SOURCE/ANY_TAG and check per-sender
 * order; next[src] is the index of the message expected next from src,
 * count[src] how many src sends. */
static void receive_any(int phase, long total, long *next, const long *count, unsigned char *buf)
{
    for (long k = 0; k < total; ++k) {
        MPI_Status st;
        MPI_CHECK(MPI_Recv(buf, MAXMSG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                           &st));
        int src = st.MPI_SOURCE;
        CHECK(src >= 0 && src < tc_size && src != tc_rank,
              "phase %d: receive %ld of %ld came from rank %d", phase, k, total, src);
        long i = next[src]++;
        CHECK(i < count[src],
              "phase %d: rank %d sent more than its %ld messages (receive %ld, tag %d)", phase, src,
              count[src], k, st.MPI_TAG);
        char what[160];
        snprintf(what, sizeof(what),
                 "phase %d: message %ld of rank %d (receive %ld here; per-sender order)", phase, i,
                 src, k);
        ts_check_status(what, &st, MPI_BYTE, src, msg_tag(src, i), (long long) msg_size(src, i));
        tc_verify(what, buf, src, msg_size(src, i), msg_round(phase, i));
    }
    for (int s = 0; s < tc_size; ++s) {
        CHECK(next[s] == count[s], "phase %d: received %ld messages from rank %d, expected %ld",
              phase, next[s], s, count[s]);
    }
}

static void post_to(posted_t *p, long first, int dest, int phase, long i)
{
    size_t n = msg_size(tc_rank, i);
    p->bufs[first] = ts_malloc(n);
    tc_fill(p->bufs[first], tc_rank, n, msg_round(phase, i));
    MPI_CHECK(MPI_Isend(p->bufs[first], (int) n, MPI_BYTE, dest, msg_tag(tc_rank, i),
                        MPI_COMM_WORLD, &p->reqs[first]));
}

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "flood");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    long n = (long) ts_arg_size(argc, argv, "-n", 3000);
    CHECK(n >= 1 && n <= 1000000, "-n %ld out of range", n);

    unsigned char *buf = ts_malloc(MAXMSG);
    long *next = calloc((size_t) tc_size, sizeof(long));
    long *count = calloc((size_t) tc_size, sizeof(long));
    CHECK(next && count, "calloc failed");
    ts_snap_t s0, s1;
    ts_snap(&s0);

    /* ---------------- phase 1: many to one ---------------- */
    double t0 = tc_now();
    tc_say("phase 1: ranks 1..%d each post %ld sends to rank 0 (every 100th 20 KiB, every 500th "
           "100 KiB), barrier, then rank 0 receives with MPI_ANY_SOURCE/MPI_ANY_TAG",
           tc_size - 1, n);
    if (tc_rank == 0) {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int s = 1; s < tc_size; ++s) {
            count[s] = n;
        }
        receive_any(1, n * (tc_size - 1), next, count, buf);
    } else {
        posted_t p;
        posted_alloc(&p, n);
        for (long i = 0; i < n; ++i) {
            post_to(&p, i, 0, 1, i);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        posted_wait_free(&p, "phase 1");
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("phase 1: %ld messages checked in %.2fs", n * (tc_size - 1), tc_now() - t0);

    /* ---------------- phase 2: by tag, reverse order ---------------- */
    t0 = tc_now();
    enum { NTAGS = 64 };
    if (tc_rank == 0) {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int s = tc_size - 1; s >= 1; --s) {
            for (int t = NTAGS - 1; t >= 0; --t) {
                size_t sz = t == 37 ? 20 * TS_KIB + 3 : (size_t) (t * 29 + s) % 700;
                MPI_Status st;
                char what[120];
                snprintf(what, sizeof(what), "phase 2: rank %d tag %d received by (source, tag)",
                         s, t);
                MPI_CHECK(MPI_Recv(buf, MAXMSG, MPI_BYTE, s, t, MPI_COMM_WORLD, &st));
                ts_check_status(what, &st, MPI_BYTE, s, t, (long long) sz);
                tc_verify(what, buf, s, sz, msg_round(2, t));
            }
        }
    } else {
        posted_t p;
        posted_alloc(&p, NTAGS);
        for (int t = 0; t < NTAGS; ++t) {
            size_t sz = t == 37 ? 20 * TS_KIB + 3 : (size_t) (t * 29 + tc_rank) % 700;
            p.bufs[t] = ts_malloc(sz);
            tc_fill(p.bufs[t], tc_rank, sz, msg_round(2, t));
            MPI_CHECK(MPI_Isend(p.bufs[t], (int) sz, MPI_BYTE, 0, t, MPI_COMM_WORLD, &p.reqs[t]));
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        posted_wait_free(&p, "phase 2");
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("phase 2: %d tags from each of %d senders received in reverse order in %.2fs", NTAGS,
           tc_size - 1, tc_now() - t0);

    /* ---------------- phase 3: all to all ---------------- */
    t0 = tc_now();
    long m = n / 6 > 0 ? n / 6 : 1;
    {
        posted_t p;
        posted_alloc(&p, m * (tc_size - 1));
        long k = 0;
        /* interleave destinations so that all peers are flooded at once */
        for (long i = 0; i < m; ++i) {
            for (int d = 1; d < tc_size; ++d) {
                post_to(&p, k++, (tc_rank + d) % tc_size, 3, i);
            }
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int s = 0; s < tc_size; ++s) {
            next[s] = 0;
            count[s] = s == tc_rank ? 0 : m;
        }
        receive_any(3, m * (tc_size - 1), next, count, buf);
        posted_wait_free(&p, "phase 3");
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("phase 3: every rank sent %ld messages to each other rank; all checked in %.2fs", m,
           tc_now() - t0);

    ts_snap(&s1);
    ts_delta_t d = ts_delta(&s0, &s1);
    ts_print_deltas(MPI_COMM_WORLD, "flood", &d);
    long sent = (tc_rank == 0 ? 0 : n + NTAGS) + m * (tc_size - 1);
    if (ts_have_send && tc_check_ours_enabled()) {
        CHECK(d.sends >= (unsigned long long) sent,
              "btl_ofi_send_count grew by %llu, fewer than the %ld messages this rank sent: "
              "two-sided traffic did not go through our btl/ofi?",
              d.sends, sent);
    }

    free(buf);
    free(next);
    free(count);
    ts_finish();
    return 0;
}
