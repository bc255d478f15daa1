/*
 * pairs: MPI_Accumulate, MPI_Get_accumulate and MPI_Fetch_and_op on MPI's
 * pair types (MPI_SHORT_INT, MPI_2INT, MPI_LONG_INT, MPI_FLOAT_INT,
 * MPI_DOUBLE_INT, MPI_LONG_DOUBLE_INT) with MPI_NO_OP, MPI_REPLACE,
 * MPI_MAXLOC and MPI_MINLOC, one element and several, and into a vector
 * of them at the target. Most of these types have padding inside or at
 * the end of an element: Open MPI 4.1.4's osc/rdma read and wrote them
 * as if they had none (MPI_Get_accumulate of 10 MPI_SHORT_INT returned
 * every element after the first 2 bytes off; MPICH's atomic_get_short_int
 * across hosts) and applied MPI_MAXLOC to none of a vector's elements
 * (osc-rdma/patches 0009).
 *
 * Every rank works on the same target (rank 0, then rank n-1) at once,
 * under MPI_Win_lock_all, MPI_Win_flush after each operation: in a region
 * of its own (NO_OP, REPLACE, MAXLOC and MINLOC results and final values
 * are then determined) and in shared regions (MAXLOC and MINLOC of every
 * rank's values, ties included: the final value is determined). The
 * target then checks every element, and that no padding byte of its
 * window changed (the canary written before). On an MPI_Win_create window
 * (every peer through the btl, this process included) and an
 * MPI_Win_allocate one (on one node osc/rdma reaches it with loads and
 * stores).
 */
#include "common.h"

#include <stddef.h>

#define OWN 32      /* elements of each rank's own region */
#define SHARED 8    /* elements of each shared region */
#define VEC 4       /* elements of the vector at the target (stride 2) */
#define CANARY 0xA5 /* every byte of the window before the values */

typedef struct {
    short a;
    int b;
} si_t;
typedef struct {
    int a;
    int b;
} ii_t;
typedef struct {
    long a;
    int b;
} li_t;
typedef struct {
    float a;
    int b;
} fi_t;
typedef struct {
    double a;
    int b;
} di_t;
typedef struct {
    long double a;
    int b;
} ldi_t;

enum { K_SHORT, K_INT, K_LONG, K_FLOAT, K_DOUBLE, K_LDOUBLE };

typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t extent; /* of the C struct */
    size_t asize;  /* bytes of the value (MPI's size of its type) */
    size_t bofs;   /* offset of the int */
    int kind;
} ptype_t;

#define PT(n, d, s, k, asz)                                                                        \
    {                                                                                              \
        n, d, sizeof(s), asz, offsetof(s, b), k                                                    \
    }
static ptype_t ptypes[6];

static void ptypes_init(void)
{
    int ld = 0;
    MPI_CHECK(MPI_Type_size(MPI_LONG_DOUBLE, &ld));
    const ptype_t t[6] = {
        PT("MPI_SHORT_INT", MPI_SHORT_INT, si_t, K_SHORT, sizeof(short)),
        PT("MPI_2INT", MPI_2INT, ii_t, K_INT, sizeof(int)),
        PT("MPI_LONG_INT", MPI_LONG_INT, li_t, K_LONG, sizeof(long)),
        PT("MPI_FLOAT_INT", MPI_FLOAT_INT, fi_t, K_FLOAT, sizeof(float)),
        PT("MPI_DOUBLE_INT", MPI_DOUBLE_INT, di_t, K_DOUBLE, sizeof(double)),
        PT("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, ldi_t, K_LDOUBLE, (size_t) ld),
    };
    for (int i = 0; i < 6; ++i) {
        MPI_Aint lb, extent;
        int size;
        ptypes[i] = t[i];
        MPI_CHECK(MPI_Type_get_extent(t[i].dt, &lb, &extent));
        MPI_CHECK(MPI_Type_size(t[i].dt, &size));
        CHECK(0 == lb && (size_t) extent == t[i].extent
                  && (size_t) size == t[i].asize + sizeof(int),
              "%s: lb %ld extent %ld size %d, but the C struct has extent %zu and %zu + 4 bytes of "
              "data",
              t[i].name, (long) lb, (long) extent, size, t[i].extent, t[i].asize);
    }
}

/* an element's value: the pair (a, b), a small integer stored as the
 * type's first member */
static void pset(const ptype_t *t, void *base, size_t i, long a, int b)
{
    char *e = (char *) base + i * t->extent;
    switch (t->kind) {
    case K_SHORT:
        ((si_t *) e)->a = (short) a;
        break;
    case K_INT:
        ((ii_t *) e)->a = (int) a;
        break;
    case K_LONG:
        ((li_t *) e)->a = a;
        break;
    case K_FLOAT:
        ((fi_t *) e)->a = (float) a;
        break;
    case K_DOUBLE:
        ((di_t *) e)->a = (double) a;
        break;
    default:
        ((ldi_t *) e)->a = (long double) a;
        break;
    }
    memcpy(e + t->bofs, &b, sizeof(int));
}

static void pget(const ptype_t *t, const void *base, size_t i, long *a, int *b)
{
    const char *e = (const char *) base + i * t->extent;
    switch (t->kind) {
    case K_SHORT:
        *a = ((const si_t *) e)->a;
        break;
    case K_INT:
        *a = ((const ii_t *) e)->a;
        break;
    case K_LONG:
        *a = ((const li_t *) e)->a;
        break;
    case K_FLOAT:
        *a = (long) ((const fi_t *) e)->a;
        break;
    case K_DOUBLE:
        *a = (long) ((const di_t *) e)->a;
        break;
    default:
        *a = (long) ((const ldi_t *) e)->a;
        break;
    }
    memcpy(b, e + t->bofs, sizeof(int));
}

/* whether byte `off' of an element is padding (neither the value nor the
 * int): a long double's 16 bytes all count as its value, as MPI moves them */
static int is_padding(const ptype_t *t, size_t off)
{
    return !(off < t->asize || (off >= t->bofs && off < t->bofs + sizeof(int)));
}

/* MAXLOC / MINLOC of two pairs, as the standard defines them: the larger
 * (smaller) value, and on a tie the smaller index */
static void loc(int max, long *a, int *b, long xa, int xb)
{
    if ((max && xa > *a) || (!max && xa < *a)) {
        *a = xa;
        *b = xb;
    } else if (xa == *a && xb < *b) {
        *b = xb;
    }
}

/* the window: each rank's own region, then the shared MAXLOC and MINLOC
 * regions and the vector region (2 * VEC elements, every other one
 * targeted) */
static int nranks;
static size_t own_at(int r)
{
    return (size_t) r * OWN;
}
static size_t maxloc_at(void)
{
    return (size_t) nranks * OWN;
}
static size_t minloc_at(void)
{
    return maxloc_at() + SHARED;
}
static size_t vec_at(void)
{
    return minloc_at() + SHARED;
}
static size_t nelems(void)
{
    return vec_at() + 2 * VEC;
}

static long init_a(size_t j)
{
    if (j >= maxloc_at() && j < minloc_at()) {
        return -100;
    }
    if (j >= minloc_at() && j < vec_at()) {
        return 100;
    }
    return 1000 + (long) j;
}

static int init_b(size_t j)
{
    return (j >= maxloc_at() && j < vec_at()) ? 50 : (int) j;
}

/* rank r's value for element k of a shared region: 4 distinct values over
 * the ranks, so that ranks tie */
static long shared_a(int r, int k)
{
    return (r * 3 + k) % 4;
}

static void fill(const ptype_t *t, unsigned char *w)
{
    memset(w, CANARY, nelems() * t->extent);
    for (size_t j = 0; j < nelems(); ++j) {
        pset(t, w, j, init_a(j), init_b(j));
    }
}

static void expect_pair(const ptype_t *t, const void *buf, size_t i, long a, int b,
                        const char *what, int T)
{
    long ga;
    int gb;
    pget(t, buf, i, &ga, &gb);
    if (ga != a || gb != b) {
        FAILF("%s, target %d: %s element %zu is (%ld, %d), expected (%ld, %d)", t->name, T, what, i,
              ga, gb, a, b);
    }
}

static void run_type(const ptype_t *t, MPI_Win win, unsigned char *w, int T)
{
    const int r = tc_rank;
    const size_t own = own_at(r);
    unsigned char org[OWN * 32], res[OWN * 32];
    MPI_Datatype vec;
/* the window's displacement unit is 1: element j is j extents in */
#define D(j) ((MPI_Aint) ((j) *t->extent))

    /* the target's memory: canary, then every element's initial value */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (r == T) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, win));
        fill(t, w);
        MPI_CHECK(MPI_Win_unlock(T, win));
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Type_vector(VEC, 1, 2, t->dt, &vec));
    MPI_CHECK(MPI_Type_commit(&vec));
    memset(res, 0, sizeof(res));

    MPI_CHECK(MPI_Win_lock_all(0, win));
    /* +0: one element read (fetch-and-op MPI_NO_OP) */
    MPI_CHECK(MPI_Fetch_and_op(NULL, res, t->dt, T, D(own), MPI_NO_OP, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +1..+10: ten read at once (get-accumulate MPI_NO_OP) */
    MPI_CHECK(MPI_Get_accumulate(NULL, 0, t->dt, res + t->extent, 10, t->dt, T, D(own + 1), 10,
                                 t->dt, MPI_NO_OP, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +11: one replaced; +12..+14: three */
    for (int k = 0; k < 4; ++k) {
        pset(t, org, (size_t) k, -(long) (r + 1) * 10 - k, r * 100 + k);
    }
    MPI_CHECK(MPI_Accumulate(org, 1, t->dt, T, D(own + 11), 1, t->dt, MPI_REPLACE, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    MPI_CHECK(
        MPI_Accumulate(org + t->extent, 3, t->dt, T, D(own + 12), 3, t->dt, MPI_REPLACE, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +15..+19: five swapped (get-accumulate MPI_REPLACE) */
    for (int k = 0; k < 5; ++k) {
        pset(t, org, (size_t) k, 7000 + k, -k);
    }
    MPI_CHECK(MPI_Get_accumulate(org, 5, t->dt, res + 15 * t->extent, 5, t->dt, T, D(own + 15), 5,
                                 t->dt, MPI_REPLACE, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +20: MAXLOC that wins; +21: MINLOC that ties with a smaller index */
    pset(t, org, 0, 5000, r);
    MPI_CHECK(MPI_Fetch_and_op(org, res + 20 * t->extent, t->dt, T, D(own + 20), MPI_MAXLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    pset(t, org, 0, init_a(own + 21), -1);
    MPI_CHECK(MPI_Fetch_and_op(org, res + 21 * t->extent, t->dt, T, D(own + 21), MPI_MINLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +22..+29: MAXLOC of eight, every other one winning, old values back */
    for (int k = 0; k < 8; ++k) {
        pset(t, org, (size_t) k, init_a(own + 22 + (size_t) k) + ((k & 1) ? 1 : -1), 77);
    }
    MPI_CHECK(MPI_Get_accumulate(org, 8, t->dt, res + 22 * t->extent, 8, t->dt, T, D(own + 22), 8,
                                 t->dt, MPI_MAXLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    /* +30, +31 untouched */

    /* shared: every rank's MAXLOC and MINLOC of eight, and MAXLOC of four
     * into the vector's every other element */
    for (int k = 0; k < SHARED; ++k) {
        pset(t, org, (size_t) k, shared_a(r, k), r);
    }
    MPI_CHECK(
        MPI_Accumulate(org, SHARED, t->dt, T, D(maxloc_at()), SHARED, t->dt, MPI_MAXLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    MPI_CHECK(
        MPI_Accumulate(org, SHARED, t->dt, T, D(minloc_at()), SHARED, t->dt, MPI_MINLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    for (int k = 0; k < VEC; ++k) {
        pset(t, org, (size_t) k, init_a(vec_at() + 2 * (size_t) k) + r + k, r);
    }
    MPI_CHECK(MPI_Accumulate(org, VEC, t->dt, T, D(vec_at()), 1, vec, MPI_MAXLOC, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Type_free(&vec));

    /* what this rank fetched: the initial values */
    for (size_t k = 0; k <= 10; ++k) {
        expect_pair(t, res, k, init_a(own + k), init_b(own + k), "fetched (NO_OP)", T);
    }
    for (size_t k = 15; k <= 29; ++k) {
        expect_pair(t, res, k, init_a(own + k), init_b(own + k),
                    "fetched (REPLACE, MAXLOC, MINLOC)", T);
    }

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (r == T) {
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, win));
        for (int q = 0; q < nranks; ++q) {
            const size_t o = own_at(q);
            for (size_t k = 0; k <= 10; ++k) {
                expect_pair(t, w, o + k, init_a(o + k), init_b(o + k), "read (NO_OP)", T);
            }
            for (size_t k = 0; k < 4; ++k) {
                expect_pair(t, w, o + 11 + k, -(long) (q + 1) * 10 - (long) k, q * 100 + (int) k,
                            "replaced", T);
            }
            for (size_t k = 0; k < 5; ++k) {
                expect_pair(t, w, o + 15 + k, 7000 + (long) k, -(int) k, "swapped", T);
            }
            expect_pair(t, w, o + 20, 5000, q, "MAXLOC", T);
            expect_pair(t, w, o + 21, init_a(o + 21), -1, "MINLOC (tie)", T);
            for (size_t k = 0; k < 8; ++k) {
                const int win_k = k & 1;
                expect_pair(t, w, o + 22 + k, init_a(o + 22 + k) + (win_k ? 1 : 0),
                            win_k ? 77 : init_b(o + 22 + k), "MAXLOC of eight", T);
            }
            expect_pair(t, w, o + 30, init_a(o + 30), init_b(o + 30), "untouched", T);
            expect_pair(t, w, o + 31, init_a(o + 31), init_b(o + 31), "untouched", T);
        }
        for (int k = 0; k < SHARED; ++k) {
            long amax = init_a(maxloc_at()), amin = init_a(minloc_at());
            int bmax = init_b(maxloc_at()), bmin = init_b(minloc_at());
            for (int q = 0; q < nranks; ++q) {
                loc(1, &amax, &bmax, shared_a(q, k), q);
                loc(0, &amin, &bmin, shared_a(q, k), q);
            }
            expect_pair(t, w, maxloc_at() + (size_t) k, amax, bmax, "shared MAXLOC", T);
            expect_pair(t, w, minloc_at() + (size_t) k, amin, bmin, "shared MINLOC", T);
        }
        for (int k = 0; k < VEC; ++k) {
            const size_t j = vec_at() + 2 * (size_t) k;
            expect_pair(t, w, j, init_a(j) + (nranks - 1) + k, nranks - 1, "vector MAXLOC", T);
            expect_pair(t, w, j + 1, init_a(j + 1), init_b(j + 1), "between the vector's elements",
                        T);
        }
        for (size_t j = 0; j < nelems(); ++j) {
            for (size_t off = 0; off < t->extent; ++off) {
                const unsigned char c = w[j * t->extent + off];
                if (is_padding(t, off) && c != CANARY) {
                    FAILF("%s, target %d: padding byte %zu of element %zu is 0x%02x, was 0x%02x",
                          t->name, T, off, j, c, CANARY);
                }
            }
        }
        MPI_CHECK(MPI_Win_unlock(T, win));
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
#undef D
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "pairs");
    nranks = tc_size;
    CHECK(nranks >= 2, "pairs needs 2 ranks or more (got %d)", nranks);
    ptypes_init();
    const size_t bytes = nelems() * sizeof(ldi_t);
    const int targets[2] = {0, nranks - 1};
    static const char *const kinds[2] = {"win_create", "win_allocate"};

    for (int kind = 0; kind < 2; ++kind) {
        double t0 = tc_now();
        unsigned char *w = NULL;
        void *mem = NULL;
        MPI_Win win;
        tc_counters_t before, after;

        if (0 == kind) {
            CHECK(0 == posix_memalign(&mem, 4096, bytes), "posix_memalign");
            w = mem;
            MPI_CHECK(MPI_Win_create(w, (MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        } else {
            MPI_CHECK(
                MPI_Win_allocate((MPI_Aint) bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w, &win));
        }
        tc_counters_read(&before);
        for (int i = 0; i < 6; ++i) {
            for (int tt = 0; tt < 2; ++tt) {
                run_type(&ptypes[i], win, w, targets[tt]);
            }
        }
        tc_counters_read(&after);
        MPI_CHECK(MPI_Win_free(&win));
        free(mem);
        if (0 == kind && tc_check_ours_enabled()) {
            /* a window of MPI_Win_create is reached through the btl by
             * every rank: ours carried it */
            const unsigned long long moved = after.v[TC_PUT_COUNT] - before.v[TC_PUT_COUNT]
                                             + after.v[TC_GET_COUNT] - before.v[TC_GET_COUNT]
                                             + after.v[TC_ATOMIC_COUNT] - before.v[TC_ATOMIC_COUNT]
                                             + after.v[TC_SEND_COUNT] - before.v[TC_SEND_COUNT];
            CHECK(moved > 0, "no put, get, atomic or message went through btl/ofi on an "
                             "MPI_Win_create window");
        }
        tc_say("pairs %s: NO_OP, REPLACE, MAXLOC and MINLOC on the 6 pair types passed (%.2fs)",
               kinds[kind], tc_now() - t0);
    }

    tc_finish();
    return 0;
}
