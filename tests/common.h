/*
 * Shared helpers for the btl/ofi MPI test programs.
 *
 *  - FAILF/CHECK: fatal check that prints rank, file:line and what differed,
 *    then MPI_Abort()s the whole job.
 *  - MPI_T helpers: look a control variable (cvar) or performance variable
 *    (pvar) up by name, read it.
 *  - tc_check_ours(): proves that OUR btl/ofi is the one loaded (cvar
 *    btl_ofi_version == "0.1.0") and that the provider it selected is the one
 *    the runner asked for (env BTL_OFI_EXPECT_PROVIDER).
 *  - tc_counters_*: snapshot of the btl_ofi_* pvars, used to prove that the
 *    one-sided traffic of a sub-case went through our component.
 *
 * Debug switch (for developing the tests against the btl/ofi that Open MPI
 * ships, which has none of our variables): BTL_OFI_NO_CHECK_OURS=1 turns the
 * "is it ours" checks and the counter requirements into printed notes.
 * tests/run.sh never sets it.
 */
#ifndef BTL_OFI_TESTS_COMMON_H
#define BTL_OFI_TESTS_COMMON_H

#include <mpi.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TC_EXPECTED_VERSION "0.1.0"

#define TC_FN static __attribute__((unused))

static int tc_rank = -1;
static int tc_size = 0;
static const char *tc_name = "test";

TC_FN void tc_vfail(const char *file, int line, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* on stdout, in order with the progress lines (mpirun may interleave
     * its forwarding of stdout and stderr anywhere in a line) */
    fflush(stdout);
    printf("\nFAIL [rank %d] %s:%d: %s\n", tc_rank, file, line, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3); /* not reached */
}

TC_FN void tc_fail_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tc_vfail(file, line, fmt, ap);
    va_end(ap);
}

/* Unconditional failure with a printf-style explanation. */
#define FAILF(...) tc_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Fail unless cond holds; the message says what differed. */
#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            tc_fail_at(__FILE__, __LINE__, "check `%s' failed: %s", #cond,     \
                       tc_fmt(__VA_ARGS__));                                   \
        }                                                                      \
    } while (0)

/* Check the return code of an MPI call. */
#define MPI_CHECK(call)                                                        \
    do {                                                                       \
        int tc_rc_ = (call);                                                   \
        if (MPI_SUCCESS != tc_rc_) {                                           \
            char tc_es_[MPI_MAX_ERROR_STRING];                                 \
            int tc_el_ = 0;                                                    \
            MPI_Error_string(tc_rc_, tc_es_, &tc_el_);                         \
            tc_fail_at(__FILE__, __LINE__, "%s returned %d (%s)", #call,       \
                       tc_rc_, tc_es_);                                        \
        }                                                                      \
    } while (0)

/* Format into a rotating buffer of the calling thread (for CHECK
 * messages; threads each have their own). */
TC_FN const char *tc_fmt(const char *fmt, ...)
{
    static __thread char bufs[4][2048];
    static __thread int next = 0;
    char *b = bufs[next++ & 3];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof(bufs[0]), fmt, ap);
    va_end(ap);
    return b;
}

TC_FN int tc_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Our own checks (cvars exist, counters grow) are on unless debugging. */
/* Dynamic windows, unless BTL_OFI_NO_DYNAMIC=1: Open MPI 4.1.4's osc/rdma
 * deadlocks on them when the target's state is reached through the BTL
 * (across hosts): ompi_osc_rdma_find_dynamic_region holds the region
 * table's lock exclusively and then waits for it shared (open-mpi/ompi
 * issue 10328, fixed in 4.1.5). tests/hosts/run.sh sets it and runs the
 * dynamic-window case on its own. */
TC_FN int tc_dynamic_windows(void)
{
    static int told = 0;
    const char *v = getenv("BTL_OFI_NO_DYNAMIC");
    int skip = NULL != v && 0 == strcmp(v, "1");
    if (skip && !told && 0 == tc_rank) {
        printf("note: dynamic windows left out (BTL_OFI_NO_DYNAMIC=1)\n");
        fflush(stdout);
    }
    told = 1;
    return !skip;
}

TC_FN int tc_check_ours_enabled(void)
{
    return !tc_env_flag("BTL_OFI_NO_CHECK_OURS");
}

TC_FN double tc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Rank 0 prints one line (stdout, flushed). */
TC_FN void tc_say(const char *fmt, ...)
{
    if (tc_rank != 0) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* ------------------------------------------------------------------ */
/* MPI_T control variables                                             */
/* ------------------------------------------------------------------ */

/* Index of the cvar called `name', or -1 (MPI 3.1's lookup by name; a
 * variable of a component that was closed is found, and then cannot be
 * read). */
TC_FN int tc_cvar_find(const char *name)
{
    int index;
    if (MPI_SUCCESS != MPI_T_cvar_get_index(name, &index)) {
        return -1;
    }
    return index;
}

/* Open the cvar called `name': its handle and datatype. Returns 0, -1 if
 * it does not exist, -2 if it cannot be opened. */
TC_FN int tc_cvar_open(const char *name, MPI_T_cvar_handle *handle, MPI_Datatype *dtype,
                       int *count)
{
    int idx = tc_cvar_find(name);
    if (idx < 0) {
        return -1;
    }
    char vname[256];
    char desc[1024];
    int namelen = sizeof(vname), desclen = sizeof(desc);
    int verbosity, bind, scope;
    MPI_T_enum enumtype;
    if (MPI_SUCCESS != MPI_T_cvar_get_info(idx, vname, &namelen, &verbosity, dtype, &enumtype,
                                           desc, &desclen, &bind, &scope)
        || MPI_SUCCESS != MPI_T_cvar_handle_alloc(idx, NULL, handle, count)) {
        return -2;
    }
    return 0;
}

/* Read a string cvar into buf. Returns 0 on success, -1 if the cvar does not
 * exist, -2 if it is not a string or cannot be read. */
TC_FN int tc_cvar_read_string(const char *name, char *buf, size_t buflen)
{
    MPI_T_cvar_handle handle;
    MPI_Datatype dtype;
    int count = 0;
    int rc = tc_cvar_open(name, &handle, &dtype, &count);
    if (0 != rc) {
        return rc;
    }
    if (dtype != MPI_CHAR) {
        MPI_T_cvar_handle_free(&handle);
        return -2;
    }
    /* count is the buffer size the implementation wants; give it plenty. */
    size_t need = (count > 0 ? (size_t) count : 0) + 4096;
    char *tmp = calloc(1, need);
    rc = MPI_T_cvar_read(handle, tmp);
    MPI_T_cvar_handle_free(&handle);
    if (MPI_SUCCESS != rc) {
        free(tmp);
        return -2;
    }
    tmp[need - 1] = '\0';
    snprintf(buf, buflen, "%s", tmp);
    free(tmp);
    return 0;
}

/* Read an integer or boolean cvar (int, unsigned, long, size_t, bool) into *out. Returns 0
 * on success, -1 if the cvar does not exist, -2 if it is of another type or
 * cannot be read. */
TC_FN int tc_cvar_read_ull(const char *name, unsigned long long *out)
{
    MPI_T_cvar_handle handle;
    MPI_Datatype dtype;
    int count = 0;
    union {
        int i;
        unsigned u;
        long l;
        unsigned long ul;
        unsigned long long ull;
        _Bool b;
    } v;
    int rc = tc_cvar_open(name, &handle, &dtype, &count);
    if (0 != rc) {
        return rc;
    }
    memset(&v, 0, sizeof(v));
    rc = MPI_T_cvar_read(handle, &v);
    MPI_T_cvar_handle_free(&handle);
    if (MPI_SUCCESS != rc) {
        return -2;
    }
    if (dtype == MPI_INT) {
        *out = v.i < 0 ? 0 : (unsigned long long) v.i;
    } else if (dtype == MPI_UNSIGNED) {
        *out = v.u;
    } else if (dtype == MPI_LONG) {
        *out = v.l < 0 ? 0 : (unsigned long long) v.l;
    } else if (dtype == MPI_UNSIGNED_LONG) {
        *out = v.ul;
    } else if (dtype == MPI_UNSIGNED_LONG_LONG) {
        *out = v.ull;
    } else if (dtype == MPI_C_BOOL) {
        *out = v.b ? 1 : 0;
    } else {
        return -2;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* MPI_T performance variables: our counters                           */
/* ------------------------------------------------------------------ */

enum {
    TC_PUT_COUNT,
    TC_GET_COUNT,
    TC_ATOMIC_COUNT,
    TC_PUT_BYTES,
    TC_GET_BYTES,
    TC_PUT_NOTIFIED,
    TC_PUT_GATHERED,
    TC_GET_GATHERED,
    TC_SEND_COUNT,
    TC_FLUSH_COUNT,
    TC_ANSWER_CARRIED,
    TC_SEND_QUICK,
    TC_STREAM_HELD,
    TC_NCOUNTERS
};

static const char *const tc_counter_names[TC_NCOUNTERS] = {
    "btl_ofi_put_count", "btl_ofi_get_count",    "btl_ofi_atomic_count",
    "btl_ofi_put_bytes", "btl_ofi_get_bytes",    "btl_ofi_put_notified",
    "btl_ofi_put_gathered", "btl_ofi_get_gathered", "btl_ofi_send_count",
    "btl_ofi_flush_count", "btl_ofi_answer_carried", "btl_ofi_send_quick",
    "btl_ofi_stream_held",
};

typedef struct {
    unsigned long long v[TC_NCOUNTERS];
} tc_counters_t;

static MPI_T_pvar_session tc_session;
static MPI_T_pvar_handle tc_handles[TC_NCOUNTERS];
static int tc_have_counters = 0;

/* Find a pvar by name; checks it has the contracted properties. Returns the
 * index or -1 (with *why set). */
TC_FN int tc_pvar_find(const char *name, const char **why)
{
    int num = 0;
    *why = "not found";
    if (MPI_SUCCESS != MPI_T_pvar_get_num(&num)) {
        *why = "MPI_T_pvar_get_num failed";
        return -1;
    }
    for (int i = 0; i < num; ++i) {
        char vname[256];
        char desc[1024];
        int namelen = sizeof(vname), desclen = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype dtype;
        MPI_T_enum enumtype;
        int rc = MPI_T_pvar_get_info(i, vname, &namelen, &verbosity, &var_class, &dtype,
                                     &enumtype, desc, &desclen, &bind, &readonly, &continuous,
                                     &atomic);
        if (MPI_SUCCESS != rc || 0 != strcmp(vname, name)) {
            continue;
        }
        if (var_class != MPI_T_PVAR_CLASS_COUNTER) {
            *why = "not of class MPI_T_PVAR_CLASS_COUNTER";
            return -1;
        }
        if (dtype != MPI_UNSIGNED_LONG_LONG) {
            *why = "datatype is not MPI_UNSIGNED_LONG_LONG";
            return -1;
        }
        if (bind != MPI_T_BIND_NO_OBJECT) {
            *why = "bound to an object (expected MPI_T_BIND_NO_OBJECT)";
            return -1;
        }
        if (!readonly) {
            *why = "not read-only";
            return -1;
        }
        if (!continuous) {
            *why = "not continuous";
            return -1;
        }
        return i;
    }
    return -1;
}

TC_FN void tc_counters_init(void)
{
    MPI_CHECK(MPI_T_pvar_session_create(&tc_session));
    for (int c = 0; c < TC_NCOUNTERS; ++c) {
        const char *why = NULL;
        int idx = tc_pvar_find(tc_counter_names[c], &why);
        if (idx < 0) {
            if (tc_check_ours_enabled()) {
                FAILF("pvar %s: %s", tc_counter_names[c], why);
            }
            if (tc_rank == 0) {
                printf("note: pvar %s: %s (BTL_OFI_NO_CHECK_OURS set: counters not checked)\n",
                       tc_counter_names[c], why);
            }
            tc_have_counters = 0;
            return;
        }
        int count = 0;
        MPI_CHECK(MPI_T_pvar_handle_alloc(tc_session, idx, NULL, &tc_handles[c], &count));
        CHECK(count == 1, "pvar %s has count %d, expected 1", tc_counter_names[c], count);
    }
    tc_have_counters = 1;
}

TC_FN void tc_counters_read(tc_counters_t *out)
{
    memset(out, 0, sizeof(*out));
    if (!tc_have_counters) {
        return;
    }
    for (int c = 0; c < TC_NCOUNTERS; ++c) {
        unsigned long long v = 0;
        MPI_CHECK(MPI_T_pvar_read(tc_session, tc_handles[c], &v));
        out->v[c] = v;
    }
}

TC_FN void tc_counters_finalize(void)
{
    if (tc_have_counters) {
        for (int c = 0; c < TC_NCOUNTERS; ++c) {
            MPI_T_pvar_handle_free(tc_session, &tc_handles[c]);
        }
    }
    MPI_T_pvar_session_free(&tc_session);
}

/* Expected minimum growth of each counter for a sub-case. */
typedef struct {
    unsigned long long min[TC_NCOUNTERS];
    /* minimum growth of puts + gets + atomics + sends together, for
     * operations that osc/rdma may carry either way (e.g. MPI_NO_OP: a
     * get or an atomic; an accumulate to another node: one message,
     * osc-rdma/patches 0016) */
    unsigned long long min_ops;
    /* minimum growth of atomics + sends together: operations the btl must
     * carry as atomics, unless osc/rdma sends them as one message each
     * (accumulates to another node, 0016) */
    unsigned long long min_amo;
} tc_expect_t;

TC_FN const char *tc_delta_str(const tc_counters_t *before, const tc_counters_t *after)
{
    static char b[256];
    if (!tc_have_counters) {
        snprintf(b, sizeof(b), "counters n/a");
        return b;
    }
    snprintf(b, sizeof(b),
             "puts+%llu gets+%llu atomics+%llu put_bytes+%llu get_bytes+%llu "
             "puts_arrived_announced+%llu",
             after->v[TC_PUT_COUNT] - before->v[TC_PUT_COUNT],
             after->v[TC_GET_COUNT] - before->v[TC_GET_COUNT],
             after->v[TC_ATOMIC_COUNT] - before->v[TC_ATOMIC_COUNT],
             after->v[TC_PUT_BYTES] - before->v[TC_PUT_BYTES],
             after->v[TC_GET_BYTES] - before->v[TC_GET_BYTES],
             after->v[TC_PUT_NOTIFIED] - before->v[TC_PUT_NOTIFIED]);
    return b;
}

/*
 * Check the counters of this rank grew by at least `exp' between before and
 * after. If `required' is 0 (MPI_Win_allocate windows, where osc/rdma may go
 * through shared memory instead of the BTL) the delta is only printed.
 * Every rank checks its own counters; rank 0 prints its delta.
 */
TC_FN void tc_counters_check(const char *what, const tc_counters_t *before,
                              const tc_counters_t *after, const tc_expect_t *exp, int required,
                              int print)
{
    if (!tc_have_counters) {
        return;
    }
    for (int c = 0; c < TC_NCOUNTERS; ++c) {
        unsigned long long d = after->v[c] - before->v[c];
        CHECK(after->v[c] >= before->v[c], "%s: counter %s went backwards (%llu -> %llu)", what,
              tc_counter_names[c], before->v[c], after->v[c]);
        if (required && tc_check_ours_enabled()) {
            CHECK(d >= exp->min[c],
                  "%s: counter %s grew by %llu, expected at least %llu (one-sided traffic of "
                  "this rank did not go through our btl/ofi?)",
                  what, tc_counter_names[c], d, exp->min[c]);
        }
    }
    if (required && tc_check_ours_enabled()) {
        unsigned long long sends = after->v[TC_SEND_COUNT] - before->v[TC_SEND_COUNT];
        unsigned long long amos = after->v[TC_ATOMIC_COUNT] - before->v[TC_ATOMIC_COUNT] + sends;
        unsigned long long ops = (after->v[TC_PUT_COUNT] - before->v[TC_PUT_COUNT])
                                 + (after->v[TC_GET_COUNT] - before->v[TC_GET_COUNT]) + amos;
        CHECK(ops >= exp->min_ops,
              "%s: counters btl_ofi_{put,get,atomic,send}_count together grew by %llu, expected "
              "at least %llu (one-sided traffic of this rank did not go through our btl/ofi?)",
              what, ops, exp->min_ops);
        CHECK(amos >= exp->min_amo,
              "%s: counters btl_ofi_{atomic,send}_count together grew by %llu, expected at "
              "least %llu (an atomic, or one message, per operation the btl must carry so)",
              what, amos, exp->min_amo);
    }
    if (print && tc_rank == 0) {
        printf("    counters rank0 %s: %s%s\n", what, tc_delta_str(before, after),
               required ? " (growth required)"
                        : " (MPI_Win_allocate: osc/rdma may use shared memory on one node, "
                          "growth not required)");
        fflush(stdout);
    }
}

/* Check and print (one line on rank 0). */
TC_FN void tc_counters_expect(const char *what, const tc_counters_t *before,
                              const tc_counters_t *after, const tc_expect_t *exp, int required)
{
    tc_counters_check(what, before, after, exp, required, 1);
}

/* ------------------------------------------------------------------ */
/* Start-up: MPI_Init, MPI_T, prove our component is loaded            */
/* ------------------------------------------------------------------ */

TC_FN void tc_check_ours(void)
{
    char version[256] = "";
    char prov[1024] = "";
    int vrc = tc_cvar_read_string("btl_ofi_version", version, sizeof(version));
    int prc = tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov));
    const char *expect = getenv("BTL_OFI_EXPECT_PROVIDER");

    if (tc_rank == 0) {
        printf("%s: np=%d btl_ofi_version=%s btl_ofi_selected_provider=%s expected_provider=%s\n",
               tc_name, tc_size, vrc == 0 ? version : "<absent>", prc == 0 ? prov : "<absent>",
               expect ? expect : "<any>");
        fflush(stdout);
    }
    if (!tc_check_ours_enabled()) {
        if (tc_rank == 0) {
            printf("note: BTL_OFI_NO_CHECK_OURS set: not checking that our btl/ofi is loaded\n");
        }
        return;
    }
    CHECK(vrc == 0, "cvar btl_ofi_version %s: our btl/ofi is not loaded (Open MPI's own?)",
          vrc == -1 ? "does not exist" : "is not a readable string");
    CHECK(0 == strcmp(version, TC_EXPECTED_VERSION), "cvar btl_ofi_version is \"%s\", expected \"%s\"",
          version, TC_EXPECTED_VERSION);
    if (expect != NULL && expect[0] != '\0') {
        CHECK(prc == 0, "cvar btl_ofi_selected_provider %s",
              prc == -1 ? "does not exist" : "is not a readable string");
        CHECK(0 == strcmp(prov, expect), "cvar btl_ofi_selected_provider is \"%s\", expected \"%s\"",
              prov, expect);
    }
}

/* The size from which the puts that reach this rank through our btl/ofi
 * must announce their arrival (btl_ofi_put_notify_size, counted by the
 * pvar btl_ofi_put_notified), or 0 where they are not expected to, with
 * the reason said once by rank 0: the parameter is 0, puts travel as
 * messages (btl_ofi_emulate_rma 1, or udp;ofi_rxd, whose RMA we do not
 * use), or our component is not checked. */
TC_FN unsigned long long tc_put_notify_size(void)
{
    static int known = 0;
    static unsigned long long size = 0;
    unsigned long long emulate = 0;
    char prov[1024] = "";
    const char *why = NULL;

    if (known) {
        return size;
    }
    known = 1;
    if (!tc_check_ours_enabled() || !tc_have_counters) {
        why = "our component is not checked";
    } else if (0 != tc_cvar_read_ull("btl_ofi_put_notify_size", &size)) {
        FAILF("cvar btl_ofi_put_notify_size cannot be read as an integer");
    } else if (0 == size) {
        why = "btl_ofi_put_notify_size is 0";
    } else if (0 == tc_cvar_read_ull("btl_ofi_emulate_rma", &emulate) && 1 == emulate) {
        why = "btl_ofi_emulate_rma 1 carries puts as messages";
    } else if (0 == tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov))
               && NULL != strstr(prov, "ofi_rxd")) {
        why = "udp;ofi_rxd's puts travel as messages";
    }
    if (NULL != why) {
        size = 0;
        if (0 == tc_rank) {
            printf("note: puts are not expected to announce their arrival here: %s\n", why);
        }
    }
    return size;
}

/* set before tc_init to ask for a thread level (MPI_Init_thread); the
 * test fails if the library gives less */
static int tc_thread_required = -1;

TC_FN void tc_init(int *argc, char ***argv, const char *name)
{
    int provided = 0;
    tc_name = name;
    if (tc_thread_required >= 0) {
        MPI_Init_thread(argc, argv, tc_thread_required, &provided);
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &tc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tc_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(tc_thread_required < 0 || provided >= tc_thread_required,
          "MPI_Init_thread gave thread level %d, %d asked for", provided, tc_thread_required);
    MPI_CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    setvbuf(stdout, NULL, _IOLBF, 0);
    tc_check_ours();
    tc_counters_init();
}

TC_FN void tc_finish(void)
{
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_counters_finalize();
    MPI_T_finalize();
    if (tc_rank == 0) {
        printf("OK %s\n", tc_name);
        fflush(stdout);
    }
    MPI_Finalize();
}

/* A byte pattern depending on the writer rank, the transfer size, the
 * offset and a round number: any misplaced, stale or foreign byte shows. */
static inline unsigned char tc_pattern(int origin, size_t size, size_t off, unsigned round)
{
    uint32_t x = (uint32_t) off * 2654435761u;
    x ^= (uint32_t) size * 40503u + (uint32_t) origin * 0x9E3779B1u + round * 0x85EBCA6Bu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 13;
    return (unsigned char) (x ^ (x >> 24));
}

TC_FN void tc_fill(unsigned char *buf, int origin, size_t size, unsigned round)
{
    for (size_t i = 0; i < size; ++i) {
        buf[i] = tc_pattern(origin, size, i, round);
    }
}

/* Verify buf[0..size) holds the pattern of (origin, size, round); fail with
 * the first differing offset and how many bytes differ. */
TC_FN void tc_verify(const char *what, const unsigned char *buf, int origin, size_t size,
                      unsigned round)
{
    size_t bad = 0, first = (size_t) -1;
    for (size_t i = 0; i < size; ++i) {
        if (buf[i] != tc_pattern(origin, size, i, round)) {
            if (bad == 0) {
                first = i;
            }
            ++bad;
        }
    }
    if (bad) {
        FAILF("%s: %zu of %zu bytes differ; first at offset %zu: got 0x%02x expected 0x%02x "
              "(data written by rank %d, round %u)",
              what, bad, size, first, buf[first], tc_pattern(origin, size, first, round), origin,
              round);
    }
}

#endif /* BTL_OFI_TESTS_COMMON_H */
