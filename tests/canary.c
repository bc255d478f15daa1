/*
 * canary: every fetching one-sided call (MPI_Fetch_and_op with SUM, NO_OP
 * and REPLACE, MPI_Get_accumulate, MPI_Compare_and_swap that succeeds and
 * one that fails) on every integer width osc/rdma accepts (1, 2, 4 and 8
 * bytes; MPI_INT and MPI_UINT32_T too), to this rank itself and to the
 * next rank, on MPI_Win_create and dynamic windows (the kinds whose traffic
 * crosses the BTL on one node).
 *
 * The result buffer is followed by 8 canary bytes and preceded by 8 more;
 * after every call they must be unchanged, and the result must be exactly
 * the old value at the target. Each rank owns one 8-byte slot of each
 * target's window, so every fetched value is determined; the bytes of a
 * slot past the operation's width must stay as they were (stray wide
 * writes at the target show too).
 *
 * Regression: osc/rdma 4.1.4 stores 8 bytes into the result when the BTL
 * reports a fetching atomic "done in place" (return 1), clobbering the 4
 * bytes after a 32-bit result of an operation on the caller's own memory.
 */
#include "common.h"

typedef struct {
    const char *name;
    MPI_Datatype dt;
    int bytes;
} ctype_t;

#define CANARY 0xA5
#define NCANARY 8
#define SLOT_FILL 0x5A

enum { WIN_CREATE, WIN_DYNAMIC, NKINDS };
static const char *const kind_names[NKINDS] = {"create", "dynamic"};

static uint64_t mask_of(int bytes)
{
    return bytes == 8 ? ~(uint64_t) 0 : (((uint64_t) 1 << (bytes * 8)) - 1);
}

static void put_value(void *p, uint64_t v, int bytes)
{
    /* little-endian: the low bytes of v are the value of the narrow type */
    memcpy(p, &v, (size_t) bytes);
}

static uint64_t get_value(const void *p, int bytes)
{
    uint64_t v = 0;
    memcpy(&v, p, (size_t) bytes);
    return v;
}

typedef struct {
    unsigned char before[NCANARY];
    unsigned char result[8];
    unsigned char after[NCANARY];
} guarded_t;

static void guard_reset(guarded_t *g)
{
    memset(g, CANARY, sizeof(*g));
}

static void guard_check(const guarded_t *g, int bytes, uint64_t expect, const char *what,
                        const ctype_t *t, int target, const char *kind)
{
    for (int i = 0; i < NCANARY; ++i) {
        if (g->before[i] != CANARY) {
            FAILF("%s %s on %s window, target rank %d: canary byte %d BEFORE the result changed "
                  "to 0x%02x",
                  what, t->name, kind, target, i - NCANARY, g->before[i]);
        }
    }
    for (int i = bytes; i < 8; ++i) {
        if (g->result[i] != CANARY) {
            FAILF("%s %s on %s window, target rank %d: byte %d after the %d-byte result changed "
                  "to 0x%02x (a write wider than the type)",
                  what, t->name, kind, target, i - bytes, bytes, g->result[i]);
        }
    }
    for (int i = 0; i < NCANARY; ++i) {
        if (g->after[i] != CANARY) {
            FAILF("%s %s on %s window, target rank %d: canary byte %d after the result changed "
                  "to 0x%02x",
                  what, t->name, kind, target, 8 - bytes + i, g->after[i]);
        }
    }
    uint64_t got = get_value(g->result, bytes);
    if (got != (expect & mask_of(bytes))) {
        FAILF("%s %s on %s window, target rank %d: fetched 0x%" PRIx64 ", expected 0x%" PRIx64,
              what, t->name, kind, target, got, expect & mask_of(bytes));
    }
}

/* One target, one type: the chain of fetching calls, each flushed and
 * checked. Returns the value the slot must hold at the end. */
static uint64_t run_chain(MPI_Win win, MPI_Aint disp, const ctype_t *t, int target, uint64_t v0,
                          const char *kind)
{
    const int w = t->bytes;
    const uint64_t m = mask_of(w);
    uint64_t cur = v0 & m, a = 0x0102030405060708ull & m, b = 0x1122334455667788ull & m;
    uint64_t c = 3, d = 0x7f6e5d4c3b2a1908ull & m, wrong;
    unsigned char operand[8], compare[8];
    guarded_t g;

#define FETCH_OP(OPND, OP, WHAT)                                                              \
    do {                                                                                      \
        guard_reset(&g);                                                                      \
        put_value(operand, (OPND), w);                                                        \
        MPI_CHECK(MPI_Fetch_and_op(operand, g.result, t->dt, target, disp, (OP), win));       \
        MPI_CHECK(MPI_Win_flush(target, win));                                                \
        guard_check(&g, w, cur, (WHAT), t, target, kind);                                     \
    } while (0)

    FETCH_OP(a, MPI_SUM, "MPI_Fetch_and_op(MPI_SUM)");
    cur = (cur + a) & m;
    FETCH_OP(0, MPI_NO_OP, "MPI_Fetch_and_op(MPI_NO_OP)");
    FETCH_OP(b, MPI_REPLACE, "MPI_Fetch_and_op(MPI_REPLACE)");
    cur = b;
#undef FETCH_OP

    guard_reset(&g);
    put_value(operand, c, w);
    MPI_CHECK(MPI_Get_accumulate(operand, 1, t->dt, g.result, 1, t->dt, target, disp, 1, t->dt,
                                 MPI_SUM, win));
    MPI_CHECK(MPI_Win_flush(target, win));
    guard_check(&g, w, cur, "MPI_Get_accumulate(MPI_SUM)", t, target, kind);
    cur = (cur + c) & m;

    /* a compare-and-swap that succeeds, then one that fails */
    guard_reset(&g);
    put_value(operand, d, w);
    put_value(compare, cur, w);
    MPI_CHECK(MPI_Compare_and_swap(operand, compare, g.result, t->dt, target, disp, win));
    MPI_CHECK(MPI_Win_flush(target, win));
    guard_check(&g, w, cur, "MPI_Compare_and_swap (matching)", t, target, kind);
    cur = d;

    wrong = (cur ^ 1) & m;
    guard_reset(&g);
    put_value(operand, a, w);
    put_value(compare, wrong, w);
    MPI_CHECK(MPI_Compare_and_swap(operand, compare, g.result, t->dt, target, disp, win));
    MPI_CHECK(MPI_Win_flush(target, win));
    guard_check(&g, w, cur, "MPI_Compare_and_swap (not matching)", t, target, kind);
    return cur;
}

int main(int argc, char **argv)
{
    const ctype_t types[] = {
        {"MPI_INT8_T", MPI_INT8_T, 1},     {"MPI_UINT16_T", MPI_UINT16_T, 2},
        {"MPI_INT32_T", MPI_INT32_T, 4},   {"MPI_INT", MPI_INT, (int) sizeof(int)},
        {"MPI_UINT32_T", MPI_UINT32_T, 4}, {"MPI_INT64_T", MPI_INT64_T, 8},
        {"MPI_UINT64_T", MPI_UINT64_T, 8},
    };
    const int ntypes = (int) (sizeof(types) / sizeof(types[0]));
    unsigned checks = 0;

    tc_init(&argc, &argv, "canary");
    if (tc_size < 2) {
        FAILF("canary needs at least 2 ranks (got %d)", tc_size);
    }
    /* slot r of every window belongs to origin rank r */
    const size_t winbytes = (size_t) tc_size * 8;

    for (int kind = 0; kind < NKINDS; ++kind) {
        if (WIN_DYNAMIC == kind && !tc_dynamic_windows()) {
            continue;
        }
        unsigned char *mem = NULL;
        MPI_Win win;
        MPI_Aint base = 0, *bases = NULL;
        tc_counters_t before, after;
        tc_expect_t exp;

        CHECK(0 == posix_memalign((void **) &mem, 64, winbytes), "posix_memalign");
        if (WIN_CREATE == kind) {
            MPI_CHECK(MPI_Win_create(mem, (MPI_Aint) winbytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                                     &win));
        } else {
            MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
            MPI_CHECK(MPI_Win_attach(win, mem, (MPI_Aint) winbytes));
        }
        MPI_CHECK(MPI_Get_address(mem, &base));
        bases = malloc(sizeof(*bases) * (size_t) tc_size);
        CHECK(NULL != bases, "malloc");
        MPI_CHECK(MPI_Allgather(&base, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD));
        memset(&exp, 0, sizeof(exp));
        tc_counters_read(&before);

        for (int ti = 0; ti < ntypes; ++ti) {
            const ctype_t *t = &types[ti];
            const int targets[2] = {tc_rank, (tc_rank + 1) % tc_size};
            uint64_t v0 = 0x8877665544332211ull + (uint64_t) ti * 0x0101010101010101ull;
            uint64_t final[2];

            /* every slot: the type's initial value, then fill bytes */
            MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tc_rank, 0, win));
            memset(mem, SLOT_FILL, winbytes);
            for (int r = 0; r < tc_size; ++r) {
                put_value(mem + (size_t) r * 8, v0, t->bytes);
            }
            MPI_CHECK(MPI_Win_unlock(tc_rank, win));
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

            MPI_CHECK(MPI_Win_lock_all(0, win));
            for (int k = 0; k < 2; ++k) {
                MPI_Aint disp = (WIN_CREATE == kind ? 0 : bases[targets[k]])
                                + (MPI_Aint) tc_rank * 8;
                final[k] = run_chain(win, disp, t, targets[k], v0, kind_names[kind]);
                checks += 6;
                if (targets[k] != tc_rank) {
                    exp.min_ops += 6;
                }
                if (targets[0] == targets[1]) {
                    break;
                }
            }
            MPI_CHECK(MPI_Win_unlock_all(win));
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

            /* Here, slot r was worked on by rank r if r is this rank (self
             * target) or this rank's left neighbour (remote target); every
             * chain starts at v0 and ends at the same value. */
            MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, tc_rank, 0, win));
            for (int r = 0; r < tc_size; ++r) {
                const unsigned char *slot = mem + (size_t) r * 8;
                int touched = (r == tc_rank) || ((r + 1) % tc_size == tc_rank);
                uint64_t want = touched ? final[0] : v0 & mask_of(t->bytes);
                uint64_t got = get_value(slot, t->bytes);
                CHECK(got == want,
                      "%s %s window: slot of rank %d at target %d holds 0x%" PRIx64
                      ", expected 0x%" PRIx64,
                      t->name, kind_names[kind], r, tc_rank, got, want);
                for (int i = t->bytes; i < 8; ++i) {
                    CHECK(slot[i] == SLOT_FILL,
                          "%s %s window: byte %d past the %d-byte value in the slot of rank %d "
                          "at target %d changed to 0x%02x (a write wider than the type)",
                          t->name, kind_names[kind], i - t->bytes, t->bytes, r, tc_rank,
                          slot[i]);
                }
            }
            MPI_CHECK(MPI_Win_unlock(tc_rank, win));
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            tc_say("  ok %s %s: fetch-op SUM/NO_OP/REPLACE, get-accumulate, CAS hit and miss, "
                   "self and remote, canaries intact",
                   kind_names[kind], t->name);
        }

        tc_counters_read(&after);
        tc_counters_expect(kind_names[kind], &before, &after, &exp, 1);
        if (WIN_DYNAMIC == kind) {
            MPI_CHECK(MPI_Win_detach(win, mem));
        }
        MPI_CHECK(MPI_Win_free(&win));
        free(bases);
        free(mem);
    }
    tc_say("canary: %u fetching calls per rank checked (result, canaries, target slot)", checks);
    tc_finish();
    return 0;
}
