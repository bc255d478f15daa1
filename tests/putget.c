/*
 * putget: MPI_Put / MPI_Get of 1 B .. 16 MiB (odd sizes included) on
 * MPI_Win_create, MPI_Win_allocate and dynamic windows, synchronised with
 * fence in one pass and lock/unlock in another. Every rank puts to
 * (rank+1)%n and gets from (rank+n-1)%n; every byte is verified, and so are
 * guard bytes around the target region. Some sizes are repeated at an
 * unaligned target displacement from an unaligned origin buffer.
 *
 * For MPI_Win_create and dynamic windows every transfer must cross our
 * btl/ofi: the btl_ofi_{put,get}_{count,bytes} counters of each rank must
 * grow by at least what that rank issued.
 *
 * Then, on MPI_Win_create, MANY puts and then MANY gets of MANY_SIZE bytes
 * each are issued before one flush: more than any provider's transmit
 * queue holds here (udp;ofi_rxd's 1024, the largest 2048), so the btl must
 * keep the excess back and still complete all of it. And MANY_BIG gets of
 * MANY_BIG_SIZE bytes each, all of one region, each into its own slot,
 * before one flush: more than udp;ofi_rxd's queue holds, each larger than
 * the 32 pieces a get carried as messages may have in flight. Those gets
 * once held the requests for their later pieces out of a queue they
 * filled themselves, and the job hung (MPICH's manyget: 1200 gets of 128
 * KiB before a fence).
 */
#include "common.h"

#define MAXSZ ((size_t) 16 << 20)
#define GUARD 64
#define UNALIGNED_DISP 13
#define UNALIGNED_ORIGIN 3
#define WINBYTES (MAXSZ + 4096)
#define FILL_WIN 0xA5
#define FILL_GET 0x5A

static const size_t sizes[] = {
    1,       2,       3,           7,           8,                  9,        63,
    64,      65,      1000,        4095,        4096,               4097,     65535,
    65536,   65537,   (1u << 20) - 1, (1u << 20) + 1, (4u << 20) + 3, 16u << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* sizes also run at an unaligned displacement */
static int unaligned_too(size_t s)
{
    return s == 1 || s == 7 || s == 65 || s == 4097 || s == 65537 || s == (1u << 20) + 1
           || s == (4u << 20) + 3;
}

enum { WIN_CREATE, WIN_ALLOCATE, WIN_DYNAMIC, NKINDS };
static const char *const kind_names[NKINDS] = {"win_create", "win_allocate", "win_dynamic"};
enum { SYNC_FENCE, SYNC_LOCK, NSYNCS };
static const char *const sync_names[NSYNCS] = {"fence", "lock"};

typedef struct {
    MPI_Win win;
    unsigned char *base;  /* local window memory */
    void *to_free;        /* what we malloc'ed (create / dynamic) */
    MPI_Aint *dyn_addrs;  /* dynamic: address of every rank's region */
    void *small;          /* dynamic: a second, small attached region */
} window_t;

static void window_create(window_t *w, int kind)
{
    memset(w, 0, sizeof(*w));
    switch (kind) {
    case WIN_CREATE:
        CHECK(0 == posix_memalign(&w->to_free, 4096, WINBYTES), "posix_memalign");
        w->base = w->to_free;
        MPI_CHECK(MPI_Win_create(w->base, WINBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        break;
    case WIN_ALLOCATE:
        MPI_CHECK(MPI_Win_allocate(WINBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w->base, &w->win));
        break;
    case WIN_DYNAMIC: {
        MPI_Aint mine;
        MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w->win));
        /* a small region attached first, so the target has to look the
         * right region up */
        w->small = calloc(1, 4096);
        MPI_CHECK(MPI_Win_attach(w->win, w->small, 4096));
        CHECK(0 == posix_memalign(&w->to_free, 4096, WINBYTES), "posix_memalign");
        w->base = w->to_free;
        MPI_CHECK(MPI_Win_attach(w->win, w->base, WINBYTES));
        MPI_CHECK(MPI_Get_address(w->base, &mine));
        w->dyn_addrs = calloc(tc_size, sizeof(MPI_Aint));
        MPI_CHECK(MPI_Allgather(&mine, 1, MPI_AINT, w->dyn_addrs, 1, MPI_AINT, MPI_COMM_WORLD));
        break;
    }
    }
    memset(w->base, 0, WINBYTES);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

static void window_free(window_t *w, int kind)
{
    if (kind == WIN_DYNAMIC) {
        MPI_CHECK(MPI_Win_detach(w->win, w->base));
        MPI_CHECK(MPI_Win_detach(w->win, w->small));
    }
    MPI_CHECK(MPI_Win_free(&w->win));
    free(w->to_free);
    free(w->small);
    free(w->dyn_addrs);
}

/* displacement of byte `off' of rank `peer''s window */
static MPI_Aint window_disp(const window_t *w, int kind, int peer, size_t off)
{
    if (kind == WIN_DYNAMIC) {
        return w->dyn_addrs[peer] + (MPI_Aint) off;
    }
    return (MPI_Aint) off;
}

/* Access to the local window memory from the CPU: in the lock pass we take
 * an exclusive lock on ourselves around it (fence epochs already order it). */
static void local_begin(const window_t *w, int sync)
{
    if (sync == SYNC_LOCK) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tc_rank, 0, w->win));
    }
}

static void local_end(const window_t *w, int sync)
{
    if (sync == SYNC_LOCK) {
        MPI_CHECK(MPI_Win_unlock(tc_rank, w->win));
    }
}

static void check_fill(const char *what, const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; ++i) {
        if (p[i] != v) {
            FAILF("%s: guard byte %zu is 0x%02x, expected 0x%02x (written out of bounds?)", what,
                  i, p[i], v);
        }
    }
}

#define MANY 4000
#define MANY_SIZE 200 /* MANY x MANY_SIZE fits in the window */
#define MANY_BIG 1100
#define MANY_BIG_SIZE (64 * 1024)

/* COUNT puts (gets) of SIZE bytes between slot i of LOCAL and TARGET's
 * window at i x STRIDE, all before the one flush of the unlock. */
static void burst(window_t *w, int put, int target, unsigned char *local, int count, int size,
                  MPI_Aint stride)
{
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, w->win));
    for (int i = 0; i < count; ++i) {
        unsigned char *slot = local + (size_t) i * (size_t) size;
        if (put) {
            MPI_CHECK(MPI_Put(slot, size, MPI_BYTE, target, i * stride, size, MPI_BYTE, w->win));
        } else {
            MPI_CHECK(MPI_Get(slot, size, MPI_BYTE, target, i * stride, size, MPI_BYTE, w->win));
        }
    }
    MPI_CHECK(MPI_Win_unlock(target, w->win));
}

/* MANY puts to the right neighbour, one flush; MANY gets from the left
 * one, one flush; every byte checked (tc_fill's pattern per slot). */
static void run_many(window_t *w, unsigned char *obuf, unsigned char *gbuf, unsigned round)
{
    const int right = (tc_rank + 1) % tc_size;
    const int left = (tc_rank + tc_size - 1) % tc_size;
    char what[96];

    for (int i = 0; i < MANY; ++i) {
        tc_fill(obuf + (size_t) i * MANY_SIZE, tc_rank, MANY_SIZE, round + (unsigned) i);
    }
    memset(w->base, FILL_WIN, (size_t) MANY * MANY_SIZE);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    burst(w, 1, right, obuf, MANY, MANY_SIZE, MANY_SIZE);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < MANY; ++i) {
        snprintf(what, sizeof(what), "%d puts before one flush: put %d (from rank %d)", MANY, i,
                 left);
        tc_verify(what, w->base + (size_t) i * MANY_SIZE, left, MANY_SIZE, round + (unsigned) i);
    }

    /* the window now holds the left neighbour's pattern: read it back */
    memset(gbuf, FILL_GET, (size_t) MANY * MANY_SIZE);
    burst(w, 0, left, gbuf, MANY, MANY_SIZE, MANY_SIZE);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < MANY; ++i) {
        snprintf(what, sizeof(what), "%d gets before one flush: get %d (of rank %d's window)",
                 MANY, i, left);
        /* rank left's window holds what ITS left neighbour put */
        tc_verify(what, gbuf + (size_t) i * MANY_SIZE, (left + tc_size - 1) % tc_size,
                  MANY_SIZE, round + (unsigned) i);
    }

    /* MANY_BIG large gets of the same region of the left neighbour */
    unsigned char *slots = malloc((size_t) MANY_BIG * MANY_BIG_SIZE);
    CHECK(NULL != slots, "malloc of %zu bytes", (size_t) MANY_BIG * MANY_BIG_SIZE);
    tc_fill(w->base, tc_rank, MANY_BIG_SIZE, round + MANY);
    memset(slots, FILL_GET, (size_t) MANY_BIG * MANY_BIG_SIZE);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    burst(w, 0, left, slots, MANY_BIG, MANY_BIG_SIZE, 0); /* all of one region */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < MANY_BIG; ++i) {
        snprintf(what, sizeof(what), "%d gets of %d bytes before one flush: get %d (of rank %d)",
                 MANY_BIG, MANY_BIG_SIZE, i, left);
        tc_verify(what, slots + (size_t) i * MANY_BIG_SIZE, left, MANY_BIG_SIZE, round + MANY);
    }
    free(slots);
}

static void run_case(window_t *w, int kind, int sync, unsigned char *obuf, unsigned char *gbuf,
                     size_t size, size_t disp, size_t obuf_off, unsigned round)
{
    const int n = tc_size;
    const int right = (tc_rank + 1) % n;
    const int left = (tc_rank + n - 1) % n;
    char what[160];
    unsigned char *origin = obuf + obuf_off;

    /* ---------------- put: rank -> right ---------------- */
    snprintf(what, sizeof(what), "%s/%s put size=%zu disp=%zu (window of rank %d, from rank %d)",
             kind_names[kind], sync_names[sync], size, disp, tc_rank, left);
    local_begin(w, sync);
    memset(w->base, FILL_WIN, disp + size + GUARD);
    local_end(w, sync);
    tc_fill(origin, tc_rank, size, round);

    if (sync == SYNC_FENCE) {
        MPI_CHECK(MPI_Win_fence(0, w->win));
        MPI_CHECK(MPI_Put(origin, (int) size, MPI_BYTE, right, window_disp(w, kind, right, disp),
                          (int) size, MPI_BYTE, w->win));
        MPI_CHECK(MPI_Win_fence(0, w->win));
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w->win));
        MPI_CHECK(MPI_Put(origin, (int) size, MPI_BYTE, right, window_disp(w, kind, right, disp),
                          (int) size, MPI_BYTE, w->win));
        MPI_CHECK(MPI_Win_unlock(right, w->win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }

    local_begin(w, sync);
    check_fill(what, w->base, disp, FILL_WIN);
    tc_verify(what, w->base + disp, left, size, round);
    check_fill(what, w->base + disp + size, GUARD, FILL_WIN);
    local_end(w, sync);

    /* ---------------- get: rank <- left ---------------- */
    snprintf(what, sizeof(what), "%s/%s get size=%zu disp=%zu (rank %d reading rank %d)",
             kind_names[kind], sync_names[sync], size, disp, tc_rank, left);
    local_begin(w, sync);
    tc_fill(w->base + disp, tc_rank, size, round + 1);
    local_end(w, sync);
    memset(gbuf, FILL_GET, obuf_off + size + GUARD);

    if (sync == SYNC_FENCE) {
        MPI_CHECK(MPI_Win_fence(0, w->win));
        MPI_CHECK(MPI_Get(gbuf + obuf_off, (int) size, MPI_BYTE, left,
                          window_disp(w, kind, left, disp), (int) size, MPI_BYTE, w->win));
        MPI_CHECK(MPI_Win_fence(0, w->win));
    } else {
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, w->win));
        MPI_CHECK(MPI_Get(gbuf + obuf_off, (int) size, MPI_BYTE, left,
                          window_disp(w, kind, left, disp), (int) size, MPI_BYTE, w->win));
        MPI_CHECK(MPI_Win_unlock(left, w->win));
        /* nobody may refill its window before every get of this round is done */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    check_fill(what, gbuf, obuf_off, FILL_GET);
    tc_verify(what, gbuf + obuf_off, left, size, round + 1);
    check_fill(what, gbuf + obuf_off + size, GUARD, FILL_GET);
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "putget");
    if (tc_size < 2) {
        FAILF("putget needs at least 2 ranks (got %d)", tc_size);
    }

    unsigned char *obuf = NULL, *gbuf = NULL;
    CHECK(0 == posix_memalign((void **) &obuf, 4096, WINBYTES), "posix_memalign");
    CHECK(0 == posix_memalign((void **) &gbuf, 4096, WINBYTES), "posix_memalign");
    unsigned round = 1;

    for (int kind = 0; kind < NKINDS; ++kind) {
        if (WIN_DYNAMIC == kind && !tc_dynamic_windows()) {
            continue;
        }
        window_t w;
        window_create(&w, kind);
        for (int sync = 0; sync < NSYNCS; ++sync) {
            tc_counters_t before, after;
            tc_expect_t exp;
            memset(&exp, 0, sizeof(exp));
            double t0 = tc_now();
            tc_counters_read(&before);

            for (size_t si = 0; si < NSIZES; ++si) {
                for (int unal = 0; unal < 2; ++unal) {
                    size_t s = sizes[si];
                    if (unal && !unaligned_too(s)) {
                        continue;
                    }
                    size_t disp = unal ? UNALIGNED_DISP : 0;
                    size_t ooff = unal ? UNALIGNED_ORIGIN : 0;
                    double c0 = tc_now();
                    run_case(&w, kind, sync, obuf, gbuf, s, disp, ooff, round);
                    round += 2;
                    exp.min[TC_PUT_COUNT] += 1;
                    exp.min[TC_GET_COUNT] += 1;
                    exp.min[TC_PUT_BYTES] += s;
                    exp.min[TC_GET_BYTES] += s;
                    /* the put that reached this rank, from its left */
                    if (tc_put_notify_size() > 0 && s >= tc_put_notify_size()) {
                        exp.min[TC_PUT_NOTIFIED] += 1;
                    }
                    tc_say("  ok %s %s put+get size=%zu disp=%zu%s (%.3fs)", kind_names[kind],
                           sync_names[sync], s, disp, unal ? " unaligned origin+target" : "",
                           tc_now() - c0);
                }
            }

            tc_counters_read(&after);
            char what[64];
            snprintf(what, sizeof(what), "%s/%s", kind_names[kind], sync_names[sync]);
            tc_counters_expect(what, &before, &after, &exp, kind != WIN_ALLOCATE);
            tc_say("putget %s %s: %llu puts + %llu gets (%llu + %llu bytes) verified (%.2fs)",
                   kind_names[kind], sync_names[sync], exp.min[TC_PUT_COUNT],
                   exp.min[TC_GET_COUNT], exp.min[TC_PUT_BYTES], exp.min[TC_GET_BYTES],
                   tc_now() - t0);
        }
        if (WIN_CREATE == kind) {
            tc_counters_t before, after;
            tc_expect_t exp;
            memset(&exp, 0, sizeof(exp));
            exp.min[TC_PUT_COUNT] = MANY;
            exp.min[TC_GET_COUNT] = MANY + MANY_BIG;
            double t0 = tc_now();
            tc_counters_read(&before);
            run_many(&w, obuf, gbuf, round);
            round += MANY + 1;
            tc_counters_read(&after);
            tc_counters_expect("win_create/many", &before, &after, &exp, 1);
            tc_say("putget win_create: %d puts, then %d gets, of %d bytes before one flush each, "
                   "and %d gets of %d bytes before one flush, verified (%.2fs)",
                   MANY, MANY, MANY_SIZE, MANY_BIG, MANY_BIG_SIZE, tc_now() - t0);
        }
        window_free(&w, kind);
    }

    free(obuf);
    free(gbuf);
    tc_finish();
    return 0;
}
