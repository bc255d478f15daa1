/*
 * workload: small, fully checked one-sided and two-sided traffic that stops
 * at the first error an MPI call returns.
 *
 *   workload rma|msg|bidir|all [-n ROUNDS]     (default 20 rounds)
 *
 *   rma  MPI_Win_create window (64 KiB per rank) under MPI_Win_lock_all:
 *        per round, MPI_Put of 4 KiB into the right neighbour's slot,
 *        MPI_Get of 4 KiB from the left neighbour, MPI_Fetch_and_op (SUM,
 *        int64) on a counter at rank 0, MPI_Compare_and_swap on a word of
 *        the right neighbour, MPI_Win_flush_all; then the window contents,
 *        the fetched bytes and the counter are checked exactly.
 *   msg  ping-pong between ranks 0 and 1 of 0 B, 1 B, 1000 B, 8 KiB + 1,
 *        64 KiB + 3 and 1 MiB + 7 (eager, rendezvous: RGET/RPUT or
 *        pipeline), MPI_Send/MPI_Recv both ways, then MPI_Isend from rank 1
 *        into a receive rank 0 posted first; one message in flight at a
 *        time; every byte checked; other ranks wait.
 *   bidir both ranks send each size at the same time (MPI_Irecv, MPI_Isend,
 *        MPI_Waitall; MPI_Sendrecv), every byte checked (not part of
 *        "all": on shm it hangs in some runs, see tests/faults/run.sh)
 *   all  rma, then msg.
 *
 * Errors: MPI_ERRORS_RETURN on MPI_COMM_WORLD and on the window. The first
 * error makes the rank print
 *     workload: rank R: MPI error from CALL in PHASE round K: STRING
 * and call MPI_Abort (exit code 5), which is how a fault-injection run is
 * expected to end when the error reaches the application. A checked value
 * that is wrong prints "workload: rank R: WRONG DATA ..." and aborts with 6
 * (an error that was swallowed). A full, correct run prints
 * "OK workload".
 *
 * Fault injection on one rank only: before MPI_Init, the rank whose
 * OMPI_COMM_WORLD_RANK equals $WORKLOAD_FAULT_RANK exports
 * OMPI_MCA_btl_ofi_inject_fault=$WORKLOAD_FAULT (so only that process
 * counts calls and fails one).
 */
#include "../common.h"

#include <unistd.h>

#define SLOT 4096
#define WIN_BYTES 65536
#define CAS_OFF (WIN_BYTES - 64)
#define CNT_OFF (WIN_BYTES - 128)

static int rounds = 20;
static const char *phase = "init";

static void mpi_err(const char *call, int round, int rc)
{
    char es[MPI_MAX_ERROR_STRING];
    int el = 0, cls = 0;
    MPI_Error_string(rc, es, &el);
    MPI_Error_class(rc, &cls);
    printf("workload: rank %d: MPI error from %s in %s round %d: %s (class %d)\n", tc_rank, call,
           phase, round, es, cls);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 5);
}

#define W(call, round)                                                                    \
    do {                                                                                  \
        int w_rc_ = (call);                                                               \
        if (MPI_SUCCESS != w_rc_) {                                                       \
            mpi_err(#call, (round), w_rc_);                                               \
        }                                                                                 \
    } while (0)

static void wrong(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("workload: rank %d: WRONG DATA in %s: %s\n", tc_rank, phase, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 6);
}

static unsigned char pat(int origin, int round, size_t i)
{
    return tc_pattern(origin, SLOT, i, (unsigned) round);
}

static void run_rma(void)
{
    phase = "rma";
    int right = (tc_rank + 1) % tc_size, left = (tc_rank + tc_size - 1) % tc_size;
    unsigned char *mem = NULL, *src = malloc(SLOT), *got = malloc(SLOT);
    CHECK(NULL != src && NULL != got, "malloc");
    CHECK(0 == posix_memalign((void **) &mem, 4096, WIN_BYTES), "posix_memalign");
    memset(mem, 0, WIN_BYTES);
    MPI_Win win;
    W(MPI_Win_create(mem, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), -1);
    W(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN), -1);
    W(MPI_Win_lock_all(0, win), -1);
    int64_t one = 1, old = 0;
    for (int r = 0; r < rounds; ++r) {
        /* slot r % 8 of the right neighbour gets this round's bytes */
        for (size_t i = 0; i < SLOT; ++i) {
            src[i] = pat(tc_rank, r, i);
        }
        W(MPI_Put(src, SLOT, MPI_BYTE, right, (MPI_Aint) (r % 8) * SLOT, SLOT, MPI_BYTE, win), r);
        W(MPI_Win_flush(right, win), r);
        W(MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, CNT_OFF, MPI_SUM, win), r);
        int64_t cmp = r, val = r + 1, res = -1;
        /* the word at CAS_OFF of the right neighbour counts this rank's rounds */
        W(MPI_Compare_and_swap(&val, &cmp, &res, MPI_INT64_T, right, CAS_OFF, win), r);
        W(MPI_Win_flush_all(win), r);
        if (res != r) {
            wrong("round %d: compare-and-swap at rank %d fetched %lld, expected %d", r, right,
                  (long long) res, r);
        }
        if (old < 0 || old >= (int64_t) rounds * tc_size) {
            wrong("round %d: fetch-and-add fetched %lld, outside [0, %d)", r, (long long) old,
                  rounds * tc_size);
        }
    }
    W(MPI_Win_unlock_all(win), rounds);
    W(MPI_Barrier(MPI_COMM_WORLD), rounds);
    /* my slots hold what my left neighbour put in its last rounds */
    for (int r = rounds - 8 < 0 ? 0 : rounds - 8; r < rounds; ++r) {
        for (size_t i = 0; i < SLOT; ++i) {
            if (mem[(size_t) (r % 8) * SLOT + i] != pat(left, r, i)) {
                wrong("slot %d byte %zu is 0x%02x, expected 0x%02x (round %d of rank %d)", r % 8,
                      i, mem[(size_t) (r % 8) * SLOT + i], pat(left, r, i), r, left);
            }
        }
    }
    int64_t cas_word, cnt;
    memcpy(&cas_word, mem + CAS_OFF, 8);
    memcpy(&cnt, mem + CNT_OFF, 8);
    if (cas_word != rounds) {
        wrong("compare-and-swap word is %lld, expected %d", (long long) cas_word, rounds);
    }
    if (0 == tc_rank && cnt != (int64_t) rounds * tc_size) {
        wrong("fetch-and-add counter is %lld, expected %d", (long long) cnt, rounds * tc_size);
    }
    /* a get of what the left neighbour holds now (its slot 0) */
    W(MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win), rounds);
    W(MPI_Get(got, SLOT, MPI_BYTE, left, 0, SLOT, MPI_BYTE, win), rounds);
    W(MPI_Win_unlock(left, win), rounds);
    int lr = ((rounds - 1) / 8) * 8; /* last round that wrote slot 0 */
    int ll = (left + tc_size - 1) % tc_size;
    for (size_t i = 0; i < SLOT; ++i) {
        if (got[i] != pat(ll, lr, i)) {
            wrong("MPI_Get of rank %d slot 0: byte %zu is 0x%02x, expected 0x%02x", left, i,
                  got[i], pat(ll, lr, i));
        }
    }
    W(MPI_Barrier(MPI_COMM_WORLD), rounds);
    W(MPI_Win_free(&win), rounds);
    free(mem);
    free(src);
    free(got);
}

static const size_t msg_sizes[] = {0, 1, 1000, 8193, 65539, (1u << 20) + 7};
#define NMSG (sizeof(msg_sizes) / sizeof(msg_sizes[0]))

static void check_msg(const unsigned char *rbuf, size_t n, int from, int r, const char *how)
{
    for (size_t i = 0; i < n; ++i) {
        if (rbuf[i] != tc_pattern(from, n, i, (unsigned) r)) {
            wrong("round %d, %zu-byte %s from rank %d: byte %zu is 0x%02x, expected 0x%02x", r, n,
                  how, from, i, rbuf[i], tc_pattern(from, n, i, (unsigned) r));
        }
    }
}

static void fill_msg(unsigned char *sbuf, size_t n, int r)
{
    for (size_t i = 0; i < n; ++i) {
        sbuf[i] = tc_pattern(tc_rank, n, i, (unsigned) r);
    }
}

/* one exchange of n bytes (a size of msg_sizes) with peer in round r */
typedef void msg_fn(unsigned char *sbuf, unsigned char *rbuf, size_t n, int peer, int tag, int r);

/* ranks 0 and 1: every size of msg_sizes in every round, each exchanged
 * by one(); then every rank meets them */
static void msg_rounds(const char *name, msg_fn *one)
{
    phase = name;
    size_t max = (1u << 20) + 7;
    unsigned char *sbuf = malloc(max), *rbuf = malloc(max);
    CHECK(NULL != sbuf && NULL != rbuf, "malloc");
    if (tc_rank < 2) {
        int peer = 1 - tc_rank;
        for (int r = 0; r < rounds; ++r) {
            for (size_t k = 0; k < NMSG; ++k) {
                one(sbuf, rbuf, msg_sizes[k], peer, (int) (r * NMSG + k), r);
            }
        }
    }
    W(MPI_Barrier(MPI_COMM_WORLD), rounds);
    free(sbuf);
    free(rbuf);
}

/* ping-pong: rank 0 sends, rank 1 answers with its own bytes; one message
 * in flight at a time (MPI_Send/MPI_Recv, then MPI_Isend/MPI_Irecv with
 * the receive posted first) */
static void msg_pingpong(unsigned char *sbuf, unsigned char *rbuf, size_t n, int peer, int tag,
                         int r)
{
    fill_msg(sbuf, n, r);
    memset(rbuf, 0xFF, n);
    if (0 == tc_rank) {
        W(MPI_Send(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD), r);
        W(MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), r);
    } else {
        W(MPI_Recv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), r);
        check_msg(rbuf, n, peer, r, "MPI_Send");
        memset(rbuf, 0xFF, n);
        W(MPI_Send(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD), r);
    }
    if (0 == tc_rank) {
        check_msg(rbuf, n, peer, r, "MPI_Send");
    }
    MPI_Request rq;
    memset(rbuf, 0xFF, n);
    if (0 == tc_rank) {
        W(MPI_Irecv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq), r);
        W(MPI_Send(sbuf, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD), r); /* go */
        W(MPI_Wait(&rq, MPI_STATUS_IGNORE), r);
        check_msg(rbuf, n, peer, r, "MPI_Isend");
    } else {
        W(MPI_Recv(rbuf, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), r);
        W(MPI_Isend(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq), r);
        W(MPI_Wait(&rq, MPI_STATUS_IGNORE), r);
    }
}

static void run_msg(void)
{
    msg_rounds("msg", msg_pingpong);
}

/* both ranks send at once: MPI_Irecv + MPI_Isend + MPI_Waitall, then
 * MPI_Sendrecv, each size both ways at the same time */
static void msg_both(unsigned char *sbuf, unsigned char *rbuf, size_t n, int peer, int tag, int r)
{
    MPI_Request rq[2];
    fill_msg(sbuf, n, r);
    memset(rbuf, 0xFF, n);
    W(MPI_Irecv(rbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[0]), r);
    W(MPI_Isend(sbuf, (int) n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &rq[1]), r);
    W(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE), r);
    check_msg(rbuf, n, peer, r, "MPI_Isend");
    memset(rbuf, 0xFF, n);
    W(MPI_Sendrecv(sbuf, (int) n, MPI_BYTE, peer, tag, rbuf, (int) n, MPI_BYTE, peer, tag,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE),
      r);
    check_msg(rbuf, n, peer, r, "MPI_Sendrecv");
}

static void run_bidir(void)
{
    msg_rounds("bidir", msg_both);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    for (int i = 2; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-n")) {
            rounds = atoi(argv[i + 1]);
        }
    }
    const char *fr = getenv("WORKLOAD_FAULT_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK"),
               *spec = getenv("WORKLOAD_FAULT");
    if (NULL != fr && NULL != me && NULL != spec && 0 == strcmp(fr, me)) {
        setenv("OMPI_MCA_btl_ofi_inject_fault", spec, 1);
        printf("workload: rank %s (pid %d) injects %s\n", me, (int) getpid(), spec);
        fflush(stdout);
    }
    tc_init(&argc, &argv, "workload");
    CHECK(rounds >= 1 && tc_size >= 2, "rounds %d, size %d", rounds, tc_size);
    if (0 == strcmp(mode, "rma") || 0 == strcmp(mode, "all")) {
        run_rma();
    }
    if (0 == strcmp(mode, "msg") || 0 == strcmp(mode, "all")) {
        run_msg();
    }
    if (0 == strcmp(mode, "bidir")) {
        run_bidir();
    }
    tc_finish();
    return 0;
}
