/*
 * busy: a target that computes outside MPI for a long time is not lost.
 *
 *   busy [-secs S]     (default 60)
 *
 * Rank 2 (on the second host when ranks are placed by slot, 2 per host)
 * computes for S seconds without calling MPI. Meanwhile ranks 0 and 1 put
 * 64 KiB each into its window and flush: on providers the target must
 * progress itself the flush waits until it comes back, and btl/ofi's
 * liveness probe of its host finds a live kernel each time, so nothing
 * is declared lost. Then every rank checks what it should: the origins
 * read their bytes back, the target checks its window.
 */
#include "../common.h"

#define CHUNK 65536

static void compute_for(double secs)
{
    volatile double x = 1.0;
    double end = tc_now() + secs;
    while (tc_now() < end) {
        for (int k = 0; k < 100000; ++k) {
            x = x * 1.0000001 + 1e-9;
        }
    }
}

int main(int argc, char **argv)
{
    double secs = 60.0;
    tc_init(&argc, &argv, "busy");
    CHECK(tc_size >= 3, "needs at least 3 ranks, has %d", tc_size);
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-secs")) {
            secs = atof(argv[i + 1]);
        }
    }
    const int target = 2;
    unsigned char *mem = calloc(2, CHUNK), *out = malloc(CHUNK), *back = malloc(CHUNK);
    CHECK(mem && out && back, "malloc failed");
    MPI_Win win;
    MPI_CHECK(MPI_Win_create(mem, 2 * CHUNK, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = tc_now();
    if (tc_rank == target) {
        tc_say("busy: rank %d computes %.0f s outside MPI", target, secs);
        compute_for(secs);
    } else if (tc_rank < 2) {
        tc_fill(out, tc_rank, CHUNK, 7);
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
        MPI_CHECK(MPI_Put(out, CHUNK, MPI_BYTE, target, (MPI_Aint) tc_rank * CHUNK, CHUNK,
                          MPI_BYTE, win));
        MPI_CHECK(MPI_Win_flush(target, win));
        double waited = tc_now() - t0;
        MPI_CHECK(MPI_Get(back, CHUNK, MPI_BYTE, target, (MPI_Aint) tc_rank * CHUNK, CHUNK,
                          MPI_BYTE, win));
        MPI_CHECK(MPI_Win_unlock(target, win));
        tc_verify("busy: read back from the busy target", back, tc_rank, CHUNK, 7);
        printf("busy: rank %d: put + flush to the busy rank %d took %.1f s\n", tc_rank, target,
               waited);
        fflush(stdout);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (tc_rank == target) {
        for (int r = 0; r < 2; ++r) {
            tc_verify("busy: target window", mem + (size_t) r * CHUNK, r, CHUNK, 7);
        }
    }
    MPI_CHECK(MPI_Win_free(&win));
    free(mem);
    free(out);
    free(back);
    tc_finish();
    return 0;
}
