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
 *   mpirun -np N tests/bin/llist [elements per rank]   (default 200)
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

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "llist");
    long n = argc > 1 ? atol(argv[1]) : 200;
    CHECK(n > 0 && n < (1L << 20), "elements per rank: 1 .. 2^20");
    if (!tc_dynamic_windows()) {
        tc_say("llist: dynamic windows left out (BTL_OFI_NO_DYNAMIC=1): not run");
        tc_finish();
        return 0;
    }

    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    llist_elem_t *mine = NULL;
    MPI_CHECK(MPI_Alloc_mem((MPI_Aint) ((n + 1) * sizeof(llist_elem_t)), MPI_INFO_NULL, &mine));
    memset(mine, 0, (size_t) (n + 1) * sizeof(llist_elem_t));
    /* rank 0's element 0 is the head (no value); the others' stays unused */
    MPI_CHECK(MPI_Win_attach(win, mine, (MPI_Aint) ((n + 1) * sizeof(llist_elem_t))));
    uint64_t head = 0 == tc_rank ? ptr_of(0, &mine[0]) : 0;
    MPI_CHECK(MPI_Bcast(&head, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    MPI_CHECK(MPI_Win_lock_all(0, win));
    uint64_t tail = head;
    long lost_races = 0;
    for (long i = 1; i <= n; ++i) {
        llist_elem_t *e = &mine[i];
        e->value = (int64_t) tc_rank * n + i;
        e->next = 0;
        MPI_CHECK(MPI_Win_sync(win));
        uint64_t me = ptr_of(tc_rank, e);
        for (;;) {
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
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    tc_counters_read(&after);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    long races = 0;
    MPI_CHECK(MPI_Reduce(&lost_races, &races, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (0 == tc_rank) {
        /* walk it: every element read through the window */
        long count = 0, *seen = calloc((size_t) tc_size, sizeof(long));
        CHECK(NULL != seen, "calloc");
        MPI_CHECK(MPI_Win_lock_all(0, win));
        uint64_t p = mine[0].next;
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
        tc_say("llist: %d ranks x %ld appends, list of %ld elements exact, %ld races lost and "
               "followed (%.2fs)",
               tc_size, n, count, races, tc_now() - t0);
    }
    tc_expect_t exp = {{0}, (unsigned long long) n};
    tc_counters_expect("llist", &before, &after, &exp, 1);
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_detach(win, mine));
    MPI_CHECK(MPI_Win_free(&win));
    MPI_CHECK(MPI_Free_mem(mine));
    tc_finish();
    return 0;
}
