/*
 * late: a receiver that is away while every other rank floods it.
 *
 * Each round, ranks 1..n-1 post -n (default 400) MPI_Isend to rank 0 of
 * every size class the btl carries: tiny, around the provider's segment
 * size (about 1.2 KiB on udp;ofi_rxd), a few KiB, just under and just over
 * the eager limit, max_send_size pieces of the send protocol, and RDMA
 * rendezvous. Rank 0 meanwhile computes outside MPI for -d milliseconds
 * (default 1500): it makes no progress, so nothing it is sent can be
 * matched; the providers' unexpected-message paths, flow control and
 * (on udp;ofi_rxd) retransmission after timeouts carry everything. Then
 * rank 0 receives it all with MPI_ANY_SOURCE/MPI_ANY_TAG, checking per
 * sender the order, tag, size and every byte; the senders MPI_Waitall.
 * The receiver's absence is the condition under test, not a wait for a
 * result: every message is checked whatever the timing.
 *
 * Options: -n COUNT (messages per sender per round), -d MS (time away),
 * -r ROUNDS (default 3), -size BYTES (every message this size instead of
 * the classes: 1250 makes each one an RDMA get of a little more than one
 * datagram on udp;ofi_rxd, the case where its own reads lost data).
 */
#include "ts.h"

#define MAXMSG (160 * 1024 + 64)

static size_t fixed_size; /* -size: every message this size */

/* the size classes, cycled per message and shifted per sender */
static size_t msg_size(int src, long i)
{
    static const size_t base[] = {0,     1,     200,   1100,  1300,  2600,  4096, 9000,
                                  12280, 12300, 30000, 65000, 65600, 80000, 160 * 1024};
    const size_t n = sizeof(base) / sizeof(base[0]);
    if (fixed_size > 0) {
        return fixed_size;
    }
    size_t s = base[(size_t) (i + src) % n];
    /* a few bytes more or less, so that no two senders' sizes line up */
    return s >= 16 ? s - (size_t) ((i + 3 * src) % 16) : s;
}

static int msg_tag(int src, long i)
{
    return (int) ((i * 7 + src) % 500);
}

static void compute_for(double ms)
{
    volatile double x = 1.0;
    double end = tc_now() + ms / 1000.0;
    while (tc_now() < end) {
        for (int k = 0; k < 10000; ++k) {
            x = x * 1.0000001 + 1e-9;
        }
    }
}

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "late");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    long n = (long) ts_arg_size(argc, argv, "-n", 400);
    long away = (long) ts_arg_size(argc, argv, "-d", 1500);
    long rounds = (long) ts_arg_size(argc, argv, "-r", 3);
    CHECK(n >= 1 && n <= 100000, "-n %ld out of range", n);
    fixed_size = ts_arg_size(argc, argv, "-size", 0);
    CHECK(fixed_size <= MAXMSG, "-size %zu out of range", fixed_size);

    unsigned char *buf = ts_malloc(MAXMSG);
    long *next = calloc((size_t) tc_size, sizeof(long));
    CHECK(NULL != next, "calloc failed");
    ts_snap_t s0, s1;
    ts_snap(&s0);

    for (long r = 0; r < rounds; ++r) {
        double t0 = tc_now();
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (0 == tc_rank) {
            compute_for((double) away);
            for (int s = 0; s < tc_size; ++s) {
                next[s] = 0;
            }
            for (long k = 0; k < n * (tc_size - 1); ++k) {
                MPI_Status st;
                MPI_CHECK(MPI_Recv(buf, MAXMSG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                                   MPI_COMM_WORLD, &st));
                int src = st.MPI_SOURCE;
                CHECK(src > 0 && src < tc_size, "round %ld: receive %ld came from rank %d", r, k,
                      src);
                long i = next[src]++;
                CHECK(i < n, "round %ld: rank %d sent more than its %ld messages", r, src, n);
                char what[160];
                snprintf(what, sizeof(what), "round %ld: message %ld of rank %d (%zu bytes)", r, i,
                         src, msg_size(src, i));
                ts_check_status(what, &st, MPI_BYTE, src, msg_tag(src, i),
                                (long long) msg_size(src, i));
                tc_verify(what, buf, src, msg_size(src, i), (unsigned) (r * 100003 + i));
            }
        } else {
            MPI_Request *reqs = ts_malloc(sizeof(*reqs) * (size_t) n);
            unsigned char **bufs = ts_malloc(sizeof(*bufs) * (size_t) n);
            for (long i = 0; i < n; ++i) {
                size_t sz = msg_size(tc_rank, i);
                bufs[i] = ts_malloc(sz ? sz : 1);
                tc_fill(bufs[i], tc_rank, sz, (unsigned) (r * 100003 + i));
                MPI_CHECK(MPI_Isend(bufs[i], (int) sz, MPI_BYTE, 0, msg_tag(tc_rank, i),
                                    MPI_COMM_WORLD, &reqs[i]));
            }
            MPI_CHECK(MPI_Waitall((int) n, reqs, MPI_STATUSES_IGNORE));
            for (long i = 0; i < n; ++i) {
                free(bufs[i]);
            }
            free(bufs);
            free(reqs);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        tc_say("round %ld: rank 0 away %ld ms, then %ld messages from %d senders checked "
               "(%.2fs)",
               r, away, n * (tc_size - 1), tc_size - 1, tc_now() - t0);
    }

    ts_snap(&s1);
    ts_delta_t d = ts_delta(&s0, &s1);
    ts_print_deltas(MPI_COMM_WORLD, "late", &d);
    if (ts_have_send && tc_check_ours_enabled() && 0 != tc_rank) {
        CHECK(d.sends >= (unsigned long long) (n * rounds),
              "btl_ofi_send_count grew by %llu, fewer than the %ld messages this rank sent: "
              "two-sided traffic did not go through our btl/ofi?",
              d.sends, n * rounds);
    }
    if (tc_check_ours_enabled()) {
        /* sockets: to a peer of this node at most 20 KiB of messages in
         * flight (mca_btl_ofi_stream_room), so the senders' messages to
         * rank 0 while it is away wait; more piled up in rank 0's socket,
         * which stopped a connection for good about 1 run in 30. With
         * -size above the eager limit (lateget, lateput) the senders' are
         * small rendezvous headers, which may never wait. Other providers
         * have no budget. The job runs on one node. */
        char prov[64] = "";
        unsigned long long held = s1.rma.v[TC_STREAM_HELD] - s0.rma.v[TC_STREAM_HELD];
        unsigned long long all = 0;
        const int budget = 0 == tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov))
                           && 0 == strcmp(prov, "sockets");
        MPI_CHECK(MPI_Allreduce(&held, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
        CHECK(budget ? all > 0 || fixed_size > 0 : 0 == all,
              "btl_ofi_stream_held grew by %llu in all on %s, expected %s", all, prov,
              budget ? "more than 0 (a budget per peer of this node)" : "0 (no budget there)");
        if (0 == tc_rank) {
            tc_say("btl_ofi_stream_held +%llu in all on %s", all, prov);
        }
    }
    free(buf);
    free(next);
    ts_finish();
    return 0;
}
