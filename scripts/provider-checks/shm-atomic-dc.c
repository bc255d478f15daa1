/*
 * Does libfabric's shm apply non-fetching atomics right when several are
 * in flight with FI_DELIVERY_COMPLETE? (libfabric 1.17: no.) Why btl/ofi
 * posts every non-fetching atomic as a fetching one (btl_ofi_rdma.h).
 *
 *   gcc -O2 -o /tmp/shm-atomic-dc scripts/provider-checks/shm-atomic-dc.c -lfabric
 *   /tmp/shm-atomic-dc [fetch] [dc]   defaults: fetch 0, dc 1
 *
 * Two processes (fork): the target registers 7 uint64 counters; the
 * origin posts 7 FI_SUM atomics at once (one per counter), waits for
 * their completions, 2000 rounds, then compares the target's counters
 * with the sums it sent. Exit 0 and "right" when they agree; exit 1 and
 * the differences otherwise. On libfabric 1.17: fi_atomic with
 * FI_DELIVERY_COMPLETE wrong (sums too large, other counters' operands
 * mixed in); fi_fetch_atomic, or fi_atomic without it, right.
 */
#include <fcntl.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 7
#define ROUNDS 2000

#define CK(x)                                                                                      \
    do {                                                                                           \
        int r_ = (int) (x);                                                                        \
        if (r_) {                                                                                  \
            fprintf(stderr, "%s: %s\n", #x, fi_strerror(-r_));                                     \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

struct hello {
    char name[256];
    size_t len;
    uint64_t key, addr;
};

static void xfer(int fd, void *buf, size_t len, int out)
{
    ssize_t n = out ? write(fd, buf, len) : read(fd, buf, len);
    if (n != (ssize_t) len) {
        perror("pipe");
        exit(2);
    }
}

int main(int argc, char **argv)
{
    const int fetch = argc > 1 && atoi(argv[1]);
    const int dc = argc > 2 ? atoi(argv[2]) : 1;
    struct fi_info *hints = fi_allocinfo(), *info;
    struct fi_cq_attr cqa = {.format = FI_CQ_FORMAT_CONTEXT};
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    int up[2], down[2];
    pid_t pid;

    if (pipe(up) || pipe(down)) {
        perror("pipe");
        return 2;
    }
    pid = fork();
    hints->caps = FI_RMA | FI_ATOMIC;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->fabric_attr->prov_name = strdup("shm");
    if (dc) {
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    }
    CK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info));
    CK(fi_fabric(info->fabric_attr, &fab, NULL));
    CK(fi_domain(fab, info, &dom, NULL));
    CK(fi_endpoint(dom, info, &ep, NULL));
    CK(fi_cq_open(dom, &cqa, &cq, NULL));
    CK(fi_av_open(dom, &ava, &av, NULL));
    CK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
    CK(fi_ep_bind(ep, &av->fid, 0));
    CK(fi_enable(ep));

    if (0 == pid) { /* the target: progress until told to stop */
        static uint64_t counter[N];
        struct fi_cq_entry e[8];
        struct fid_mr *mr;
        struct hello me, origin;
        fi_addr_t a;
        char stop;

        CK(fi_mr_reg(dom, counter, sizeof(counter), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr,
                     NULL));
        me.len = sizeof(me.name);
        CK(fi_getname(&ep->fid, me.name, &me.len));
        me.key = fi_mr_key(mr);
        me.addr = (uint64_t) (uintptr_t) counter;
        xfer(up[1], &me, sizeof(me), 1);
        xfer(down[0], &origin, sizeof(origin), 0);
        if (1 != fi_av_insert(av, origin.name, 1, &a, 0, NULL)) {
            return 2;
        }
        fcntl(down[0], F_SETFL, O_NONBLOCK);
        while (1 != read(down[0], &stop, 1)) {
            (void) fi_cq_read(cq, e, 8);
        }
        xfer(up[1], counter, sizeof(counter), 1);
        return 0;
    }

    struct hello target, me;
    static uint64_t operand[N], result[N];
    uint64_t expect[N] = {0}, counter[N];
    fi_addr_t peer;
    long done = 0, posted = 0;
    int bad = 0;

    xfer(up[0], &target, sizeof(target), 0);
    me.len = sizeof(me.name);
    CK(fi_getname(&ep->fid, me.name, &me.len));
    xfer(down[1], &me, sizeof(me), 1);
    if (1 != fi_av_insert(av, target.name, 1, &peer, 0, NULL)) {
        return 2;
    }
    for (int round = 0; round < ROUNDS; ++round) {
        for (int i = 0; i < N; ++i) {
            const uint64_t raddr = target.addr + 8 * (uint64_t) i;
            ssize_t rc;

            operand[i] = (uint64_t) round * 10 + (uint64_t) i + 1;
            expect[i] += operand[i];
            do {
                rc = fetch ? fi_fetch_atomic(ep, &operand[i], 1, NULL, &result[i], NULL, peer,
                                             raddr, target.key, FI_UINT64, FI_SUM, &operand[i])
                           : fi_atomic(ep, &operand[i], 1, NULL, peer, raddr, target.key, FI_UINT64,
                                       FI_SUM, &operand[i]);
                if (-FI_EAGAIN == rc) {
                    struct fi_cq_entry e[8];
                    long k = fi_cq_read(cq, e, 8);
                    done += k > 0 ? k : 0;
                }
            } while (-FI_EAGAIN == rc);
            CK(rc);
            ++posted;
        }
        /* every operand slot is reused next round: wait for all */
        while (done < posted) {
            struct fi_cq_entry e[8];
            long k = fi_cq_read(cq, e, 8);
            if (k < 0 && -FI_EAGAIN != k) {
                fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int) -k));
                return 2;
            }
            done += k > 0 ? k : 0;
        }
    }
    xfer(down[1], "x", 1, 1);
    xfer(up[0], counter, sizeof(counter), 0);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < N; ++i) {
        if (counter[i] != expect[i]) {
            printf("counter %d: %llu, expected %llu (%+lld)\n", i, (unsigned long long) counter[i],
                   (unsigned long long) expect[i], (long long) (counter[i] - expect[i]));
            bad = 1;
        }
    }
    printf("%s%s: %ld atomics, %ld completions, %s\n", fetch ? "fi_fetch_atomic" : "fi_atomic",
           dc ? " with FI_DELIVERY_COMPLETE" : "", posted, done, bad ? "WRONG" : "right");
    return bad;
}
