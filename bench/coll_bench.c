/*
 * coll_bench: MPI_Bcast, MPI_Reduce, MPI_Allreduce and MPI_Barrier
 * latency on MPI_COMM_WORLD, whatever coll component serves them (the
 * comparison is made by bench/coll.sh with coll_ofi_priority 90 or 0).
 *
 *   mpirun -np N bench/bin/coll_bench [-osu] [-ops bcast,reduce,allreduce,barrier]
 *                                     [-lat 8:1m] [-step 4] [-runs R] ...
 *
 * Per size: a warmup calibrates the iterations of a timed run (rank 0
 * decides, every rank follows); each timed run is R back-to-back calls
 * between two barriers, and its time per call is the slowest rank's; the
 * median of -runs runs is printed as "op size lat us" (bench_util.h's
 * format). With -osu, OSU's method instead (osu_bcast, osu_reduce...): a
 * barrier before every call, each rank times its calls alone, and a run's
 * time per call is the average over the ranks: the latency of one call
 * that all ranks enter together, where the back-to-back runs measure how
 * many calls a second the slowest rank completes (a rooted call's ranks
 * may be several calls apart there). Reductions are MPI_SUM over MPI_INT64_T (size / 8 elements);
 * the root is rank 0 (bcast, reduce).
 *
 * Checked after each size, outside the timing, with the same call: bcast
 * delivers rank 0's pattern byte by byte, reduce and allreduce deliver
 * the exact sums (a barrier has nothing to deliver: its runs ending is
 * all there is). "# verify ok" at the end, exit 0; else exit 3.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static int rank, size;
static int osu; /* -osu: a barrier before each call, the ranks' average */
static struct bench_opts opt;
static unsigned char *buf, *out;
static long bad;

static void call(const char *op, size_t bytes)
{
    int n = (int) (bytes / 8 ? bytes / 8 : 1);

    if (0 == strcmp(op, "bcast")) {
        MPI_Bcast(buf, (int) bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    } else if (0 == strcmp(op, "reduce")) {
        MPI_Reduce(buf, out, n, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    } else if (0 == strcmp(op, "allreduce")) {
        MPI_Allreduce(buf, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* One run of ITERS calls; the slowest rank's seconds per call (with -osu
 * the ranks' average of each call's own time), on every rank. */
static double timed(const char *op, size_t bytes, long iters)
{
    double t0, t, slowest;

    if (osu) {
        double in_calls = 0, sum;

        for (long i = 0; i < iters; ++i) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            call(op, bytes);
            in_calls += MPI_Wtime() - t0;
        }
        t = in_calls / (double) iters;
        MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return sum / size;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (long i = 0; i < iters; ++i) {
        call(op, bytes);
    }
    t = (MPI_Wtime() - t0) / (double) iters;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static void verify(const char *op, size_t bytes)
{
    int n = (int) (bytes / 8 ? bytes / 8 : 1);
    int64_t *b = (int64_t *) buf, *o = (int64_t *) out;

    if (0 == strcmp(op, "bcast")) {
        if (0 == rank) {
            bench_fill(buf, bytes, 7);
        } else {
            memset(buf, 0, bytes);
        }
        call(op, bytes);
        bad += bench_check("bcast", buf, bytes, 7);
        return;
    }
    if (0 == strcmp(op, "barrier")) {
        return;
    }
    for (int k = 0; k < n; ++k) {
        b[k] = (int64_t) rank * 1000 + k;
    }
    memset(out, 0, (size_t) n * 8);
    call(op, bytes);
    if (0 == strcmp(op, "reduce") && 0 != rank) {
        return;
    }
    for (int k = 0; k < n; ++k) {
        int64_t want = 1000 * (int64_t) size * (size - 1) / 2 + (int64_t) size * k;
        if (o[k] != want && bad++ < 5) {
            fprintf(stderr, "coll_bench: rank %d: %s of %zu bytes: element %d is %lld, not %lld\n",
                    rank, op, bytes, k, (long long) o[k], (long long) want);
        }
    }
}

static void measure(const char *op, size_t bytes, int first)
{
    double runs[BENCH_MAX_RUNS], best = 1e30, used = 0;
    long iters = 1;
    int done = 0, more;

    /* The first size of an op: an untimed pass first. Its first calls
     * pay one-time costs (connections, a component's set-up) that made
     * the calibration below pick a run of a few calls only, whose time
     * per call then held the pipeline's fill and drain: 8 B came out 2-5x
     * slower than 32 B across the simulated hosts, for coll/tuned and
     * coll/ofi alike. */
    if (first) {
        (void) timed(op, bytes, 256);
    }
    /* warmup: the fastest pass of a doubling calibration */
    for (double spent = 0; spent < opt.warm_ms * 1e-3 && iters < opt.max_iters; iters *= 2) {
        double t = timed(op, bytes, iters);
        spent += t * (double) iters;
        best = t < best ? t : best;
    }
    iters = bench_iters(&opt, best, 1);
    MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    do {
        double t = timed(op, bytes, iters);
        runs[done++] = t * 1e6;
        used += t * (double) iters;
        more = !bench_enough(&opt, done, used);
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    } while (more);
    if (0 == rank) {
        bench_line(op, bytes, "lat", bench_median(runs, done));
    }
    verify(op, bytes);
}

int main(int argc, char **argv)
{
    static const char *ops[] = {"bcast", "reduce", "allreduce", "barrier"};
    size_t sizes[BENCH_MAX_SIZES], largest;
    int nsizes;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bench_defaults(&opt, "bcast,reduce,allreduce,barrier");
    opt.lat_max = (size_t) 1 << 20;
    opt.step = 4;
    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "-osu")) {
            osu = 1;
        } else if (1 != bench_parse_common(&opt, argc, argv, &i)) {
            if (0 == rank) {
                fprintf(stderr, "usage: coll_bench [-osu] [options]\n");
                bench_usage_common(stderr);
            }
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    largest = bench_largest(&opt);
    buf = malloc(largest + 8);
    out = malloc(largest + 8);
    if (NULL == buf || NULL == out) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(buf, 0, largest + 8);
    nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
    if (0 == rank) {
        printf("# coll_bench np %d ops %s sizes %zu..%zu runs %d method %s\n", size, opt.ops,
               opt.lat_min, opt.lat_max, opt.runs, osu ? "osu" : "back-to-back");
    }
    for (int o = 0; o < 4; ++o) {
        if (!bench_has(opt.ops, ops[o])) {
            continue;
        }
        for (int k = 0; k < nsizes; ++k) {
            measure(ops[o], 0 == strcmp(ops[o], "barrier") ? 0 : sizes[k], 0 == k);
            if (0 == strcmp(ops[o], "barrier")) {
                break;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# verify %s\n", 0 == bad ? "ok" : "FAILED");
    }
    free(buf);
    free(out);
    MPI_Finalize();
    return 0 == bad ? 0 : 3;
}
