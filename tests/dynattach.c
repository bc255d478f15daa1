/*
 * dynattach: dynamic windows whose attachments are neighbours in memory.
 *
 * MPI lets a program attach the parts of one buffer one by one (the two
 * halves of an array, MPI_Alloc_mem blocks that follow each other) and
 * then reach them with one access that spans them. Open MPI 4.1.4's
 * osc/rdma gave each attachment a region of its own and refused an access
 * no single region held (MPI_ERR_RMA_RANGE: MPICH's
 * win_dynamic_rma_flush_get -count=9216), and counted every attachment
 * against osc_rdma_max_attach (64: MPICH's window_attach, 1000 blocks).
 * osc-rdma/patches/0010 merges attachments that touch into one region.
 *
 * Every rank, on its own memory, in one MPI_Win_create_dynamic window:
 *  1. two halves of one array (not page multiples, so they share a page),
 *     attached one after the other; every rank puts, gets, accumulates
 *     (MPI_SUM of ints) and get-accumulates across the seam of the next
 *     rank's array, and its own;
 *  2. SLICES slices of one buffer attached one by one (more than 4.1.4's
 *     limit), each reached by the previous rank; then every other slice
 *     detached: the rest must still be reached (their registration is the
 *     merged one); then the detached ones attached again and all of them
 *     reached once more;
 *  3. GAPPED slices with a free page between each two (separate regions,
 *     the table grows and is searched);
 *  4. an attachment that contains one already attached is refused with
 *     MPI_ERR_RMA_ATTACH (4.1.4 let it in), and the window still works.
 * Every byte read back and every byte of the owners' memory is checked.
 * btl/ofi's put/get/atomic counters must grow (dynamic windows go through
 * the btl even on one node).
 *
 *   mpirun -np N tests/bin/dynattach
 */
#include "common.h"

#define HALF (32 * 1024 + 100) /* each half of the array of step 1 */
#define SPAN (9 * 1024)        /* an access across the seam */
#ifndef SLICES
#define SLICES 200 /* step 2 */
#endif
#define SLICE 4000
#define GAPPED 12 /* step 3 */
#define PAGE 4096

static MPI_Win win;
static MPI_Aint *bases; /* every rank's base of the current step */

static void share_base(void *mine)
{
    MPI_Aint a;
    MPI_CHECK(MPI_Get_address(mine, &a));
    MPI_CHECK(MPI_Allgather(&a, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD));
}

/* Step 1: across the seam of two attachments. */
static void seam(void)
{
    unsigned char *arr = NULL;
    unsigned char *src = malloc(SPAN), *back = malloc(SPAN);
    int *isrc = malloc(SPAN), *iback = malloc(SPAN);
    const int target = (tc_rank + 1) % tc_size, from = (tc_rank + tc_size - 1) % tc_size;
    const MPI_Aint off = HALF - SPAN / 2;
    const int n = SPAN / (int) sizeof(int);

    CHECK(NULL != src && NULL != back && NULL != isrc && NULL != iback, "malloc");
    MPI_CHECK(MPI_Alloc_mem(2 * HALF, MPI_INFO_NULL, &arr));
    memset(arr, 0, 2 * HALF);
    MPI_CHECK(MPI_Win_attach(win, arr, HALF));
    MPI_CHECK(MPI_Win_attach(win, arr + HALF, HALF));
    share_base(arr);

    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int pass = 0; pass < 2; ++pass) {
        /* the next rank's array, then this rank's own */
        const int t = 0 == pass ? target : tc_rank;
        const MPI_Aint at = bases[t] + off;
        const unsigned round = (unsigned) pass + 1;

        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        tc_fill(src, tc_rank, SPAN, round);
        MPI_CHECK(MPI_Put(src, SPAN, MPI_BYTE, t, at, SPAN, MPI_BYTE, win));
        MPI_CHECK(MPI_Win_flush(t, win));
        memset(back, 0, SPAN);
        MPI_CHECK(MPI_Get(back, SPAN, MPI_BYTE, t, at, SPAN, MPI_BYTE, win));
        MPI_CHECK(MPI_Win_flush(t, win));
        tc_verify(tc_fmt("get of %d bytes across the seam of rank %d's two attachments", SPAN, t),
                  back, tc_rank, SPAN, round);

        /* the ints now there are the pattern's; add i + 1 to each */
        int *now = (int *) (void *) back;
        for (int i = 0; i < n; ++i) {
            isrc[i] = i + 1;
        }
        MPI_CHECK(MPI_Accumulate(isrc, n, MPI_INT, t, at, n, MPI_INT, MPI_SUM, win));
        MPI_CHECK(MPI_Win_flush(t, win));
        MPI_CHECK(MPI_Get_accumulate(NULL, 0, MPI_INT, iback, n, MPI_INT, t, at, n, MPI_INT,
                                     MPI_NO_OP, win));
        MPI_CHECK(MPI_Win_flush(t, win));
        for (int i = 0; i < n; ++i) {
            CHECK(iback[i] == now[i] + i + 1,
                  "rank %d's int %d across the seam: %d after adding %d to %d (pass %d)", t, i,
                  iback[i], i + 1, now[i], pass);
        }
        /* the owner sees it in its memory: the bytes before and after the
         * span untouched */
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_sync(win));
        const int writer = 0 == pass ? from : tc_rank;
        tc_fill(src, writer, SPAN, round);
        for (int i = 0; i < n; ++i) {
            int was, got;
            memcpy(&was, src + (size_t) i * sizeof(int), sizeof(int));
            memcpy(&got, arr + off + (MPI_Aint) i * (MPI_Aint) sizeof(int), sizeof(int));
            CHECK(got == was + i + 1, "own array, int %d across the seam: %d, expected %d (written by rank %d)",
                  i, got, was + i + 1, writer);
        }
        for (MPI_Aint i = 0; i < off; ++i) {
            CHECK(0 == arr[i] && 0 == arr[2 * HALF - 1 - i],
                  "own array: a byte outside the span written (offset %ld or %ld)", (long) i,
                  (long) (2 * HALF - 1 - i));
        }
        memset(arr, 0, 2 * HALF);
        MPI_CHECK(MPI_Win_sync(win));
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_detach(win, arr));
    MPI_CHECK(MPI_Win_detach(win, arr + HALF));
    MPI_CHECK(MPI_Free_mem(arr));
    free(src);
    free(back);
    free(isrc);
    free(iback);
}

/* Every slice in `which' (1 = attached) of the target's buffer of
 * `count' slices `stride' bytes apart: put, get back, check; then the
 * owner checks its own slices. Even ranks write first, then odd ones
 * (then the last of an odd count): no process both sends this flood and
 * receives one (the sockets provider
 * of libfabric 1.17 hangs, now and then, when two processes put hundreds
 * of kilobytes in pieces of a few kilobytes into each other at once:
 * README, Known limits). */
static void reach_slices(unsigned char *mine, int count, size_t stride, const char *which,
                         unsigned round, const char *what)
{
    const int target = (tc_rank + 1) % tc_size, from = (tc_rank + tc_size - 1) % tc_size;
    /* one source per slice: a put's origin buffer stays as it is until
     * the flush */
    unsigned char *src = malloc((size_t) count * SLICE), *back = malloc(SLICE);
    char label[160];

    CHECK(NULL != src && NULL != back, "malloc");
    snprintf(label, sizeof(label), "%s", what); /* tc_fmt's buffer is reused below */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_CHECK(MPI_Win_lock_all(0, win));
    /* even ranks, then odd ones, then the last of an odd count (which
     * writes into rank 0 and is written by the rank before it) */
    const int my_turn = (tc_size % 2 && tc_rank == tc_size - 1) ? 2 : tc_rank % 2;
    for (int turn = 0; turn < 3; ++turn) {
        if (turn != my_turn) {
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            continue;
        }
        for (int s = 0; s < count; ++s) {
            if (!which[s]) {
                continue;
            }
            const MPI_Aint at = bases[target] + (MPI_Aint) ((size_t) s * stride);
            unsigned char *from_here = src + (size_t) s * SLICE;
            tc_fill(from_here, tc_rank, SLICE, round * 1000u + (unsigned) s);
            MPI_CHECK(MPI_Put(from_here, SLICE, MPI_BYTE, target, at, SLICE, MPI_BYTE, win));
        }
        MPI_CHECK(MPI_Win_flush(target, win));
        for (int s = 0; s < count; ++s) {
            if (!which[s]) {
                continue;
            }
            const MPI_Aint at = bases[target] + (MPI_Aint) ((size_t) s * stride);
            memset(back, 0, SLICE);
            MPI_CHECK(MPI_Get(back, SLICE, MPI_BYTE, target, at, SLICE, MPI_BYTE, win));
            MPI_CHECK(MPI_Win_flush(target, win));
            tc_verify(tc_fmt("%s: rank %d's slice %d read back", label, target, s), back, tc_rank,
                      SLICE, round * 1000u + (unsigned) s);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int s = 0; s < count; ++s) {
        if (which[s]) {
            tc_verify(tc_fmt("%s: own slice %d", label, s), mine + (size_t) s * stride, from, SLICE,
                      round * 1000u + (unsigned) s);
        }
    }
    free(src);
    free(back);
}

/* Step 2: SLICES neighbours, some detached and attached again. */
static void neighbours(void)
{
    unsigned char *buf = NULL;
    char which[SLICES];

    MPI_CHECK(MPI_Alloc_mem((MPI_Aint) SLICES * SLICE, MPI_INFO_NULL, &buf));
    memset(buf, 0, (size_t) SLICES * SLICE);
    for (int s = 0; s < SLICES; ++s) {
        MPI_CHECK(MPI_Win_attach(win, buf + (size_t) s * SLICE, SLICE));
        which[s] = 1;
    }
    share_base(buf);
    reach_slices(buf, SLICES, SLICE, which, 1, tc_fmt("%d neighbour slices attached", SLICES));

    for (int s = 0; s < SLICES; s += 2) {
        MPI_CHECK(MPI_Win_detach(win, buf + (size_t) s * SLICE));
        which[s] = 0;
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    reach_slices(buf, SLICES, SLICE, which, 2, "every other slice detached");

    for (int s = 0; s < SLICES; s += 2) {
        MPI_CHECK(MPI_Win_attach(win, buf + (size_t) s * SLICE, SLICE));
        which[s] = 1;
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    reach_slices(buf, SLICES, SLICE, which, 3, "the detached slices attached again");

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int s = SLICES - 1; s >= 0; --s) {
        MPI_CHECK(MPI_Win_detach(win, buf + (size_t) s * SLICE));
    }
    MPI_CHECK(MPI_Free_mem(buf));
}

/* Step 3: slices a free page apart, separate regions. Step 4: an
 * attachment containing an attached slice is refused. */
static void gapped(void)
{
    const size_t stride = 2 * PAGE; /* slice in the first page, the second free */
    unsigned char *buf = NULL;
    char which[GAPPED];

    MPI_CHECK(MPI_Alloc_mem((MPI_Aint) (GAPPED * stride + PAGE), MPI_INFO_NULL, &buf));
    unsigned char *base = (unsigned char *) (((uintptr_t) buf + PAGE - 1) & ~(uintptr_t) (PAGE - 1));
    memset(base, 0, GAPPED * stride);
    /* from the last to the first: each attach goes in front of the table */
    for (int s = GAPPED - 1; s >= 0; --s) {
        MPI_CHECK(MPI_Win_attach(win, base + (size_t) s * stride, SLICE));
        which[s] = 1;
    }
    share_base(base);
    reach_slices(base, GAPPED, stride, which, 4, tc_fmt("%d slices a page apart", GAPPED));

    /* slice 1 with the free pages around it: contains slice 1 */
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    int rc = MPI_Win_attach(win, base + stride - 16, SLICE + 32);
    int cls = MPI_SUCCESS;
    if (MPI_SUCCESS != rc) {
        MPI_CHECK(MPI_Error_class(rc, &cls));
    }
    CHECK(MPI_ERR_RMA_ATTACH == cls,
          "an attachment containing an attached one: error class %d, expected MPI_ERR_RMA_ATTACH (%d)",
          cls, MPI_ERR_RMA_ATTACH);
    MPI_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    reach_slices(base, GAPPED, stride, which, 5, "after a refused attachment");

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (int s = 0; s < GAPPED; ++s) {
        MPI_CHECK(MPI_Win_detach(win, base + (size_t) s * stride));
    }
    MPI_CHECK(MPI_Free_mem(buf));
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "dynattach");
    if (!tc_dynamic_windows()) {
        tc_say("dynattach: dynamic windows left out (BTL_OFI_NO_DYNAMIC=1): not run");
        tc_finish();
        return 0;
    }
    bases = malloc((size_t) tc_size * sizeof(*bases));
    CHECK(NULL != bases, "malloc");
    MPI_CHECK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    tc_counters_t before, after;
    tc_counters_read(&before);
    double t0 = tc_now();
    seam();
    tc_say("dynattach: puts, gets and accumulates of %d bytes across the seam of two attachments passed", SPAN);
    neighbours();
    tc_say("dynattach: %d neighbour slices attached one by one, half detached and attached again, all reached",
           SLICES);
    gapped();
    tc_say("dynattach: %d slices a page apart reached; an attachment containing one refused", GAPPED);
    tc_counters_read(&after);
    if (tc_check_ours_enabled()) {
        const unsigned long long moved = after.v[TC_PUT_COUNT] - before.v[TC_PUT_COUNT]
                                         + after.v[TC_GET_COUNT] - before.v[TC_GET_COUNT];
        CHECK(moved > 0, "no put or get went through btl/ofi on a dynamic window");
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(bases);
    tc_say("dynattach: passed (%.2fs)", tc_now() - t0);
    tc_finish();
    return 0;
}
