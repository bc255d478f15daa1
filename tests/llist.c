/*
 * llist: a linked list that every rank grows at once in a dynamic window
 * (MPI_Win_create_dynamic), linked with compare-and-swap and followed with
 * fetch-and-op, under MPI_Win_lock_all: the lock-free pattern of one-sided
 * applications that build shared structures.
 *
 * Each element is attached to the window where its owner allocated it.
 * Its `next' field is one 64-bit word naming the next element: the
 * owner's rank + 1 in the top 16 bits, the element's address below, 0 for
 * the end. To append, a rank compare-and-swaps its new element's pointer
 * into the `next' of the element it believes is last (0 -> new); if that
 * fails the word it got back is the element that won, which it follows
 * (re-reading `next' with MPI_Fetch_and_op(MPI_NO_OP) once it is there)
 * until its own swap succeeds. Ranks race on the same tail all the time.
 *
 * At the end rank 0 walks the list from the head and checks: exactly
 * ranks x N elements, each rank's values once each and in the order it
 * appended them. A lost or doubled link fails, naming the element.
 *
 * Mode `each' attaches every element on its own, as it is appended, the
 * way list and tree codes grow a dynamic window: each on its own page, a
 * free page below the one before (attachments on pages that touch merge
 * into one region since osc-rdma/patches 0010), so every attach inserts
 * a region in front of the owner's region table and moves all of it. After each append the rank walks the
 * whole list, so other ranks look addresses up in that table while it
 * moves. On one node osc/rdma 4.1.4 searched that table unprotected and
 * kept a pointer into it (osc-rdma/patches/0003): a region attached long
 * before was missed (MPI_ERR_RMA_RANGE) or a get went out with another
 * region's key (refused on sockets, never answered on shm: a hang, which
 * the harness's timeout fails). Open MPI 4.1.4's osc/rdma allows
 * osc_rdma_max_attach (64) regions per rank, so N is at most 63 there
 * (default 40).
 *
 * Mode `locked' appends under MPI_Win_lock(MPI_LOCK_EXCLUSIVE) on the
 * tail's owner, in two steps: an epoch that claims the tail's `next' with
 * compare-and-swap (the claimer's rank, no address yet), then one that
 * links its element with a put. A rank that lost the claim polls that
 * `next' (lock, get, unlock) until the link is there, so the ranks that
 * wait take the very lock that the winner needs for its link, again and
 * again (MPICH's rma/linked_list does the same). osc/rdma's locks are
 * test-and-set: with btl_ofi_global_atomics -1 across hosts a poller on
 * the lock's host took it with processor atomics while the winner's
 * attempts from the other host were applied only inside the poller's own
 * epochs, and the job hung (osc-rdma/patches 0015).
 *
 *   mpirun -np N tests/bin/llist [elements per rank] [each|locked]   (default 200)
 */
#include "common.h"

typedef struct {
    int64_t value;
    uint64_t next; /* (rank + 1) << 48 | address, or 0 */
} llist_elem_t;

#define LLIST_RANK(p) ((int) ((p) >> 48) - 1)
#define LLIST_DISP(p) ((MPI_Aint) ((p) & ((1ull << 48) - 1)))

static MPI_Win win;

static uint64_t ptr_of(int rank, const void *addr)
{
    MPI_Aint a;
    MPI_CHECK(MPI_Get_address(addr, &a));
    CHECK(0 == ((uint64_t) a >> 48), "address %p does not fit 48 bits", addr);
    return ((uint64_t) (rank + 1) << 48) | (uint64_t) a;
}

static MPI_Aint next_disp(uint64_t p)
{
    return LLIST_DISP(p) + (MPI_Aint) offsetof(llist_elem_t, next);
}

/* Follow the list from the head to its end through the window (each
 * element's `next' read with a get); returns the number of elements. */
static long llist_walk(uint64_t head, long limit)
{
    long count = 0;
    uint64_t p = head;
    for (;;) {
        uint64_t next = 0;
        int owner = LLIST_RANK(p);
        CHECK(owner >= 0 && owner < tc_size, "element %ld of the list names rank %d", count, owner);
        MPI_CHECK(MPI_Get(&next, 1, MPI_UINT64_T, owner, next_disp(p), 1, MPI_UINT64_T, win));
        MPI_CHECK(MPI_Win_flush(owner, win));
        if (0 == next) {
            return count;
        }
        CHECK(++count <= limit, "the list is longer than %ld elements (a cycle?)", limit);
        p = next;
    }
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "llist");
    const int walk = argc > 2 && 0 == strcmp(argv[2], "each");
    const int locked = argc > 2 && 0 == strcmp(argv[2], "locked");
    /* locked attaches its elements one by one too (as MPICH's test does) */
    const int each = walk || locked;
    long polls = 0;
    long n = argc > 1 ? atol(argv[1]) : (locked ? 32 : each ? 40 : 200);
    /* locked claims the upper half of a 64-bit word at its offset 4 */
    CHECK(!locked || 1 == *(const uint16_t *) "\1", "locked: the claim assumes a little-endian host");
    CHECK(n > 0 && n < (each ? 64 : (1L << 20)), "elements per rank: 1 .. %s",
          each ? "63 (osc_rdma_max_attach)" : "2^20");
    const size_t page = 4096;
    /* stride between elements: in mode each a page and a free one */
    const size_t stride = each ? 2 * page : sizeof(llist_elem_t);
    if (!tc_dynamic_windows()) {
        tc_say("llist: dynamic windows left out (BTL_OFI_NO_DYNAMIC=1): not run");
        tc_finish();
        return 0;
    }

    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    char *arena = NULL;
    MPI_CHECK(MPI_Alloc_mem((MPI_Aint) ((size_t) (n + 2) * stride), MPI_INFO_NULL, &arena));
    memset(arena, 0, (size_t) (n + 2) * stride);
    /* element i; mode each: in slot n - i (2 pages each) of the aligned arena, so that
     * every element is attached below (in front of) the earlier ones */
    char *base = each ? (char *) (((uintptr_t) arena + page - 1) & ~(uintptr_t) (page - 1)) : arena;
#define ELEM(i) ((llist_elem_t *) (base + (size_t) (each ? n - (i) : (i)) * stride))
    /* rank 0's element 0 is the head (no value); the others' stays unused */
    if (each) {
        MPI_CHECK(MPI_Win_attach(win, ELEM(0), (MPI_Aint) sizeof(llist_elem_t)));
    } else {
        MPI_CHECK(MPI_Win_attach(win, arena, (MPI_Aint) ((n + 1) * sizeof(llist_elem_t))));
    }
    uint64_t head = 0 == tc_rank ? ptr_of(0, ELEM(0)) : 0;
    MPI_CHECK(MPI_Bcast(&head, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    if (!locked) {
        MPI_CHECK(MPI_Win_lock_all(0, win));
    }
    uint64_t tail = head;
    long lost_races = 0;
    long walked = 0;
    for (long i = 1; i <= n; ++i) {
        llist_elem_t *e = ELEM(i);
        e->value = (int64_t) tc_rank * n + i;
        e->next = 0;
        if (each) {
            MPI_CHECK(MPI_Win_attach(win, e, (MPI_Aint) sizeof(*e)));
        }
        if (!locked) {
            MPI_CHECK(MPI_Win_sync(win));
        }
        uint64_t me = ptr_of(tc_rank, e);
        while (locked) {
            const int owner = LLIST_RANK(tail);
            /* the claim: the upper half of `next' (the rank), with a 32-bit
             * compare-and-swap as MPICH's test does with MPI_INT (osc/rdma
             * 4.1.4 does these under its own lock, with a get and a put) */
            uint32_t claim = (uint32_t) (tc_rank + 1) << 16, nil = 0, got = 1;
            uint64_t old = 0;
            MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner, 0, win));
            MPI_CHECK(MPI_Compare_and_swap(&claim, &nil, &got, MPI_UINT32_T, owner,
                                           next_disp(tail) + 4, win));
            MPI_CHECK(MPI_Win_unlock(owner, win));
            if (0 == got) {
                MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner, 0, win));
                MPI_CHECK(MPI_Put(&me, 1, MPI_UINT64_T, owner, next_disp(tail), 1, MPI_UINT64_T,
                                  win));
                MPI_CHECK(MPI_Win_unlock(owner, win));
                tail = me;
                /* as MPICH's test: progress for a while (where RMA is
                 * carried by messages it needs it), which lets the others
                 * run ahead, lose races and poll */
                for (int k = 0; k < 100; ++k) {
                    int flag;
                    MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                         MPI_STATUS_IGNORE));
                }
                break;
            }
            ++lost_races;
            CHECK((got >> 16) >= 1 && (int) (got >> 16) <= tc_size,
                  "element %ld: a claim names rank %d", i, (int) (got >> 16) - 1);
            /* claimed by another rank: wait for its link (the whole word:
             * the half the swap returned lacks the address's low bits) */
            while (0 == LLIST_DISP(old)) {
                MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner, 0, win));
                MPI_CHECK(MPI_Get(&old, 1, MPI_UINT64_T, owner, next_disp(tail), 1, MPI_UINT64_T,
                                  win));
                MPI_CHECK(MPI_Win_unlock(owner, win));
                ++polls;
            }
            CHECK(LLIST_RANK(old) == (int) (got >> 16) - 1,
                  "element %ld: claimed by rank %d, linked by rank %d", i, (int) (got >> 16) - 1,
                  LLIST_RANK(old));
            tail = old;
        }
        for (; !locked;) {
            uint64_t nil = 0, old = 1;
            MPI_CHECK(MPI_Compare_and_swap(&me, &nil, &old, MPI_UINT64_T, LLIST_RANK(tail),
                                           next_disp(tail), win));
            MPI_CHECK(MPI_Win_flush(LLIST_RANK(tail), win));
            if (0 == old) {
                tail = me;
                break;
            }
            /* another rank's element is there: it is the tail now, or on
             * the way to it */
            ++lost_races;
            CHECK(LLIST_RANK(old) >= 0 && LLIST_RANK(old) < tc_size,
                  "element %ld: a next pointer names rank %d", i, LLIST_RANK(old));
            tail = old;
            MPI_CHECK(MPI_Fetch_and_op(NULL, &old, MPI_UINT64_T, LLIST_RANK(tail),
                                       next_disp(tail), MPI_NO_OP, win));
            MPI_CHECK(MPI_Win_flush(LLIST_RANK(tail), win));
            if (0 != old) {
                tail = old; /* one more hop, without a failing swap */
            }
        }
        if (walk) {
            /* every element so far, looked up in its owner's table while
             * the other ranks attach theirs */
            long count = llist_walk(head, (long) tc_size * n);
            CHECK(count >= i, "the list holds %ld elements after this rank's %ld appends", count, i);
            walked += count;
        }
    }
    if (!locked) {
        MPI_CHECK(MPI_Win_unlock_all(win));
    }
    tc_counters_read(&after);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    long races = 0, polled = 0;
    MPI_CHECK(MPI_Reduce(&lost_races, &races, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI_CHECK(MPI_Reduce(&polls, &polled, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (0 == tc_rank) {
        /* walk it: every element read through the window */
        long count = 0, *seen = calloc((size_t) tc_size, sizeof(long));
        CHECK(NULL != seen, "calloc");
        MPI_CHECK(MPI_Win_lock_all(0, win));
        uint64_t p = ELEM(0)->next;
        while (0 != p) {
            llist_elem_t e;
            int owner = LLIST_RANK(p);
            CHECK(owner >= 0 && owner < tc_size, "element %ld of the list names rank %d", count,
                  owner);
            MPI_CHECK(MPI_Get(&e, (int) sizeof(e), MPI_BYTE, owner, LLIST_DISP(p),
                              (int) sizeof(e), MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(owner, win));
            CHECK(e.value == (int64_t) owner * n + seen[owner] + 1,
                  "element %ld of the list (on rank %d) holds %lld, expected rank %d's "
                  "element %ld (%lld): an append was lost or doubled",
                  count, owner, (long long) e.value, owner, seen[owner] + 1,
                  (long long) ((int64_t) owner * n + seen[owner] + 1));
            ++seen[owner];
            ++count;
            CHECK(count <= (long) tc_size * n, "the list is longer than %ld elements (a cycle?)",
                  (long) tc_size * n);
            p = e.next;
        }
        MPI_CHECK(MPI_Win_unlock_all(win));
        CHECK(count == (long) tc_size * n, "the list has %ld elements, expected %ld", count,
              (long) tc_size * n);
        free(seen);
        tc_say("llist: %d ranks x %ld appends%s, list of %ld elements exact, %ld races lost and "
               "followed, %ld elements walked by rank 0 while appending, %ld polls under the "
               "lock (%.2fs)",
               tc_size, n,
               locked ? " (under exclusive locks, claim then link, each element attached on its own)"
               : each ? " (each element attached on its own)" : "",
               count, races, walked, polled, tc_now() - t0);
    }
    /* locked: a rank whose tails were on its own host may have taken
     * every lock and claim there with processor atomics (global atomics) */
    tc_expect_t exp = {{0}, locked ? 0 : (unsigned long long) n};
    tc_counters_expect("llist", &before, &after, &exp, 1);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (each) {
        for (long i = 0; i <= n; ++i) {
            MPI_CHECK(MPI_Win_detach(win, ELEM(i)));
        }
    } else {
        MPI_CHECK(MPI_Win_detach(win, arena));
    }
    MPI_CHECK(MPI_Win_free(&win));
    MPI_CHECK(MPI_Free_mem(arena));
    tc_finish();
    return 0;
}
