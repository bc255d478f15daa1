/*
 * p2p_bench: MPI two-sided latency, streaming bandwidth and message rate
 * between ranks 0 and 1.
 *
 *   mpirun -np 2 ... bench/bin/p2p_bench [options]
 *
 * Operations (-ops, default all):
 *   lat     ping-pong: rank 0 MPI_Send, rank 1 MPI_Recv then MPI_Send back;
 *           prints half the round trip, "send SIZE lat" (latency sweep,
 *           -lat, default 1 B .. 4 MiB)
 *   stream  rank 0 MPI_Isend's W messages of SIZE bytes, rank 1 has W
 *           MPI_Irecv's posted (distinct buffers) and answers with one
 *           4-byte message once all arrived; prints "send SIZE bw" and
 *           "send SIZE rate"; W = min(-window, -wbytes / SIZE)
 *           (bandwidth sweep, -bw, default 1 B .. 4 MiB)
 *
 * Output: "op size metric value" lines (bench_util.h); each value is the
 * median of -runs timed runs after a warmup that calibrates the iterations
 * of a run (rank 0 measures, MPI_Bcast tells rank 1, outside timed loops).
 *
 * Verification at the end: a message of the largest size each way, checked
 * byte by byte against a pattern; the streaming buffers of rank 1 are also
 * checked after the last streaming run. "# verify ok" and exit 0, else 3.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "mpit_probe.h"

static struct bench_opts opt;
static int rank;
static unsigned char *sbuf, *rbuf;
static size_t region;
static size_t cur_size;
static int cur_window;
static MPI_Request *reqs;

static void step_pingpong(long i)
{
    (void) i;
    if (0 == rank) {
        MPI_Send(sbuf, (int) cur_size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int) cur_size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, (int) cur_size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(sbuf, (int) cur_size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
}

static void step_stream(long i)
{
    int ack = 0;
    (void) i;
    if (0 == rank) {
        for (int j = 0; j < cur_window; ++j) {
            MPI_Isend(sbuf + (size_t) j * cur_size, (int) cur_size, MPI_BYTE, 1, 2,
                      MPI_COMM_WORLD, &reqs[j]);
        }
        MPI_Waitall(cur_window, reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        for (int j = 0; j < cur_window; ++j) {
            MPI_Irecv(rbuf + (size_t) j * cur_size, (int) cur_size, MPI_BYTE, 0, 2,
                      MPI_COMM_WORLD, &reqs[j]);
        }
        MPI_Waitall(cur_window, reqs, MPI_STATUSES_IGNORE);
        MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
    }
}

static double timed(void (*step)(long), long n)
{
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; ++i) {
        step(i);
    }
    return MPI_Wtime() - t0;
}

/* Median over the timed runs of the seconds one step takes (as rank 0
 * measured it; rank 1 follows the same iteration counts). */
static double measure(void (*step)(long))
{
    double spent = 0, dt = 0, best = 0, per_run[BENCH_MAX_RUNS];
    long n = 1, iters;

    for (;;) {
        double info[2];
        dt = timed(step, n);
        spent += dt;
        info[0] = dt;
        info[1] = spent;
        MPI_Bcast(info, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        dt = info[0];
        spent = info[1];
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
    for (;;) {
        /* rank 0 decides whether another run follows (bench_enough) */
        int more = done < opt.runs && !bench_enough(&opt, done, used);
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!more) {
            break;
        }
        double t = timed(step, iters);
        used += t;
        per_run[done++] = t / (double) iters;
    }
    MPI_Bcast(per_run, done, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return bench_median(per_run, done);
}

int main(int argc, char **argv)
{
    int nprocs, provided, errors = 0;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    long bad = 0;
    char version[128], provider[256];
    struct probe_pvars pv;
    static const char *const counters[] = {"btl_ofi_send_count", "btl_ofi_send_bytes",
                                           "btl_ofi_put_count", "btl_ofi_get_count"};

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    bench_defaults(&opt, "lat,stream");
    opt.lat_min = 1;
    for (int i = 1; i < argc; ++i) {
        int rc = bench_parse_common(&opt, argc, argv, &i);
        if (rc <= 0) {
            if (0 == rank) {
                fprintf(stderr, "p2p_bench: bad option or value: %s\nusage: p2p_bench [options]\n",
                        argv[i]);
                bench_usage_common(stderr);
                fprintf(stderr, "  ops: lat,stream (default both)\n");
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (2 != nprocs) {
        if (0 == rank) {
            fprintf(stderr, "p2p_bench: needs exactly 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }

    region = bench_largest(&opt);
    nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
    for (int k = 0; k < nsizes; ++k) {
        size_t need = (size_t) bench_window(&opt, sizes[k]) * sizes[k];
        region = need > region ? need : region;
    }
    if (posix_memalign((void **) &sbuf, 4096, region)
        || posix_memalign((void **) &rbuf, 4096, region)
        || NULL == (reqs = calloc((size_t) opt.window, sizeof(*reqs)))) {
        fprintf(stderr, "p2p_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bench_fill(sbuf, region, 31 + (unsigned) rank);
    memset(rbuf, 0, region);

    probe_cvar_string("btl_ofi_version", version, sizeof(version));
    probe_cvar_string("btl_ofi_selected_provider", provider, sizeof(provider));
    probe_pvars_start(&pv, counters, (int) (sizeof(counters) / sizeof(counters[0])));

    if (0 == rank) {
        printf("# p2p_bench ranks %d runs %d run_ms %g warm_ms %g window_ops %d window_bytes %zu\n",
               nprocs, opt.runs, opt.run_ms, opt.warm_ms, opt.window, opt.window_bytes);
        printf("# btl_ofi_version %s\n# btl_ofi_selected_provider %s\n", version, provider);
        fflush(stdout);
    }
    if (bench_has(opt.ops, "lat")) {
        if (0 == rank) {
            printf("# start send lat (ping-pong, half round trip)\n");
        }
        nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
        for (int s = 0; s < nsizes; ++s) {
            double per;
            cur_size = sizes[s];
            per = measure(step_pingpong);
            if (0 == rank) {
                bench_line("send", cur_size, "lat", per / 2 * 1e6);
            }
        }
    }
    if (bench_has(opt.ops, "stream")) {
        if (0 == rank) {
            printf("# start send stream (window %d messages, at most %zu bytes)\n", opt.window,
                   opt.window_bytes);
        }
        nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
        for (int s = 0; s < nsizes; ++s) {
            double per;
            cur_size = sizes[s];
            cur_window = bench_window(&opt, cur_size);
            per = measure(step_stream);
            if (0 == rank) {
                bench_line("send", cur_size, "bw",
                           (double) cur_window * (double) cur_size / per / 1e6);
                bench_line("send", cur_size, "rate", (double) cur_window / per / 1e6);
            }
        }
        /* the last streaming run left the same window of messages in rbuf */
        if (1 == rank && nsizes > 0) {
            for (int j = 0; j < cur_window; ++j) {
                size_t off = (size_t) j * cur_size;
                for (size_t k = 0; k < cur_size; ++k) {
                    if (rbuf[off + k] != bench_pattern(31, off + k)) {
                        if (bad++ < 4) {
                            fprintf(stderr, "p2p_bench: stream message %d byte %zu wrong\n", j,
                                    k);
                        }
                    }
                }
            }
        }
    }

    /* ---- verification: the largest size, each way ---- */
    size_t vbytes = bench_largest(&opt);
    {
        int peer = 1 - rank;
        memset(rbuf, 0, vbytes);
        bench_fill(sbuf, vbytes, 41 + (unsigned) rank);
        if (0 == rank) {
            MPI_Send(sbuf, (int) vbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int) vbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int) vbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int) vbytes, MPI_BYTE, peer, 4, MPI_COMM_WORLD);
        }
        bad += bench_check(0 == rank ? "p2p_bench: rank 0 received" : "p2p_bench: rank 1 received",
                           rbuf, vbytes, 41 + (unsigned) peer);
    }
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
    if (MPI_T_PVAR_SESSION_NULL != pv.session) {
        MPI_T_pvar_session_free(&pv.session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    free(sbuf);
    free(rbuf);
    free(reqs);
    return errors ? 3 : 0;
}
