/*
 * osc_bench: MPI one-sided latency, bandwidth and message rate between
 * rank 0 (origin) and rank 1 (target) of an MPI_Win_create window, in one
 * passive-target epoch (MPI_Win_lock_all), every operation or window of
 * operations completed by MPI_Win_flush(1).
 *
 *   mpirun -np 2 ... bench/bin/osc_bench [options]
 *
 * Operations (-ops, default all of them):
 *   put, get    latency of one MPI_Put / MPI_Get of SIZE bytes + flush
 *               (sizes of the latency sweep, -lat, default 8 B .. 4 MiB)
 *   acc         latency of MPI_Accumulate (MPI_SUM) of SIZE bytes of int64
 *               + flush (latency sweep): 8 bytes add to a counter that
 *               is verified, larger sizes into the data region
 *   accs        the same with a strided target: SIZE bytes of int64 (a
 *               contiguous origin) into every other int64 of the data
 *               region (MPI_Type_vector(n, 1, 2)), a derived datatype
 *               osc/rdma takes in pieces; not in the default list
 *   gacc        latency of MPI_Get_accumulate (MPI_SUM) of SIZE bytes of
 *               int64 + flush into the data region, old values into a
 *               buffer of the origin (latency sweep); not in the default
 *               list
 *   fop         latency of MPI_Fetch_and_op (int64, MPI_SUM) + flush
 *   cas         latency of MPI_Compare_and_swap (int64) + flush
 *   putbw,getbw W puts (gets) of SIZE bytes in flight, then one flush;
 *               prints bandwidth ("put SIZE bw") and message rate
 *               ("put SIZE rate"); W = min(-window, -wbytes / SIZE); sizes
 *               of the bandwidth sweep (-bw, default 1 B .. 4 MiB)
 *
 * Output: "op size metric value" lines (see bench_util.h): lat in us,
 * bw in MB/s, rate in Mmsg/s; each value is the median of -runs timed runs
 * after a warmup that also calibrates the iterations of a run (-run-ms).
 * Comment lines (#) give the configuration, and, from MPI_T, the version of
 * this project's btl/ofi and the provider it selected ("none" with other
 * components) and its traffic counters.
 *
 * Verification, once at the end: a put of the largest size checked byte by
 * byte in the target's memory, a get of a pattern the target wrote locally
 * checked by the origin, and the atomic counters (every fetch-and-op and
 * compare-and-swap result is compared with the value it must have returned,
 * and the final counter values with the sum of what was added). Exit status
 * 0 and "# verify ok" when everything matched, 3 otherwise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "mpit_probe.h"

static struct bench_opts opt;
static MPI_Win win;
static unsigned char *win_mem; /* window: region bytes of data, then counters */
static unsigned char *src, *dst;
static size_t region;  /* data bytes of the window, of src and of dst */
static MPI_Aint acc_disp, cas_disp;

/* state of the operation being timed */
static size_t cur_size;
static int cur_window;
static int64_t acc_expected; /* what the accumulate counter must hold */
static int64_t cas_expected; /* what the compare-and-swap counter must hold */
static long atomic_mismatch;

#define TARGET 1

static void step_put(long i)
{
    (void) i;
    MPI_Put(src, (int) cur_size, MPI_BYTE, TARGET, 0, (int) cur_size, MPI_BYTE, win);
    MPI_Win_flush(TARGET, win);
}

static void step_get(long i)
{
    (void) i;
    MPI_Get(dst, (int) cur_size, MPI_BYTE, TARGET, 0, (int) cur_size, MPI_BYTE, win);
    MPI_Win_flush(TARGET, win);
}

static void step_acc(long i)
{
    int64_t one = 1;
    (void) i;
    MPI_Accumulate(&one, 1, MPI_INT64_T, TARGET, acc_disp, 1, MPI_INT64_T, MPI_SUM, win);
    MPI_Win_flush(TARGET, win);
    acc_expected += 1;
}

/* more than one element: into the data region, which the verification
 * overwrites before it checks */
static void step_accv(long i)
{
    int n = (int) (cur_size / sizeof(int64_t));
    (void) i;
    MPI_Accumulate(src, n, MPI_INT64_T, TARGET, 0, n, MPI_INT64_T, MPI_SUM, win);
    MPI_Win_flush(TARGET, win);
}

/* gacc: the data region's old values into dst */
static void step_gacc(long i)
{
    int n = (int) (cur_size / sizeof(int64_t));
    (void) i;
    MPI_Get_accumulate(src, n, MPI_INT64_T, dst, n, MPI_INT64_T, TARGET, 0, n, MPI_INT64_T, MPI_SUM, win);
    MPI_Win_flush(TARGET, win);
}

static MPI_Datatype strided; /* accs: every other int64 */

static void step_accs(long i)
{
    int n = (int) (cur_size / sizeof(int64_t));
    (void) i;
    MPI_Accumulate(src, n, MPI_INT64_T, TARGET, 0, 1, strided, MPI_SUM, win);
    MPI_Win_flush(TARGET, win);
}

static void step_fop(long i)
{
    int64_t one = 1, old = -1;
    (void) i;
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, TARGET, acc_disp, MPI_SUM, win);
    MPI_Win_flush(TARGET, win);
    if (old != acc_expected) {
        atomic_mismatch++;
        acc_expected = old;
    }
    acc_expected += 1;
}

static void step_cas(long i)
{
    int64_t cmp = cas_expected, val = cas_expected + 1, old = -1;
    (void) i;
    MPI_Compare_and_swap(&val, &cmp, &old, MPI_INT64_T, TARGET, cas_disp, win);
    MPI_Win_flush(TARGET, win);
    if (old != cmp) {
        atomic_mismatch++;
        cas_expected = old;
    } else {
        cas_expected = val;
    }
}

static void step_putbw(long i)
{
    (void) i;
    for (int j = 0; j < cur_window; ++j) {
        size_t off = (size_t) j * cur_size;
        MPI_Put(src + off, (int) cur_size, MPI_BYTE, TARGET, (MPI_Aint) off, (int) cur_size,
                MPI_BYTE, win);
    }
    MPI_Win_flush(TARGET, win);
}

static void step_getbw(long i)
{
    (void) i;
    for (int j = 0; j < cur_window; ++j) {
        size_t off = (size_t) j * cur_size;
        MPI_Get(dst + off, (int) cur_size, MPI_BYTE, TARGET, (MPI_Aint) off, (int) cur_size,
                MPI_BYTE, win);
    }
    MPI_Win_flush(TARGET, win);
}

static double timed(void (*step)(long), long n)
{
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; ++i) {
        step(i);
    }
    return MPI_Wtime() - t0;
}

/* Median over the timed runs of the seconds one step takes. */
static double measure(void (*step)(long))
{
    double spent = 0, dt = 0, best = 0, per_run[BENCH_MAX_RUNS];
    long n = 1, iters;

    /* warmup, doubling the iterations, until -warm-ms have passed */
    for (;;) {
        dt = timed(step, n);
        spent += dt;
        /* the fastest pass calibrates: one preempted pass must not shrink
         * every timed run of the point to a few iterations */
        if (0 == best || dt / (double) n < best) {
            best = dt / (double) n;
        }
        if (spent >= opt.warm_ms * 1e-3 || n >= opt.max_iters || dt >= opt.run_ms * 1e-3) {
            break;
        }
        n *= 2;
    }
    iters = bench_iters(&opt, best, 1);
    int done = 0;
    double used = 0;
    while (done < opt.runs && !bench_enough(&opt, done, used)) {
        double t = timed(step, iters);
        used += t;
        per_run[done++] = t / (double) iters;
    }
    return bench_median(per_run, done);
}

static void usage(void)
{
    fprintf(stderr, "usage: osc_bench [options]\n");
    bench_usage_common(stderr);
    fprintf(stderr, "  ops: put,get,acc,accs,gacc,fop,cas,putbw,getbw (default all but accs and gacc)\n");
}

int main(int argc, char **argv)
{
    int rank, nprocs, provided, errors = 0;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    char version[128], provider[256];
    struct probe_pvars pv;
    static const char *const counters[] = {"btl_ofi_put_count", "btl_ofi_get_count",
                                           "btl_ofi_atomic_count", "btl_ofi_put_bytes",
                                           "btl_ofi_get_bytes"};

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    bench_defaults(&opt, "put,get,acc,fop,cas,putbw,getbw");
    for (int i = 1; i < argc; ++i) {
        int rc = bench_parse_common(&opt, argc, argv, &i);
        if (rc <= 0) {
            if (0 == rank) {
                fprintf(stderr, "osc_bench: bad option or value: %s\n", argv[i]);
                usage();
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (nprocs < 2) {
        if (0 == rank) {
            fprintf(stderr, "osc_bench: needs 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }

    /* window and buffers: room for the widest window of operations */
    region = bench_largest(&opt);
    if (bench_has(opt.ops, "putbw") || bench_has(opt.ops, "getbw")) {
        nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
        for (int k = 0; k < nsizes; ++k) {
            size_t need = (size_t) bench_window(&opt, sizes[k]) * sizes[k];
            region = need > region ? need : region;
        }
    }
    if (bench_has(opt.ops, "accs")) {
        region *= 2; /* the strided target spans twice its bytes */
    }
    region = (region + 63) & ~(size_t) 63;
    acc_disp = (MPI_Aint) region;
    cas_disp = (MPI_Aint) region + 8;
    if (posix_memalign((void **) &win_mem, 4096, region + 64)
        || posix_memalign((void **) &src, 4096, region)
        || posix_memalign((void **) &dst, 4096, region)) {
        fprintf(stderr, "osc_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(win_mem, 0, region + 64);
    bench_fill(src, region, 11);
    memset(dst, 0, region);

    probe_cvar_string("btl_ofi_version", version, sizeof(version));
    probe_cvar_string("btl_ofi_selected_provider", provider, sizeof(provider));
    probe_pvars_start(&pv, counters, (int) (sizeof(counters) / sizeof(counters[0])));

    MPI_Win_create(win_mem, (MPI_Aint) region + 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);

    if (0 == rank) {
        printf("# osc_bench ranks %d window MPI_Win_create region %zu runs %d run_ms %g warm_ms %g "
               "window_ops %d window_bytes %zu\n",
               nprocs, region, opt.runs, opt.run_ms, opt.warm_ms, opt.window, opt.window_bytes);
        printf("# btl_ofi_version %s\n# btl_ofi_selected_provider %s\n", version, provider);
        fflush(stdout);

        static const struct {
            const char *name, *label;
            void (*step)(long);
        } lat_ops[] = {{"put", "put", step_put}, {"get", "get", step_get}};
        for (unsigned k = 0; k < sizeof(lat_ops) / sizeof(lat_ops[0]); ++k) {
            if (!bench_has(opt.ops, lat_ops[k].name)) {
                continue;
            }
            printf("# start %s lat\n", lat_ops[k].name);
            nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
            for (int s = 0; s < nsizes; ++s) {
                cur_size = sizes[s];
                bench_line(lat_ops[k].label, cur_size, "lat", measure(lat_ops[k].step) * 1e6);
            }
        }
        static const struct {
            const char *name;
            void (*step)(long);
        } amo_ops[] = {{"fop", step_fop}, {"cas", step_cas}};
        /* accumulate sweeps: into the data region (acc), into every other
         * int64 of it (accs, a derived target datatype) */
        static const char *const acc_names[2] = {"acc", "accs"};
        for (int strided_target = 0; strided_target < 2; ++strided_target) {
            const char *name = acc_names[strided_target];
            if (!bench_has(opt.ops, name)) {
                continue;
            }
            printf("# start %s lat\n", name);
            fflush(stdout);
            nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
            for (int s = 0; s < nsizes; ++s) {
                cur_size = sizes[s] < sizeof(int64_t) ? sizeof(int64_t) : sizes[s];
                if (strided_target) {
                    MPI_Type_vector((int) (cur_size / sizeof(int64_t)), 1, 2, MPI_INT64_T, &strided);
                    MPI_Type_commit(&strided);
                }
                bench_line(name, cur_size, "lat",
                           measure(strided_target ? step_accs
                                   : cur_size > sizeof(int64_t) ? step_accv : step_acc) * 1e6);
                if (strided_target) {
                    MPI_Type_free(&strided);
                }
            }
        }
        if (bench_has(opt.ops, "gacc")) {
            printf("# start gacc lat\n");
            fflush(stdout);
            nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
            for (int s = 0; s < nsizes; ++s) {
                cur_size = sizes[s] < sizeof(int64_t) ? sizeof(int64_t) : sizes[s];
                bench_line("gacc", cur_size, "lat", measure(step_gacc) * 1e6);
            }
        }
        for (unsigned k = 0; k < sizeof(amo_ops) / sizeof(amo_ops[0]); ++k) {
            if (bench_has(opt.ops, amo_ops[k].name)) {
                printf("# start %s lat\n", amo_ops[k].name);
                fflush(stdout);
                bench_line(amo_ops[k].name, 8, "lat", measure(amo_ops[k].step) * 1e6);
            }
        }
        static const struct {
            const char *name, *label;
            void (*step)(long);
        } bw_ops[] = {{"putbw", "put", step_putbw}, {"getbw", "get", step_getbw}};
        for (unsigned k = 0; k < sizeof(bw_ops) / sizeof(bw_ops[0]); ++k) {
            if (!bench_has(opt.ops, bw_ops[k].name)) {
                continue;
            }
            printf("# start %s (window %d ops, at most %zu bytes)\n", bw_ops[k].name, opt.window,
                   opt.window_bytes);
            nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
            for (int s = 0; s < nsizes; ++s) {
                double per;
                cur_size = sizes[s];
                cur_window = bench_window(&opt, cur_size);
                per = measure(bw_ops[k].step); /* seconds per window */
                bench_line(bw_ops[k].label, cur_size, "bw",
                           (double) cur_window * (double) cur_size / per / 1e6);
                bench_line(bw_ops[k].label, cur_size, "rate", (double) cur_window / per / 1e6);
            }
        }
    }

    /* ---- verification ---- */
    size_t vbytes = bench_largest(&opt);
    long bad = 0;
    if (0 == rank) {
        bench_fill(src, vbytes, 21);
        MPI_Put(src, (int) vbytes, MPI_BYTE, TARGET, 0, (int) vbytes, MPI_BYTE, win);
        MPI_Win_flush(TARGET, win);
        bad += atomic_mismatch;
        if (atomic_mismatch) {
            fprintf(stderr, "osc_bench: %ld atomic results differed from the expected value\n",
                    atomic_mismatch);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (TARGET == rank) {
        MPI_Win_sync(win);
        bad += bench_check("osc_bench: target after put", win_mem, vbytes, 21);
        bench_fill(win_mem, vbytes, 22);
        MPI_Win_sync(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        int64_t counters_got[2] = {-1, -1};
        memset(dst, 0, vbytes);
        MPI_Get(dst, (int) vbytes, MPI_BYTE, TARGET, 0, (int) vbytes, MPI_BYTE, win);
        MPI_Get(counters_got, 2, MPI_INT64_T, TARGET, acc_disp, 2, MPI_INT64_T, win);
        MPI_Win_flush(TARGET, win);
        bad += bench_check("osc_bench: origin after get", dst, vbytes, 22);
        if (counters_got[0] != acc_expected || counters_got[1] != cas_expected) {
            fprintf(stderr,
                    "osc_bench: counters are %lld and %lld, expected %lld and %lld\n",
                    (long long) counters_got[0], (long long) counters_got[1],
                    (long long) acc_expected, (long long) cas_expected);
            bad++;
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        probe_pvars_print(&pv, "rank0 ");
    }
    errors = bad ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf(errors ? "# verify FAILED\n" : "# verify ok\n");
        fflush(stdout);
    }
    MPI_Win_free(&win);
    if (MPI_T_PVAR_SESSION_NULL != pv.session) {
        MPI_T_pvar_session_free(&pv.session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    free(win_mem);
    free(src);
    free(dst);
    return errors ? 3 : 0;
}
