/*
 * mt_rate: one-sided message rate against the number of threads per rank,
 * over btl/ofi with MPI_THREAD_MULTIPLE (run it under scripts/ofirun with
 * 2 ranks; bench/mt_scaling.sh loops over providers and context counts).
 *
 *   mt_rate [-single] [-bi] [-t 1,2,4] [-d seconds] [-w window] [-s bytes]
 *           [-ops put,putw,fop]
 *
 * -single (first argument only): MPI_THREAD_SINGLE and one thread, the
 * baseline without locking (printed as threads "single").
 *
 * Rank 0's threads are the origins (with -bi, rank 1's too): each thread
 * drives a window of its own (MPI_Win_create, MPI_Win_lock_all by that
 * thread) towards the other rank, so no two threads share an osc/rdma window
 * or its flush. Without -bi, rank 1 waits in MPI_Barrier meanwhile, which
 * keeps it progressing (serving the operations on manual-progress
 * providers).
 * For each thread count and each operation, all threads run for -d seconds
 * (default 1) after a barrier, and rank 0 prints the aggregate rate of its
 * threads:
 *
 *   put   MPI_Put of -s bytes (default 8) then MPI_Win_flush (one at a time)
 *   putw  -w MPI_Puts (default 32) then one MPI_Win_flush
 *   fop   MPI_Fetch_and_op(SUM, +1) on a 64-bit counter, MPI_Win_flush
 *
 * Output (one line per measurement, '#' lines are comments):
 *
 *   mt op threads T rate Mops_per_s per_thread Mops_per_s speedup X
 *
 * speedup is against the 1-thread rate of the same op in the same run (when
 * 1 is in the thread list). Checks, not timed: every fetch-op counter ends
 * equal to the number of fetch-ops its peer thread issued; a violation is
 * printed as "# verify FAILED" and the exit status is 1.
 */
#include <mpi.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma GCC diagnostic ignored "-Wunused-function"
#include "mpit_probe.h"

#define MAX_THREADS 64
#define MAX_LIST 16

static int rank, peer;
static double duration = 1.0;
static int window = 32;
static size_t msg_size = 8;
static char ops_list[128] = "put,putw,fop";
static int bidirectional = 0;

typedef struct {
    int tid;
    const char *op;
    MPI_Win win;
    unsigned char *src;
    uint64_t fop_count;
    unsigned long long done;
    int err;
} worker_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static double t_stop;

static const char *tc_str(int v)
{
    static char b[16];
    snprintf(b, sizeof(b), "%d", v);
    return b;
}

#define TRY(call)                                                                                \
    do {                                                                                         \
        if (MPI_SUCCESS != (call)) {                                                             \
            w->err = 1;                                                                          \
            return NULL;                                                                         \
        }                                                                                        \
    } while (0)

static void *worker(void *arg)
{
    worker_t *w = (worker_t *) arg;
    const uint64_t one = 1;
    uint64_t old;
    unsigned long long n = 0;

    TRY(MPI_Win_lock_all(0, w->win));
    if (0 == strcmp(w->op, "put")) {
        while (now() < t_stop) {
            TRY(MPI_Put(w->src, (int) msg_size, MPI_BYTE, peer, 64, (int) msg_size, MPI_BYTE,
                        w->win));
            TRY(MPI_Win_flush(peer, w->win));
            ++n;
        }
    } else if (0 == strcmp(w->op, "putw")) {
        while (now() < t_stop) {
            for (int k = 0; k < window; ++k) {
                TRY(MPI_Put(w->src, (int) msg_size, MPI_BYTE, peer, 64, (int) msg_size,
                            MPI_BYTE, w->win));
            }
            TRY(MPI_Win_flush(peer, w->win));
            n += (unsigned long long) window;
        }
    } else {
        while (now() < t_stop) {
            TRY(MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, peer, 0, MPI_SUM, w->win));
            TRY(MPI_Win_flush(peer, w->win));
            ++n;
        }
        w->fop_count += n;
    }
    TRY(MPI_Win_unlock_all(w->win));
    w->done = n;
    return NULL;
}

static int parse_list(const char *s, int *out)
{
    int n = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", s);
    for (char *tok = strtok(buf, ","); tok && n < MAX_LIST; tok = strtok(NULL, ",")) {
        int v = atoi(tok);
        if (v < 1 || v > MAX_THREADS) {
            return -1;
        }
        out[n++] = v;
    }
    return n;
}

static void die(const char *msg)
{
    if (0 == rank) {
        fprintf(stderr, "mt_rate: %s\n", msg);
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    int provided = 0, nranks = 0;
    int tlist[MAX_LIST] = {1, 2, 4}, nt = 3;
    int failed = 0;

    /* -single (first argument): MPI_THREAD_SINGLE baseline, one thread
     * (the component's locks are then inactive) */
    int single = argc > 1 && 0 == strcmp(argv[1], "-single");
    int required = single ? MPI_THREAD_SINGLE : MPI_THREAD_MULTIPLE;
    MPI_Init_thread(&argc, &argv, required, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (provided < required) {
        die("MPI_THREAD_MULTIPLE is not provided by this Open MPI");
    }
    if (2 != nranks) {
        die("run with exactly 2 ranks");
    }
    peer = 1 - rank;
    for (int a = 1 + single; a < argc; ++a) {
        if (0 == strcmp(argv[a], "-t") && a + 1 < argc) {
            nt = parse_list(argv[++a], tlist);
            if (nt <= 0) {
                die("-t: comma-separated thread counts from 1 to 64");
            }
        } else if (0 == strcmp(argv[a], "-d") && a + 1 < argc) {
            duration = atof(argv[++a]);
            if (duration <= 0) {
                die("-d: seconds > 0");
            }
        } else if (0 == strcmp(argv[a], "-w") && a + 1 < argc) {
            window = atoi(argv[++a]);
            if (window < 1) {
                die("-w: at least 1");
            }
        } else if (0 == strcmp(argv[a], "-s") && a + 1 < argc) {
            msg_size = (size_t) atol(argv[++a]);
            if (msg_size < 1 || msg_size > 4096) {
                die("-s: 1 to 4096 bytes");
            }
        } else if (0 == strcmp(argv[a], "-bi")) {
            bidirectional = 1;
        } else if (0 == strcmp(argv[a], "-ops") && a + 1 < argc) {
            snprintf(ops_list, sizeof(ops_list), "%s", argv[++a]);
        } else {
            die("usage: mt_rate [-single] [-bi] [-t 1,2,4] [-d seconds] [-w window] [-s bytes] "
                "[-ops put,putw,fop]");
        }
    }

    MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided);
    if (single) {
        tlist[0] = 1;
        nt = 1;
    }
    if (0 == rank) {
        char version[64], prov[128];
        probe_cvar_string("btl_ofi_version", version, sizeof(version));
        probe_cvar_string("btl_ofi_selected_provider", prov, sizeof(prov));
        printf("# mt_rate: btl_ofi_version %s provider %s; %s; %s; %.2f s per point, %zu B, "
               "window %d\n",
               version, prov, single ? "MPI_THREAD_SINGLE" : "MPI_THREAD_MULTIPLE",
               bidirectional ? "both ranks issue" : "rank 0 issues, rank 1 progresses", duration,
               msg_size, window);
        fflush(stdout);
    }

    int maxt = 0;
    for (int i = 0; i < nt; ++i) {
        maxt = tlist[i] > maxt ? tlist[i] : maxt;
    }
    worker_t *w = calloc(maxt, sizeof(worker_t));
    unsigned char **mem = calloc(maxt, sizeof(unsigned char *));
    for (int t = 0; t < maxt; ++t) {
        mem[t] = calloc(1, 64 + 4096);
        w[t].tid = t;
        w[t].src = malloc(4096);
        memset(w[t].src, 0x5a, 4096);
        MPI_Win_create(mem[t], 64 + 4096, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w[t].win);
    }

    char opbuf[128];
    snprintf(opbuf, sizeof(opbuf), "%s", ops_list);
    char *save = NULL;
    for (char *op = strtok_r(opbuf, ",", &save); op; op = strtok_r(NULL, ",", &save)) {
        if (strcmp(op, "put") && strcmp(op, "putw") && strcmp(op, "fop")) {
            die("-ops: put, putw, fop");
        }
        double base = 0;
        for (int i = 0; i < nt; ++i) {
            int T = tlist[i];
            pthread_t th[MAX_THREADS];
            MPI_Barrier(MPI_COMM_WORLD);
            t_stop = now() + duration;
            double t0 = now();
            /* without -bi rank 1 starts no thread: it goes to the barrier */
            int mine = (bidirectional || 0 == rank) ? T : 0;
            for (int t = 0; t < mine; ++t) {
                w[t].op = op;
                w[t].done = 0;
                pthread_create(&th[t], NULL, worker, &w[t]);
            }
            unsigned long long total = 0;
            for (int t = 0; t < mine; ++t) {
                pthread_join(th[t], NULL);
                total += w[t].done;
                failed |= w[t].err;
            }
            double el = now() - t0;
            MPI_Barrier(MPI_COMM_WORLD);
            double rate = (double) total / el / 1e6;
            if (1 == T) {
                base = rate;
            }
            if (0 == rank) {
                printf("mt %s threads %s rate %.4f per_thread %.4f speedup %s", op,
                       single ? "single" : tc_str(T), rate, rate / T, base > 0 ? "" : "-");
                if (base > 0) {
                    printf("%.2f", rate / base);
                }
                printf("\n");
                fflush(stdout);
            }
        }
    }

    /* verify the fetch-op counters: mine[t] counts what peer thread t added */
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t *sent = calloc(maxt, sizeof(uint64_t)), *peer_sent = calloc(maxt, sizeof(uint64_t));
    for (int t = 0; t < maxt; ++t) {
        sent[t] = w[t].fop_count;
    }
    MPI_Sendrecv(sent, maxt, MPI_UINT64_T, peer, 7, peer_sent, maxt, MPI_UINT64_T, peer, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int t = 0; t < maxt; ++t) {
        uint64_t c;
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w[t].win);
        MPI_Win_sync(w[t].win);
        memcpy(&c, mem[t], 8);
        MPI_Win_unlock(rank, w[t].win);
        if (c != peer_sent[t]) {
            printf("# verify FAILED: rank %d window %d counter %llu, peer issued %llu fetch-ops\n",
                   rank, t, (unsigned long long) c, (unsigned long long) peer_sent[t]);
            failed = 1;
        }
    }
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("# verify %s\n", any ? "FAILED" : "ok");
    }
    for (int t = 0; t < maxt; ++t) {
        MPI_Win_free(&w[t].win);
        free(mem[t]);
        free(w[t].src);
    }
    free(w);
    free(mem);
    free(sent);
    free(peer_sent);
    MPI_T_finalize();
    MPI_Finalize();
    return any ? 1 : 0;
}
