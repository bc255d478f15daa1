/*
 * Helpers shared by the two-sided test programs of tests/twosided/.
 *
 * Builds on ../common.h (fatal checks, MPI_T helpers, the proof that OUR
 * btl/ofi is loaded and selected the expected provider, byte patterns) and
 * adds:
 *
 *  - ts_init(): tc_init() plus the proof that two-sided traffic between
 *    processes can only have gone through btl/ofi: the MPI_T cvars "pml"
 *    and "btl" must read "ob1" and "ofi,self" (ob1 then has no other BTL to
 *    reach another process; btl/self only serves a process itself);
 *  - an extended counter snapshot (ts_snap_t) that also reads the pvars
 *    btl_ofi_send_count and btl_ofi_send_bytes when the component has them
 *    (they are newer than common.h; without them only the put/get/atomic
 *    counters are checked and a note says so);
 *  - small utilities: command-line integers, size formatting, an
 *    all-ranks "everyone agrees" check.
 *
 * Debug switch inherited from common.h: BTL_OFI_NO_CHECK_OURS=1 turns the
 * "it is ours" proofs into notes (tests/twosided/run.sh never sets it).
 */
#ifndef BTL_OFI_TWOSIDED_TS_H
#define BTL_OFI_TWOSIDED_TS_H

#include "../common.h"

#include <limits.h>

#define TS_KIB ((size_t) 1024)
#define TS_MIB ((size_t) 1024 * 1024)

/* ------------------------------------------------------------------ */
/* the transport selection                                             */
/* ------------------------------------------------------------------ */

/* Fails unless cvar `name' reads `want' (when our checks are enabled). */
TC_FN void ts_require_cvar(const char *name, const char *want, const char *why)
{
    char val[1024] = "";
    int rc = tc_cvar_read_string(name, val, sizeof(val));
    if (tc_rank == 0) {
        printf("%s: cvar %s=%s\n", tc_name, name, rc == 0 ? val : "<unreadable>");
    }
    if (!tc_check_ours_enabled()) {
        return;
    }
    CHECK(rc == 0, "cvar %s cannot be read (rc %d)", name, rc);
    CHECK(0 == strcmp(val, want), "cvar %s is \"%s\", expected \"%s\" (%s)", name, val, want,
          why);
}

/* ------------------------------------------------------------------ */
/* counters: put/get/atomic from common.h, send_* when present          */
/* ------------------------------------------------------------------ */

enum { TS_SEND_COUNT, TS_SEND_BYTES, TS_NSEND };

static const char *const ts_send_names[TS_NSEND] = {"btl_ofi_send_count", "btl_ofi_send_bytes"};
static MPI_T_pvar_session ts_session;
static MPI_T_pvar_handle ts_send_handles[TS_NSEND];
static int ts_have_send = 0;

typedef struct {
    tc_counters_t rma;
    unsigned long long send[TS_NSEND];
} ts_snap_t;

TC_FN void ts_send_counters_init(void)
{
    MPI_CHECK(MPI_T_pvar_session_create(&ts_session));
    ts_have_send = 1;
    for (int c = 0; c < TS_NSEND; ++c) {
        const char *why = NULL;
        int idx = tc_pvar_find(ts_send_names[c], &why);
        if (idx < 0) {
            /* an older component: say so, rely on the selection proof */
            if (tc_rank == 0) {
                printf("note: pvar %s: %s; two-sided traffic is proven ours by the selection "
                       "(pml=ob1, btl=ofi,self) only\n",
                       ts_send_names[c], why);
            }
            ts_have_send = 0;
            return;
        }
        int count = 0;
        MPI_CHECK(MPI_T_pvar_handle_alloc(ts_session, idx, NULL, &ts_send_handles[c], &count));
        CHECK(count == 1, "pvar %s has count %d, expected 1", ts_send_names[c], count);
    }
}

TC_FN void ts_snap(ts_snap_t *s)
{
    memset(s, 0, sizeof(*s));
    tc_counters_read(&s->rma);
    if (ts_have_send) {
        for (int c = 0; c < TS_NSEND; ++c) {
            MPI_CHECK(MPI_T_pvar_read(ts_session, ts_send_handles[c], &s->send[c]));
        }
    }
}

typedef struct {
    unsigned long long puts, gets, atomics, put_bytes, get_bytes, sends, send_bytes;
} ts_delta_t;

TC_FN ts_delta_t ts_delta(const ts_snap_t *a, const ts_snap_t *b)
{
    ts_delta_t d;
    d.puts = b->rma.v[TC_PUT_COUNT] - a->rma.v[TC_PUT_COUNT];
    d.gets = b->rma.v[TC_GET_COUNT] - a->rma.v[TC_GET_COUNT];
    d.atomics = b->rma.v[TC_ATOMIC_COUNT] - a->rma.v[TC_ATOMIC_COUNT];
    d.put_bytes = b->rma.v[TC_PUT_BYTES] - a->rma.v[TC_PUT_BYTES];
    d.get_bytes = b->rma.v[TC_GET_BYTES] - a->rma.v[TC_GET_BYTES];
    d.sends = b->send[TS_SEND_COUNT] - a->send[TS_SEND_COUNT];
    d.send_bytes = b->send[TS_SEND_BYTES] - a->send[TS_SEND_BYTES];
    return d;
}

TC_FN const char *ts_delta_str(const ts_delta_t *d)
{
    static char b[2][320];
    static int next = 0;
    char *s = b[next++ & 1];
    snprintf(s, sizeof(b[0]),
             "sends+%llu send_bytes+%llu puts+%llu put_bytes+%llu gets+%llu get_bytes+%llu "
             "atomics+%llu%s",
             d->sends, d->send_bytes, d->puts, d->put_bytes, d->gets, d->get_bytes, d->atomics,
             ts_have_send ? "" : " (send counters n/a)");
    return s;
}

/* Every rank prints its counter growth, in rank order (collective). */
TC_FN void ts_print_deltas(MPI_Comm comm, const char *what, const ts_delta_t *d)
{
    int r, n;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int i = 0; i < n; ++i) {
        if (i == r) {
            printf("    counters rank %d %s: %s\n", tc_rank, what, ts_delta_str(d));
            fflush(stdout);
        }
        MPI_CHECK(MPI_Barrier(comm));
    }
}

TC_FN void ts_init(int *argc, char ***argv, const char *name)
{
    tc_init(argc, argv, name);
    ts_require_cvar("pml", "ob1",
                    "the runner selects pml ob1 so that two-sided traffic uses BTLs");
    ts_require_cvar("btl", "ofi,self",
                    "with btl ofi,self no other BTL can carry traffic between processes");
    ts_send_counters_init();
}

TC_FN void ts_finish(void)
{
    if (ts_have_send) {
        for (int c = 0; c < TS_NSEND; ++c) {
            MPI_T_pvar_handle_free(ts_session, &ts_send_handles[c]);
        }
    }
    MPI_T_pvar_session_free(&ts_session);
    tc_finish();
}

/* ------------------------------------------------------------------ */
/* utilities                                                           */
/* ------------------------------------------------------------------ */

/* "-name VALUE" on the command line as a size (suffixes k, m: KiB, MiB),
 * else `dflt'. */
TC_FN size_t ts_arg_size(int argc, char **argv, const char *name, size_t dflt)
{
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], name)) {
            char *end = NULL;
            unsigned long long v = strtoull(argv[i + 1], &end, 0);
            if (end == argv[i + 1]) {
                FAILF("argument %s: '%s' is not a number", name, argv[i + 1]);
            }
            if (*end == 'k' || *end == 'K') {
                v *= 1024;
            } else if (*end == 'm' || *end == 'M') {
                v *= 1024 * 1024;
            }
            return (size_t) v;
        }
    }
    return dflt;
}

/* "-name VALUE" as a string, else `dflt'. */
TC_FN const char *ts_arg_str(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], name)) {
            return argv[i + 1];
        }
    }
    return dflt;
}

TC_FN const char *ts_size_str(size_t n)
{
    static char b[4][32];
    static int next = 0;
    char *s = b[next++ & 3];
    if (n >= TS_MIB && n % TS_MIB == 0) {
        snprintf(s, sizeof(b[0]), "%zuMiB", n / TS_MIB);
    } else if (n >= TS_KIB && n % TS_KIB == 0) {
        snprintf(s, sizeof(b[0]), "%zuKiB", n / TS_KIB);
    } else {
        snprintf(s, sizeof(b[0]), "%zuB", n);
    }
    return s;
}

TC_FN void *ts_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    CHECK(p != NULL, "malloc(%zu) failed", n);
    return p;
}

/* Check an MPI_Status against what was expected (source, tag, count of
 * `dt' elements). */
TC_FN void ts_check_status(const char *what, const MPI_Status *st, MPI_Datatype dt, int source,
                            int tag, long long count)
{
    int n = -1;
    MPI_CHECK(MPI_Get_count(st, dt, &n));
    if (source != MPI_ANY_SOURCE) {
        CHECK(st->MPI_SOURCE == source, "%s: status.MPI_SOURCE %d, expected %d", what,
              st->MPI_SOURCE, source);
    }
    if (tag != MPI_ANY_TAG) {
        CHECK(st->MPI_TAG == tag, "%s: status.MPI_TAG %d, expected %d", what, st->MPI_TAG, tag);
    }
    CHECK(n == count, "%s: received count %d, expected %lld", what, n, count);
}

#endif /* BTL_OFI_TWOSIDED_TS_H */
