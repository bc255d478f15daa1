/*
 * fi_floor: the raw libfabric floor under btl/ofi. The same transfers as
 * osc_bench and p2p_bench, issued directly on a libfabric FI_EP_RDM
 * endpoint of one provider, between ranks 0 and 1. MPI is used only to
 * start the processes, to exchange endpoint names, registration keys and
 * the iteration counts of a measurement (MPI_Allgather) and for barriers;
 * no MPI call happens inside a timed loop.
 *
 *   mpirun -np 2 bench/bin/fi_floor -p PROVIDER [options]
 *
 * Operations (-ops, default all), named like the MPI benchmarks' so that
 * their lines compare one to one:
 *   put     fi_writemsg with FI_DELIVERY_COMPLETE, wait for its completion
 *   get     fi_read, wait for its completion
 *   acc     fi_atomicmsg (FI_INT64, FI_SUM) with FI_DELIVERY_COMPLETE
 *   fop     fi_fetch_atomic (FI_INT64, FI_SUM)
 *   cas     fi_compare_atomic (FI_INT64, FI_CSWAP)
 *   putbw   W fi_writemsg (FI_DELIVERY_COMPLETE) in flight, wait for all
 *   getbw   W fi_read in flight, wait for all
 *   lat     fi_send/fi_recv ping-pong (fi_inject up to the provider's
 *           inject_size, except on udp;ofi_rxd), half the round trip
 *   stream  W fi_send in flight to W posted fi_recv, a 4-byte answer
 *           after each window; rank 1 posts the next window before it
 *           answers
 * W = min(-window, -wbytes / SIZE), as in the MPI benchmarks.
 *
 * Progress: the endpoint is opened with FI_PROGRESS_MANUAL data progress
 * where the provider offers it (as btl/ofi does by default); both ranks
 * poll the completion queue: the origin until its operations complete, the
 * target of one-sided operations until a message from the origin tells it
 * the phase is over. Completions are those of FI_DELIVERY_COMPLETE when
 * the provider accepts it as a default transmit flag ("# delivery_complete
 * yes"); without it the run says "no" (none of the providers here).
 *
 * shm: once a non-fetching atomic with FI_DELIVERY_COMPLETE has run, a
 * later fi_inject of more than 1 KiB segfaults inside libfabric 1.17's shm
 * (memcpy under fi_inject; reproduced with "-ops acc,stream" alone). When
 * acc ran in the same process on shm, the two-sided part therefore sends
 * with fi_send only and says so; bench/compare.sh runs the one-sided and
 * the two-sided floor as separate processes, so its numbers keep fi_inject.
 *
 * udp;ofi_rxd: fop and cas are skipped (fi_cq_read crashes once a fetching
 * or compare atomic is answered, libfabric 1.17, issue #11814); -force-amo
 * runs them anyway.
 *
 * Output: "op size metric value" lines like the MPI benchmarks (lat in us,
 * bw in MB/s, rate in Mmsg/s, median of -runs runs). Verification at the
 * end: a write and a read of the largest size checked byte by byte, the
 * atomic counters against what was added, every fetched atomic result,
 * a message each way of the largest size. "# verify ok" and exit 0, else 3.
 */
#include <mpi.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

#define FIVERSION FI_VERSION(1, 17)
#define NAME_MAX_LEN 256
#define SCRATCH 256

#define CHECK(call)                                                                      \
    do {                                                                                 \
        int rc_ = (int) (call);                                                          \
        if (rc_) {                                                                       \
            fprintf(stderr, "fi_floor: rank %d: %s failed: %d (%s)\n", rank, #call, rc_, \
                    fi_strerror(-rc_));                                                  \
            MPI_Abort(MPI_COMM_WORLD, 4);                                                \
        }                                                                                \
    } while (0)

static int rank;
static struct bench_opts opt;
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;
static struct fid_ep *ep;
static struct fid_mr *mr;
static void *desc;
static fi_addr_t peer_addr;
static int use_inject;
static size_t inject_size;

/* arena: [window: region + SCRATCH][local: region][rbuf: region][scratch] */
static unsigned char *arena, *winbuf, *local, *rbuf, *scratch;
static size_t region, arena_len;
static uint64_t peer_base, peer_key; /* remote address of the peer's arena */
static uint64_t acc_off, cas_off;    /* offsets of the counters in the window */

/* completion accounting: contexts say which queue an entry belongs to */
#define NCTX 1024
static struct fi_context2 tx_ctx[NCTX], rx_ctx[NCTX];
static long tx_done, rx_done;

static size_t cur_size;
static int cur_window;
static int64_t acc_expected, cas_expected;
static int acc_ran; /* both ranks: was acc measured (see the shm note) */
static long amo_mismatch;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static void progress(void)
{
    struct fi_cq_entry e[32];
    ssize_t n = fi_cq_read(cq, e, 32);
    if (n > 0) {
        for (ssize_t k = 0; k < n; ++k) {
            unsigned char *c = e[k].op_context;
            if (c >= (unsigned char *) rx_ctx && c < (unsigned char *) (rx_ctx + NCTX)) {
                rx_done++;
            } else {
                tx_done++;
            }
        }
    } else if (-FI_EAVAIL == n) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        fi_cq_readerr(cq, &err, 0);
        fprintf(stderr, "fi_floor: rank %d: completion error %d (%s), provider says %s\n", rank,
                err.err, fi_strerror(err.err),
                fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
        MPI_Abort(MPI_COMM_WORLD, 4);
    } else if (-FI_EAGAIN != n) {
        fprintf(stderr, "fi_floor: rank %d: fi_cq_read: %s\n", rank, fi_strerror((int) -n));
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
}

static void wait_tx(long target)
{
    while (tx_done < target) {
        progress();
    }
}

static void wait_rx(long target)
{
    while (rx_done < target) {
        progress();
    }
}

/* Retries a posting call while the provider says -FI_EAGAIN. */
#define POST(call)                                                                       \
    do {                                                                                 \
        ssize_t r_;                                                                      \
        while (-FI_EAGAIN == (r_ = (call))) {                                            \
            progress();                                                                  \
        }                                                                                \
        if (r_) {                                                                        \
            fprintf(stderr, "fi_floor: rank %d: %s: %s\n", rank, #call,                  \
                    fi_strerror((int) -r_));                                             \
            MPI_Abort(MPI_COMM_WORLD, 4);                                                \
        }                                                                                \
    } while (0)

/* ------------------------------------------------------------ transfers */

static void post_write(unsigned char *from, uint64_t to_off, size_t len, void *ctx)
{
    struct iovec iov = {.iov_base = from, .iov_len = len};
    struct fi_rma_iov rma = {.addr = peer_base + to_off, .len = len, .key = peer_key};
    struct fi_msg_rma msg = {.msg_iov = &iov, .desc = &desc, .iov_count = 1,
                             .addr = peer_addr, .rma_iov = &rma, .rma_iov_count = 1,
                             .context = ctx, .data = 0};
    POST(fi_writemsg(ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
}

static void post_read(unsigned char *into, uint64_t from_off, size_t len, void *ctx)
{
    POST(fi_read(ep, into, len, desc, peer_addr, peer_base + from_off, peer_key, ctx));
}

/* Small messages go by fi_inject (no completion) unless `complete`: with
 * manual progress an injected message may still sit in the sender, so the
 * last message before a rank leaves the fabric for an MPI call always goes
 * by fi_send and is waited for. */
static void post_send(unsigned char *from, size_t len, void *ctx, long *expect_tx, int complete)
{
    if (!complete && use_inject && len <= inject_size) {
        POST(fi_inject(ep, from, len, peer_addr));
    } else {
        POST(fi_send(ep, from, len, desc, peer_addr, ctx));
        ++*expect_tx;
    }
}

static void post_recv(unsigned char *into, size_t len, void *ctx)
{
    POST(fi_recv(ep, into, len, desc, peer_addr, ctx));
}

static long tx_expected;

static void step_put(long i, long n)
{
    (void) i, (void) n;
    post_write(local, 0, cur_size, &tx_ctx[0]);
    wait_tx(++tx_expected);
}

static void step_get(long i, long n)
{
    (void) i, (void) n;
    post_read(local, 0, cur_size, &tx_ctx[0]);
    wait_tx(++tx_expected);
}

static void step_acc(long i, long n)
{
    int64_t *operand = (int64_t *) scratch;
    struct fi_ioc ioc = {.addr = operand, .count = 1};
    struct fi_rma_ioc rma = {.addr = peer_base + acc_off, .count = 1, .key = peer_key};
    struct fi_msg_atomic msg = {.msg_iov = &ioc, .desc = &desc, .iov_count = 1,
                                .addr = peer_addr, .rma_iov = &rma, .rma_iov_count = 1,
                                .datatype = FI_INT64, .op = FI_SUM, .context = &tx_ctx[0]};
    (void) i, (void) n;
    *operand = 1;
    POST(fi_atomicmsg(ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
    wait_tx(++tx_expected);
    acc_expected += 1;
}

static void step_fop(long i, long n)
{
    int64_t *operand = (int64_t *) scratch, *result = operand + 1;
    (void) i, (void) n;
    *operand = 1;
    *result = -1;
    POST(fi_fetch_atomic(ep, operand, 1, desc, result, desc, peer_addr, peer_base + acc_off,
                         peer_key, FI_INT64, FI_SUM, &tx_ctx[0]));
    wait_tx(++tx_expected);
    if (*result != acc_expected) {
        amo_mismatch++;
        acc_expected = *result;
    }
    acc_expected += 1;
}

static void step_cas(long i, long n)
{
    int64_t *value = (int64_t *) scratch, *compare = value + 1, *result = value + 2;
    (void) i, (void) n;
    *compare = cas_expected;
    *value = cas_expected + 1;
    *result = -1;
    POST(fi_compare_atomic(ep, value, 1, desc, compare, desc, result, desc, peer_addr,
                           peer_base + cas_off, peer_key, FI_INT64, FI_CSWAP, &tx_ctx[0]));
    wait_tx(++tx_expected);
    if (*result != *compare) {
        amo_mismatch++;
        cas_expected = *result;
    } else {
        cas_expected = *value;
    }
}

static void step_putbw(long i, long n)
{
    (void) i, (void) n;
    for (int j = 0; j < cur_window; ++j) {
        size_t off = (size_t) j * cur_size;
        post_write(local + off, off, cur_size, &tx_ctx[j]);
    }
    tx_expected += cur_window;
    wait_tx(tx_expected);
}

static void step_getbw(long i, long n)
{
    (void) i, (void) n;
    for (int j = 0; j < cur_window; ++j) {
        size_t off = (size_t) j * cur_size;
        post_read(local + off, off, cur_size, &tx_ctx[j]);
    }
    tx_expected += cur_window;
    wait_tx(tx_expected);
}

/* two-sided: rank 0 is the client, rank 1 answers */
static long rx_expected;
static int ahead_posted; /* receives already posted for the next step */

static void step_pingpong(long i, long n)
{
    (void) i, (void) n;
    if (0 == rank) {
        post_recv(rbuf, cur_size, &rx_ctx[0]);
        post_send(local, cur_size, &tx_ctx[0], &tx_expected, 0);
        wait_rx(++rx_expected);
        wait_tx(tx_expected);
    } else {
        if (!ahead_posted) {
            post_recv(rbuf, cur_size, &rx_ctx[0]);
        }
        wait_rx(++rx_expected);
        ahead_posted = i + 1 < n;
        if (ahead_posted) {
            post_recv(rbuf, cur_size, &rx_ctx[0]);
        }
        post_send(local, cur_size, &tx_ctx[0], &tx_expected, i + 1 == n);
        wait_tx(tx_expected);
    }
}

static void step_stream(long i, long n)
{
    unsigned char *ack = scratch + 64;
    if (0 == rank) {
        post_recv(ack, 4, &rx_ctx[NCTX - 1]);
        for (int j = 0; j < cur_window; ++j) {
            post_send(local + (size_t) j * cur_size, cur_size, &tx_ctx[j], &tx_expected, 0);
        }
        wait_tx(tx_expected);
        wait_rx(++rx_expected);
    } else {
        if (!ahead_posted) {
            for (int j = 0; j < cur_window; ++j) {
                post_recv(rbuf + (size_t) j * cur_size, cur_size, &rx_ctx[j]);
            }
        }
        rx_expected += cur_window;
        wait_rx(rx_expected);
        ahead_posted = i + 1 < n;
        if (ahead_posted) {
            for (int j = 0; j < cur_window; ++j) {
                post_recv(rbuf + (size_t) j * cur_size, cur_size, &rx_ctx[j]);
            }
        }
        post_send(ack, 4, &tx_ctx[NCTX - 1], &tx_expected, i + 1 == n);
        wait_tx(tx_expected);
    }
}

/* ---------------------------------------------------------- measurement */

static double timed(void (*step)(long, long), long n)
{
    double t0 = now();
    for (long i = 0; i < n; ++i) {
        step(i, n);
    }
    return now() - t0;
}

/* Rank 0's numbers, to both ranks (two-sided steps need the same counts). */
static void agree(double *v, int count, int both)
{
    double all[2 * (BENCH_MAX_RUNS + 2)];
    if (!both) {
        return;
    }
    MPI_Allgather(v, count, MPI_DOUBLE, all, count, MPI_DOUBLE, MPI_COMM_WORLD);
    memcpy(v, all, (size_t) count * sizeof(double));
}

/* Median over the timed runs of the seconds a step takes. `both`: both
 * ranks run the steps (two-sided); otherwise only rank 0 calls this. */
static double measure(void (*step)(long, long), int both)
{
    double spent = 0, dt = 0, best = 0, per_run[BENCH_MAX_RUNS];
    long n = 1, iters;

    for (;;) {
        double v[2];
        dt = timed(step, n);
        spent += dt;
        v[0] = dt;
        v[1] = spent;
        agree(v, 2, both);
        dt = v[0];
        spent = v[1];
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
        double more = done < opt.runs && !bench_enough(&opt, done, used);
        agree(&more, 1, both); /* also the barrier before a two-sided run */
        if (0 == more) {
            break;
        }
        double t = timed(step, iters);
        used += t;
        per_run[done++] = t / (double) iters;
    }
    agree(per_run, done, both);
    return bench_median(per_run, done);
}

/* The target of one-sided operations polls until the origin's message. */
static void serve_until_released(void)
{
    post_recv(scratch + 128, 4, &rx_ctx[NCTX - 2]);
    wait_rx(++rx_expected);
}

static void release_target(void)
{
    long expect = tx_expected;
    post_send(scratch + 132, 4, &tx_ctx[NCTX - 2], &expect, 1);
    tx_expected = expect;
    wait_tx(tx_expected);
}

/* --------------------------------------------------------------- setup */

static struct fi_info *find_provider(const char *prov, int delivery_complete, int manual)
{
    struct fi_info *hints = fi_allocinfo(), *found = NULL;
    if (NULL == hints) {
        return NULL;
    }
    hints->caps = FI_MSG | FI_RMA | FI_ATOMIC;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (manual) {
        hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    }
    if (delivery_complete) {
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    }
    hints->fabric_attr->prov_name = strdup(prov);
    if (0 != fi_getinfo(FIVERSION, NULL, NULL, 0, hints, &found)) {
        found = NULL;
    }
    fi_freeinfo(hints);
    /* fi_getinfo matches layered names loosely: keep an exact match */
    for (struct fi_info *f = found; NULL != f; f = f->next) {
        if (0 == strcmp(f->fabric_attr->prov_name, prov)) {
            struct fi_info *copy = fi_dupinfo(f);
            fi_freeinfo(found);
            return copy;
        }
    }
    fi_freeinfo(found);
    return NULL;
}

static void usage(void)
{
    fprintf(stderr, "usage: fi_floor -p PROVIDER [options]\n");
    bench_usage_common(stderr);
    fprintf(stderr, "  -force-amo       run fop and cas on udp;ofi_rxd too\n"
                    "  ops: put,get,acc,fop,cas,putbw,getbw,lat,stream (default all)\n");
}

int main(int argc, char **argv)
{
    const char *prov = NULL;
    int nprocs, force_amo = 0, dc = 1, manual = 1, errors = 0;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    long bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    bench_defaults(&opt, "put,get,acc,fop,cas,putbw,getbw,lat,stream");
    for (int i = 1; i < argc; ++i) {
        int rc;
        if (0 == strcmp(argv[i], "-p") && i + 1 < argc) {
            prov = argv[++i];
            continue;
        }
        if (0 == strcmp(argv[i], "-force-amo")) {
            force_amo = 1;
            continue;
        }
        rc = bench_parse_common(&opt, argc, argv, &i);
        if (rc <= 0) {
            if (0 == rank) {
                fprintf(stderr, "fi_floor: bad option or value: %s\n", argv[i]);
                usage();
            }
            MPI_Finalize();
            return 2;
        }
    }
    if (NULL == prov || 2 != nprocs) {
        if (0 == rank) {
            fprintf(stderr, "fi_floor: %s\n",
                    NULL == prov ? "-p PROVIDER is required" : "needs exactly 2 ranks");
            usage();
        }
        MPI_Finalize();
        return 2;
    }
    if (opt.window > NCTX - 4) {
        opt.window = NCTX - 4;
    }

    /* provider: FI_DELIVERY_COMPLETE and manual progress if possible */
    info = find_provider(prov, 1, 1);
    if (NULL == info) {
        manual = 0;
        info = find_provider(prov, 1, 0);
    }
    if (NULL == info) {
        dc = 0;
        manual = 1;
        info = find_provider(prov, 0, 1);
        if (NULL == info) {
            manual = 0;
            info = find_provider(prov, 0, 0);
        }
    }
    if (NULL == info) {
        if (0 == rank) {
            fprintf(stderr, "fi_floor: provider %s offers no FI_EP_RDM endpoint with FI_MSG, "
                            "FI_RMA and FI_ATOMIC\n", prov);
        }
        MPI_Finalize();
        return 5;
    }
    inject_size = info->tx_attr->inject_size;
    use_inject = 0 != strcmp(prov, "udp;ofi_rxd") && inject_size > 0;

    CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
    CHECK(fi_domain(fabric, info, &domain, NULL));
    {
        struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = 4};
        struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_CONTEXT, .size = 4096,
                                     .wait_obj = FI_WAIT_NONE};
        CHECK(fi_av_open(domain, &av_attr, &av, NULL));
        CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
    }
    CHECK(fi_endpoint(domain, info, &ep, NULL));
    CHECK(fi_ep_bind(ep, &av->fid, 0));
    CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(ep));

    /* names */
    {
        char name[NAME_MAX_LEN], names[2 * NAME_MAX_LEN];
        size_t len = sizeof(name);
        fi_addr_t addrs[2];
        memset(name, 0, sizeof(name));
        CHECK(fi_getname(&ep->fid, name, &len));
        MPI_Allgather(name, NAME_MAX_LEN, MPI_BYTE, names, NAME_MAX_LEN, MPI_BYTE,
                      MPI_COMM_WORLD);
        /* names are padded to NAME_MAX_LEN: one insertion each */
        for (int k = 0; k < 2; ++k) {
            if (1 != fi_av_insert(av, names + k * NAME_MAX_LEN, 1, &addrs[k], 0, NULL)) {
                fprintf(stderr, "fi_floor: rank %d: fi_av_insert failed\n", rank);
                MPI_Abort(MPI_COMM_WORLD, 4);
            }
        }
        peer_addr = addrs[1 - rank];
    }

    /* memory: one registration for everything */
    region = bench_largest(&opt);
    {
        size_t lo = bench_has(opt.ops, "putbw") || bench_has(opt.ops, "getbw")
                            || bench_has(opt.ops, "stream")
                        ? opt.bw_min
                        : 0;
        if (lo) {
            nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
            for (int k = 0; k < nsizes; ++k) {
                size_t need = (size_t) bench_window(&opt, sizes[k]) * sizes[k];
                region = need > region ? need : region;
            }
        }
    }
    region = (region + 4095) & ~(size_t) 4095;
    arena_len = 3 * region + 2 * SCRATCH;
    if (posix_memalign((void **) &arena, 4096, arena_len)) {
        fprintf(stderr, "fi_floor: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(arena, 0, arena_len);
    winbuf = arena;
    acc_off = region;
    cas_off = region + 8;
    local = arena + region + SCRATCH;
    rbuf = local + region;
    scratch = rbuf + region;
    bench_fill(local, region, 51 + (unsigned) rank);
    {
        uint64_t want_key = 0, keys[2], bases[2], mine[2];
        if (!(info->domain_attr->mr_mode & FI_MR_PROV_KEY)) {
            /* requested keys: random, never derived from addresses */
            uint64_t x = ((uint64_t) getpid() << 32) ^ (uint64_t) (now() * 1e9) ^ 0x5DEECE66Dull;
            x ^= x >> 31;
            x *= 0xBF58476D1CE4E5B9ull;
            x ^= x >> 27;
            want_key = x;
            if (info->domain_attr->mr_key_size < 8) {
                want_key &= (1ull << (8 * info->domain_attr->mr_key_size)) - 1;
            }
        }
        CHECK(fi_mr_reg(domain, arena, arena_len,
                        FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ
                            | FI_REMOTE_WRITE,
                        0, want_key, 0, &mr, NULL));
        if (info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
            CHECK(fi_mr_bind(mr, &ep->fid, 0));
            CHECK(fi_mr_enable(mr));
        }
        desc = fi_mr_desc(mr);
        mine[0] = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) arena
                                                                 : 0;
        mine[1] = fi_mr_key(mr);
        MPI_Allgather(&mine[0], 1, MPI_UINT64_T, bases, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        MPI_Allgather(&mine[1], 1, MPI_UINT64_T, keys, 1, MPI_UINT64_T, MPI_COMM_WORLD);
        peer_base = bases[1 - rank];
        peer_key = keys[1 - rank];
    }

    int have_acc = 0, have_fop = 0, have_cas = 0;
    {
        size_t count = 0;
        have_acc = 0 == fi_atomicvalid(ep, FI_INT64, FI_SUM, &count) && count > 0;
        have_fop = 0 == fi_fetch_atomicvalid(ep, FI_INT64, FI_SUM, &count) && count > 0;
        have_cas = 0 == fi_compare_atomicvalid(ep, FI_INT64, FI_CSWAP, &count) && count > 0;
    }
    int rxd = 0 == strcmp(prov, "udp;ofi_rxd");
    acc_ran = have_acc && bench_has(opt.ops, "acc");

    if (0 == rank) {
        printf("# fi_floor provider %s fabric %s domain %s runs %d run_ms %g warm_ms %g "
               "window_ops %d window_bytes %zu\n",
               info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name,
               opt.runs, opt.run_ms, opt.warm_ms, opt.window, opt.window_bytes);
        printf("# delivery_complete %s (writes and non-fetching atomics request "
               "FI_DELIVERY_COMPLETE)\n", dc ? "yes" : "no");
        printf("# data_progress %s\n", manual ? "FI_PROGRESS_MANUAL" : "provider default");
        printf("# mr_mode%s%s%s key %s\n",
               (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? " virt_addr" : " offsets",
               (info->domain_attr->mr_mode & FI_MR_LOCAL) ? " local" : "",
               (info->domain_attr->mr_mode & FI_MR_ENDPOINT) ? " endpoint" : "",
               (info->domain_attr->mr_mode & FI_MR_PROV_KEY) ? "provider" : "requested");
        printf("# small sends %s (inject_size %zu)\n", use_inject ? "fi_inject" : "fi_send",
               inject_size);
        if (rxd && !force_amo) {
            printf("# fop, cas skipped on udp;ofi_rxd: fi_cq_read crashes once a fetching or "
                   "compare atomic is answered (libfabric 1.17, issue #11814)\n");
        }
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---------------- one-sided ---------------- */
    int any_rma = bench_has(opt.ops, "put") || bench_has(opt.ops, "get")
                  || bench_has(opt.ops, "acc") || bench_has(opt.ops, "fop")
                  || bench_has(opt.ops, "cas") || bench_has(opt.ops, "putbw")
                  || bench_has(opt.ops, "getbw");
    if (any_rma) {
        if (0 == rank) {
            static const struct {
                const char *name;
                void (*step)(long, long);
            } lat_ops[] = {{"put", step_put}, {"get", step_get}};
            for (unsigned k = 0; k < 2; ++k) {
                if (!bench_has(opt.ops, lat_ops[k].name)) {
                    continue;
                }
                printf("# start %s lat\n", lat_ops[k].name);
                nsizes = bench_sizes(&opt, opt.lat_min, opt.lat_max, sizes);
                for (int s = 0; s < nsizes; ++s) {
                    cur_size = sizes[s];
                    bench_line(lat_ops[k].name, cur_size, "lat", measure(lat_ops[k].step, 0) * 1e6);
                }
            }
            const struct {
                const char *name;
                void (*step)(long, long);
                int *have;
                int skip;
            } amo_ops[] = {{"acc", step_acc, &have_acc, 0},
                           {"fop", step_fop, &have_fop, 1},
                           {"cas", step_cas, &have_cas, 1}};
            for (unsigned k = 0; k < 3; ++k) {
                if (!bench_has(opt.ops, amo_ops[k].name)) {
                    continue;
                }
                if (!*amo_ops[k].have) {
                    printf("# %s unsupported: the provider has no such FI_INT64 atomic\n",
                           amo_ops[k].name);
                    continue;
                }
                if (rxd && amo_ops[k].skip && !force_amo) {
                    continue;
                }
                printf("# start %s lat\n", amo_ops[k].name);
                fflush(stdout);
                bench_line(amo_ops[k].name, 8, "lat", measure(amo_ops[k].step, 0) * 1e6);
            }
            static const struct {
                const char *name, *label;
                void (*step)(long, long);
            } bw_ops[] = {{"putbw", "put", step_putbw}, {"getbw", "get", step_getbw}};
            for (unsigned k = 0; k < 2; ++k) {
                if (!bench_has(opt.ops, bw_ops[k].name)) {
                    continue;
                }
                printf("# start %s (window %d ops, at most %zu bytes)\n", bw_ops[k].name,
                       opt.window, opt.window_bytes);
                nsizes = bench_sizes(&opt, opt.bw_min, opt.bw_max, sizes);
                for (int s = 0; s < nsizes; ++s) {
                    double per;
                    cur_size = sizes[s];
                    cur_window = bench_window(&opt, cur_size);
                    per = measure(bw_ops[k].step, 0);
                    bench_line(bw_ops[k].label, cur_size, "bw",
                               (double) cur_window * (double) cur_size / per / 1e6);
                    bench_line(bw_ops[k].label, cur_size, "rate", (double) cur_window / per / 1e6);
                }
            }
            bad += amo_mismatch;
            if (amo_mismatch) {
                fprintf(stderr, "fi_floor: %ld fetched atomic results were wrong\n", amo_mismatch);
            }
        }
    }

    /* verification of one-sided data: write, then read back what the target wrote */
    size_t vbytes = bench_largest(&opt);
    if (0 == rank) {
        bench_fill(local, vbytes, 61);
        post_write(local, 0, vbytes, &tx_ctx[0]);
        wait_tx(++tx_expected);
        release_target();
    } else {
        serve_until_released();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (1 == rank) {
        bad += bench_check("fi_floor: target after fi_write", winbuf, vbytes, 61);
        bench_fill(winbuf, vbytes, 62);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (0 == rank) {
        int64_t *got = (int64_t *) (scratch + 160);
        memset(local, 0, vbytes);
        post_read(local, 0, vbytes, &tx_ctx[0]);
        post_read((unsigned char *) got, acc_off, 16, &tx_ctx[1]);
        tx_expected += 2;
        wait_tx(tx_expected);
        bad += bench_check("fi_floor: origin after fi_read", local, vbytes, 62);
        if (got[0] != acc_expected || got[1] != cas_expected) {
            fprintf(stderr, "fi_floor: counters are %lld and %lld, expected %lld and %lld\n",
                    (long long) got[0], (long long) got[1], (long long) acc_expected,
                    (long long) cas_expected);
            bad++;
        }
        release_target();
    } else {
        serve_until_released();
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* ---------------- two-sided ---------------- */
    if (use_inject && acc_ran && 0 == strcmp(prov, "shm")) {
        use_inject = 0;
        if (0 == rank) {
            printf("# small sends fi_send from here on: fi_inject after a delivery-complete "
                   "atomic crashes shm (libfabric 1.17)\n");
        }
    }
    bench_fill(local, region, 51 + (unsigned) rank); /* the checks above reused it */
    if (bench_has(opt.ops, "lat")) {
        if (0 == rank) {
            printf("# start send lat (fi_send/fi_recv ping-pong, half round trip)\n");
        }
        /* the two-sided sweep starts at 1 byte, like p2p_bench's */
        nsizes = bench_sizes(&opt, 1, opt.lat_max, sizes);
        for (int s = 0; s < nsizes; ++s) {
            double per;
            cur_size = sizes[s];
            ahead_posted = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            per = measure(step_pingpong, 1);
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
            ahead_posted = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            per = measure(step_stream, 1);
            if (0 == rank) {
                bench_line("send", cur_size, "bw",
                           (double) cur_window * (double) cur_size / per / 1e6);
                bench_line("send", cur_size, "rate", (double) cur_window / per / 1e6);
            }
        }
        if (1 == rank && nsizes > 0) {
            for (int j = 0; j < cur_window; ++j) {
                size_t off = (size_t) j * cur_size;
                for (size_t k = 0; k < cur_size; ++k) {
                    if (rbuf[off + k] != bench_pattern(51, off + k) && bad++ < 4) {
                        fprintf(stderr, "fi_floor: stream message %d byte %zu wrong\n", j, k);
                    }
                }
            }
        }
    }
    /* verification of messages: the largest size each way */
    {
        long expect = tx_expected;
        bench_fill(local, vbytes, 71 + (unsigned) rank);
        memset(rbuf, 0, vbytes);
        post_recv(rbuf, vbytes, &rx_ctx[0]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (0 == rank) {
            post_send(local, vbytes, &tx_ctx[0], &expect, 1);
            wait_rx(++rx_expected);
        } else {
            wait_rx(++rx_expected);
            post_send(local, vbytes, &tx_ctx[0], &expect, 1);
        }
        tx_expected = expect;
        wait_tx(tx_expected);
        bad += bench_check(0 == rank ? "fi_floor: rank 0 received" : "fi_floor: rank 1 received",
                           rbuf, vbytes, 71 + (unsigned) (1 - rank));
    }

    errors = bad ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf(errors ? "# verify FAILED\n" : "# verify ok\n");
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    fi_close(&mr->fid);
    fi_close(&ep->fid);
    fi_close(&cq->fid);
    fi_close(&av->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    free(arena);
    MPI_Finalize();
    return errors ? 3 : 0;
}
