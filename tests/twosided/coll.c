/*
 * coll: collectives with every result checked against a value each rank
 * computes on its own.
 *
 * Collectives of coll/tuned and coll/basic are built on pml point-to-point
 * messages, so with pml ob1 and btl ofi,self every byte between ranks
 * crosses our component; the send counter must grow accordingly.
 *
 *   bcast           from every root in turn, payloads of 0 B to -max (eager,
 *                   rendezvous and the segmented algorithms of coll/tuned);
 *   allreduce       MPI_SUM on int64, MPI_MAX on double, MPI_BXOR on
 *                   uint32, MPI_IN_PLACE and not, counts 1 to -max/8;
 *   alltoallv       irregular counts (zeros included), displacements with
 *                   holes that must stay untouched;
 *   gather          to every root in turn, small and large blocks;
 *   reduce_scatter  irregular receive counts (zeros included), MPI_SUM on
 *                   int64.
 *
 * Each operation runs -rounds times (default 2) with data depending on the
 * round, so a stale result of an earlier round shows.
 *
 * Options: -max SIZE (largest payload per rank, default 4m), -rounds N.
 */
#include "ts.h"

#define HOLE_BYTE 0x5A

/* A value every rank can compute for (rank, index, round). */
static int64_t val64(int rank, size_t i, int round)
{
    return (int64_t) (((uint64_t) i * 2654435761u) % 1000003u) * (rank + 1) - (int64_t) rank * 977
           + round * 31;
}

static uint32_t val32(int rank, size_t i, int round)
{
    uint32_t x = (uint32_t) (i * 0x9E3779B1u) ^ (uint32_t) (rank * 0x85EBCA6Bu) ^ (uint32_t) round;
    x ^= x >> 16;
    return x * 0x7FEB352Du;
}

/* ------------------------------------------------------------------ */

static void test_bcast(size_t max, int rounds)
{
    static const size_t fixed[] = {0, 1, 7, 8191, 8192, 8193, 65535, 65537, 262145, 1048577};
    size_t sizes[16];
    int ns = 0;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); ++i) {
        if (fixed[i] <= max) {
            sizes[ns++] = fixed[i];
        }
    }
    sizes[ns++] = max;
    unsigned char *buf = ts_malloc(max + 64);
    double t0 = tc_now();
    long ops = 0;
    for (int round = 0; round < rounds; ++round) {
        for (int si = 0; si < ns; ++si) {
            size_t n = sizes[si];
            for (int root = 0; root < tc_size; ++root) {
                unsigned pr = (unsigned) (round * 100 + si);
                if (tc_rank == root) {
                    tc_fill(buf, root, n, pr);
                } else {
                    for (size_t i = 0; i < n; ++i) {
                        buf[i] = (unsigned char) ~tc_pattern(root, n, i, pr);
                    }
                }
                memset(buf + n, HOLE_BYTE, 64);
                MPI_CHECK(MPI_Bcast(buf, (int) n, MPI_BYTE, root, MPI_COMM_WORLD));
                char what[128];
                snprintf(what, sizeof(what), "MPI_Bcast of %zu bytes from root %d, round %d", n,
                         root, round);
                tc_verify(what, buf, root, n, pr);
                for (int i = 0; i < 64; ++i) {
                    CHECK(buf[n + i] == HOLE_BYTE, "%s: byte %d after the buffer written", what, i);
                }
                ++ops;
            }
        }
    }
    free(buf);
    tc_say("bcast: %ld broadcasts (%d sizes up to %s, every root) checked in %.2fs", ops, ns,
           ts_size_str(max), tc_now() - t0);
}

/* ------------------------------------------------------------------ */

static void test_allreduce(size_t max, int rounds)
{
    size_t counts[] = {1, 2, 100, 1025, 8193, 65536 + 3, max / 8};
    int nc = sizeof(counts) / sizeof(counts[0]);
    size_t cmax = max / 8 > 65539 ? max / 8 : 65539;
    int64_t *a = ts_malloc(cmax * sizeof(int64_t));
    int64_t *r = ts_malloc(cmax * sizeof(int64_t));
    double *da = ts_malloc(cmax * sizeof(double));
    double *dr = ts_malloc(cmax * sizeof(double));
    uint32_t *ua = ts_malloc(cmax * sizeof(uint32_t));
    uint32_t *ur = ts_malloc(cmax * sizeof(uint32_t));
    double t0 = tc_now();
    long ops = 0;

    for (int round = 0; round < rounds; ++round) {
        for (int ci = 0; ci < nc; ++ci) {
            size_t n = counts[ci];
            if (n == 0 || n > cmax) {
                continue;
            }
            int inplace = (ci + round) % 2;
            /* MPI_SUM, int64 */
            for (size_t i = 0; i < n; ++i) {
                a[i] = val64(tc_rank, i, round);
                r[i] = -1;
            }
            if (inplace) {
                MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, a, (int) n, MPI_INT64_T, MPI_SUM,
                                        MPI_COMM_WORLD));
            } else {
                MPI_CHECK(MPI_Allreduce(a, r, (int) n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
            }
            const int64_t *res = inplace ? a : r;
            for (size_t i = 0; i < n; ++i) {
                int64_t want = 0;
                for (int k = 0; k < tc_size; ++k) {
                    want += val64(k, i, round);
                }
                if (res[i] != want) {
                    FAILF("MPI_Allreduce(MPI_SUM, int64, count %zu%s) round %d: element %zu is "
                          "%" PRId64 ", expected %" PRId64,
                          n, inplace ? ", MPI_IN_PLACE" : "", round, i, res[i], want);
                }
            }
            /* MPI_MAX, double (integer values: exact) */
            for (size_t i = 0; i < n; ++i) {
                da[i] = (double) val64(tc_rank, i, round + 7);
                dr[i] = -1e300;
            }
            MPI_CHECK(MPI_Allreduce(da, dr, (int) n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
            for (size_t i = 0; i < n; ++i) {
                double want = (double) val64(0, i, round + 7);
                for (int k = 1; k < tc_size; ++k) {
                    double v = (double) val64(k, i, round + 7);
                    want = v > want ? v : want;
                }
                if (dr[i] != want) {
                    FAILF("MPI_Allreduce(MPI_MAX, double, count %zu) round %d: element %zu is %.17g, "
                          "expected %.17g",
                          n, round, i, dr[i], want);
                }
            }
            /* MPI_BXOR, uint32 */
            for (size_t i = 0; i < n; ++i) {
                ua[i] = val32(tc_rank, i, round);
                ur[i] = 0xDEADBEEF;
            }
            MPI_CHECK(MPI_Allreduce(ua, ur, (int) n, MPI_UINT32_T, MPI_BXOR, MPI_COMM_WORLD));
            for (size_t i = 0; i < n; ++i) {
                uint32_t want = 0;
                for (int k = 0; k < tc_size; ++k) {
                    want ^= val32(k, i, round);
                }
                if (ur[i] != want) {
                    FAILF("MPI_Allreduce(MPI_BXOR, uint32, count %zu) round %d: element %zu is "
                          "0x%08x, expected 0x%08x",
                          n, round, i, ur[i], want);
                }
            }
            ops += 3;
        }
    }
    free(a);
    free(r);
    free(da);
    free(dr);
    free(ua);
    free(ur);
    tc_say("allreduce: %ld reductions (sum int64, max double, bxor uint32; counts 1 to %zu) "
           "checked in %.2fs",
           ops, max / 8, tc_now() - t0);
}

/* ------------------------------------------------------------------ */

/* bytes rank `from' sends to rank `to' in alltoallv round `round' */
static size_t a2a_count(int from, int to, int round, size_t big)
{
    unsigned k = (unsigned) (from * 7 + to * 3 + round * 5) % 6;
    switch (k) {
    case 0:
        return 0;
    case 1:
        return 1 + (size_t) from;
    case 2:
        return 1000 + (size_t) to * 13;
    case 3:
        return 8192 + (size_t) (from + to);
    case 4:
        return big + (size_t) from * 3 + (size_t) to;
    default:
        return 70000 + (size_t) to;
    }
}

#define A2A_GAP 37

static void test_alltoallv(size_t max, int rounds)
{
    size_t big = max / (size_t) (2 * tc_size);
    if (big < 10000) {
        big = 10000;
    }
    int n = tc_size;
    int *scounts = ts_malloc(sizeof(int) * n), *sdispls = ts_malloc(sizeof(int) * n);
    int *rcounts = ts_malloc(sizeof(int) * n), *rdispls = ts_malloc(sizeof(int) * n);
    double t0 = tc_now();

    for (int round = 0; round < rounds; ++round) {
        size_t stot = 0, rtot = 0;
        for (int p = 0; p < n; ++p) {
            /* sender blocks in reverse rank order, receive blocks in rank order,
             * each followed by a hole */
            int q = n - 1 - p;
            sdispls[q] = (int) stot;
            scounts[q] = (int) a2a_count(tc_rank, q, round, big);
            stot += (size_t) scounts[q] + A2A_GAP;
        }
        for (int p = 0; p < n; ++p) {
            rdispls[p] = (int) rtot;
            rcounts[p] = (int) a2a_count(p, tc_rank, round, big);
            rtot += (size_t) rcounts[p] + A2A_GAP;
        }
        CHECK(stot < INT_MAX && rtot < INT_MAX, "alltoallv buffers too large");
        unsigned char *sb = ts_malloc(stot), *rb = ts_malloc(rtot);
        memset(sb, 0xEE, stot);
        memset(rb, HOLE_BYTE, rtot);
        for (int q = 0; q < n; ++q) {
            /* pattern "origin" is from*64+to so that every pair differs */
            tc_fill(sb + sdispls[q], tc_rank * 64 + q, (size_t) scounts[q], (unsigned) round);
        }
        MPI_CHECK(MPI_Alltoallv(sb, scounts, sdispls, MPI_BYTE, rb, rcounts, rdispls, MPI_BYTE,
                                MPI_COMM_WORLD));
        for (int p = 0; p < n; ++p) {
            char what[160];
            snprintf(what, sizeof(what),
                     "MPI_Alltoallv round %d: block of %d bytes from rank %d to rank %d", round,
                     rcounts[p], p, tc_rank);
            tc_verify(what, rb + rdispls[p], p * 64 + tc_rank, (size_t) rcounts[p],
                      (unsigned) round);
            for (int g = 0; g < A2A_GAP; ++g) {
                CHECK(rb[rdispls[p] + rcounts[p] + g] == HOLE_BYTE,
                      "%s: hole byte %d after the block was written (0x%02x)", what, g,
                      rb[rdispls[p] + rcounts[p] + g]);
            }
        }
        free(sb);
        free(rb);
    }
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
    tc_say("alltoallv: %d rounds (blocks 0 B to %s, zeros and holes) checked in %.2fs", rounds,
           ts_size_str(big + (size_t) tc_size * 4), tc_now() - t0);
}

/* ------------------------------------------------------------------ */

static void test_gather(size_t max, int rounds)
{
    size_t blocks[] = {1, 100, 8193, max / (size_t) tc_size};
    int nb = sizeof(blocks) / sizeof(blocks[0]);
    size_t bmax = blocks[nb - 1] > 8193 ? blocks[nb - 1] : 8193;
    unsigned char *sb = ts_malloc(bmax);
    unsigned char *rb = ts_malloc(bmax * (size_t) tc_size);
    double t0 = tc_now();
    long ops = 0;
    for (int round = 0; round < rounds; ++round) {
        for (int bi = 0; bi < nb; ++bi) {
            size_t b = blocks[bi];
            for (int root = 0; root < tc_size; ++root) {
                unsigned pr = (unsigned) (round * 10 + bi);
                tc_fill(sb, tc_rank, b, pr);
                if (tc_rank == root) {
                    memset(rb, HOLE_BYTE, b * (size_t) tc_size);
                }
                MPI_CHECK(MPI_Gather(sb, (int) b, MPI_BYTE, rb, (int) b, MPI_BYTE, root,
                                     MPI_COMM_WORLD));
                if (tc_rank == root) {
                    for (int p = 0; p < tc_size; ++p) {
                        char what[128];
                        snprintf(what, sizeof(what),
                                 "MPI_Gather of %zu bytes per rank to root %d round %d: block of "
                                 "rank %d",
                                 b, root, round, p);
                        tc_verify(what, rb + (size_t) p * b, p, b, pr);
                    }
                }
                ++ops;
            }
        }
    }
    free(sb);
    free(rb);
    tc_say("gather: %ld gathers (blocks 1 B to %s, every root) checked in %.2fs", ops,
           ts_size_str(blocks[nb - 1]), tc_now() - t0);
}

/* ------------------------------------------------------------------ */

static void test_reduce_scatter(size_t max, int rounds)
{
    int n = tc_size;
    int *rcounts = ts_malloc(sizeof(int) * n);
    size_t big = max / 8 / (size_t) n;
    double t0 = tc_now();
    for (int round = 0; round < rounds; ++round) {
        size_t total = 0;
        for (int p = 0; p < n; ++p) {
            switch ((p + round) % 4) {
            case 0:
                rcounts[p] = 0;
                break;
            case 1:
                rcounts[p] = 1 + p;
                break;
            case 2:
                rcounts[p] = 2000 + p;
                break;
            default:
                rcounts[p] = (int) big + p;
                break;
            }
            total += (size_t) rcounts[p];
        }
        size_t first = 0;
        for (int p = 0; p < tc_rank; ++p) {
            first += (size_t) rcounts[p];
        }
        int64_t *in = ts_malloc(total * sizeof(int64_t));
        int64_t *out = ts_malloc(((size_t) rcounts[tc_rank] + 1) * sizeof(int64_t));
        for (size_t i = 0; i < total; ++i) {
            in[i] = val64(tc_rank, i, round + 50);
        }
        for (int i = 0; i <= rcounts[tc_rank]; ++i) {
            out[i] = INT64_MIN;
        }
        MPI_CHECK(MPI_Reduce_scatter(in, out, rcounts, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
        for (int i = 0; i < rcounts[tc_rank]; ++i) {
            int64_t want = 0;
            for (int k = 0; k < n; ++k) {
                want += val64(k, first + (size_t) i, round + 50);
            }
            if (out[i] != want) {
                FAILF("MPI_Reduce_scatter round %d (recvcount %d here): element %d is %" PRId64
                      ", expected %" PRId64,
                      round, rcounts[tc_rank], i, out[i], want);
            }
        }
        CHECK(out[rcounts[tc_rank]] == INT64_MIN,
              "MPI_Reduce_scatter round %d wrote past the %d elements of this rank", round,
              rcounts[tc_rank]);
        free(in);
        free(out);
    }
    free(rcounts);
    tc_say("reduce_scatter: %d rounds (receive counts 0 to %zu) checked in %.2fs", rounds,
           big + (size_t) n, tc_now() - t0);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    ts_init(&argc, &argv, "coll");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    size_t max = ts_arg_size(argc, argv, "-max", 4 * TS_MIB);
    int rounds = (int) ts_arg_size(argc, argv, "-rounds", 2);
    CHECK(max >= 64 * TS_KIB && max <= 256 * TS_MIB, "-max %zu out of range (64k to 256m)", max);
    CHECK(rounds >= 1 && rounds <= 1000, "-rounds %d out of range", rounds);

    ts_snap_t s0, s1;
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    ts_snap(&s0);
    test_bcast(max, rounds);
    test_allreduce(max, rounds);
    test_alltoallv(max, rounds);
    test_gather(max, rounds);
    test_reduce_scatter(max, rounds);
    ts_snap(&s1);

    ts_delta_t d = ts_delta(&s0, &s1);
    ts_print_deltas(MPI_COMM_WORLD, "collectives", &d);
    if (ts_have_send && tc_check_ours_enabled()) {
        /* every rank takes part in broadcasts from other roots, gathers to
         * other roots and all-to-all exchanges: it sends at least a message
         * per gather to another root */
        CHECK(d.sends > 0 && d.send_bytes > 0,
              "btl_ofi_send_count grew by %llu (%llu bytes) over all the collectives: "
              "collective traffic did not go through our btl/ofi?",
              d.sends, d.send_bytes);
    }
    ts_finish();
    return 0;
}
