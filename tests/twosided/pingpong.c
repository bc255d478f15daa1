/*
 * pingpong: two-sided messages between ranks 0 and 1 of every size from
 * 0 B to 64 MiB (0, and 2^k-1, 2^k, 2^k+1 for every k), each byte checked,
 * in both directions; then strided datatypes. Other ranks wait in a barrier.
 *
 * Every (size, direction) travels in four ways, so that each protocol of
 * pml/ob1 meets both matching orders:
 *   send   MPI_Send against MPI_Recv, whichever comes first;
 *   exp    the receive is posted (MPI_Irecv) before the sender starts;
 *   unexp  the message (or its rendezvous request) reaches the receiver
 *          before the receive is posted (MPI_Isend, then a barrier);
 *   ssend  MPI_Ssend (synchronous mode) against MPI_Recv.
 * Above -modes-upto only one of the four is used per size, in turn.
 *
 * Data: byte i of a message of n bytes sent by rank r in way w is
 * tc_pattern(r, n, i, w), so a byte from the other direction, another size
 * or an earlier message shows. Before each receive the buffer holds the
 * complement of what is expected, so any byte not written shows too, and
 * guard bytes on both sides must stay untouched.
 *
 * Window: 8 messages in flight from one rank to the other (1 KiB to 4 MiB,
 * up to -max/8), receives posted before and after the sends, both ways.
 *
 * Strided: MPI_Type_vector(count, blk, 2*blk, MPI_BYTE) for a set of
 * (blk, count) from 1 B to 64 MiB of payload, as vector->vector,
 * vector->contiguous and contiguous->vector; the gaps of a receiving
 * vector buffer must be untouched.
 *
 * Options:
 *   -max SIZE        largest contiguous size (default 64m)
 *   -vmax SIZE       largest strided payload (default 64m, 0: no strided)
 *   -modes-upto SIZE sizes above it use one way each (default: all four
 *                    ways for every size)
 *   -proto NAME      which rendezvous protocol the runner forced, checked
 *                    through the MPI_T counters of the contiguous sweep:
 *                      any   print only (default)
 *                      get   RGET: the receiver reads large messages with
 *                            btl get; no puts
 *                      put   RPUT: the sender writes with btl put; no gets
 *                      send  copy pipeline: no put, no get at all
 *                    and, with every one, btl_ofi_send_count must grow by
 *                    at least one per message (when the pvar exists).
 */
#include "ts.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define GAP_BYTE 0x3C
#define SENDER_GAP_BYTE 0xEE

enum { W_SEND, W_EXP, W_UNEXP, W_SSEND, W_COUNT };
static const char *const way_names[W_COUNT] = {"send", "exp", "unexp", "ssend"};

static MPI_Comm pair; /* ranks 0 and 1 of MPI_COMM_WORLD */
static int me;        /* rank in pair */

/* ------------------------------------------------------------------ */
/* contiguous                                                          */
/* ------------------------------------------------------------------ */

static void fill_complement(unsigned char *buf, int origin, size_t n, unsigned round)
{
    for (size_t i = 0; i < n; ++i) {
        buf[i] = (unsigned char) ~tc_pattern(origin, n, i, round);
    }
}

static void check_guards(const char *what, const unsigned char *body, size_t n)
{
    for (size_t i = 0; i < GUARD; ++i) {
        if (body[-(ptrdiff_t) GUARD + (ptrdiff_t) i] != GUARD_BYTE) {
            FAILF("%s: guard byte %zd before the buffer overwritten (0x%02x)", what,
                  (ptrdiff_t) i - GUARD, body[-(ptrdiff_t) GUARD + (ptrdiff_t) i]);
        }
        if (body[n + i] != GUARD_BYTE) {
            FAILF("%s: guard byte %zu after the %zu-byte message overwritten (0x%02x)", what, i, n,
                  body[n + i]);
        }
    }
}

/*
 * One message of n bytes from pair rank `from' to the other, in way w.
 * Both ranks call it. sbuf/rbuf point at the body (guards around rbuf).
 */
static void one_message(int from, size_t n, int w, int tag, unsigned char *sbuf,
                        unsigned char *rbuf, const char *label)
{
    int to = 1 - from;
    char what[160];
    MPI_Request req;
    MPI_Status st;

    snprintf(what, sizeof(what), "%s: %zu bytes rank %d -> rank %d way %s", label, n, from, to,
             way_names[w]);
    if (me == from) {
        tc_fill(sbuf, from, n, (unsigned) w);
    } else {
        fill_complement(rbuf, from, n, (unsigned) w);
        memset(rbuf + n, GUARD_BYTE, GUARD);
    }

    switch (w) {
    case W_SEND:
    case W_SSEND:
        if (me == from) {
            if (w == W_SEND) {
                MPI_CHECK(MPI_Send(sbuf, (int) n, MPI_BYTE, to, tag, pair));
            } else {
                MPI_CHECK(MPI_Ssend(sbuf, (int) n, MPI_BYTE, to, tag, pair));
            }
        } else {
            MPI_CHECK(MPI_Recv(rbuf, (int) n, MPI_BYTE, from, tag, pair, &st));
        }
        break;
    case W_EXP:
        if (me == from) {
            MPI_CHECK(MPI_Barrier(pair));
            MPI_CHECK(MPI_Send(sbuf, (int) n, MPI_BYTE, to, tag, pair));
        } else {
            MPI_CHECK(MPI_Irecv(rbuf, (int) n, MPI_BYTE, from, tag, pair, &req));
            MPI_CHECK(MPI_Barrier(pair));
            MPI_CHECK(MPI_Wait(&req, &st));
        }
        break;
    case W_UNEXP:
        if (me == from) {
            MPI_CHECK(MPI_Isend(sbuf, (int) n, MPI_BYTE, to, tag, pair, &req));
            MPI_CHECK(MPI_Barrier(pair));
            MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            MPI_CHECK(MPI_Barrier(pair));
            MPI_CHECK(MPI_Recv(rbuf, (int) n, MPI_BYTE, from, tag, pair, &st));
        }
        break;
    }

    if (me != from) {
        ts_check_status(what, &st, MPI_BYTE, from, tag, (long long) n);
        tc_verify(what, rbuf, from, n, (unsigned) w);
        check_guards(what, rbuf, n);
    }
}

/* 0, then 2^k-1, 2^k, 2^k+1 for k = 0.. up to max (duplicates removed). */
static int make_sizes(size_t max, size_t *sizes, int cap)
{
    int n = 0;
    sizes[n++] = 0;
    for (int k = 0; k < 62; ++k) {
        size_t p = (size_t) 1 << k;
        size_t cand[3] = {p - 1, p, p + 1};
        if (p - 1 > max) {
            break;
        }
        for (int j = 0; j < 3; ++j) {
            if (cand[j] <= max && cand[j] > sizes[n - 1]) {
                CHECK(n < cap, "too many sizes");
                sizes[n++] = cand[j];
            }
        }
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* strided                                                             */
/* ------------------------------------------------------------------ */

typedef struct {
    size_t blk, count;
} vcase_t;

static const vcase_t vcases[] = {
    {1, 1},       {1, 100},     {3, 1365},     {8, 1024},   {7, 1171},
    {64, 512},    {100, 400},   {1, 262144},   {1000, 1049}, {4096, 1024},
    {65536, 256},  {262144, 256},
};

enum { C_VV, C_VC, C_CV, C_COUNT };
static const char *const combo_names[C_COUNT] = {"vector->vector", "vector->contiguous",
                                                 "contiguous->vector"};

/* offset of payload byte j in a vector buffer */
static inline size_t voff(size_t j, size_t blk)
{
    return (j / blk) * 2 * blk + j % blk;
}

static void strided_message(int from, const vcase_t *vc, int combo, int w, int tag,
                            MPI_Datatype vec, unsigned char *sbuf, unsigned char *rbuf)
{
    int to = 1 - from;
    size_t payload = vc->blk * vc->count;
    size_t span = payload * 2; /* count * 2 * blk: blocks, gaps, trailing gap */
    int send_vec = combo == C_VV || combo == C_VC;
    int recv_vec = combo == C_VV || combo == C_CV;
    unsigned round = 16 + (unsigned) combo;
    char what[200];
    MPI_Status st;
    MPI_Request req;

    snprintf(what, sizeof(what), "strided blk=%zu count=%zu (%zu bytes) %s rank %d -> rank %d way %s",
             vc->blk, vc->count, payload, combo_names[combo], from, to, way_names[w]);

    if (me == from) {
        if (send_vec) {
            memset(sbuf, SENDER_GAP_BYTE, span);
            for (size_t j = 0; j < payload; ++j) {
                sbuf[voff(j, vc->blk)] = tc_pattern(from, payload, j, round);
            }
        } else {
            tc_fill(sbuf, from, payload, round);
        }
    } else {
        if (recv_vec) {
            memset(rbuf, GAP_BYTE, span + GUARD);
            for (size_t j = 0; j < payload; ++j) {
                rbuf[voff(j, vc->blk)] = (unsigned char) ~tc_pattern(from, payload, j, round);
            }
        } else {
            fill_complement(rbuf, from, payload, round);
            memset(rbuf + payload, GUARD_BYTE, GUARD);
        }
    }

    if (me == from) {
        if (w == W_UNEXP) {
            if (send_vec) {
                MPI_CHECK(MPI_Isend(sbuf, 1, vec, to, tag, pair, &req));
            } else {
                MPI_CHECK(MPI_Isend(sbuf, (int) payload, MPI_BYTE, to, tag, pair, &req));
            }
            MPI_CHECK(MPI_Barrier(pair));
            MPI_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else if (send_vec) {
            MPI_CHECK(MPI_Send(sbuf, 1, vec, to, tag, pair));
        } else {
            MPI_CHECK(MPI_Send(sbuf, (int) payload, MPI_BYTE, to, tag, pair));
        }
        return;
    }

    if (w == W_UNEXP) {
        MPI_CHECK(MPI_Barrier(pair));
    }
    if (recv_vec) {
        MPI_CHECK(MPI_Recv(rbuf, 1, vec, from, tag, pair, &st));
        ts_check_status(what, &st, MPI_BYTE, from, tag, (long long) payload);
        size_t bad = 0, first = 0, badgap = 0, firstgap = 0;
        for (size_t b = 0; b < vc->count; ++b) {
            const unsigned char *blk = rbuf + b * 2 * vc->blk;
            for (size_t e = 0; e < vc->blk; ++e) {
                size_t j = b * vc->blk + e;
                if (blk[e] != tc_pattern(from, payload, j, round) && bad++ == 0) {
                    first = j;
                }
                if (blk[vc->blk + e] != GAP_BYTE && badgap++ == 0) {
                    firstgap = b * 2 * vc->blk + vc->blk + e;
                }
            }
        }
        if (bad) {
            FAILF("%s: %zu of %zu payload bytes differ; first is payload byte %zu (buffer offset "
                  "%zu): got 0x%02x expected 0x%02x",
                  what, bad, payload, first, voff(first, vc->blk), rbuf[voff(first, vc->blk)],
                  tc_pattern(from, payload, first, round));
        }
        if (badgap) {
            FAILF("%s: %zu gap bytes of the receive buffer were written; first at buffer offset "
                  "%zu: 0x%02x (gap byte is 0x%02x)",
                  what, badgap, firstgap, rbuf[firstgap], GAP_BYTE);
        }
        for (size_t i = 0; i < GUARD; ++i) {
            CHECK(rbuf[span + i] == GAP_BYTE, "%s: byte %zu after the vector buffer written", what,
                  i);
        }
    } else {
        MPI_CHECK(MPI_Recv(rbuf, (int) payload, MPI_BYTE, from, tag, pair, &st));
        ts_check_status(what, &st, MPI_BYTE, from, tag, (long long) payload);
        tc_verify(what, rbuf, from, payload, round);
        check_guards(what, rbuf, payload);
    }
}

/* ------------------------------------------------------------------ */

/*
 * WINDOW messages of n bytes in flight from one rank to the other (receives
 * posted first on even rounds, after the sends on odd ones), ROUNDS times per
 * size, each way. A transport that refuses a fragment while another large
 * message is in flight, and leaves the retry to ob1, stalls here: ob1 only
 * retries when one of its sends completes.
 */
#define WINDOW 8
static void window_phase(size_t max, unsigned char *sbuf, unsigned char *rbuf)
{
    static const size_t wsizes[] = {1024, 9000, 16384, 20000, 65536, 262145, 1048576, 4194304};
    MPI_Request reqs[WINDOW];
    MPI_Status sts[WINDOW];
    double t0 = tc_now();
    int ncases = 0;

    for (size_t k = 0; k < sizeof(wsizes) / sizeof(wsizes[0]); ++k) {
        size_t n = wsizes[k];
        int rounds = n >= TS_MIB ? 2 : 12;
        if (n * WINDOW > max) {
            continue;
        }
        ++ncases;
        for (int r = 0; r < 2 * rounds; ++r) {
            int from = r % 2, pre = (r / 2) % 2;
            int tag = 32000 + (int) k * 64 + r;
            char what[160];
            if (me == from) {
                for (int j = 0; j < WINDOW; ++j) {
                    tc_fill(sbuf + (size_t) j * n, from, n, (unsigned) (r * WINDOW + j));
                }
                if (pre) {
                    MPI_CHECK(MPI_Barrier(pair));
                }
                for (int j = 0; j < WINDOW; ++j) {
                    MPI_CHECK(MPI_Isend(sbuf + (size_t) j * n, (int) n, MPI_BYTE, 1 - from, tag,
                                        pair, &reqs[j]));
                }
                if (!pre) {
                    MPI_CHECK(MPI_Barrier(pair));
                }
                MPI_CHECK(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE));
            } else {
                memset(rbuf, 0, n * WINDOW);
                if (pre) {
                    for (int j = 0; j < WINDOW; ++j) {
                        MPI_CHECK(MPI_Irecv(rbuf + (size_t) j * n, (int) n, MPI_BYTE, from, tag,
                                            pair, &reqs[j]));
                    }
                }
                MPI_CHECK(MPI_Barrier(pair));
                if (!pre) {
                    for (int j = 0; j < WINDOW; ++j) {
                        MPI_CHECK(MPI_Irecv(rbuf + (size_t) j * n, (int) n, MPI_BYTE, from, tag,
                                            pair, &reqs[j]));
                    }
                }
                MPI_CHECK(MPI_Waitall(WINDOW, reqs, sts));
                for (int j = 0; j < WINDOW; ++j) {
                    snprintf(what, sizeof(what),
                             "window: message %d of %d, %zu bytes rank %d -> rank %d round %d "
                             "(receives posted %s)",
                             j, WINDOW, n, from, 1 - from, r, pre ? "first" : "after");
                    ts_check_status(what, &sts[j], MPI_BYTE, from, tag, (long long) n);
                    tc_verify(what, rbuf + (size_t) j * n, from, n, (unsigned) (r * WINDOW + j));
                }
            }
        }
    }
    tc_say("window: %d sizes, %d messages in flight, both ways, receives posted before and "
           "after, in %.2fs",
           ncases, WINDOW, tc_now() - t0);
}

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "pingpong");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);

    size_t max = ts_arg_size(argc, argv, "-max", 64 * TS_MIB);
    size_t vmax = ts_arg_size(argc, argv, "-vmax", 64 * TS_MIB);
    size_t modes_upto = ts_arg_size(argc, argv, "-modes-upto", (size_t) -1);
    const char *proto = ts_arg_str(argc, argv, "-proto", "any");
    CHECK(max <= (size_t) INT_MAX, "-max too large");
    CHECK(!strcmp(proto, "any") || !strcmp(proto, "get") || !strcmp(proto, "put")
              || !strcmp(proto, "send"),
          "-proto %s: expected any, get, put or send", proto);

    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, tc_rank < 2 ? 0 : MPI_UNDEFINED, tc_rank, &pair));
    if (tc_rank >= 2) {
        /* idle ranks: nothing until the final barrier of ts_finish */
        ts_finish();
        return 0;
    }
    MPI_Comm_rank(pair, &me);

    size_t sizes[200];
    int nsizes = make_sizes(max, sizes, 200);
    tc_say("pingpong: %d contiguous sizes from 0 to %s, every byte checked; all four ways "
           "(send, exp, unexp, ssend) up to %s, one way per size above; strided up to %s; "
           "-proto %s",
           nsizes, ts_size_str(max),
           modes_upto >= max ? "the largest size" : ts_size_str(modes_upto),
           vmax ? ts_size_str(vmax) : "(none)", proto);

    size_t bufsize = (max > 2 * vmax ? max : 2 * vmax) + 2 * GUARD;
    unsigned char *sbuf = ts_malloc(bufsize);
    unsigned char *rraw = ts_malloc(bufsize);
    unsigned char *rbuf = rraw + GUARD;
    memset(rraw, GUARD_BYTE, GUARD);

    /* ---- contiguous sweep ---- */
    ts_snap_t s0, s1;
    unsigned long long msgs_sent = 0, bytes_sent = 0, large_received = 0;
    MPI_CHECK(MPI_Barrier(pair));
    ts_snap(&s0);
    double t_all = tc_now();
    for (int si = 0; si < nsizes; ++si) {
        size_t n = sizes[si];
        int wfirst = 0, wlast = W_COUNT - 1;
        if (n > modes_upto) {
            wfirst = wlast = si % W_COUNT;
        }
        double t0 = tc_now();
        for (int w = wfirst; w <= wlast; ++w) {
            int tag = (si * W_COUNT + w) % 30000;
            one_message(0, n, w, tag, sbuf, rbuf, "contiguous");
            one_message(1, n, w, tag + 1, sbuf, rbuf, "contiguous");
            msgs_sent += 1;
            bytes_sent += n;
            if (n > 8 * TS_KIB) {
                large_received += n;
            }
        }
        double dt = tc_now() - t0;
        if (me == 0 && (n >= 64 * TS_KIB || si == nsizes - 1 || (si % 12) == 0)) {
            printf("  %10zu bytes  ways %s..%s  %.3fs%s\n", n, way_names[wfirst],
                   way_names[wlast], dt,
                   n >= TS_MIB ? tc_fmt("  (%.0f MB/s round trip)",
                                        2.0 * n * (wlast - wfirst + 1) / dt / 1e6)
                               : "");
        }
    }
    ts_snap(&s1);
    tc_say("contiguous sweep: %d sizes in %.2fs", nsizes, tc_now() - t_all);

    /* ---- protocol evidence from the counters ---- */
    ts_delta_t d = ts_delta(&s0, &s1);
    ts_print_deltas(pair, "contiguous sweep", &d);
    if (tc_check_ours_enabled()) {
        if (ts_have_send) {
            CHECK(d.sends >= msgs_sent,
                  "btl_ofi_send_count grew by %llu over %llu messages sent by this rank: "
                  "two-sided traffic did not go through our btl/ofi?",
                  d.sends, msgs_sent);
        }
        if (!strcmp(proto, "send")) {
            CHECK(d.puts == 0 && d.gets == 0,
                  "-proto send (btl_ofi_flags without put/get): %llu puts and %llu gets were "
                  "issued",
                  d.puts, d.gets);
            if (ts_have_send) {
                CHECK(d.send_bytes >= bytes_sent,
                      "-proto send: btl_ofi_send_bytes grew by %llu, less than the %llu "
                      "payload bytes this rank sent",
                      d.send_bytes, bytes_sent);
            }
        } else if (!strcmp(proto, "get")) {
            CHECK(d.gets > 0 && d.puts == 0,
                  "-proto get (RGET): expected btl gets and no puts, saw %llu gets, %llu puts",
                  d.gets, d.puts);
            CHECK(d.get_bytes >= large_received / 2,
                  "-proto get (RGET): btl_ofi_get_bytes grew by %llu, not even half of the "
                  "%llu bytes received in messages above the eager limit",
                  d.get_bytes, large_received);
        } else if (!strcmp(proto, "put")) {
            CHECK(d.puts > 0 && d.gets == 0,
                  "-proto put (RPUT): expected btl puts and no gets, saw %llu puts, %llu gets",
                  d.puts, d.gets);
            CHECK(d.put_bytes >= large_received / 2,
                  "-proto put (RPUT): btl_ofi_put_bytes grew by %llu, not even half of the "
                  "%llu bytes sent in messages above the eager limit",
                  d.put_bytes, large_received);
        }
    }

    /* ---- windows: many messages in flight to one peer ---- */
    window_phase(max, sbuf, rbuf);

    /* ---- strided ---- */
    if (vmax > 0) {
        double t1 = tc_now();
        int nv = 0;
        for (size_t vi = 0; vi < sizeof(vcases) / sizeof(vcases[0]); ++vi) {
            const vcase_t *vc = &vcases[vi];
            size_t payload = vc->blk * vc->count;
            if (payload > vmax) {
                continue;
            }
            MPI_Datatype vec;
            MPI_CHECK(MPI_Type_vector((int) vc->count, (int) vc->blk, (int) (2 * vc->blk),
                                      MPI_BYTE, &vec));
            MPI_CHECK(MPI_Type_commit(&vec));
            double t0 = tc_now();
            for (int c = 0; c < C_COUNT; ++c) {
                int w = ((int) vi + c) % 2 ? W_UNEXP : W_SEND;
                int tag = 31000 + (int) vi * C_COUNT + c;
                strided_message(0, vc, c, w, tag, vec, sbuf, rbuf);
                strided_message(1, vc, c, w, tag, vec, sbuf, rbuf);
            }
            MPI_CHECK(MPI_Type_free(&vec));
            ++nv;
            if (me == 0) {
                printf("  strided blk=%zu count=%zu (%s payload): 3 layouts both ways %.3fs\n",
                       vc->blk, vc->count, ts_size_str(payload), tc_now() - t0);
            }
        }
        tc_say("strided: %d cases in %.2fs", nv, tc_now() - t1);
    }

    free(sbuf);
    free(rraw);
    MPI_Comm_free(&pair);
    ts_finish();
    return 0;
}
