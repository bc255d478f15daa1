/*
 * Does libfabric's sockets provider keep moving when two processes on one
 * host write into each other at once? (libfabric 1.17: not always; it
 * can stall for good. With the defaults it stalls within a few hundred
 * rounds; without the pause, about once in 1,000 to 10,000 rounds, and
 * once in about 100 rounds of the same traffic through btl/ofi and
 * osc/rdma.) Why the README's Known limits name sockets on one host.
 *
 *   gcc -O2 -o /tmp/sockets-header-stall \
 *       scripts/provider-checks/sockets-header-stall.c -lfabric
 *   /tmp/sockets-header-stall [rounds] [writes] [size] [pause]
 *                                        defaults 1000 200 4000 10
 *
 * Two processes (fork), each with an FI_EP_RDM endpoint of sockets
 * (FI_PROGRESS_MANUAL, FI_DELIVERY_COMPLETE, as btl/ofi opens it): every
 * round each writes WRITES x SIZE bytes into the other's registered
 * buffer, waits for its completions, then both exchange a 4-byte message
 * and check every byte they were sent. Before each look at its completion
 * queue a process sleeps PAUSE microseconds (a process that computes
 * between MPI calls: data piles up in the kernel meanwhile). Exit 0 and "moved" when all
 * rounds finish; exit 1 and "STALLED" when a process saw no completion
 * for 10 s, with the kernel's queues of its TCP connections.
 *
 * What the queues show when it stalls: one side's socket holds a few bytes
 * (fewer than the provider's message header) in a receive queue whose
 * memory is nearly all taken by the one loopback segment (up to 64 KiB)
 * they came in, so the kernel advertises a zero window; the other side's
 * socket holds the rest of the header and more, unsent, probing that
 * window. The provider peeks (MSG_PEEK) for a whole header before it
 * reads anything from a connection, so the bytes are never read and the
 * window never reopens. Over links of 1500-byte frames (the simulated
 * hosts) a segment is small next to the receive buffer and this does not
 * happen; over loopback (64 KiB MTU) it does.
 */
#include <dirent.h>
#include <fcntl.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int r_ = (int) (x);                                                                        \
        if (r_) {                                                                                  \
            fprintf(stderr, "%s: %s\n", #x, fi_strerror(-r_));                                     \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define STALL_SECONDS 10
#define MSG_CTX ((void *) 1)

struct hello {
    char name[256];
    uint64_t key, addr;
};

static struct fid_cq *cq;
static long tx_done, rx_done;
static int pause_us;
static const char *who;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static void xfer(int fd, void *buf, size_t len, int out)
{
    ssize_t n = out ? write(fd, buf, len) : read(fd, buf, len);
    if (n != (ssize_t) len) {
        perror("socketpair");
        exit(2);
    }
}

/* the kernel's queues of this process's TCP connections (/proc/net/tcp) */
static void show_tcp_queues(void)
{
    char path[300], link[64], line[512];
    struct dirent *d;
    DIR *dir = opendir("/proc/self/fd");

    while (dir && NULL != (d = readdir(dir))) {
        unsigned long inode;
        ssize_t n;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0) {
            continue;
        }
        link[n] = '\0';
        if (1 != sscanf(link, "socket:[%lu]", &inode) || NULL == (f = fopen("/proc/net/tcp", "r"))) {
            continue;
        }
        while (fgets(line, sizeof(line), f)) {
            unsigned long tx, rx, ino;
            unsigned st;
            if (4 == sscanf(line, "%*d: %*x:%*x %*x:%*x %x %lx:%lx %*x:%*x %*x %*u %*u %lu", &st, &tx,
                            &rx, &ino)
                && ino == inode && 1 == st) {
                printf("%s: TCP connection (socket %lu): %lu bytes unsent, %lu bytes unread\n", who,
                       inode, tx, rx);
            }
        }
        fclose(f);
    }
    if (dir) {
        closedir(dir);
    }
}

static void poll_cq(double since, const char *waiting_for)
{
    struct fi_cq_entry e[16];
    ssize_t n;

    if (pause_us > 0) {
        usleep((useconds_t) pause_us);
    }
    n = fi_cq_read(cq, e, 16);

    for (ssize_t i = 0; i < n; ++i) {
        if (MSG_CTX == e[i].op_context) {
            ++rx_done;
        } else {
            ++tx_done;
        }
    }
    if (n < 0 && -FI_EAGAIN != n) {
        struct fi_cq_err_entry err = {0};
        (void) fi_cq_readerr(cq, &err, 0);
        fprintf(stderr, "%s: completion error: %s\n", who, fi_strerror(err.err));
        exit(2);
    }
    if (n <= 0 && now() - since > STALL_SECONDS) {
        printf("%s: STALLED: no completion for %d s while waiting for %s\n", who, STALL_SECONDS,
               waiting_for);
        show_tcp_queues();
        fflush(stdout);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    const int writes = argc > 2 ? atoi(argv[2]) : 200;
    const size_t size = argc > 3 ? (size_t) atoi(argv[3]) : 4000;
    const size_t bytes = (size_t) writes * size;
    pause_us = argc > 4 ? atoi(argv[4]) : 10;
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT, .size = 4096};
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    struct fi_context2 *ctx = calloc((size_t) writes + 1, sizeof(*ctx));
    unsigned char *src = malloc(bytes), *dst = calloc(1, bytes);
    struct hello me, other;
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_ep *ep;
    struct fid_av *av;
    struct fid_mr *mr;
    fi_addr_t peer;
    int pair[2], fd, mine, theirs, token = 0, status = 0;
    size_t len = sizeof(me.name);
    long tx_want = 0, rx_want = 0;
    pid_t pid;

    if (NULL == ctx || NULL == src || NULL == dst
        || socketpair(AF_UNIX, SOCK_STREAM, 0, pair)) {
        perror("setup");
        return 2;
    }
    pid = fork();
    mine = 0 == pid ? 1 : 0;
    theirs = 1 - mine;
    who = mine ? "process 1" : "process 0";
    fd = pair[mine];

    hints->caps = FI_RMA | FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
    hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    hints->fabric_attr->prov_name = strdup("sockets");
    CK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    CK(fi_fabric(info->fabric_attr, &fab, NULL));
    CK(fi_domain(fab, info, &dom, NULL));
    CK(fi_av_open(dom, &ava, &av, NULL));
    CK(fi_cq_open(dom, &cqa, &cq, NULL));
    CK(fi_endpoint(dom, info, &ep, NULL));
    CK(fi_ep_bind(ep, &av->fid, 0));
    CK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CK(fi_enable(ep));
    CK(fi_mr_reg(dom, dst, bytes, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
    CK(fi_getname(&ep->fid, me.name, &len));
    me.key = fi_mr_key(mr);
    /* sockets asks for offsets, not addresses, unless it grants VIRT_ADDR */
    me.addr = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t) (uintptr_t) dst : 0;
    xfer(fd, &me, sizeof(me), 1);
    xfer(fd, &other, sizeof(other), 0);
    if (1 != fi_av_insert(av, other.name, 1, &peer, 0, NULL)) {
        fprintf(stderr, "%s: fi_av_insert failed\n", who);
        return 2;
    }
    CK(fi_recv(ep, &token, sizeof(token), NULL, peer, MSG_CTX));
    ++rx_want;
    /* one connection for both directions, as between MPI processes that
     * talked before: process 0 speaks first, process 1 answers once it
     * heard (had both written at once, each would have connected) */
    for (int turn = 0; turn < 2; ++turn) {
        double since = now();
        ssize_t rc;
        if (turn == mine) {
            while (-FI_EAGAIN
                   == (rc = fi_send(ep, &mine, sizeof(mine), NULL, peer, &ctx[writes]))) {
                poll_cq(since, "room to post a message");
            }
            CK(rc);
            ++tx_want;
        } else {
            while (rx_done < rx_want) {
                poll_cq(since, "the other's first message");
            }
            CK(fi_recv(ep, &token, sizeof(token), NULL, peer, MSG_CTX));
            ++rx_want;
        }
    }

    for (int round = 0; round < rounds && 0 == status; ++round) {
        double since = now();

        memset(src, (round * 2 + mine) & 0xff, bytes);
        for (int i = 0; i < writes; ++i) {
            ssize_t rc;
            while (-FI_EAGAIN
                   == (rc = fi_write(ep, src + (size_t) i * size, size, NULL, peer,
                                     other.addr + (uint64_t) i * size, other.key, &ctx[i]))) {
                poll_cq(since, "room to post a write");
            }
            CK(rc);
            ++tx_want;
        }
        while (tx_done < tx_want) {
            poll_cq(since, "its writes");
        }
        /* both written: one message each way, then check, then one more
         * so that nobody overwrites what the other still checks */
        for (int pass = 0; pass < 2; ++pass) {
            ssize_t rc;
            since = now();
            while (-FI_EAGAIN
                   == (rc = fi_send(ep, &mine, sizeof(mine), NULL, peer, &ctx[writes]))) {
                poll_cq(since, "room to post a message");
            }
            CK(rc);
            ++tx_want;
            while (tx_done < tx_want || rx_done < rx_want) {
                poll_cq(since, "the other's message");
            }
            CK(fi_recv(ep, &token, sizeof(token), NULL, peer, MSG_CTX));
            ++rx_want;
            for (size_t k = 0; 0 == pass && k < bytes; ++k) {
                if (dst[k] != ((round * 2 + theirs) & 0xff)) {
                    printf("%s: round %d: byte %zu is %u, expected %u\n", who, round, k, dst[k],
                           (round * 2 + theirs) & 0xff);
                    status = 3;
                    break;
                }
            }
        }
    }
    if (0 != pid) {
        int child = 0;
        waitpid(pid, &child, 0);
        if (0 == status && WIFEXITED(child)) {
            status = WEXITSTATUS(child);
        }
        if (0 == status) {
            printf("moved: %d rounds of %d writes of %zu bytes each way\n", rounds, writes, size);
        }
    }
    return status;
}
