/*
 * Checks MPI_Bcast, MPI_Reduce, MPI_Allreduce and MPI_Barrier element by
 * element against results computed locally from every rank's known
 * input: every root, counts from 0 to 4 MiB, the predefined types with
 * every op valid for them, MPI_IN_PLACE, a non-commutative user op
 * (2x2 integer matrix product) whose result depends on rank order,
 * derived communicators, 1,000 back-to-back calls, 600 small broadcasts
 * and 600 small reductions streamed while one rank lags, and collectives
 * interleaved with point-to-point and one-sided traffic.
 *
 * Any difference prints "FAIL: ..." naming the test, communicator, rank,
 * root, type, op, count and element, and the program exits 1.
 * Usage: colltest [quick] [expect-ofi]
 *   quick       largest counts 256 KiB instead of 4 MiB (slow providers)
 *   expect-ofi  also fail unless coll/ofi's MPI_T counters show it served
 *               bcast, reduce, allreduce and barrier on MPI_COMM_WORLD
 * (MPI_T_finalize is not called: Open MPI 4.1.4 crashes in it after
 * MPI_Finalize.)
 */

#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_fail;     /* mismatches seen by this rank */
static int g_reported; /* FAIL lines printed (capped) */
static size_t g_max_bytes = 4u << 20;
static int g_world_rank;

#define REPORT_CAP 20

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
    va_list ap;
    g_fail++;
    if (g_reported++ >= REPORT_CAP) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: world rank %d: ", g_world_rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void check_mpi(int rc, const char *what)
{
    if (MPI_SUCCESS != rc) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "FAIL: world rank %d: %s returned %d (%s)\n", g_world_rank, what, rc, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* ------------------------------------------------------------------ */
/* types */

enum kind { K_SIGNED, K_UNSIGNED, K_FLOAT };

typedef struct {
    MPI_Datatype dt;
    const char *name;
    size_t size;
    enum kind kind;
    int code;
} tinfo_t;

enum {
    T_INT,
    T_LONG,
    T_SHORT,
    T_UNSIGNED,
    T_ULONG,
    T_LLONG,
    T_SCHAR,
    T_UCHAR,
    T_INT8,
    T_INT16,
    T_INT32,
    T_INT64,
    T_UINT8,
    T_UINT16,
    T_UINT32,
    T_UINT64,
    T_FLOAT,
    T_DOUBLE,
    T_LDOUBLE,
    T_CHAR
};

static tinfo_t types[] = {
    {MPI_INT, "MPI_INT", sizeof(int), K_SIGNED, T_INT},
    {MPI_LONG, "MPI_LONG", sizeof(long), K_SIGNED, T_LONG},
    {MPI_SHORT, "MPI_SHORT", sizeof(short), K_SIGNED, T_SHORT},
    {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned), K_UNSIGNED, T_UNSIGNED},
    {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long), K_UNSIGNED, T_ULONG},
    {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long), K_SIGNED, T_LLONG},
    {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR", 1, K_SIGNED, T_SCHAR},
    {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR", 1, K_UNSIGNED, T_UCHAR},
    {MPI_INT8_T, "MPI_INT8_T", 1, K_SIGNED, T_INT8},
    {MPI_INT16_T, "MPI_INT16_T", 2, K_SIGNED, T_INT16},
    {MPI_INT32_T, "MPI_INT32_T", 4, K_SIGNED, T_INT32},
    {MPI_INT64_T, "MPI_INT64_T", 8, K_SIGNED, T_INT64},
    {MPI_UINT8_T, "MPI_UINT8_T", 1, K_UNSIGNED, T_UINT8},
    {MPI_UINT16_T, "MPI_UINT16_T", 2, K_UNSIGNED, T_UINT16},
    {MPI_UINT32_T, "MPI_UINT32_T", 4, K_UNSIGNED, T_UINT32},
    {MPI_UINT64_T, "MPI_UINT64_T", 8, K_UNSIGNED, T_UINT64},
    {MPI_FLOAT, "MPI_FLOAT", sizeof(float), K_FLOAT, T_FLOAT},
    {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double), K_FLOAT, T_DOUBLE},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", sizeof(long double), K_FLOAT, T_LDOUBLE},
};
#define NTYPES ((int) (sizeof(types) / sizeof(types[0])))

static void store(const tinfo_t *t, void *buf, size_t i, long double v)
{
    switch (t->code) {
#define ST(code, ctype)                                                                            \
    case code:                                                                                     \
        ((ctype *) buf)[i] = (ctype) v;                                                            \
        break;
        ST(T_INT, int)
        ST(T_LONG, long)
        ST(T_SHORT, short) ST(T_UNSIGNED, unsigned) ST(T_ULONG, unsigned long)
            ST(T_LLONG, long long) ST(T_SCHAR, signed char) ST(T_UCHAR, unsigned char)
                ST(T_INT8, int8_t) ST(T_INT16, int16_t) ST(T_INT32, int32_t) ST(T_INT64, int64_t)
                    ST(T_UINT8, uint8_t) ST(T_UINT16, uint16_t) ST(T_UINT32, uint32_t)
                        ST(T_UINT64, uint64_t) ST(T_FLOAT, float) ST(T_DOUBLE, double)
                            ST(T_LDOUBLE, long double) ST(T_CHAR, char)
#undef ST
    }
}

static long double load(const tinfo_t *t, const void *buf, size_t i)
{
    switch (t->code) {
#define LD(code, ctype)                                                                            \
    case code:                                                                                     \
        return (long double) ((const ctype *) buf)[i];
        LD(T_INT, int)
        LD(T_LONG, long)
        LD(T_SHORT, short) LD(T_UNSIGNED, unsigned) LD(T_ULONG, unsigned long)
            LD(T_LLONG, long long) LD(T_SCHAR, signed char) LD(T_UCHAR, unsigned char)
                LD(T_INT8, int8_t) LD(T_INT16, int16_t) LD(T_INT32, int32_t) LD(T_INT64, int64_t)
                    LD(T_UINT8, uint8_t) LD(T_UINT16, uint16_t) LD(T_UINT32, uint32_t)
                        LD(T_UINT64, uint64_t) LD(T_FLOAT, float) LD(T_DOUBLE, double)
                            LD(T_LDOUBLE, long double) LD(T_CHAR, char)
#undef LD
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* ops */

enum { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR };

typedef struct {
    MPI_Op op;
    const char *name;
    int code;
    int ints_only;
} oinfo_t;

static oinfo_t ops[] = {
    {MPI_SUM, "MPI_SUM", O_SUM, 0},    {MPI_PROD, "MPI_PROD", O_PROD, 0},
    {MPI_MAX, "MPI_MAX", O_MAX, 0},    {MPI_MIN, "MPI_MIN", O_MIN, 0},
    {MPI_LAND, "MPI_LAND", O_LAND, 1}, {MPI_LOR, "MPI_LOR", O_LOR, 1},
    {MPI_LXOR, "MPI_LXOR", O_LXOR, 1}, {MPI_BAND, "MPI_BAND", O_BAND, 1},
    {MPI_BOR, "MPI_BOR", O_BOR, 1},    {MPI_BXOR, "MPI_BXOR", O_BXOR, 1},
};
#define NOPS ((int) (sizeof(ops) / sizeof(ops[0])))

/* Rank R's element I for op O on type T, chosen so that no result of up
 * to 4 ranks overflows the smallest type and float results are exact. */
static long double value(const tinfo_t *t, int o, int r, size_t i, int seed)
{
    unsigned h = (unsigned) (r * 7919 + (int) (i % 100003) * 104729 + seed * 31);
    h ^= h >> 13;
    switch (o) {
    case O_SUM:
        return (long double) (h % 30);
    case O_PROD:
        return (long double) (1 + h % 2);
    case O_MAX:
    case O_MIN:
        return (t->kind == K_UNSIGNED) ? (long double) (h % 100)
                                       : (long double) ((int) (h % 100) - 50);
    case O_LAND:
    case O_LOR:
    case O_LXOR:
        return (long double) (h % 3 == 0 ? 0 : h % 3); /* 0, 1 or 2 */
    default:
        return (long double) (h % 128);
    }
}

static long double combine(int o, long double a, long double b)
{
    int64_t x = (int64_t) a, y = (int64_t) b;
    switch (o) {
    case O_SUM:
        return a + b;
    case O_PROD:
        return a * b;
    case O_MAX:
        return a > b ? a : b;
    case O_MIN:
        return a < b ? a : b;
    case O_LAND:
        return (x && y) ? 1 : 0;
    case O_LOR:
        return (x || y) ? 1 : 0;
    case O_LXOR:
        return (!x != !y) ? 1 : 0;
    case O_BAND:
        return (long double) (x & y);
    case O_BOR:
        return (long double) (x | y);
    default:
        return (long double) (x ^ y);
    }
}

/* ------------------------------------------------------------------ */
/* reduce / allreduce over a predefined type and op */

static void test_reduction(MPI_Comm comm, const char *cname, const tinfo_t *t, const oinfo_t *op,
                           size_t count, int root, int all, int inplace, int seed)
{
    int rank, size;
    char *in, *out;
    size_t bytes = count * t->size;
    int rc;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    in = malloc(bytes ? bytes : 1);
    out = malloc(bytes ? bytes : 1);
    if (!in || !out) {
        fprintf(stderr, "FAIL: out of memory for %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < count; ++i) {
        store(t, in, i, value(t, op->code, rank, i, seed));
        store(t, out, i, -1);
    }
    if (inplace && (all || rank == root)) {
        memcpy(out, in, bytes);
    }
    if (all) {
        rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : in, out, (int) count, t->dt, op->op, comm);
    } else {
        rc = MPI_Reduce((inplace && rank == root) ? MPI_IN_PLACE : in, out, (int) count, t->dt,
                        op->op, root, comm);
    }
    check_mpi(rc, all ? "MPI_Allreduce" : "MPI_Reduce");

    if (all || rank == root) {
        for (size_t i = 0; i < count; ++i) {
            long double e = value(t, op->code, 0, i, seed), got;
            char tmp[16];
            for (int r = 1; r < size; ++r) {
                e = combine(op->code, e, value(t, op->code, r, i, seed));
            }
            store(t, tmp, 0, e); /* the expected value as the type holds it */
            e = load(t, tmp, 0);
            got = load(t, out, i);
            if (got != e) {
                fail("%s%s on %s: root %d, %s, %s, count %zu%s: element %zu is %Lg, expected %Lg",
                     all ? "MPI_Allreduce" : "MPI_Reduce", "", cname, all ? -1 : root, t->name,
                     op->name, count, inplace ? ", MPI_IN_PLACE" : "", i, got, e);
                break;
            }
        }
    }
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ */
/* bcast */

static void test_bcast(MPI_Comm comm, const char *cname, size_t bytes, int root, int seed)
{
    int rank;
    unsigned char *buf = malloc(bytes ? bytes : 1);

    MPI_Comm_rank(comm, &rank);
    for (size_t i = 0; i < bytes; ++i) {
        buf[i] = (rank == root) ? (unsigned char) (i * 131 + (size_t) seed * 17 + 5) : 0xee;
    }
    /* as MPI_INT where the size allows, to test a typed bcast too */
    if (bytes % sizeof(int) == 0) {
        check_mpi(MPI_Bcast(buf, (int) (bytes / sizeof(int)), MPI_INT, root, comm), "MPI_Bcast");
    } else {
        check_mpi(MPI_Bcast(buf, (int) bytes, MPI_CHAR, root, comm), "MPI_Bcast");
    }
    for (size_t i = 0; i < bytes; ++i) {
        unsigned char e = (unsigned char) (i * 131 + (size_t) seed * 17 + 5);
        if (buf[i] != e) {
            fail("MPI_Bcast on %s: root %d, %zu bytes: byte %zu is %u, expected %u", cname, root,
                 bytes, i, buf[i], e);
            break;
        }
    }
    free(buf);
}

/* The root sends COUNT contiguous ints; the others receive them through a
 * strided vector type: the layouts differ, the signatures agree. */
static void test_bcast_layouts(MPI_Comm comm, const char *cname, int count, int root)
{
    int rank;
    int *buf = malloc(sizeof(int) * (size_t) count * 2 + sizeof(int));
    MPI_Datatype vec;

    MPI_Comm_rank(comm, &rank);
    MPI_Type_vector(count, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (int i = 0; i < 2 * count; ++i) {
        buf[i] = (rank == root) ? i * 3 + 1 : -7;
    }
    if (rank == root) {
        check_mpi(MPI_Bcast(buf, count, MPI_INT, root, comm), "MPI_Bcast");
    } else {
        check_mpi(MPI_Bcast(buf, 1, vec, root, comm), "MPI_Bcast");
        for (int i = 0; i < count; ++i) {
            if (buf[2 * i] != i * 3 + 1 || buf[2 * i + 1] != -7) {
                fail("MPI_Bcast (contiguous root, vector receivers) on %s: root %d, count %d: "
                     "element %d is %d (gap %d), expected %d (gap -7)",
                     cname, root, count, i, buf[2 * i], buf[2 * i + 1], i * 3 + 1);
                break;
            }
        }
    }
    MPI_Type_free(&vec);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* non-commutative op: 2x2 integer matrix product */

static void matmul(const int *a, const int *b, int *c)
{
    int r[4];
    r[0] = a[0] * b[0] + a[1] * b[2];
    r[1] = a[0] * b[1] + a[1] * b[3];
    r[2] = a[2] * b[0] + a[3] * b[2];
    r[3] = a[2] * b[1] + a[3] * b[3];
    memcpy(c, r, sizeof(r));
}

/* inout = in x inout: in holds the lower ranks' product */
static void matmul_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void) dt;
    for (int i = 0; i < *len; ++i) {
        matmul((int *) in + 4 * i, (int *) inout + 4 * i, (int *) inout + 4 * i);
    }
}

static MPI_Datatype mat_type;
static MPI_Op mat_op;

static void mat_value(int r, size_t i, int *m)
{
    /* entries 0..2, distinct per rank, so products differ with order */
    m[0] = (int) ((r + i) % 3);
    m[1] = 1;
    m[2] = (int) ((r * 2 + 1 + i) % 3);
    m[3] = (int) ((i + (size_t) r * r) % 2);
}

static void test_noncommutative(MPI_Comm comm, const char *cname, size_t count, int root, int all)
{
    int rank, size;
    int *in = malloc(16 * count + 16), *out = malloc(16 * count + 16);

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (size_t i = 0; i < count; ++i) {
        mat_value(rank, i, in + 4 * i);
        memset(out + 4 * i, 0x55, 16);
    }
    if (all) {
        check_mpi(MPI_Allreduce(in, out, (int) count, mat_type, mat_op, comm), "MPI_Allreduce");
    } else {
        check_mpi(MPI_Reduce(in, out, (int) count, mat_type, mat_op, root, comm), "MPI_Reduce");
    }
    if (all || rank == root) {
        for (size_t i = 0; i < count; ++i) {
            int e[4], m[4];
            mat_value(0, i, e);
            for (int r = 1; r < size; ++r) {
                mat_value(r, i, m);
                matmul(e, m, e);
            }
            if (memcmp(e, out + 4 * i, sizeof(e))) {
                fail("%s (2x2 matrix product, non-commutative) on %s: root %d, count %zu: "
                     "element %zu is [%d %d; %d %d], expected rank-order product "
                     "[%d %d; %d %d]",
                     all ? "MPI_Allreduce" : "MPI_Reduce", cname, all ? -1 : root, count, i,
                     out[4 * i], out[4 * i + 1], out[4 * i + 2], out[4 * i + 3], e[0], e[1], e[2],
                     e[3]);
                break;
            }
        }
    }
    free(in);
    free(out);
}

/* ------------------------------------------------------------------ */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* A barrier moves no data; check what it promises instead: no rank
 * leaves before the last one arrived.  One rank per round arrives 2 ms
 * late; every rank's exit time must follow every rank's entry time.
 * CLOCK_MONOTONIC is one clock for all ranks of a host, so the check is
 * made only when every rank runs on the same host. */
static void test_barrier(MPI_Comm comm, const char *cname)
{
    int rank, size, len, same = 1;
    char host[MPI_MAX_PROCESSOR_NAME], *hosts;
    double *times;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    memset(host, 0, sizeof(host));
    MPI_Get_processor_name(host, &len);
    hosts = malloc((size_t) size * MPI_MAX_PROCESSOR_NAME);
    times = malloc(sizeof(double) * 2 * (size_t) size);
    MPI_Allgather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  comm);
    for (int p = 0; p < size; ++p) {
        same = same && 0 == strcmp(hosts + (size_t) p * MPI_MAX_PROCESSOR_NAME, host);
    }

    /* Across hosts clocks are not compared: the late rank of each round
     * instead completes a put of the round into its own window before
     * the barrier, and every rank must read it there after the barrier. */
    int *mark = NULL;
    MPI_Win win = MPI_WIN_NULL;
    if (!same) {
        MPI_Alloc_mem(sizeof(int), MPI_INFO_NULL, &mark);
        *mark = -1;
        MPI_Win_create(mark, sizeof(int), sizeof(int), MPI_INFO_NULL, comm, &win);
    }
    for (int round = 0; round < 20; ++round) {
        double t[2];
        const int late = round % size;
        if (late == rank) {
            struct timespec d = {0, 2000000};
            nanosleep(&d, NULL);
            if (!same) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
                MPI_Put(&round, 1, MPI_INT, rank, 0, 1, MPI_INT, win);
                MPI_Win_unlock(rank, win);
            }
        }
        t[0] = now();
        check_mpi(MPI_Barrier(comm), "MPI_Barrier");
        t[1] = now();
        if (!same) {
            int seen = -1;
            MPI_Win_lock(MPI_LOCK_SHARED, late, 0, win);
            MPI_Get(&seen, 1, MPI_INT, late, 0, 1, MPI_INT, win);
            MPI_Win_unlock(late, win);
            if (seen != round) {
                fail("MPI_Barrier on %s: round %d: rank %d left before rank %d (late) had "
                     "arrived: it read %d from rank %d's window after the barrier",
                     cname, round, rank, late, seen, late);
            }
            /* nobody may write the next round before everyone has read */
            check_mpi(MPI_Barrier(comm), "MPI_Barrier");
            continue;
        }
        MPI_Allgather(t, 2, MPI_DOUBLE, times, 2, MPI_DOUBLE, comm);
        for (int p = 0; p < size; ++p) {
            for (int q = 0; q < size; ++q) {
                if (times[2 * q + 1] < times[2 * p]) {
                    fail("MPI_Barrier on %s: round %d: rank %d left %.6f s before rank %d "
                         "arrived",
                         cname, round, q, times[2 * p] - times[2 * q + 1], p);
                }
            }
        }
    }
    if (!same) {
        MPI_Win_free(&win);
        MPI_Free_mem(mark);
    }
    free(hosts);
    free(times);
}

/* counts crossing the data cache (128 KiB by default) */
static const size_t bcast_bytes[] = {0,     1,      3,      4,      1000,    4096,
                                     65536, 131072, 131073, 262147, 1048576, 4u << 20};

static void suite_basic(MPI_Comm comm, const char *cname, int full)
{
    int size;
    MPI_Comm_size(comm, &size);

    for (int root = 0; root < size; ++root) {
        for (size_t k = 0; k < sizeof(bcast_bytes) / sizeof(bcast_bytes[0]); ++k) {
            if (bcast_bytes[k] > g_max_bytes || (!full && bcast_bytes[k] > 262147)) {
                continue;
            }
            test_bcast(comm, cname, bcast_bytes[k], root, (int) k + root);
        }
        test_bcast_layouts(comm, cname, 5, root);
        test_bcast_layouts(comm, cname, 40000, root);
        for (int all = 0; all < 2; ++all) {
            test_noncommutative(comm, cname, 1, root, all);
            test_noncommutative(comm, cname, 7, root, all);
            /* 16 KB: gathered at the root on one node of up to 8 ranks */
            test_noncommutative(comm, cname, 1000, root, all);
            test_noncommutative(comm, cname, 10000, root, all); /* 160 KB */
        }
        test_reduction(comm, cname, &types[0], &ops[O_SUM], 37, root, 0, 0, 1);
        test_reduction(comm, cname, &types[0], &ops[O_SUM], 37, root, 0, 1, 2);
        test_reduction(comm, cname, &types[0], &ops[O_SUM], 3000, root, 0, 0, 7);
        test_reduction(comm, cname, &types[0], &ops[O_SUM], 3000, root, 0, 1, 8);
    }
    test_reduction(comm, cname, &types[17], &ops[O_MAX], 1000, 0, 1, 0, 3);
    test_reduction(comm, cname, &types[0], &ops[O_BXOR], 1000, 0, 1, 1, 4);
    test_barrier(comm, cname);
}

static void suite_types(MPI_Comm comm, const char *cname)
{
    int size;
    MPI_Comm_size(comm, &size);

    for (int t = 0; t < NTYPES; ++t) {
        for (int o = 0; o < NOPS; ++o) {
            if (ops[o].ints_only && types[t].kind == K_FLOAT) {
                continue;
            }
            for (int root = 0; root < size; ++root) {
                test_reduction(comm, cname, &types[t], &ops[o], 37, root, 0, root & 1, t * 10 + o);
            }
            test_reduction(comm, cname, &types[t], &ops[o], 0, 0, 1, 0, 1);
            test_reduction(comm, cname, &types[t], &ops[o], 1, 0, 1, 1, 5);
            test_reduction(comm, cname, &types[t], &ops[o], 300, 0, 1, 0, 6);
        }
    }
    /* large: through the cache in chunks, up to 4 MiB */
    for (int root = 0; root < size; root += (size > 1 ? size - 1 : 1)) {
        if (g_max_bytes >= (4u << 20)) {
            test_reduction(comm, cname, &types[0], &ops[O_SUM], (4u << 20) / sizeof(int), root, 0,
                           0, 7);
        }
        test_reduction(comm, cname, &types[17], &ops[O_MIN], 40000, root, 0, 1, 8);
    }
    test_reduction(comm, cname, &types[0], &ops[O_SUM], g_max_bytes / sizeof(int), 0, 1, 0, 9);
    test_reduction(comm, cname, &types[11], &ops[O_BOR], 50001, 0, 1, 1, 10);
    test_reduction(comm, cname, &types[6], &ops[O_SUM], 200003, 0, 1, 0, 11);
}

/* 1,000 back-to-back collectives, alternating roots and sizes, with
 * point-to-point and one-sided traffic in between */
static void suite_back_to_back(MPI_Comm comm, const char *cname)
{
    int rank, size, *winbuf;
    MPI_Win win;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Win_allocate(sizeof(int) * 64, sizeof(int), MPI_INFO_NULL, comm, &winbuf, &win);
    MPI_Win_fence(0, win);

    for (int i = 0; i < 1000; ++i) {
        int root = i % size;
        size_t count = (size_t) ((i * 37) % 9000) + (i % 3 ? 1 : 0);
        switch (i % 4) {
        case 0:
            test_bcast(comm, cname, count * 4 + (size_t) (i % 2), root, i);
            break;
        case 1:
            test_reduction(comm, cname, &types[0], &ops[O_SUM], count, root, 0, 0, i);
            break;
        case 2:
            test_reduction(comm, cname, &types[17], &ops[O_MAX], count % 700, root, 1, i & 1, i);
            break;
        default:
            check_mpi(MPI_Barrier(comm), "MPI_Barrier");
            break;
        }
        if (i % 50 == 0) {
            /* point to point around a ring */
            int sendv = rank * 1000 + i, recvv = -1;
            int right = (rank + 1) % size, left = (rank + size - 1) % size;
            check_mpi(MPI_Sendrecv(&sendv, 1, MPI_INT, right, i, &recvv, 1, MPI_INT, left, i, comm,
                                   MPI_STATUS_IGNORE),
                      "MPI_Sendrecv");
            if (recvv != left * 1000 + i) {
                fail("MPI_Sendrecv between collectives on %s: iteration %d: got %d, expected %d",
                     cname, i, recvv, left * 1000 + i);
            }
            /* one-sided: everyone puts its iteration into its right neighbour */
            check_mpi(MPI_Put(&sendv, 1, MPI_INT, right, i % 64, 1, MPI_INT, win), "MPI_Put");
            MPI_Win_fence(0, win);
            if (winbuf[i % 64] != left * 1000 + i) {
                fail("MPI_Put between collectives on %s: iteration %d: got %d, expected %d", cname,
                     i, winbuf[i % 64], left * 1000 + i);
            }
            MPI_Win_fence(0, win);
        }
    }
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
}

/* Small broadcasts streamed while one rank lags now and then: coll/ofi
 * sends broadcasts of up to 1 KiB through a ring of 16 slots per rank, and
 * a parent goes on to later calls without waiting for its children, up to
 * the slot its slowest child has not emptied yet. The root changes every
 * 37 calls, so a slot is written by different parents in turn; the last
 * rank stops for 20 ms at the start of each run of 37 whose root it is
 * not, so that root runs ahead to that limit and waits there. Every byte
 * of every call is checked. */
static void suite_stream(MPI_Comm comm, const char *cname)
{
    int rank, size;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    for (int i = 0; i < 600; ++i) {
        /* at the start of each run of one root, unless the laggard is it */
        if (rank == size - 1 && i % 37 == 0 && (i / 37) % size != size - 1) {
            struct timespec lag = {0, 20 * 1000 * 1000};
            nanosleep(&lag, NULL);
        }
        test_bcast(comm, cname, (size_t) ((i * 53) % 1024) + 1, (i / 37) % size, i);
    }
    /* small reductions the same way: a rank that is not the root puts its
     * contribution and goes on, up to a few calls ahead of the root, which
     * must not overwrite what the root has not read yet (sum of ints, 1 to
     * 256 elements: up to 1 KiB; every third one in place) */
    for (int i = 0; i < 600; ++i) {
        const int root = (i / 37) % size;
        if (rank == size - 1 && i % 37 == 0 && root != size - 1) {
            struct timespec lag = {0, 20 * 1000 * 1000};
            nanosleep(&lag, NULL);
        }
        test_reduction(comm, cname, &types[0], &ops[O_SUM], (size_t) ((i * 53) % 256) + 1, root,
                       i % 5 == 4, i % 3 == 0, i);
    }
}

/* coll/ofi's MPI_T counters of served calls on MPI_COMM_WORLD, when the
 * component is loaded: a third proof (besides its verbose lines) that it
 * served, checked when the program is run with "expect-ofi". */
#define NPVARS 4
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[NPVARS];
static const char *pv_names[NPVARS] = {"coll_ofi_served_bcast", "coll_ofi_served_reduce",
                                       "coll_ofi_served_allreduce", "coll_ofi_served_barrier"};
static int pv_found;

static void pvars_open(void)
{
    int n = 0;
    MPI_Comm world = MPI_COMM_WORLD;

    if (MPI_SUCCESS != MPI_T_pvar_get_num(&n)
        || MPI_SUCCESS != MPI_T_pvar_session_create(&pv_session)) {
        return;
    }
    for (int i = 0; i < n; ++i) {
        char name[256], desc[256];
        int nl = sizeof(name), dl = sizeof(desc), verb, cls, bind, ro, ct, at, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS
            != MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &ct,
                                   &at)) {
            continue;
        }
        for (int k = 0; k < NPVARS; ++k) {
            if (0 == strcmp(name, pv_names[k])
                && MPI_SUCCESS
                       == MPI_T_pvar_handle_alloc(pv_session, i, &world, &pv_handle[k], &count)) {
                pv_found |= 1 << k;
            }
        }
    }
}

static void pvars_report(int rank, int expect)
{
    unsigned long long v[NPVARS] = {0, 0, 0, 0};

    for (int k = 0; k < NPVARS; ++k) {
        if (pv_found & (1 << k)) {
            MPI_T_pvar_read(pv_session, pv_handle[k], &v[k]);
            MPI_T_pvar_handle_free(pv_session, &pv_handle[k]);
        }
    }
    if (0 == rank && pv_found) {
        printf("colltest: MPI_T: coll/ofi served %llu bcast, %llu reduce, %llu allreduce, %llu "
               "barrier on MPI_COMM_WORLD\n",
               v[0], v[1], v[2], v[3]);
    }
    if (expect && (pv_found != (1 << NPVARS) - 1 || !v[0] || !v[1] || !v[2] || !v[3])) {
        fail("MPI_T: coll/ofi's served-call counters on MPI_COMM_WORLD are missing or zero "
             "(found mask %#x; %llu bcast, %llu reduce, %llu allreduce, %llu barrier)",
             pv_found, v[0], v[1], v[2], v[3]);
    }
    MPI_T_pvar_session_free(&pv_session);
}

int main(int argc, char **argv)
{
    int rank, size, any, hsize;
    MPI_Comm dup, split, rev, grp, half;
    MPI_Group wgroup, rgroup;
    int *ranks;

    int provided, expect_ofi = 0;

    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_world_rank = rank;
    for (int a = 1; a < argc; ++a) {
        if (0 == strcmp(argv[a], "quick")) {
            g_max_bytes = 256u << 10;
        } else if (0 == strcmp(argv[a], "expect-ofi")) {
            expect_ofi = 1;
        }
    }
    pvars_open();

    MPI_Type_contiguous(4, MPI_INT, &mat_type);
    MPI_Type_commit(&mat_type);
    MPI_Op_create(matmul_op, 0, &mat_op);

    suite_basic(MPI_COMM_WORLD, "MPI_COMM_WORLD", 1);
    suite_types(MPI_COMM_WORLD, "MPI_COMM_WORLD");

    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    suite_basic(dup, "dup of MPI_COMM_WORLD", 0);

    /* reversed ranks: split with a key that reverses the order */
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    suite_basic(rev, "MPI_COMM_WORLD reversed (split key)", 0);

    /* create_group on the reversed group */
    MPI_Comm_group(MPI_COMM_WORLD, &wgroup);
    ranks = malloc(sizeof(int) * (size_t) size);
    for (int i = 0; i < size; ++i) {
        ranks[i] = size - 1 - i;
    }
    MPI_Group_incl(wgroup, size, ranks, &rgroup);
    MPI_Comm_create_group(MPI_COMM_WORLD, rgroup, 7, &grp);
    suite_basic(grp, "create_group (reversed)", 0);

    /* even and odd ranks; a single-rank communicator is fine too */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &split);
    suite_basic(split, "split even/odd", 0);

    /* two communicators alive at once, used alternately */
    MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 1) / 2, -rank, &half);
    MPI_Comm_size(half, &hsize);
    for (int i = 0; i < 20; ++i) {
        test_bcast(i % 2 ? half : dup, i % 2 ? "half" : "dup", 70000 + (size_t) i,
                   i % 2 ? (i / 2) % hsize : (i / 2) % size, i);
        test_reduction(i % 2 ? dup : half, i % 2 ? "dup" : "half", &types[1], &ops[O_SUM], 5000, 0,
                       i % 2, 0, i);
    }

    suite_back_to_back(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    suite_stream(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    suite_back_to_back(rev, "MPI_COMM_WORLD reversed (split key)");

    MPI_Comm_free(&half);
    MPI_Comm_free(&split);
    MPI_Comm_free(&grp);
    MPI_Group_free(&rgroup);
    MPI_Group_free(&wgroup);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&dup);
    free(ranks);
    MPI_Op_free(&mat_op);
    MPI_Type_free(&mat_type);

    pvars_report(rank, expect_ofi);
    MPI_Allreduce(&g_fail, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        if (any) {
            fprintf(stderr, "FAIL: %d mismatches in all (first ones printed above)\n", any);
        } else {
            printf("colltest: all checks passed on %d ranks\n", size);
        }
    }
    MPI_Finalize();
    return any ? 1 : 0;
}
