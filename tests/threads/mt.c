/*
 * threads: MPI_THREAD_MULTIPLE over btl/ofi. Every rank runs T threads
 * (-t T, default 4) that all do, in each of -n ITERS rounds (default 60):
 *
 *  1. MPI_Fetch_and_op(SUM, +1) on a 64-bit counter shared by every thread
 *     of every rank (rank 0's copy in even rounds, rank n-1's in odd ones);
 *  2. a 64-bit counter incremented by MPI_Compare_and_swap retry loops on
 *     the same targets;
 *  3. a put of 1 B .. 64 KiB into the thread's own region of the next rank's
 *     memory, flush, get back, bytes compared;
 *  4. on a window of its own (one window per thread index, so each thread
 *     owns its lock_all epoch): fetch-and-add on the next rank's counter,
 *     which only this thread increments (so the fetched value is exactly the
 *     round number), and a put/get pair of its own pattern;
 *  5. a message to the same thread index of the next rank and one from the
 *     previous rank (tag = 100 + thread index), 0 B .. 100 KB (eager and
 *     rendezvous), bytes compared;
 *  6. every -l L rounds (default 6), a mutual-exclusion protocol: a lock
 *     word (in a window of its own) taken by MPI_Compare_and_swap(0 -> id),
 *     then, on the shared window, the owner word put, a plain get/put
 *     increment of a data word, the owner word got back (must still be
 *     ours), and the lock released by MPI_Compare_and_swap(id -> 0) (must
 *     return our id).
 *
 * The shared and lock windows (MPI_Win_create) are each in one
 * MPI_Win_lock_all epoch opened and closed by the main thread; threads only
 * issue operations and MPI_Win_flush on them (what MPI lets threads share;
 * note that osc/rdma's flush then waits for the operations of every thread
 * of the process on that window). Per-thread windows are locked and
 * unlocked by their own thread.
 *
 * Checked exactly at the end, on every rank:
 *  - every counter (fetch-add, CAS, protected data word) equals the number of
 *    increments aimed at it; every lock word is free;
 *  - the values fetched by all threads of all ranks from each fetch-add and
 *    CAS counter are exactly 0, 1, ..., total-1 (each once), and each
 *    thread saw its own values increase;
 *  - every region holds the last pattern its writer put, regions nobody
 *    writes are still zero, the guard bytes between regions are untouched;
 *  - the btl_ofi_{put,get,atomic,send}_count counters of this rank grew by at
 *    least the number of operations it aimed at another rank;
 *    btl_ofi_recv_count by at least one per message its threads received
 *    (an exact comparison with the peer's btl_ofi_send_count is not
 *    possible: a message the peer sends right after its snapshot can be
 *    received while this rank is still in the barrier before its own).
 * Also checks our component is loaded (btl_ofi_version), with the expected
 * provider (BTL_OFI_EXPECT_PROVIDER) and context count
 * (BTL_OFI_EXPECT_CONTEXTS vs. the btl_ofi_num_contexts_per_module cvar).
 */
#include "mt_util.h"


#define HOT_FADD 0
#define HOT_CAS 8
#define HOT_DATA 24
#define HOT_OWNER 32
#define HOT_SIZE 64
#define GUARD 64
#define GUARD_BYTE 0xA5
#define RS 65536 /* region size: largest transfer */
#define REG_OFF (HOT_SIZE + GUARD)
#define PW_DATA 64 /* per-thread window: counter at 0, data at 64 */
#define PW_SIZE (PW_DATA + RS + GUARD)
#define MSG_MAX 100000
#define TAG_BASE 100
#define PW_ID_BASE 1000 /* pattern ids of the per-thread windows */

static const size_t put_sizes[] = {1, 8, 100, 4096, 9000, 65536, 24};
#define NPUT (sizeof(put_sizes) / sizeof(put_sizes[0]))
static const size_t msg_sizes[] = {0, 16, 4000, 12000, 100000, 1};
#define NMSG (sizeof(msg_sizes) / sizeof(msg_sizes[0]))

static int nthreads = 4, iters = 60, lock_every = 6;
static int rank, nranks, peer, prev;
static MPI_Win wshared, wlock;
static unsigned char *sbase;
static uint64_t lock_word[8]; /* memory of wlock: the lock word at 0 */
static MPI_Win *wthr;
static unsigned char **tbase;

typedef struct {
    int tid;
    pthread_t handle;
    uint64_t *fadd_vals; /* value fetched in round i */
    uint64_t *cas_vals;  /* value replaced in round i */
    unsigned long long cas_attempts_remote;
    unsigned long long cas_attempts;
    unsigned long long lock_attempts_remote;
    unsigned long long lock_attempts;
    unsigned long long lock_rounds_remote;
    unsigned char *sbuf, *rbuf, *smsg, *rmsg;
    double phase_s[6]; /* time spent in steps 1..6 (reported, not checked) */
} thr_t;

static const char *const phase_names[6] = {"fetch-add", "cas", "region", "own-window", "messages",
                                           "lock"};

static thr_t *thr;

/* target of the shared counters in round i */
static int hot_target(int i)
{
    return (i % 2 == 0) ? 0 : nranks - 1;
}

static int is_lock_round(int i)
{
    return i % lock_every == lock_every - 1;
}

static int lock_target(int i)
{
    return hot_target(i / lock_every);
}

static MPI_Aint region_off(int origin, int tid)
{
    return (MPI_Aint) REG_OFF + (MPI_Aint) (origin * nthreads + tid) * (RS + GUARD);
}

static void flush(int target, MPI_Win w)
{
    MPI_CHECK(MPI_Win_flush(target, w));
}

/* MPI_Compare_and_swap of 64-bit values; returns the value found. */
static uint64_t cas64(uint64_t compare, uint64_t value, int target, MPI_Aint disp, MPI_Win w)
{
    uint64_t result = ~(uint64_t) 0;
    MPI_CHECK(MPI_Compare_and_swap(&value, &compare, &result, MPI_UINT64_T, target, disp, w));
    flush(target, w);
    return result;
}

static uint64_t get64(int target, MPI_Aint disp, MPI_Win w)
{
    uint64_t v = ~(uint64_t) 0;
    MPI_CHECK(MPI_Get(&v, 1, MPI_UINT64_T, target, disp, 1, MPI_UINT64_T, w));
    flush(target, w);
    return v;
}

static void put64(uint64_t v, int target, MPI_Aint disp, MPI_Win w)
{
    MPI_CHECK(MPI_Put(&v, 1, MPI_UINT64_T, target, disp, 1, MPI_UINT64_T, w));
    flush(target, w);
}

/*
 * After a failed attempt to take the lock: wait a little (exponentially
 * longer, up to ~0.5 ms) before the next attempt. Without it the waiting
 * threads' CAS flood starves the holder (osc/rdma's MPI_Win_flush, and the
 * btl's flush, wait for every operation of the process). The wait stays
 * inside MPI (MPI_Iprobe on a tag nobody sends), so that this process keeps
 * serving the holder's operations on providers with manual progress. This
 * changes how often the lock is polled, nothing else; the checks do not
 * depend on it.
 */
#define IDLE_TAG 32000
static void backoff(unsigned *us)
{
    double until = tc_now() + 1e-6 * (double) *us;
    while (tc_now() < until) {
        int flag = 0;
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, IDLE_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "a message with tag %d, which nobody sends, arrived", IDLE_TAG);
    }
    if (*us < 512) {
        *us *= 2;
    }
}

static void lock_round(thr_t *t, int i)
{
    int tgt = lock_target(i);
    uint64_t id = 1 + (uint64_t) (rank * nthreads + t->tid);
    unsigned long long attempts = 0;
    unsigned wait_us = 2;
    uint64_t found;

    for (;;) {
        found = cas64(0, id, tgt, 0, wlock);
        ++attempts;
        CHECK(found == 0 || (found >= 1 && found <= (uint64_t) (nranks * nthreads)),
              "thread %d round %d: lock word on rank %d holds %" PRIu64 ", not 0 or a thread id",
              t->tid, i, tgt, found);
        if (found == 0) {
            break;
        }
        backoff(&wait_us);
    }

    put64(id, tgt, HOT_OWNER, wshared);
    uint64_t data = get64(tgt, HOT_DATA, wshared);
    put64(data + 1, tgt, HOT_DATA, wshared);
    uint64_t owner = get64(tgt, HOT_OWNER, wshared);
    CHECK(owner == id,
          "thread %d round %d: holding the lock on rank %d, the owner word says %" PRIu64
          " instead of our id %" PRIu64 " (mutual exclusion broken)",
          t->tid, i, tgt, owner, id);
    found = cas64(id, 0, tgt, 0, wlock);
    CHECK(found == id,
          "thread %d round %d: releasing the lock on rank %d found %" PRIu64
          " instead of our id %" PRIu64,
          t->tid, i, tgt, found, id);
    t->lock_attempts += attempts;
    if (tgt != rank) {
        t->lock_attempts_remote += attempts;
        t->lock_rounds_remote++;
    }
}

static void *thread_main(void *arg)
{
    thr_t *t = (thr_t *) arg;
    const int tid = t->tid;
    const int id = rank * nthreads + tid;
    const int pid = PW_ID_BASE + id;
    MPI_Win pw = wthr[tid];
    uint64_t last_fadd[2] = {0, 0}, cas_guess[2] = {0, 0};
    int seen_fadd[2] = {0, 0};
    const uint64_t one = 1;

    MPI_CHECK(MPI_Win_lock_all(0, pw));
    for (int i = 0; i < iters; ++i) {
        int tgt = hot_target(i), k = i % 2;
        uint64_t old = ~(uint64_t) 0;

        double tp = tc_now(), tq;
#define PHASE_DONE(k)                                                                              \
    do {                                                                                           \
        tq = tc_now();                                                                             \
        t->phase_s[k] += tq - tp;                                                                  \
        tp = tq;                                                                                   \
    } while (0)

        /* 1. shared fetch-and-add */
        MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, tgt, HOT_FADD, MPI_SUM, wshared));
        flush(tgt, wshared);
        CHECK(!seen_fadd[k] || old > last_fadd[k],
              "thread %d round %d: fetch-and-add on rank %d fetched %" PRIu64
              " after %" PRIu64 " in an earlier round",
              tid, i, tgt, old, last_fadd[k]);
        seen_fadd[k] = 1;
        last_fadd[k] = old;
        t->fadd_vals[i] = old;
        PHASE_DONE(0);

        /* 2. CAS increment */
        for (;;) {
            uint64_t found = cas64(cas_guess[k], cas_guess[k] + 1, tgt, HOT_CAS, wshared);
            t->cas_attempts++;
            if (tgt != rank) {
                t->cas_attempts_remote++;
            }
            if (found == cas_guess[k]) {
                break;
            }
            CHECK(found > cas_guess[k],
                  "thread %d round %d: CAS counter on rank %d went backwards: found %" PRIu64
                  " where %" PRIu64 " was seen",
                  tid, i, tgt, found, cas_guess[k]);
            cas_guess[k] = found;
        }
        t->cas_vals[i] = cas_guess[k];
        cas_guess[k]++;
        PHASE_DONE(1);

        /* 3. own region at the next rank, shared window */
        size_t sz = put_sizes[i % NPUT];
        tc_fill(t->sbuf, id, sz, (unsigned) i);
        MPI_CHECK(MPI_Put(t->sbuf, (int) sz, MPI_BYTE, peer, region_off(rank, tid), (int) sz,
                          MPI_BYTE, wshared));
        flush(peer, wshared);
        memset(t->rbuf, 0, sz);
        MPI_CHECK(MPI_Get(t->rbuf, (int) sz, MPI_BYTE, peer, region_off(rank, tid), (int) sz,
                          MPI_BYTE, wshared));
        flush(peer, wshared);
        tc_verify(tc_fmt("thread %d round %d: put/get of %zu B on the shared window", tid, i, sz),
                  t->rbuf, id, sz, (unsigned) i);
        PHASE_DONE(2);

        /* 4. this thread's own window */
        MPI_CHECK(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, peer, 0, MPI_SUM, pw));
        flush(peer, pw);
        CHECK(old == (uint64_t) i,
              "thread %d round %d: fetch-and-add on its own window at rank %d fetched %" PRIu64
              ", expected %d (only this thread adds there)",
              tid, i, peer, old, i);
        size_t sz2 = put_sizes[(i + 3) % NPUT];
        tc_fill(t->sbuf, pid, sz2, (unsigned) i);
        MPI_CHECK(MPI_Put(t->sbuf, (int) sz2, MPI_BYTE, peer, PW_DATA, (int) sz2, MPI_BYTE, pw));
        flush(peer, pw);
        memset(t->rbuf, 0, sz2);
        MPI_CHECK(MPI_Get(t->rbuf, (int) sz2, MPI_BYTE, peer, PW_DATA, (int) sz2, MPI_BYTE, pw));
        flush(peer, pw);
        tc_verify(tc_fmt("thread %d round %d: put/get of %zu B on its own window", tid, i, sz2),
                  t->rbuf, pid, sz2, (unsigned) i);
        PHASE_DONE(3);

        /* 5. two-sided, thread to the same thread index */
        size_t msz = msg_sizes[i % NMSG];
        MPI_Request req;
        MPI_Status st;
        int got = -1;
        tc_fill(t->smsg, id, msz, (unsigned) i);
        memset(t->rmsg, 0, MSG_MAX);
        MPI_CHECK(MPI_Irecv(t->rmsg, MSG_MAX, MPI_BYTE, prev, TAG_BASE + tid, MPI_COMM_WORLD,
                            &req));
        MPI_CHECK(MPI_Send(t->smsg, (int) msz, MPI_BYTE, peer, TAG_BASE + tid, MPI_COMM_WORLD));
        MPI_CHECK(MPI_Wait(&req, &st));
        MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
        CHECK(st.MPI_SOURCE == prev && st.MPI_TAG == TAG_BASE + tid && got == (int) msz,
              "thread %d round %d: received %d B from rank %d tag %d, expected %zu B from rank "
              "%d tag %d",
              tid, i, got, st.MPI_SOURCE, st.MPI_TAG, msz, prev, TAG_BASE + tid);
        tc_verify(tc_fmt("thread %d round %d: message of %zu B from rank %d", tid, i, msz, prev),
                  t->rmsg, prev * nthreads + tid, msz, (unsigned) i);
        PHASE_DONE(4);

        /* 6. mutual exclusion by CAS */
        if (is_lock_round(i)) {
            lock_round(t, i);
        }
        PHASE_DONE(5);
#undef PHASE_DONE
    }

    /* final full-size patterns, checked by the owners */
    tc_fill(t->sbuf, id, RS, (unsigned) iters);
    MPI_CHECK(MPI_Put(t->sbuf, RS, MPI_BYTE, peer, region_off(rank, tid), RS, MPI_BYTE, wshared));
    flush(peer, wshared);
    tc_fill(t->sbuf, pid, RS, (unsigned) iters);
    MPI_CHECK(MPI_Put(t->sbuf, RS, MPI_BYTE, peer, PW_DATA, RS, MPI_BYTE, pw));
    flush(peer, pw);
    MPI_CHECK(MPI_Win_unlock_all(pw));
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

/* vals of every rank/thread/round (layout [rank][thread][round]): the values
 * of the rounds aimed at target X must be exactly 0..count-1. */
static void check_permutation(const char *what, const uint64_t *all, int target)
{
    size_t n = 0;
    uint64_t *v = malloc(sizeof(uint64_t) * (size_t) nranks * nthreads * iters);
    for (int r = 0; r < nranks; ++r) {
        for (int t = 0; t < nthreads; ++t) {
            for (int i = 0; i < iters; ++i) {
                if (hot_target(i) == target) {
                    v[n++] = all[((size_t) r * nthreads + t) * iters + i];
                }
            }
        }
    }
    qsort(v, n, sizeof(uint64_t), cmp_u64);
    for (size_t k = 0; k < n; ++k) {
        CHECK(v[k] == k,
              "%s on rank %d: the %zu values fetched by all threads are not 0..%zu each once: "
              "sorted value #%zu is %" PRIu64 "%s",
              what, target, n, n - 1, k, v[k],
              k > 0 && v[k] == v[k - 1] ? " (duplicate: two increments saw the same value)" : "");
    }
    free(v);
}

static void check_bytes(const char *what, const unsigned char *p, size_t n, unsigned char b)
{
    for (size_t k = 0; k < n; ++k) {
        CHECK(p[k] == b, "%s: byte %zu is 0x%02x, expected 0x%02x", what, k, p[k], b);
    }
}

static void usage_fail(const char *arg)
{
    FAILF("unknown argument '%s' (usage: mt [-t threads] [-n rounds] [-l lock_every])", arg);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, "threads", MPI_THREAD_MULTIPLE);
    for (int a = 1; a < argc; ++a) {
        if (0 == strcmp(argv[a], "-t") && a + 1 < argc) {
            nthreads = mt_atoi("-t", argv[++a], 1, 64);
        } else if (0 == strcmp(argv[a], "-n") && a + 1 < argc) {
            iters = mt_atoi("-n", argv[++a], 2, 1000000);
        } else if (0 == strcmp(argv[a], "-l") && a + 1 < argc) {
            lock_every = mt_atoi("-l", argv[++a], 1, 1000000);
        } else {
            usage_fail(argv[a]);
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(nranks >= 2, "needs at least 2 ranks, got %d", nranks);
    peer = (rank + 1) % nranks;
    prev = (rank + nranks - 1) % nranks;

    int nctx = -1;
    int crc = mt_cvar_read_int("btl_ofi_num_contexts_per_module", &nctx);
    const char *want_ctx = getenv("BTL_OFI_EXPECT_CONTEXTS");
    tc_say("threads: %d ranks x %d threads, %d rounds, lock every %d; "
           "btl_ofi_num_contexts_per_module=%d expected=%s",
           nranks, nthreads, iters, lock_every, nctx, want_ctx ? want_ctx : "<any>");
    if (tc_check_ours_enabled()) {
        CHECK(crc == 0, "cannot read cvar btl_ofi_num_contexts_per_module (rc %d)", crc);
        if (want_ctx != NULL && want_ctx[0] != '\0') {
            CHECK(nctx == atoi(want_ctx), "btl_ofi_num_contexts_per_module is %d, expected %s",
                  nctx, want_ctx);
        }
    }

    /* windows: shared one, then one per thread index (collective, main thread) */
    size_t ssize = (size_t) REG_OFF + (size_t) nranks * nthreads * (RS + GUARD);
    sbase = malloc(ssize);
    CHECK(sbase != NULL, "malloc(%zu)", ssize);
    memset(sbase, 0, ssize);
    memset(sbase + HOT_SIZE, GUARD_BYTE, GUARD);
    for (int o = 0; o < nranks; ++o) {
        for (int t = 0; t < nthreads; ++t) {
            memset(sbase + region_off(o, t) + RS, GUARD_BYTE, GUARD);
        }
    }
    MPI_CHECK(MPI_Win_create(sbase, (MPI_Aint) ssize, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wshared));
    MPI_CHECK(MPI_Win_create(lock_word, sizeof(lock_word), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                             &wlock));
    wthr = calloc(nthreads, sizeof(MPI_Win));
    tbase = calloc(nthreads, sizeof(unsigned char *));
    thr = calloc(nthreads, sizeof(thr_t));
    for (int t = 0; t < nthreads; ++t) {
        tbase[t] = calloc(1, PW_SIZE);
        CHECK(tbase[t] != NULL, "calloc(%d)", PW_SIZE);
        memset(tbase[t] + PW_DATA + RS, GUARD_BYTE, GUARD);
        MPI_CHECK(MPI_Win_create(tbase[t], PW_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wthr[t]));
        thr[t].tid = t;
        thr[t].fadd_vals = calloc(iters, sizeof(uint64_t));
        thr[t].cas_vals = calloc(iters, sizeof(uint64_t));
        thr[t].sbuf = malloc(RS);
        thr[t].rbuf = malloc(RS);
        thr[t].smsg = malloc(MSG_MAX);
        thr[t].rmsg = malloc(MSG_MAX);
        CHECK(thr[t].fadd_vals && thr[t].cas_vals && thr[t].sbuf && thr[t].rbuf && thr[t].smsg
                  && thr[t].rmsg,
              "out of memory");
    }

    /* counters first, then the barrier: no thread of the peer can send
     * before this rank took its snapshot */
    tc_counters_t before, after;
    unsigned long long sends_before, sends_after, recvs_before, recvs_after;
    tc_counters_read(&before);
    sends_before = mt_send_count();
    recvs_before = mt_recv_count();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = tc_now();

    MPI_CHECK(MPI_Win_lock_all(0, wshared));
    MPI_CHECK(MPI_Win_lock_all(0, wlock));
    for (int t = 0; t < nthreads; ++t) {
        int rc = pthread_create(&thr[t].handle, NULL, thread_main, &thr[t]);
        CHECK(rc == 0, "pthread_create: %s", strerror(rc));
    }
    for (int t = 0; t < nthreads; ++t) {
        int rc = pthread_join(thr[t].handle, NULL);
        CHECK(rc == 0, "pthread_join: %s", strerror(rc));
    }
    double t_threads = tc_now() - t0;
    tc_counters_read(&after);
    sends_after = mt_send_count();
    recvs_after = mt_recv_count();
    MPI_CHECK(MPI_Win_unlock_all(wlock));
    MPI_CHECK(MPI_Win_unlock_all(wshared));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    /* ---- final values in this rank's memory ---- */
    unsigned long long rounds_at_me = 0, lock_rounds_at_me = 0;
    for (int i = 0; i < iters; ++i) {
        rounds_at_me += hot_target(i) == rank;
        lock_rounds_at_me += is_lock_round(i) && lock_target(i) == rank;
    }
    uint64_t incs = (uint64_t) nranks * nthreads * rounds_at_me;
    uint64_t locks = (uint64_t) nranks * nthreads * lock_rounds_at_me;
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wshared));
    MPI_CHECK(MPI_Win_sync(wshared));
    uint64_t hot[5]; /* fetch-add, CAS, (unused), data, owner */
    memcpy(hot, sbase, sizeof(hot));
    CHECK(hot[0] == incs, "fetch-and-add counter on rank %d is %" PRIu64 ", expected %" PRIu64,
          rank, hot[0], incs);
    CHECK(hot[1] == incs, "CAS counter on rank %d is %" PRIu64 ", expected %" PRIu64, rank,
          hot[1], incs);
    CHECK(hot[3] == locks,
          "data word protected by the CAS lock on rank %d is %" PRIu64 ", expected %" PRIu64
          " (lost updates: mutual exclusion or flush ordering broken)",
          rank, hot[3], locks);
    check_bytes("guard after the counters", sbase + HOT_SIZE, GUARD, GUARD_BYTE);
    for (int o = 0; o < nranks; ++o) {
        for (int t = 0; t < nthreads; ++t) {
            const unsigned char *reg = sbase + region_off(o, t);
            if ((o + 1) % nranks == rank) {
                tc_verify(tc_fmt("region of rank %d thread %d in rank %d's shared window", o, t,
                                 rank),
                          reg, o * nthreads + t, RS, (unsigned) iters);
            } else {
                check_bytes(tc_fmt("region of rank %d thread %d (nobody writes it here)", o, t),
                            reg, RS, 0);
            }
            check_bytes(tc_fmt("guard after region of rank %d thread %d", o, t), reg + RS, GUARD,
                        GUARD_BYTE);
        }
    }
    MPI_CHECK(MPI_Win_unlock(rank, wshared));
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wlock));
    MPI_CHECK(MPI_Win_sync(wlock));
    CHECK(lock_word[0] == 0, "lock word on rank %d is %" PRIu64 " after every thread released it",
          rank, lock_word[0]);
    MPI_CHECK(MPI_Win_unlock(rank, wlock));
    for (int t = 0; t < nthreads; ++t) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, wthr[t]));
        MPI_CHECK(MPI_Win_sync(wthr[t]));
        uint64_t c;
        memcpy(&c, tbase[t], 8);
        CHECK(c == (uint64_t) iters,
              "counter of thread window %d on rank %d is %" PRIu64 ", expected %d", t, rank, c,
              iters);
        tc_verify(tc_fmt("data of thread window %d on rank %d", t, rank), tbase[t] + PW_DATA,
                  PW_ID_BASE + prev * nthreads + t, RS, (unsigned) iters);
        check_bytes(tc_fmt("guard of thread window %d", t), tbase[t] + PW_DATA + RS, GUARD,
                    GUARD_BYTE);
        MPI_CHECK(MPI_Win_unlock(rank, wthr[t]));
    }

    /* ---- fetched values of everybody ---- */
    size_t per_rank = (size_t) nthreads * iters;
    uint64_t *mine = malloc(per_rank * sizeof(uint64_t) * 2);
    uint64_t *all = malloc(per_rank * sizeof(uint64_t) * 2 * nranks);
    uint64_t *all_fadd = malloc(per_rank * sizeof(uint64_t) * nranks);
    uint64_t *all_cas = malloc(per_rank * sizeof(uint64_t) * nranks);
    for (int t = 0; t < nthreads; ++t) {
        memcpy(mine + (size_t) t * iters, thr[t].fadd_vals, iters * sizeof(uint64_t));
        memcpy(mine + per_rank + (size_t) t * iters, thr[t].cas_vals, iters * sizeof(uint64_t));
    }
    MPI_CHECK(MPI_Allgather(mine, (int) (2 * per_rank), MPI_UINT64_T, all, (int) (2 * per_rank),
                            MPI_UINT64_T, MPI_COMM_WORLD));
    for (int r = 0; r < nranks; ++r) {
        memcpy(all_fadd + r * per_rank, all + (size_t) r * 2 * per_rank, per_rank * 8);
        memcpy(all_cas + r * per_rank, all + (size_t) r * 2 * per_rank + per_rank, per_rank * 8);
    }
    check_permutation("fetch-and-add counter", all_fadd, 0);
    check_permutation("fetch-and-add counter", all_fadd, nranks - 1);
    check_permutation("CAS counter", all_cas, 0);
    check_permutation("CAS counter", all_cas, nranks - 1);

    /* ---- our btl carried this rank's traffic to other ranks ---- */
    unsigned long long remote_rounds = (unsigned long long) iters - rounds_at_me;
    unsigned long long cas_att = 0, cas_att_remote = 0, lock_att = 0, lock_att_remote = 0,
                       lock_rounds_remote = 0;
    for (int t = 0; t < nthreads; ++t) {
        cas_att += thr[t].cas_attempts;
        cas_att_remote += thr[t].cas_attempts_remote;
        lock_att += thr[t].lock_attempts;
        lock_att_remote += thr[t].lock_attempts_remote;
        lock_rounds_remote += thr[t].lock_rounds_remote;
    }
    tc_expect_t exp;
    memset(&exp, 0, sizeof(exp));
    /* CAS attempts + lock CASes (take and release): btl atomics; with
     * the shared fetch-adds and the own-window fetch-adds, atomics or
     * (to another node, osc-rdma/patches 0016) one message each */
    exp.min[TC_ATOMIC_COUNT] = cas_att_remote + lock_att_remote + lock_rounds_remote;
    exp.min_amo = nthreads * remote_rounds + cas_att_remote + lock_att_remote + lock_rounds_remote
                  + (unsigned long long) nthreads * iters;
    /* region puts (+ final one), own-window puts (+ final), lock protocol:
     * owner and data puts */
    exp.min[TC_PUT_COUNT] = 2ULL * nthreads * (iters + 1) + 2 * lock_rounds_remote;
    exp.min[TC_GET_COUNT] = 2ULL * nthreads * iters + 2 * lock_rounds_remote;
    exp.min[TC_PUT_BYTES] = 2ULL * nthreads * RS;
    tc_counters_expect("threads", &before, &after, &exp, 1);
    unsigned long long sends = sends_after - sends_before;
    if (mt_have_send && tc_check_ours_enabled()) {
        CHECK(sends >= (unsigned long long) nthreads * iters,
              "btl_ofi_send_count grew by %llu, expected at least %llu (one per message this "
              "rank sent; did ob1 send over our btl/ofi?)",
              sends, (unsigned long long) nthreads * iters);
    }

    unsigned long long recvs = recvs_after - recvs_before;
    if (mt_have_recv && tc_check_ours_enabled()) {
        CHECK(recvs >= (unsigned long long) nthreads * iters,
              "btl_ofi_recv_count grew by %llu, expected at least %llu (one per message this "
              "rank's threads received)",
              recvs, (unsigned long long) nthreads * iters);
    }

    double t_all = 0;
    MPI_CHECK(MPI_Reduce(&t_threads, &t_all, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    tc_say("    rank0: %d threads x %d rounds in %.2f s (slowest rank); sends+%llu recvs+%llu; "
           "CAS attempts %llu for %d increments; lock attempts %llu for %d lock rounds",
           nthreads, iters, t_all, sends, recvs, cas_att, nthreads * iters, lock_att,
           nthreads * (iters / lock_every));
    double phase_max[6] = {0}, phase_all[6];
    for (int t = 0; t < nthreads; ++t) {
        for (int k = 0; k < 6; ++k) {
            phase_max[k] = thr[t].phase_s[k] > phase_max[k] ? thr[t].phase_s[k] : phase_max[k];
        }
    }
    MPI_CHECK(MPI_Reduce(phase_max, phase_all, 6, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    tc_say("    time per step (slowest thread): %s %.2f s, %s %.2f s, %s %.2f s, %s %.2f s, "
           "%s %.2f s, %s %.2f s",
           phase_names[0], phase_all[0], phase_names[1], phase_all[1], phase_names[2],
           phase_all[2], phase_names[3], phase_all[3], phase_names[4], phase_all[4],
           phase_names[5], phase_all[5]);
    tc_say("    checked: counters exact, fetched values a permutation, regions byte-exact, "
           "guards intact, messages byte-exact");

    MPI_CHECK(MPI_Win_free(&wlock));
    MPI_CHECK(MPI_Win_free(&wshared));
    for (int t = 0; t < nthreads; ++t) {
        MPI_CHECK(MPI_Win_free(&wthr[t]));
        free(tbase[t]);
        free(thr[t].fadd_vals);
        free(thr[t].cas_vals);
        free(thr[t].sbuf);
        free(thr[t].rbuf);
        free(thr[t].smsg);
        free(thr[t].rmsg);
    }
    free(sbase);
    free(mine);
    free(all);
    free(all_fadd);
    free(all_cas);
    free(wthr);
    free(tbase);
    free(thr);
    mt_finish();
    return 0;
}
