/*
 * soak: random one-sided and two-sided traffic, every result checked, for a
 * given time (tests/faults/soak.sh runs it on 4 ranks).
 *
 *   soak [-minutes M] [-seed S]        (default 1 minute, seed from time)
 *
 * Every rank owns one MPI_Win_create window with a region per origin rank;
 * origin o is the only writer of region o in every window, so it keeps a
 * shadow copy of it and can check everything it reads back:
 *   data    64 KiB: MPI_Put of 1 B..64 KiB at random offsets, MPI_Get of
 *           random ranges compared with the shadow (after MPI_Win_flush)
 *   acc     64 int64 cells: MPI_Accumulate (MPI_SUM) of random values,
 *           read back with MPI_Get and compared
 *   fop     one int64: MPI_Fetch_and_op (MPI_SUM 1); the fetched value
 *           must be the shadow count
 *   cas     one int64: MPI_Compare_and_swap expecting the shadow value
 *           (must swap), and now and then with a wrong compare value
 *           (must not swap); the fetched value is checked either way
 * plus one int64 per window that every origin increments with
 * MPI_Fetch_and_op (contention; the total is checked at the end).
 * One-sided operations go to random targets inside a MPI_Win_lock_all
 * epoch per batch. After each batch, a two-sided round: rank r sends a
 * message of random size (0 B..256 KiB, sizes both sides derive from the
 * seed) to rank r+s and receives from rank r-s (s changes every round),
 * every byte checked.
 *
 * Ends with one line on rank 0:
 *   soak: M min on N ranks, seed S: OPS operations (put P, get G, acc A,
 *         fetch-op F, cswap C, messages X, BYTES bytes moved), E errors
 * and "OK soak" when E is 0 (exit 0), else exit 1. A failing MPI call is
 * printed and ends the job (MPI_Abort, exit code 5); the first 10 wrong
 * values per rank are printed ("soak: rank R: WRONG ...").
 */
#include "../common.h"

#include <unistd.h>

#define DATA (64 * 1024)
#define NACC 64
#define REGION (DATA + NACC * 8 + 64)
#define ACC_OFF DATA
#define FOP_OFF (DATA + NACC * 8)
#define CAS_OFF (FOP_OFF + 8)
#define BATCH 64
#define MAXMSG (256 * 1024)

static int nranks, me;
static unsigned char *win_mem; /* nranks regions, then the shared counter */
static MPI_Win win;
static long errors = 0;
static unsigned long long n_put, n_get, n_acc, n_fop, n_cas, n_msg, n_bytes;

/* what I wrote into region `me` of every target */
typedef struct {
    unsigned char data[DATA];
    int64_t acc[NACC];
    int64_t fop;
    int64_t cas;
} shadow_t;
static shadow_t *shadow;
static int64_t *shared_adds; /* my increments of each target's shared counter */

static uint64_t rng_state;
static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static void mpi_fail(const char *what, int rc)
{
    char es[MPI_MAX_ERROR_STRING];
    int el = 0;
    MPI_Error_string(rc, es, &el);
    printf("soak: rank %d: MPI error from %s: %s\n", me, what, es);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 5);
}

#define S(call)                                                                           \
    do {                                                                                  \
        int s_rc_ = (call);                                                               \
        if (MPI_SUCCESS != s_rc_) {                                                       \
            mpi_fail(#call, s_rc_);                                                       \
        }                                                                                 \
    } while (0)

static void wrong(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (++errors > 10) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("soak: rank %d: WRONG %s\n", me, msg);
    fflush(stdout);
}

static MPI_Aint region(int origin)
{
    return (MPI_Aint) origin * REGION;
}

/* Origin buffers stay untouched until the batch's MPI_Win_flush_all: op k
 * of a batch uses slice k of the pool (an MPI_Put may read its origin
 * buffer any time before the flush) and accv[k]. */
static int64_t accv[BATCH];
/* targets with puts not yet flushed: two puts to the same place in one
 * epoch are not ordered by MPI, so a put to such a target flushes first */
static char *dirty;

static void op_put(int t, unsigned char *buf)
{
    size_t len = 1 + (rnd() % ((size_t) 1 << (rnd() % 17)));
    if (len > DATA) {
        len = DATA;
    }
    size_t off = rnd() % (DATA - len + 1);
    for (size_t i = 0; i < len; ++i) {
        buf[i] = (unsigned char) rnd();
    }
    if (dirty[t]) {
        S(MPI_Win_flush(t, win));
    }
    dirty[t] = 1;
    S(MPI_Put(buf, (int) len, MPI_BYTE, t, region(me) + (MPI_Aint) off, (int) len, MPI_BYTE, win));
    memcpy(shadow[t].data + off, buf, len);
    n_put++;
    n_bytes += len;
}

static void op_get(int t, unsigned char *buf)
{
    size_t len = 1 + (rnd() % ((size_t) 1 << (rnd() % 17)));
    if (len > DATA) {
        len = DATA;
    }
    size_t off = rnd() % (DATA - len + 1);
    /* my earlier puts to t must have landed before this get reads */
    S(MPI_Win_flush(t, win));
    dirty[t] = 0;
    S(MPI_Get(buf, (int) len, MPI_BYTE, t, region(me) + (MPI_Aint) off, (int) len, MPI_BYTE, win));
    S(MPI_Win_flush(t, win));
    for (size_t i = 0; i < len; ++i) {
        if (buf[i] != shadow[t].data[off + i]) {
            wrong("get of %zu bytes at %zu from rank %d: byte %zu is 0x%02x, expected 0x%02x", len,
                  off, t, off + i, buf[i], shadow[t].data[off + i]);
            break;
        }
    }
    n_get++;
    n_bytes += len;
}

static void op_acc(int t, int k)
{
    int cell = (int) (rnd() % NACC);
    accv[k] = (int64_t) (rnd() % 1000000) - 500000;
    S(MPI_Accumulate(&accv[k], 1, MPI_INT64_T, t, region(me) + ACC_OFF + 8 * cell, 1,
                     MPI_INT64_T, MPI_SUM, win));
    shadow[t].acc[cell] += accv[k];
    n_acc++;
    if (0 == rnd() % 8) {
        /* read the cells back (plain get after the flush completed them) */
        int64_t got[NACC];
        S(MPI_Win_flush(t, win));
        dirty[t] = 0;
        S(MPI_Get(got, NACC, MPI_INT64_T, t, region(me) + ACC_OFF, NACC, MPI_INT64_T, win));
        S(MPI_Win_flush(t, win));
        for (int i = 0; i < NACC; ++i) {
            if (got[i] != shadow[t].acc[i]) {
                wrong("accumulate cell %d at rank %d is %lld, expected %lld", i, t,
                      (long long) got[i], (long long) shadow[t].acc[i]);
                break;
            }
        }
        n_get++;
    }
}

static void op_fop(int t)
{
    int64_t one = 1, old = -1;
    S(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, t, region(me) + FOP_OFF, MPI_SUM, win));
    /* and the counter every origin shares at t */
    int64_t old_shared = -1;
    S(MPI_Fetch_and_op(&one, &old_shared, MPI_INT64_T, t, (MPI_Aint) nranks * REGION, MPI_SUM,
                       win));
    S(MPI_Win_flush(t, win));
    if (old != shadow[t].fop) {
        wrong("fetch-and-op at rank %d fetched %lld, expected %lld", t, (long long) old,
              (long long) shadow[t].fop);
    }
    if (old_shared < shared_adds[t]) {
        wrong("shared counter at rank %d fetched %lld, below my own %lld increments", t,
              (long long) old_shared, (long long) shared_adds[t]);
    }
    shadow[t].fop++;
    shared_adds[t]++;
    n_fop += 2;
}

static void op_cas(int t)
{
    int64_t cur = shadow[t].cas, res = -1;
    int miss = 0 == rnd() % 4;
    int64_t cmp = miss ? cur + 7 : cur, val = cur + 1;
    S(MPI_Compare_and_swap(&val, &cmp, &res, MPI_INT64_T, t, region(me) + CAS_OFF, win));
    S(MPI_Win_flush(t, win));
    if (res != cur) {
        wrong("compare-and-swap at rank %d fetched %lld, expected %lld", t, (long long) res,
              (long long) cur);
    }
    if (!miss) {
        shadow[t].cas = val;
    }
    n_cas++;
}

/* size of the message `from` sends in round r (both sides compute it) */
static size_t msg_size(uint64_t seed, long r, int from)
{
    uint64_t h = mix(seed ^ mix((uint64_t) r * 131 + (uint64_t) from));
    switch (h % 4) {
    case 0:
        return h % 64; /* tiny */
    case 1:
        return (h >> 8) % 8192; /* eager */
    default:
        return (h >> 8) % (MAXMSG + 1); /* rendezvous */
    }
}

static void two_sided(uint64_t seed, long r, unsigned char *sbuf, unsigned char *rbuf)
{
    int s = 1 + (int) (r % (nranks - 1));
    int to = (me + s) % nranks, from = (me - s + nranks) % nranks;
    size_t sn = msg_size(seed, r, me), rn = msg_size(seed, r, from);
    MPI_Request rq[2];
    MPI_Status st[2];
    for (size_t i = 0; i < sn; ++i) {
        sbuf[i] = tc_pattern(me, sn, i, (unsigned) r);
    }
    memset(rbuf, 0xA5, rn);
    S(MPI_Irecv(rbuf, (int) rn, MPI_BYTE, from, (int) (r % 30000), MPI_COMM_WORLD, &rq[0]));
    S(MPI_Isend(sbuf, (int) sn, MPI_BYTE, to, (int) (r % 30000), MPI_COMM_WORLD, &rq[1]));
    S(MPI_Waitall(2, rq, st));
    int cnt = -1;
    MPI_Get_count(&st[0], MPI_BYTE, &cnt);
    if ((size_t) cnt != rn) {
        wrong("round %ld: %d bytes from rank %d, expected %zu", r, cnt, from, rn);
    }
    for (size_t i = 0; i < rn; ++i) {
        if (rbuf[i] != tc_pattern(from, rn, i, (unsigned) r)) {
            wrong("round %ld: %zu-byte message from rank %d: byte %zu is 0x%02x, expected 0x%02x",
                  r, rn, from, i, rbuf[i], tc_pattern(from, rn, i, (unsigned) r));
            break;
        }
    }
    n_msg++;
    n_bytes += sn;
}

int main(int argc, char **argv)
{
    double minutes = 1.0;
    uint64_t seed = (uint64_t) time(NULL);
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-minutes")) {
            minutes = atof(argv[i + 1]);
        } else if (0 == strcmp(argv[i], "-seed")) {
            seed = strtoull(argv[i + 1], NULL, 10);
        }
    }
    tc_init(&argc, &argv, "soak");
    me = tc_rank;
    nranks = tc_size;
    CHECK(nranks >= 2, "needs 2 ranks or more");
    S(MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));
    rng_state = mix(seed + 1 + (uint64_t) me) | 1;

    size_t win_bytes = (size_t) nranks * REGION + 64;
    CHECK(0 == posix_memalign((void **) &win_mem, 4096, win_bytes), "posix_memalign");
    memset(win_mem, 0, win_bytes);
    shadow = calloc((size_t) nranks, sizeof(*shadow));
    shared_adds = calloc((size_t) nranks, sizeof(*shared_adds));
    dirty = calloc((size_t) nranks, 1);
    unsigned char *pool = malloc((size_t) BATCH * DATA), *sbuf = malloc(MAXMSG),
                  *rbuf = malloc(MAXMSG), *buf = pool;
    CHECK(NULL != shadow && NULL != shared_adds && NULL != dirty && NULL != pool && NULL != sbuf && NULL != rbuf,
          "malloc");
    S(MPI_Win_create(win_mem, (MPI_Aint) win_bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    S(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    S(MPI_Barrier(MPI_COMM_WORLD));

    double t0 = tc_now(), next_report = t0 + 10.0;
    long round = 0;
    if (0 == me) {
        printf("soak: %d ranks, %.1f minute(s), seed %llu\n", nranks, minutes,
               (unsigned long long) seed);
        fflush(stdout);
    }
    for (;;) {
        S(MPI_Win_lock_all(0, win));
        for (int k = 0; k < BATCH; ++k) {
            int t = (int) (rnd() % (uint64_t) nranks);
            switch (rnd() % 10) {
            case 0:
            case 1:
            case 2:
                op_put(t, pool + (size_t) k * DATA);
                break;
            case 3:
            case 4:
                op_get(t, pool + (size_t) k * DATA);
                break;
            case 5:
            case 6:
                op_acc(t, k);
                break;
            case 7:
            case 8:
                op_fop(t);
                break;
            default:
                op_cas(t);
                break;
            }
        }
        S(MPI_Win_flush_all(win));
        S(MPI_Win_unlock_all(win));
        memset(dirty, 0, (size_t) nranks);
        two_sided(seed, round, sbuf, rbuf);
        round++;
        int go = 0 == me ? (tc_now() - t0 < minutes * 60.0) : 0;
        S(MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD));
        if (0 == me && tc_now() >= next_report) {
            printf("soak: %.0f s: rank 0 did %llu one-sided operations and %llu messages, %ld "
                   "errors so far\n",
                   tc_now() - t0, n_put + n_get + n_acc + n_fop + n_cas, n_msg, errors);
            fflush(stdout);
            next_report += 10.0;
        }
        if (!go) {
            break;
        }
    }

    /* final check: every region I own the shadow of, read back whole */
    S(MPI_Win_lock_all(0, win));
    for (int t = 0; t < nranks; ++t) {
        S(MPI_Get(buf, DATA, MPI_BYTE, t, region(me), DATA, MPI_BYTE, win));
        S(MPI_Win_flush(t, win));
        if (0 != memcmp(buf, shadow[t].data, DATA)) {
            size_t i = 0;
            while (buf[i] == shadow[t].data[i]) {
                ++i;
            }
            wrong("final read of my region at rank %d: byte %zu is 0x%02x, expected 0x%02x", t, i,
                  buf[i], shadow[t].data[i]);
        }
        n_get++;
    }
    S(MPI_Win_unlock_all(win));
    /* the shared counter of each window: the sum of every origin's adds */
    int64_t *adds = calloc((size_t) nranks, sizeof(*adds));
    CHECK(NULL != adds, "calloc");
    S(MPI_Allreduce(shared_adds, adds, nranks, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    S(MPI_Barrier(MPI_COMM_WORLD));
    int64_t mine;
    memcpy(&mine, win_mem + (size_t) nranks * REGION, sizeof(mine));
    if (mine != adds[me]) {
        wrong("my shared counter is %lld, expected %lld (all origins' increments)",
              (long long) mine, (long long) adds[me]);
    }
    S(MPI_Win_free(&win));

    unsigned long long mine_c[8] = {n_put, n_get, n_acc, n_fop, n_cas, n_msg, n_bytes,
                                    (unsigned long long) errors};
    unsigned long long tot[8];
    S(MPI_Reduce(mine_c, tot, 8, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    long all_errors = 0;
    S(MPI_Allreduce(&errors, &all_errors, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (0 == me) {
        printf("soak: %.1f min on %d ranks, seed %llu, %ld rounds: %llu operations (put %llu, get "
               "%llu, acc %llu, fetch-op %llu, cswap %llu, messages %llu, %llu bytes moved), %llu "
               "errors\n",
               (tc_now() - t0) / 60.0, nranks, (unsigned long long) seed, round,
               tot[0] + tot[1] + tot[2] + tot[3] + tot[4] + tot[5], tot[0], tot[1], tot[2],
               tot[3], tot[4], tot[5], tot[6], tot[7]);
        fflush(stdout);
    }
    free(adds);
    if (all_errors) {
        MPI_Finalize();
        return 1;
    }
    tc_finish();
    return 0;
}
