/*
 * death: one rank dies by SIGKILL in the middle of traffic; the others go
 * on until the job is torn down.
 *
 *   death rma|msg|coll|collidle raise|shell [-after SECONDS]
 *
 *   rma  every rank streams MPI_Put, MPI_Accumulate and MPI_Fetch_and_op to
 *        every other rank inside one MPI_Win_lock_all epoch (passive
 *        target), MPI_Win_flush_all every 32 operations, never unlocking
 *   msg  two-sided flood: every rank keeps 16 MPI_Isend (1 B to 64 KiB,
 *        eager and rendezvous) and 16 MPI_Irecv from every other rank in
 *        flight, MPI_Testsome-ing them forever
 *   coll MPI_Bcast (1 KiB to 64 KiB, the root going round), MPI_Allreduce
 *        and MPI_Barrier on MPI_COMM_WORLD forever (run with
 *        coll_ofi_priority raised: collectives as one-sided RDMA)
 *   collidle  as coll, but the victim, once ready, calls MPI no more (it
 *        sleeps until killed): the survivors then wait in a collective
 *        for a rank they owe nothing to, with no operation of theirs in
 *        flight to it, which is when a dead peer is hardest to notice
 *
 * The victim is the last rank. "raise": after SECONDS (default 1.0) of
 * traffic it prints "death: victim rank R pid P kills itself after N
 * operations" and raise(SIGKILL)s. "shell": it prints "death: victim rank
 * R pid P ready" once traffic runs and goes on; the runner kills it with
 * kill -9.
 * Survivors print "death: rank R streaming" once, then one line per second
 * of completed operations; an error returned by MPI (MPI_ERRORS_RETURN) is
 * printed as "death: rank R: MPI error ..." and ends that rank with exit
 * code 7 (no MPI_Abort: the runner wants to see how the job ends by
 * itself). A survivor never ends otherwise: the job must be ended by
 * mpirun (or by an upper layer acting on btl/ofi's lost-peer report).
 */
#include "../common.h"

#include <signal.h>
#include <unistd.h>

#define NSLOT 16
#define MAXMSG 65536
#define WIN_BYTES (1 << 20)

static double after = 1.0;
static int shell_mode = 0;
static int victim;
static double t_start;
static long nops = 0;

static void maybe_die(void)
{
    static int announced = 0;
    if (tc_rank != victim || tc_now() - t_start < after) {
        return;
    }
    if (shell_mode) {
        if (!announced) {
            printf("death: victim rank %d pid %d ready after %ld operations\n", tc_rank,
                   (int) getpid(), nops);
            fflush(stdout);
            announced = 1;
        }
        return;
    }
    printf("death: victim rank %d pid %d kills itself after %ld operations\n", tc_rank,
           (int) getpid(), nops);
    fflush(stdout);
    raise(SIGKILL);
}

static void report(void)
{
    static double next = 0;
    static int first = 1;
    if (tc_rank == victim) {
        return;
    }
    if (first) {
        printf("death: rank %d pid %d streaming\n", tc_rank, (int) getpid());
        fflush(stdout);
        first = 0;
        next = tc_now() + 1.0;
    }
    if (tc_now() >= next) {
        printf("death: rank %d: %ld operations completed\n", tc_rank, nops);
        fflush(stdout);
        next += 1.0;
    }
}

static void mpi_failed(const char *what, int rc)
{
    char es[MPI_MAX_ERROR_STRING];
    int el = 0;
    MPI_Error_string(rc, es, &el);
    printf("death: rank %d: MPI error from %s after %ld operations: %s\n", tc_rank, what, nops,
           es);
    fflush(stdout);
    _exit(7);
}

#define D(call)                                                                           \
    do {                                                                                  \
        int d_rc_ = (call);                                                               \
        if (MPI_SUCCESS != d_rc_) {                                                       \
            mpi_failed(#call, d_rc_);                                                     \
        }                                                                                 \
    } while (0)

static void run_rma(void)
{
    unsigned char *mem = NULL, src[256];
    MPI_Win win;
    CHECK(0 == posix_memalign((void **) &mem, 4096, WIN_BYTES), "posix_memalign");
    memset(mem, 0, WIN_BYTES);
    memset(src, tc_rank + 1, sizeof(src));
    D(MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    D(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    D(MPI_Barrier(MPI_COMM_WORLD));
    D(MPI_Win_lock_all(0, win));
    t_start = tc_now();
    int64_t one = 1, old;
    for (long i = 0;; ++i) {
        for (int p = 0; p < tc_size; ++p) {
            if (p == tc_rank) {
                continue;
            }
            MPI_Aint off = (MPI_Aint) ((i * 256) % (WIN_BYTES / 2));
            D(MPI_Put(src, sizeof(src), MPI_BYTE, p, off, sizeof(src), MPI_BYTE, win));
            D(MPI_Accumulate(&one, 1, MPI_INT64_T, p, WIN_BYTES / 2 + 8 * tc_rank, 1, MPI_INT64_T,
                             MPI_SUM, win));
            D(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, p, WIN_BYTES - 8, MPI_SUM, win));
            nops += 3;
        }
        if (0 == i % 32) {
            D(MPI_Win_flush_all(win));
        }
        maybe_die();
        report();
    }
}

static void run_msg(void)
{
    int npeer = tc_size - 1;
    int nreq = 2 * NSLOT * npeer;
    MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t) nreq);
    int *idx = malloc(sizeof(int) * (size_t) nreq);
    unsigned char *sbuf = malloc(MAXMSG), *rbufs = malloc((size_t) NSLOT * npeer * MAXMSG);
    CHECK(NULL != req && NULL != idx && NULL != sbuf && NULL != rbufs, "malloc");
    memset(sbuf, tc_rank, MAXMSG);
    static const int sizes[] = {1, 100, 4000, 9000, 33000, MAXMSG};
    long sent = 0;
    /* slot k of peer j: receive k at req[2*(j*NSLOT+k)], send at +1 */
    int j = 0;
    int *peer_of = malloc(sizeof(int) * (size_t) npeer);
    for (int p = 0; p < tc_size; ++p) {
        if (p != tc_rank) {
            peer_of[j++] = p;
        }
    }
    for (j = 0; j < npeer; ++j) {
        for (int k = 0; k < NSLOT; ++k) {
            int r = 2 * (j * NSLOT + k);
            D(MPI_Irecv(rbufs + (size_t) (j * NSLOT + k) * MAXMSG, MAXMSG, MPI_BYTE, peer_of[j],
                        k, MPI_COMM_WORLD, &req[r]));
            int n = sizes[sent++ % 6];
            D(MPI_Isend(sbuf, n, MPI_BYTE, peer_of[j], k, MPI_COMM_WORLD, &req[r + 1]));
        }
    }
    t_start = tc_now();
    for (;;) {
        int outcount = 0;
        D(MPI_Testsome(nreq, req, &outcount, idx, MPI_STATUSES_IGNORE));
        for (int i = 0; i < outcount; ++i) {
            int r = idx[i], slot = r / 2;
            j = slot / NSLOT;
            int k = slot % NSLOT;
            if (0 == r % 2) {
                D(MPI_Irecv(rbufs + (size_t) slot * MAXMSG, MAXMSG, MPI_BYTE, peer_of[j], k,
                            MPI_COMM_WORLD, &req[r]));
            } else {
                int n = sizes[sent++ % 6];
                D(MPI_Isend(sbuf, n, MPI_BYTE, peer_of[j], k, MPI_COMM_WORLD, &req[r]));
            }
            nops++;
        }
        maybe_die();
        report();
    }
}

static void run_coll(int idle)
{
    static const int sizes[] = {1024, 8192, 65536};
    unsigned char *buf = malloc(65536);
    int64_t sum[16];
    CHECK(NULL != buf, "malloc");
    D(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    t_start = tc_now();
    for (long i = 0;; ++i) {
        int root = (int) (i % tc_size), n = sizes[i % 3];
        memset(buf, root == tc_rank ? (int) (i & 0x7f) : 0, (size_t) n);
        D(MPI_Bcast(buf, n, MPI_BYTE, root, MPI_COMM_WORLD));
        CHECK(buf[n - 1] == (unsigned char) (i & 0x7f), "bcast %ld: wrong byte", i);
        for (int k = 0; k < 16; ++k) {
            sum[k] = tc_rank + k;
        }
        D(MPI_Allreduce(MPI_IN_PLACE, sum, 16, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
        D(MPI_Barrier(MPI_COMM_WORLD));
        nops += 3;
        maybe_die();
        if (idle && tc_rank == victim && tc_now() - t_start >= after) {
            /* "ready" was printed: no MPI call from here on */
            for (;;) {
                pause();
            }
        }
        report();
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "rma";
    shell_mode = argc > 2 && 0 == strcmp(argv[2], "shell");
    for (int i = 3; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-after")) {
            after = atof(argv[i + 1]);
        }
    }
    tc_init(&argc, &argv, "death");
    CHECK(tc_size >= 2, "needs 2 ranks or more");
    victim = tc_size - 1;
    if (0 == strcmp(mode, "rma")) {
        run_rma();
    } else if (0 == strcmp(mode, "coll") || 0 == strcmp(mode, "collidle")) {
        run_coll(0 == strcmp(mode, "collidle"));
    } else {
        run_msg();
    }
    return 0; /* not reached */
}
