/*
 * btl/ofi endpoints and address exchange.
 *
 * Each process publishes one address per context (or the scalable
 * endpoint's single address) through the modex; a peer's endpoint maps
 * every local context to the peer address that context should use, so any
 * context can reach any peer.
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rdma.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"

static void mca_btl_ofi_endpoint_construct(mca_btl_ofi_endpoint_t *endpoint)
{
    endpoint->proc = NULL;
    endpoint->addrs = NULL;
    endpoint->lost = false;
    endpoint->dead = false;
    endpoint->checkable = false;
    endpoint->pid = 0;
    endpoint->start_time = 0;
    endpoint->posted = 0;
    endpoint->completed = 0;
    memset(&endpoint->host, 0, sizeof(endpoint->host));
    endpoint->seen_completed = 0;
    endpoint->stall_began = 0.0;
    endpoint->stall_since = 0.0;
    endpoint->probe_wait = 0.0;
    endpoint->suspect = false;
    endpoint->probed_at = 0.0;
    memset(&endpoint->bare, 0, sizeof(endpoint->bare));
    endpoint->bare.kind = MCA_BTL_OFI_OP_BARE;
    endpoint->detour = NULL;
    endpoint->detour_module = NULL;
    endpoint->told = false;
    OBJ_CONSTRUCT(&endpoint->seq_lock, opal_mutex_t);
    OBJ_CONSTRUCT(&endpoint->unacked, opal_list_t);
    endpoint->emu_credits = MCA_BTL_OFI_EMU_WINDOW;
    OBJ_CONSTRUCT(&endpoint->emu_waiting, opal_list_t);
    endpoint->tx_seq = 0;
    endpoint->tx_acked = 0;
    endpoint->live_fd = -1;
    endpoint->live_state = 0;
}

static void mca_btl_ofi_endpoint_destruct(mca_btl_ofi_endpoint_t *endpoint)
{
    if (endpoint->live_fd >= 0) {
        close(endpoint->live_fd);
        endpoint->live_fd = -1;
    }
    free(endpoint->addrs);
    endpoint->addrs = NULL;
    /* kept messages: their memory goes with their module's free list */
    while (NULL != opal_list_remove_first(&endpoint->unacked)) {
    }
    OBJ_DESTRUCT(&endpoint->unacked);
    OBJ_DESTRUCT(&endpoint->emu_waiting);
    OBJ_DESTRUCT(&endpoint->seq_lock);
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_endpoint_t, opal_list_item_t, mca_btl_ofi_endpoint_construct,
                   mca_btl_ofi_endpoint_destruct);

static int mca_btl_ofi_getname(struct fid *fid, uint8_t *buf, size_t *len)
{
    int rc = fi_getname(fid, buf, len);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_getname", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* ------------------------------------------------------- peer liveness
 *
 * Providers do not all notice a peer that died: shm keeps writing into the
 * dead process's shared memory, udp;ofi_rxd retransmits forever. A peer on
 * this host can be checked directly: every process publishes its pid, the
 * start time of that pid and the host's boot and pid-namespace identity,
 * and a peer with the same identity is looked up in /proc. Gone, exiting,
 * a zombie, or a pid now owned by a newer process: the peer is dead. */

/* Linux's PF_EXITING task flag: set when the process starts to die, before
 * its files (and so its sockets) are closed and long before it becomes a
 * zombie. A peer killed by a signal resets its connections while /proc
 * still shows it running; only this flag says it is already gone. */
#define MCA_BTL_OFI_PF_EXITING 0x4u

/* state, kernel flags and start time (fields 3, 9 and 22) of
 * /proc/PID/stat; false when the process does not exist */
static bool mca_btl_ofi_proc_stat(uint32_t pid, char *state, unsigned *flags, uint64_t *start_time)
{
    char path[64], buf[1024], *p;
    unsigned long long start = 0;
    unsigned kflags = 0;
    size_t len;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%u/stat", (unsigned) pid);
    f = fopen(path, "r");
    if (NULL == f) {
        return false;
    }
    len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    /* the command name may hold spaces and parentheses: skip to the last ')' */
    p = strrchr(buf, ')');
    errno = 0;
    if (NULL == p
        || 3
               != sscanf(p + 1,
                         " %c %*s %*s %*s %*s %*s %u %*s %*s %*s %*s %*s %*s %*s %*s %*s "
                         "%*s %*s %*s %llu",
                         state, &kflags, &start)) {
        return false;
    }
    *flags = kflags;
    *start_time = start;
    return true;
}

static void mca_btl_ofi_identity(mca_btl_ofi_modex_t *blob)
{
    struct stat st;
    unsigned flags;
    char state;
    FILE *f;

    blob->pid = (uint32_t) getpid();
    blob->pidns = (0 == stat("/proc/self/ns/pid", &st)) ? (uint64_t) st.st_ino : 0;
    if (!mca_btl_ofi_proc_stat(blob->pid, &state, &flags, &blob->start_time)) {
        blob->start_time = 0;
    }
    memset(blob->boot_id, 0, sizeof(blob->boot_id));
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (NULL != f) {
        if (NULL == fgets(blob->boot_id, sizeof(blob->boot_id), f)) {
            blob->boot_id[0] = '\0';
        }
        fclose(f);
    }
}

/* A peer we can check: same boot, same pid namespace, identity known. */
static void mca_btl_ofi_endpoint_identity(mca_btl_ofi_endpoint_t *endpoint,
                                          const mca_btl_ofi_modex_t *peer)
{
    static mca_btl_ofi_modex_t self;
    static bool known = false;

    if (!known) {
        mca_btl_ofi_identity(&self);
        known = true;
    }
    endpoint->checkable = 0 != peer->pid && 0 != peer->pidns && 0 != peer->start_time
                          && '\0' != self.boot_id[0] && self.pidns == peer->pidns
                          && 0 == strncmp(self.boot_id, peer->boot_id, sizeof(self.boot_id))
                          && self.pid != peer->pid;
    endpoint->pid = peer->pid;
    endpoint->start_time = peer->start_time;
}

static bool mca_btl_ofi_endpoint_gone(const mca_btl_ofi_endpoint_t *endpoint)
{
    uint64_t start_time;
    unsigned flags;
    char state;

    if (!mca_btl_ofi_proc_stat(endpoint->pid, &state, &flags, &start_time)) {
        return ENOENT == errno || ESRCH == errno;
    }
    return 'Z' == state || 'X' == state || (flags & MCA_BTL_OFI_PF_EXITING)
           || start_time != endpoint->start_time;
}

/* Whether the provider's addresses are socket addresses (tcp, sockets,
 * udp and the utility providers over them). */
static bool mca_btl_ofi_ip_provider(const mca_btl_ofi_module_t *module)
{
    return FI_SOCKADDR_IN == module->info->addr_format
           || FI_SOCKADDR_IN6 == module->info->addr_format
           || FI_SOCKADDR == module->info->addr_format;
}

/* The peer's liveness listener: the IP address of its libfabric address
 * and the port it published. */
static void mca_btl_ofi_endpoint_host(const mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint, const uint8_t *addr,
                                      size_t len, uint16_t port)
{
    struct sockaddr sa;

    if (!mca_btl_ofi_ip_provider(module) || 0 == port || len < sizeof(sa)) {
        return;
    }
    memcpy(&sa, addr, sizeof(sa));
    if ((AF_INET == sa.sa_family && len >= sizeof(struct sockaddr_in))
        || (AF_INET6 == sa.sa_family && len >= sizeof(struct sockaddr_in6))) {
        memcpy(&endpoint->host, addr,
               AF_INET == sa.sa_family ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
        if (AF_INET == sa.sa_family) {
            ((struct sockaddr_in *) &endpoint->host)->sin_port = htons(port);
        } else {
            ((struct sockaddr_in6 *) &endpoint->host)->sin6_port = htons(port);
        }
    }
}

void mca_btl_ofi_endpoint_lost(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                               const char *why)
{
    char info[512];
    bool first;

    MCA_BTL_OFI_LOCK(&module->lock);
    first = !endpoint->lost;
    endpoint->lost = true;
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (!first || NULL == endpoint->proc) {
        return;
    }
    snprintf(info, sizeof(info), "btl/ofi on %s lost contact with peer %s on %s: %s",
             opal_process_info.nodename, OPAL_NAME_PRINT(endpoint->proc->proc_name),
             NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?", why);
    mca_btl_ofi_module_fatal(module, endpoint->proc, info);
}

bool mca_btl_ofi_endpoint_check(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    if (NULL == endpoint) {
        return false;
    }
    if (!endpoint->dead && !(endpoint->checkable && mca_btl_ofi_endpoint_gone(endpoint))) {
        return false;
    }
    endpoint->dead = true;
    mca_btl_ofi_endpoint_lost(module, endpoint, "the process no longer exists");
    return true;
}

bool mca_btl_ofi_dead_sender(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_endpoint_t *endpoint, *dead = NULL;

    MCA_BTL_OFI_LOCK(&module->lock);
    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        if (endpoint->checkable && !endpoint->lost
            && (endpoint->dead || mca_btl_ofi_endpoint_gone(endpoint))) {
            endpoint->dead = true;
            dead = endpoint;
            OBJ_RETAIN(dead);
            break;
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (NULL == dead) {
        return false;
    }
    (void) mca_btl_ofi_endpoint_check(module, dead);
    OBJ_RELEASE(dead);
    return true;
}

int mca_btl_ofi_post_refused_at(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                const char *call, ssize_t rc, const char *file, int line)
{
    if (-FI_EAGAIN == rc) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* a peer on this host is looked up in /proc, one on another host is
     * probed: a dead peer is then named instead of the call's error
     * (sockets refuses a write to a dead peer with ENOENT at once, and
     * nothing else would ever be noticed: nothing is left in flight) */
    mca_btl_ofi_endpoint_suspect(module, endpoint);
    if (NULL != endpoint && (endpoint->lost || endpoint->dead)) {
        return OPAL_ERR_UNREACH;
    }
    MCA_BTL_OFI_REPORT_AT(call, rc, file, line);
    return OPAL_ERROR;
}

int mca_btl_ofi_endpoint_refuse(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    (void) mca_btl_ofi_endpoint_check(module, endpoint); /* dead: reports it once */
    return OPAL_ERR_UNREACH;
}

static double mca_btl_ofi_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Work of ours that waits on this peer: operations posted to it and not
 * completed, or sends the provider refused for now and we keep. */
static bool mca_btl_ofi_owed(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    bool owed = endpoint->posted != endpoint->completed;

    for (int i = 0; i < module->num_contexts && !owed; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;
        opal_list_item_t *item;

        MCA_BTL_OFI_LOCK(&context->lock);
        OPAL_LIST_FOREACH (item, &context->sendq, opal_list_item_t) {
            if (((mca_btl_ofi_frag_t *) item)->endpoint == endpoint) {
                owed = true;
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
    return owed;
}

/*
 * Peers on other hosts: /proc cannot tell whether they live, and a host
 * that went down or whose link was cut sends nothing at all (no reset, no
 * error: TCP retransmits for many minutes, datagram providers resend). A
 * peer that merely computes outside MPI looks the same from its operations
 * alone: they stand still on providers it must progress itself. Its
 * kernel, though, still answers for it: every process listens on a TCP
 * port of its own (published in the modex) and the kernel completes
 * connections to it whatever the process is doing. So when our operations
 * to such a peer stand still for btl_ofi_peer_probe_after seconds, we
 * connect to its listener: accepted, it lives (the wait starts again,
 * twice as long);
 * refused, its host lives but the process is gone; no answer within
 * btl_ofi_peer_probe_timeout seconds (or "no route"), its host is down or
 * cut off, and every peer on that host is lost. The listener's queue is
 * emptied at each check.
 */
typedef struct mca_btl_ofi_probe_t {
    struct sockaddr_storage host;
    int fd;
    int err; /* the verdict once known: 0 alive, else why it is not */
    double started;
    double stalled_since; /* when the operations that called for it stood still */
} mca_btl_ofi_probe_t;

static bool mca_btl_ofi_same_addr(const struct sockaddr_storage *a,
                                  const struct sockaddr_storage *b)
{
    size_t len = AF_INET == a->ss_family ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
    return a->ss_family == b->ss_family && 0 == memcmp(a, b, len);
}

static bool mca_btl_ofi_same_host(const struct sockaddr_storage *a,
                                  const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) {
        return false;
    }
    if (AF_INET == a->ss_family) {
        return 0
               == memcmp(&((const struct sockaddr_in *) a)->sin_addr,
                         &((const struct sockaddr_in *) b)->sin_addr, sizeof(struct in_addr));
    }
    return 0
           == memcmp(&((const struct sockaddr_in6 *) a)->sin6_addr,
                     &((const struct sockaddr_in6 *) b)->sin6_addr, sizeof(struct in6_addr));
}

static void mca_btl_ofi_host_name(const struct sockaddr_storage *host, char *buf, size_t len)
{
    const void *ip = AF_INET == host->ss_family
                         ? (const void *) &((const struct sockaddr_in *) host)->sin_addr
                         : (const void *) &((const struct sockaddr_in6 *) host)->sin6_addr;
    if (NULL == inet_ntop(host->ss_family, ip, buf, (socklen_t) len)) {
        snprintf(buf, len, "?");
    }
}

/* A refusal from a live host comes back within a round trip: wait that
 * long for it here, so that a peer that died is named before the runtime
 * tears the job down; anything slower is left to the periodic check. */
#define MCA_BTL_OFI_SUSPECT_WAIT_MS 200

/* room for why a peer was lost (the lost-peer line adds who and where) */
#define MCA_BTL_OFI_WHY_LEN 480

/* most milliseconds between two looks at stalled peers on other hosts */
#define MCA_BTL_OFI_STALL_SCAN_MS 100

/* a liveness connection to a peer's listener (mca_btl_ofi_live_check) */
enum {
    MCA_BTL_OFI_LIVE_NONE = 0,   /* not opened (yet) */
    MCA_BTL_OFI_LIVE_CONNECTING, /* its kernel has not answered yet */
    MCA_BTL_OFI_LIVE_UP,         /* open, not yet accepted by the peer itself */
    MCA_BTL_OFI_LIVE_HEARD,      /* accepted by the peer: its end tells whether it finalized */
    MCA_BTL_OFI_LIVE_DONE        /* closed: the peer finalized, or no verdict to be had */
};
/* the bytes a process writes on a liveness connection made to it: when
 * it accepts it, and as it finalizes */
#define MCA_BTL_OFI_LIVE_HELLO 'H'
#define MCA_BTL_OFI_LIVE_BYE 'B'
/* liveness connections of each kind (made, accepted) per module at most,
 * and never more than this fraction of the process's file descriptors */
#define MCA_BTL_OFI_LIVE_MAX 256
#define MCA_BTL_OFI_LIVE_FD_SHARE 8

/* Start connecting to a liveness listener without waiting: *FD is the
 * socket (-1 when none could be made); returns 0 when accepted already,
 * EINPROGRESS while under way, else why not (ECONNREFUSED: the host
 * answered, the process is gone). */
static int mca_btl_ofi_probe_connect(const struct sockaddr_storage *host, int *fd)
{
    socklen_t len =
        AF_INET == host->ss_family ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);

    *fd = socket(host->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (*fd < 0) {
        return errno;
    }
    return 0 == connect(*fd, (const struct sockaddr *) host, len) ? 0 : errno;
}

/* The same, waiting up to WAIT_MS for the verdict (EINPROGRESS: none). */
static int mca_btl_ofi_probe_now(const struct sockaddr_storage *host, int wait_ms)
{
    struct pollfd pfd = {.events = POLLOUT};
    socklen_t len = sizeof(int);
    int err = mca_btl_ofi_probe_connect(host, &pfd.fd);

    if (pfd.fd < 0) {
        return err;
    }
    if (EINPROGRESS == err && 1 == poll(&pfd, 1, wait_ms)
        && 0 != getsockopt(pfd.fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
        err = errno;
    }
    close(pfd.fd);
    return err;
}

void mca_btl_ofi_endpoint_suspect(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    char name[INET6_ADDRSTRLEN], why[MCA_BTL_OFI_WHY_LEN];
    double now;
    int err;

    if (NULL == endpoint || mca_btl_ofi_endpoint_check(module, endpoint) || endpoint->checkable
        || 0 == endpoint->host.ss_family || endpoint->lost || endpoint->suspect) {
        return;
    }
    /* a post that keeps failing (sockets refuses every write to a dead
     * peer at once, thousands a second) probes once a second at most */
    now = mca_btl_ofi_seconds();
    if (now - endpoint->probed_at < 1.0) {
        return;
    }
    endpoint->probed_at = now;
    err = mca_btl_ofi_probe_now(&endpoint->host, MCA_BTL_OFI_SUSPECT_WAIT_MS);
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "probe of peer %s after an error: %s",
                        OPAL_NAME_PRINT(endpoint->proc->proc_name),
                        EINPROGRESS == err ? "no answer yet"
                        : 0 == err         ? "alive"
                                           : strerror(err));
    if (ECONNREFUSED == err) {
        mca_btl_ofi_host_name(&endpoint->host, name, sizeof(name));
        snprintf(why, sizeof(why),
                 "the process no longer exists (an operation to it failed, and its host %s "
                 "refused our liveness probe)",
                 name);
        endpoint->dead = true;
        mca_btl_ofi_endpoint_lost(module, endpoint, why);
    } else if (0 != err) {
        endpoint->suspect = true; /* no verdict yet: the next check probes it */
    }
}

static void mca_btl_ofi_probe_start(mca_btl_ofi_module_t *module,
                                    const struct sockaddr_storage *host, double now,
                                    double stalled_since)
{
    mca_btl_ofi_probe_t *probe, *grown;

    for (int i = 0; i < module->num_probes; ++i) {
        if (mca_btl_ofi_same_addr(&module->probes[i].host, host)) {
            return;
        }
    }
    grown = realloc(module->probes, (size_t) (module->num_probes + 1) * sizeof(*grown));
    if (NULL == grown) {
        return;
    }
    module->probes = grown;
    probe = module->probes + module->num_probes;
    memcpy(&probe->host, host, sizeof(*host));
    probe->started = now;
    probe->stalled_since = stalled_since;
    probe->err = mca_btl_ofi_probe_connect(host, &probe->fd);
    if (probe->fd < 0) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "cannot probe a peer's host: socket: %s",
                            strerror(probe->err));
        return;
    }
    module->num_probes++;
}

/* 0: the peer's listener accepted; EINPROGRESS: not yet; ECONNREFUSED:
 * its host answered, the process is gone; else why its host is lost. */
static int mca_btl_ofi_probe_verdict(mca_btl_ofi_probe_t *probe, double now)
{
    struct pollfd pfd = {.fd = probe->fd, .events = POLLOUT};
    socklen_t len = sizeof(int);
    int err = 0;

    if (EINPROGRESS != probe->err) {
        return probe->err;
    }
    if (1 == poll(&pfd, 1, 0)) {
        if (0 != getsockopt(probe->fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
            err = errno;
        }
        return err;
    }
    if (now - probe->started >= (double) mca_btl_ofi_component.peer_probe_timeout) {
        return ETIMEDOUT;
    }
    return EINPROGRESS;
}

/* Under the module lock: start probes for stalled peers' hosts, collect
 * the peers of hosts found lost (retained) into lost[] (room for every
 * endpoint), with the probe's verdict in errs[]; returns how many. */
static int mca_btl_ofi_hosts_check(mca_btl_ofi_module_t *module, double now,
                                   mca_btl_ofi_endpoint_t **lost, char (*why)[MCA_BTL_OFI_WHY_LEN],
                                   int *errs)
{
    double after = mca_btl_ofi_component.peer_probe_after;
    double most = after > 8.0 ? after : 8.0;
    mca_btl_ofi_endpoint_t *endpoint;
    int n = 0;

    if (after <= 0.0) {
        return 0;
    }
    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        /* with several rails a message the provider completed is owed too
         * until the peer acknowledges it: a cut link may hold it (ofi_rxm
         * completes once TCP took it), and nothing else would stand still
         * (read unlocked: a late value only delays the check) */
        uint32_t unacked = endpoint->tx_seq - endpoint->tx_acked;
        int64_t done = endpoint->completed + (int64_t) endpoint->tx_acked;
        if (endpoint->lost || endpoint->checkable || 0 == endpoint->host.ss_family) {
            continue;
        }
        if (endpoint->suspect) {
            endpoint->suspect = false;
            mca_btl_ofi_probe_start(module, &endpoint->host, now, now);
        } else if ((endpoint->posted == endpoint->completed && 0 == unacked)
                   || done != endpoint->seen_completed || 0.0 == endpoint->stall_since) {
            endpoint->seen_completed = done;
            endpoint->stall_began = endpoint->stall_since = now;
            endpoint->probe_wait = after;
        } else if (now - endpoint->stall_since >= endpoint->probe_wait) {
            /* a peer that answers but stays busy is probed less and less
             * often, so that a long computation outside MPI does not fill
             * its listener's queue (it empties it only when it progresses) */
            endpoint->stall_since = now;
            endpoint->probe_wait =
                2.0 * endpoint->probe_wait < most ? 2.0 * endpoint->probe_wait : most;
            mca_btl_ofi_probe_start(module, &endpoint->host, now, endpoint->stall_began);
        }
    }
    for (int i = 0; i < module->num_probes; ++i) {
        mca_btl_ofi_probe_t *probe = module->probes + i;
        char name[INET6_ADDRSTRLEN];
        int err = mca_btl_ofi_probe_verdict(probe, now);

        if (EINPROGRESS == err) {
            continue;
        }
        mca_btl_ofi_host_name(&probe->host, name, sizeof(name));
        OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
            if (0 == err) {
                break;
            }
            if (endpoint->lost) {
                continue;
            }
            if (ECONNREFUSED == err && mca_btl_ofi_same_addr(&endpoint->host, &probe->host)) {
                snprintf(why[n], sizeof(why[n]),
                         "the process no longer exists (its host %s refused our liveness "
                         "probe; our operations to it stood still %.1f s)",
                         name, now - probe->stalled_since);
            } else if (ECONNREFUSED != err
                       && mca_btl_ofi_same_host(&endpoint->host, &probe->host)) {
                snprintf(why[n], sizeof(why[n]),
                         "its host %s does not answer (probe: %s): host down or network "
                         "link cut; our operations to it stood still %.1f s",
                         name, strerror(err), now - probe->stalled_since);
            } else {
                continue;
            }
            OBJ_RETAIN(endpoint);
            errs[n] = err;
            lost[n++] = endpoint;
        }
        if (probe->fd >= 0) {
            close(probe->fd);
        }
        module->probes[i--] = module->probes[--module->num_probes];
    }
    return n;
}

/* Our liveness listener, on the address the provider uses; its port goes
 * into the modex (0 when there is none: peers then never probe us). */
static uint16_t mca_btl_ofi_probe_listen(mca_btl_ofi_module_t *module, const uint8_t *addr,
                                         size_t len)
{
    struct rlimit lim;
    struct sockaddr_storage ss;
    socklen_t sslen;
    int fd;

    if (!mca_btl_ofi_ip_provider(module) || len < sizeof(struct sockaddr_in)) {
        return 0;
    }
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, addr, len < sizeof(ss) ? len : sizeof(ss));
    if (AF_INET == ss.ss_family) {
        ((struct sockaddr_in *) &ss)->sin_port = 0;
        sslen = sizeof(struct sockaddr_in);
    } else if (AF_INET6 == ss.ss_family && len >= sizeof(struct sockaddr_in6)) {
        ((struct sockaddr_in6 *) &ss)->sin6_port = 0;
        sslen = sizeof(struct sockaddr_in6);
    } else {
        return 0;
    }
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "liveness listener: socket: %s",
                            strerror(errno));
        return 0;
    }
    if (0 != bind(fd, (struct sockaddr *) &ss, sslen) || 0 != listen(fd, 4096)
        || 0 != getsockname(fd, (struct sockaddr *) &ss, &sslen)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "liveness listener: %s", strerror(errno));
        close(fd);
        return 0;
    }
    module->probe_listener = fd;
    module->live_max = MCA_BTL_OFI_LIVE_MAX;
    if (0 == getrlimit(RLIMIT_NOFILE, &lim) && RLIM_INFINITY != lim.rlim_cur
        && lim.rlim_cur / MCA_BTL_OFI_LIVE_FD_SHARE < (rlim_t) module->live_max) {
        module->live_max = (int) (lim.rlim_cur / MCA_BTL_OFI_LIVE_FD_SHARE);
    }
    return ntohs(AF_INET == ss.ss_family ? ((struct sockaddr_in *) &ss)->sin_port
                                         : ((struct sockaddr_in6 *) &ss)->sin6_port);
}

/* Accept the connections peers made to our listener (probes, which
 * their kernel completed already, and liveness connections): each is kept
 * until its peer closes it (mca_btl_ofi_live_check), so that a liveness
 * connection hears our goodbye when we finalize. Emptying the queue keeps
 * it from filling. */
static void mca_btl_ofi_probe_drain(mca_btl_ofi_module_t *module)
{
    int fd;

    if (module->probe_listener <= 0) {
        return;
    }
    while ((fd = accept4(module->probe_listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        static const char hello = MCA_BTL_OFI_LIVE_HELLO;
        int *grown = NULL;

        /* past the limit, closed without a hello: the peer takes no
         * verdict from that end (see mca_btl_ofi_live_check) */
        if (module->num_live_in < module->live_max) {
            grown = realloc(module->live_in, (size_t) (module->num_live_in + 1) * sizeof(*grown));
        }
        if (NULL == grown) {
            close(fd);
            continue;
        }
        module->live_in = grown;
        module->live_in[module->num_live_in++] = fd;
        (void) send(fd, &hello, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
}

/* Finalize: our goodbye on every connection peers keep to us, so that
 * none of them takes our end for a death, then the listener closed. */
void mca_btl_ofi_probes_fini(mca_btl_ofi_module_t *module)
{
    static const char bye = MCA_BTL_OFI_LIVE_BYE;

    mca_btl_ofi_probe_drain(module);
    for (int i = 0; i < module->num_live_in; ++i) {
        (void) send(module->live_in[i], &bye, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        close(module->live_in[i]);
    }
    free(module->live_in);
    module->live_in = NULL;
    module->num_live_in = 0;
    if (module->probe_listener > 0) {
        close(module->probe_listener);
        module->probe_listener = 0;
    }
    for (int i = 0; i < module->num_probes; ++i) {
        if (module->probes[i].fd >= 0) {
            close(module->probes[i].fd);
        }
    }
    free(module->probes);
    module->probes = NULL;
    module->num_probes = 0;
}

/*
 * Liveness connections. A peer on another host that dies while nothing
 * of ours waits on it gives no sign through the provider before the
 * runtime ends the job, naming nobody (two-sided traffic: eager sends
 * complete at once, a rendezvous waits in ob1, not here). Its kernel,
 * though, closes every socket the process held. So once we have posted to
 * such a peer, we keep a connection open to its liveness listener; a peer
 * that ends normally writes one goodbye byte on it from its finalize. The
 * connection closing without it means the process ended without
 * MPI_Finalize: the peer is lost, named at the next check (a tenth of a
 * second), whether or not anything is owed to it. A host that went down
 * or whose link was cut closes nothing; the connection's TCP keepalive
 * (below) and the stall probes cover those.
 */

/* TCP keepalive on a liveness connection: the kernels answer it whatever
 * the processes do, so it finds a link that failed while nothing of ours
 * is in flight (a message the provider completed before delivery may be
 * lost with it, and nothing would stall): about 5 s after the link went,
 * the connection fails with ETIMEDOUT and the peer is probed. Best
 * effort: without it, the stall probes still watch the peer. */
static void mca_btl_ofi_live_keepalive(int fd)
{
    int on = 1, idle = 2, intvl = 1, count = 3;

    (void) setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
    (void) setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    (void) setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    (void) setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
}

static void mca_btl_ofi_live_open(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                  size_t open)
{
    int err;

    if (open >= (size_t) module->live_max) {
        endpoint->live_state = MCA_BTL_OFI_LIVE_DONE; /* the stall probes still watch it */
        return;
    }
    err = mca_btl_ofi_probe_connect(&endpoint->host, &endpoint->live_fd);

    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_TRACE, "liveness connection to peer %s: %s",
                        OPAL_NAME_PRINT(endpoint->proc->proc_name),
                        0 == err ? "open" : strerror(err));
    if (0 == err || EINPROGRESS == err) {
        endpoint->live_state = 0 == err ? MCA_BTL_OFI_LIVE_UP : MCA_BTL_OFI_LIVE_CONNECTING;
        mca_btl_ofi_live_keepalive(endpoint->live_fd);
        return;
    }
    /* no verdict from a refused connection: the stall probes judge the
     * peer if work of ours waits on it (it may have finalized already) */
    if (endpoint->live_fd >= 0) {
        close(endpoint->live_fd);
        endpoint->live_fd = -1;
    }
    endpoint->live_state = MCA_BTL_OFI_LIVE_DONE;
}

static void mca_btl_ofi_live_close(mca_btl_ofi_endpoint_t *endpoint)
{
    close(endpoint->live_fd);
    endpoint->live_fd = -1;
    endpoint->live_state = MCA_BTL_OFI_LIVE_DONE;
}

/* Under the module lock: open liveness connections to the peers we posted
 * to, look at all of them and at the ones peers keep to us (closed by
 * their peer: closed here too). Peers whose connection closed without a
 * goodbye are retained into lost[] with why[]; returns how many. */
static int mca_btl_ofi_live_check(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t **lost,
                                  char (*why)[MCA_BTL_OFI_WHY_LEN])
{
    mca_btl_ofi_endpoint_t *endpoint, **owner;
    struct pollfd *pfds;
    size_t count = 0, k = 0;
    int n = 0;

    /* COUNT: our connections so far, then those peers keep to us too */
    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        if (MCA_BTL_OFI_LIVE_NONE == endpoint->live_state && !endpoint->checkable && !endpoint->lost
            && 0 != endpoint->host.ss_family && endpoint->posted > 0) {
            mca_btl_ofi_live_open(module, endpoint, count);
        }
        count += endpoint->live_fd >= 0;
    }
    count += (size_t) module->num_live_in;
    if (0 == count) {
        return 0;
    }
    pfds = malloc(count * (sizeof(*pfds) + sizeof(*owner)));
    if (NULL == pfds) {
        return 0;
    }
    owner = (mca_btl_ofi_endpoint_t **) (pfds + count);
    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        if (endpoint->live_fd >= 0) {
            pfds[k].fd = endpoint->live_fd;
            pfds[k].events = MCA_BTL_OFI_LIVE_CONNECTING == endpoint->live_state ? POLLOUT : POLLIN;
            pfds[k].revents = 0;
            owner[k++] = endpoint;
        }
    }
    for (int i = 0; i < module->num_live_in; ++i) {
        pfds[k].fd = module->live_in[i];
        pfds[k].events = POLLIN;
        pfds[k].revents = 0;
        owner[k++] = NULL;
    }
    if (poll(pfds, (nfds_t) k, 0) <= 0) {
        free(pfds);
        return 0;
    }
    for (size_t i = 0; i < k; ++i) {
        char buf[16], name[INET6_ADDRSTRLEN];
        socklen_t len = sizeof(int);
        ssize_t got;
        bool heard;
        int err = 0;

        endpoint = owner[i];
        if (0 == pfds[i].revents) {
            continue;
        }
        if (NULL == endpoint) {
            /* a peer's connection to us: only its end matters, to it */
            got = recv(pfds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (0 == got || (got < 0 && EAGAIN != errno && EWOULDBLOCK != errno)) {
                close(pfds[i].fd);
                pfds[i].fd = -1;
            }
            continue;
        }
        if (MCA_BTL_OFI_LIVE_CONNECTING == endpoint->live_state) {
            if (0 != getsockopt(endpoint->live_fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
                err = errno;
            }
            if (0 == err) {
                endpoint->live_state = MCA_BTL_OFI_LIVE_UP;
            } else {
                mca_btl_ofi_live_close(endpoint); /* no verdict (see live_open) */
            }
            continue;
        }
        got = recv(endpoint->live_fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (got < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
            continue;
        }
        err = got < 0 ? errno : 0;
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_TRACE,
                            "liveness connection to peer %s: %zd byte(s)%s%s",
                            OPAL_NAME_PRINT(endpoint->proc->proc_name), got, 0 != err ? ", " : "",
                            0 != err ? strerror(err) : "");
        if (got > 0 && NULL != memchr(buf, MCA_BTL_OFI_LIVE_BYE, (size_t) got)) {
            mca_btl_ofi_live_close(endpoint); /* it finalized */
            continue;
        }
        if (got > 0) {
            if (NULL != memchr(buf, MCA_BTL_OFI_LIVE_HELLO, (size_t) got)) {
                endpoint->live_state = MCA_BTL_OFI_LIVE_HEARD;
            }
            continue;
        }
        if (ETIMEDOUT == err || EHOSTUNREACH == err || ENETUNREACH == err) {
            /* keepalive unanswered: the host or the link, not the process
             * (which may still be reached on another rail): probe it */
            mca_btl_ofi_live_close(endpoint);
            endpoint->suspect = true;
            continue;
        }
        /* closed. Before its hello, the peer may just have finalized
         * (the connection reached its listener's queue as it closed) or
         * refused it (too many): no verdict */
        heard = MCA_BTL_OFI_LIVE_HEARD == endpoint->live_state;
        mca_btl_ofi_live_close(endpoint);
        if (!heard || endpoint->lost) {
            continue;
        }
        mca_btl_ofi_host_name(&endpoint->host, name, sizeof(name));
        snprintf(why[n], sizeof(why[n]),
                 "the process ended without MPI_Finalize (its host %s closed our liveness "
                 "connection to it%s%s)",
                 name, 0 != err ? ": " : "", 0 != err ? strerror(err) : "");
        OBJ_RETAIN(endpoint);
        lost[n++] = endpoint;
    }
    /* the peers' connections that closed leave the list */
    {
        size_t base = k - (size_t) module->num_live_in;
        int kept = 0;

        for (int i = 0; i < module->num_live_in; ++i) {
            if (pfds[base + (size_t) i].fd >= 0) {
                module->live_in[kept++] = module->live_in[i];
            }
        }
        module->num_live_in = kept;
    }
    free(pfds);
    return n;
}

mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_on_rail(mca_btl_ofi_endpoint_t *endpoint,
                                                     mca_btl_ofi_module_t *rail)
{
    mca_btl_ofi_endpoint_t *peer = endpoint->rail_peers[rail->rail];

    if (OPAL_LIKELY(NULL != peer)) {
        return peer;
    }
    MCA_BTL_OFI_LOCK(&rail->lock);
    if (OPAL_SUCCESS
        != opal_hash_table_get_value_uint64(
            &rail->endpoints_by_proc, (uint64_t) (uintptr_t) endpoint->proc, (void **) &peer)) {
        peer = NULL;
    }
    MCA_BTL_OFI_UNLOCK(&rail->lock);
    endpoint->rail_peers[rail->rail] = peer; /* racing threads store the same */
    return peer;
}

/*
 * Rail failover. A peer whose host does not answer on one rail may still
 * answer on another: then only this rail's link is cut (a cable, a switch
 * port). Its puts and gets in flight on the cut link are sent again on
 * the rail that answers (they write or read the same bytes twice at
 * most, which an access epoch allows), and every later operation for the
 * peer takes that rail (its endpoint's detour). Messages (of the pml and
 * of emulated atomics) are numbered per link with several rails: those
 * that may not have arrived are sent again with their numbers, and the
 * receiver takes each once (btl_ofi_frag.c). An atomic of the provider in
 * flight on the cut link cannot be sent again: it may have been applied,
 * and twice would be wrong; with one in flight the peer is lost, as
 * before. The peer is told over the rail that answers, so that its own
 * traffic to us leaves the cut link before it stalls there.
 */

/* Leave ENDPOINT's rail (MODULE) for PEER, the same process's endpoint on
 * RAIL (or for the detour taken before). True when nothing is lost: what
 * was in flight could be moved; AGAIN (if not NULL) then says what was
 * sent again. */
static bool mca_btl_ofi_rail_failover(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint, mca_btl_ofi_module_t *rail,
                                      mca_btl_ofi_endpoint_t *peer, char *again, size_t len)
{
    int msgs, rdma;

    module->link_failed = true;
    mca_btl_ofi_seq_ack_again(module);
    if (NULL == endpoint->detour) {
        endpoint->detour_module = rail;
        opal_atomic_wmb();
        endpoint->detour = peer;
    }
    rdma = mca_btl_ofi_rdma_move(module, endpoint, endpoint->detour_module, endpoint->detour);
    msgs = mca_btl_ofi_frags_move(module, endpoint, endpoint->detour_module, endpoint->detour);
    if (msgs < 0) {
        return false;
    }
    if (NULL != again) {
        snprintf(again, len, "%d message%s and %d put%s or get%s in flight or unacknowledged", msgs,
                 1 == msgs ? "" : "s", rdma, 1 == rdma ? "" : "s", 1 == rdma ? "" : "s");
    }
    /* what remains counted is an atomic posted on the cut link: emulated,
     * its request or reply is sent again; the provider's cannot be known
     * applied or not */
    return module->amo_emulated || endpoint->posted == endpoint->completed;
}

/* Tell the peer at PEER (on RAIL, which works) that its rail PEER_RAIL's
 * link to our rail OUR_RAIL is cut. */
static void mca_btl_ofi_rail_cut_tell(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *rail = endpoint->detour_module;
    mca_btl_ofi_rail_cut_t msg;

    if (endpoint->told || !rail->messaging) {
        return; /* told before; or the peer finds out itself, when its traffic stalls */
    }
    endpoint->told = true;
    memset(&msg, 0, sizeof(msg));
    msg.hdr.type = MCA_BTL_OFI_MSG_RAIL_CUT;
    msg.hdr.origin = mca_btl_ofi_component.my_name;
    msg.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    msg.rail = (uint32_t) endpoint->peer_rail;
    msg.from_rail = (uint32_t) module->rail;
    mca_btl_ofi_msg_reply(mca_btl_ofi_context_get(rail), endpoint->detour, &msg, sizeof(msg));
}

/* The peer ENDPOINT of MODULE did not answer a probe: when another rail of
 * ours reaches it, fail over to that rail (true: the peer is not lost).
 * Otherwise WHY says what was seen. */
static bool mca_btl_ofi_rail_cut(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                 char *why, size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    char here[INET6_ADDRSTRLEN], there[INET6_ADDRSTRLEN], again[128];

    if (NULL != endpoint->detour) {
        /* failed over before: only what was queued on this rail then can
         * still stand still here */
        if (mca_btl_ofi_rail_failover(module, endpoint, NULL, NULL, NULL, 0)) {
            return true;
        }
        snprintf(why, len,
                 "the link of rail %d to it failed earlier (its traffic took rail %d since), and "
                 "an atomic posted on it before that is stuck there",
                 module->rail, endpoint->detour_module->rail);
        return false;
    }
    for (int r = 0; r < c->num_modules; ++r) {
        mca_btl_ofi_module_t *rail = c->modules[r];
        mca_btl_ofi_endpoint_t *peer;

        if (NULL == rail || rail == module) {
            continue;
        }
        peer = mca_btl_ofi_endpoint_on_rail(endpoint, rail);
        if (NULL == peer || peer->lost || peer->dead || NULL != peer->detour
            || 0 == peer->host.ss_family
            || 0 != mca_btl_ofi_probe_now(&peer->host, MCA_BTL_OFI_SUSPECT_WAIT_MS)) {
            continue;
        }
        mca_btl_ofi_host_name(&endpoint->host, here, sizeof(here));
        mca_btl_ofi_host_name(&peer->host, there, sizeof(there));
        if (!mca_btl_ofi_rail_failover(module, endpoint, rail, peer, again, sizeof(again))) {
            snprintf(why, len,
                     "its address %s on rail %d does not answer while %s on rail %d does: the "
                     "link of rail %d is cut or down, and an atomic to the peer was in flight on "
                     "it (btl/ofi cannot know whether the provider applied it, so it cannot send "
                     "it again on another rail)",
                     here, module->rail, there, rail->rail, module->rail);
            return false;
        }
        opal_output(0,
                    "btl/ofi on %s: peer %s on %s: its address %s on rail %d does not answer "
                    "while %s on rail %d does: the link of rail %d is cut or down; traffic to "
                    "this peer takes rail %d from now on (sent again on it: %s)",
                    opal_process_info.nodename, OPAL_NAME_PRINT(endpoint->proc->proc_name),
                    NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?",
                    here, module->rail, there, rail->rail, module->rail, rail->rail, again);
        mca_btl_ofi_rail_cut_tell(module, endpoint);
        return true;
    }
    return false;
}

mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_named(mca_btl_ofi_module_t *module, uint64_t origin)
{
    mca_btl_ofi_endpoint_t *endpoint = NULL;

    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_get_value_uint64(&module->endpoints_by_name, origin,
                                            (void **) &endpoint);
    if (NULL != endpoint) {
        OBJ_RETAIN(endpoint);
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    return endpoint;
}

void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_module_t *module = context->module, *cut;
    mca_btl_ofi_endpoint_t *live = NULL, *endpoint = NULL;
    mca_btl_ofi_rail_cut_t msg;
    char why[MCA_BTL_OFI_WHY_LEN], again[128];

    if (len < sizeof(msg)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short rail notice");
        return;
    }
    memcpy(&msg, buf, sizeof(msg));
    if (msg.rail >= (uint32_t) c->num_modules || NULL == (cut = c->modules[msg.rail])
        || cut == module) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a rail notice for rail %u",
                            (unsigned) msg.rail);
        return;
    }
    live = mca_btl_ofi_endpoint_named(module, msg.hdr.origin);
    if (NULL == live) {
        return; /* a peer we no longer know (its procs were deleted) */
    }
    endpoint = mca_btl_ofi_endpoint_named(cut, msg.hdr.origin);
    if (NULL != endpoint && !endpoint->lost) {
        why[0] = '\0';
        if (NULL != endpoint->detour) {
            /* found by us too: only the count below is new */
        } else if (mca_btl_ofi_rail_failover(cut, endpoint, module, live, again, sizeof(again))) {
            opal_output(0,
                        "btl/ofi on %s: peer %s on %s finds the link between its rail %u and "
                        "our rail %d cut or down; traffic to this peer takes rail %d from now on "
                        "(sent again on it: %s)",
                        opal_process_info.nodename, OPAL_NAME_PRINT(live->proc->proc_name),
                        NULL != live->proc->proc_hostname ? live->proc->proc_hostname : "?",
                        (unsigned) msg.from_rail, cut->rail, module->rail, again);
            mca_btl_ofi_rail_cut_tell(cut, endpoint);
        } else {
            snprintf(why, sizeof(why),
                     "it finds the link between its rail %u and our rail %d cut or down, and an "
                     "atomic of ours to it was in flight on that link (btl/ofi cannot know "
                     "whether the provider applied it, so it cannot send it again on another "
                     "rail)",
                     (unsigned) msg.from_rail, cut->rail);
        }
        if ('\0' != why[0]) {
            endpoint->dead = true;
            mca_btl_ofi_endpoint_lost(cut, endpoint, why);
        }
    }
    if (NULL != endpoint) {
        OBJ_RELEASE(endpoint);
    }
    OBJ_RELEASE(live);
}

/*
 * A dead peer is marked, so that the next operation to it fails and reports
 * it; it is reported at once when work of ours waits on it. A peer that
 * went away while nothing was owed to it (a job's ranks leave
 * MPI_Finalize at different times, a disconnected spawned job exits) ends
 * nothing. Peers on other hosts are probed (above).
 */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_endpoint_t *endpoint, *dead = NULL, **lost = NULL;
    char(*why)[MCA_BTL_OFI_WHY_LEN] = NULL;
    int interval = mca_btl_ofi_component.peer_check_interval, nlost = 0, n, *errs = NULL;
    size_t count;
    bool proc_due;
    double now;

    if (interval <= 0 || module->closing || 0 != MCA_BTL_OFI_TRYLOCK(&module->lock)) {
        return;
    }
    now = mca_btl_ofi_seconds();
    if (now < module->next_check) {
        MCA_BTL_OFI_UNLOCK(&module->lock);
        return;
    }
    /* stalls of peers on other hosts are looked at every tenth of a second
     * at least (a walk of the list comparing counters, cheap), so that a
     * dead host is named within a second, before the runtime, which ends
     * the job about a second after it loses a daemon; /proc, which costs a
     * file read per same-host peer, every btl_ofi_peer_check_interval ms */
    module->next_check =
        now
        + 1e-3
              * (double) (interval < MCA_BTL_OFI_STALL_SCAN_MS ? interval
                                                               : MCA_BTL_OFI_STALL_SCAN_MS);
    mca_btl_ofi_probe_drain(module);
    proc_due = now >= module->next_proc;
    if (proc_due) {
        module->next_proc = now + 1e-3 * (double) interval;
    }
    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        if (!proc_due || !endpoint->checkable || endpoint->lost) {
            continue;
        }
        if (!endpoint->dead) {
            if (!mca_btl_ofi_endpoint_gone(endpoint)) {
                continue;
            }
            endpoint->dead = true;
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "peer %s (pid %u) no longer exists",
                                OPAL_NAME_PRINT(endpoint->proc->proc_name),
                                (unsigned) endpoint->pid);
        }
        if (NULL == dead) {
            dead = endpoint;
            OBJ_RETAIN(dead);
        }
    }
    /* room for every endpoint twice: a probe and its liveness connection
     * may both find a peer lost (reported once, mca_btl_ofi_endpoint_lost) */
    count = 2 * opal_list_get_size(&module->endpoints);
    if (count > 0) {
        lost = malloc(count * sizeof(*lost));
        why = malloc(count * sizeof(*why));
        errs = malloc(count * sizeof(*errs));
        if (NULL != lost && NULL != why && NULL != errs) {
            nlost = mca_btl_ofi_hosts_check(module, now, lost, why, errs);
            n = mca_btl_ofi_live_check(module, lost + nlost, why + nlost);
            for (int i = nlost; i < nlost + n; ++i) {
                errs[i] = ECONNREFUSED; /* the process is gone, its host and link are not */
            }
            nlost += n;
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    for (int i = 0; i < nlost; ++i) {
        if (ECONNREFUSED != errs[i] && !lost[i]->lost
            && mca_btl_ofi_rail_cut(module, lost[i], why[i], sizeof(why[i]))) {
            OBJ_RELEASE(lost[i]);
            continue;
        }
        lost[i]->dead = true;
        mca_btl_ofi_endpoint_lost(module, lost[i], why[i]);
        OBJ_RELEASE(lost[i]);
    }
    free(lost);
    free(why);
    free(errs);
    if (NULL != dead) {
        if (mca_btl_ofi_owed(module, dead)) {
            (void) mca_btl_ofi_endpoint_check(module, dead);
        }
        OBJ_RELEASE(dead);
    }
    if (module->track) {
        /* what peers sent while traffic paused is acknowledged now, not
         * 32 messages later: they keep copies until then */
        mca_btl_ofi_seq_ack_due(module);
    }
}

/* One module's part of the modex: its addresses and who we are. */
static int mca_btl_ofi_modex_blob(mca_btl_ofi_module_t *module, mca_btl_ofi_modex_t **blob_out,
                                  size_t *size_out)
{
    int num_addrs = (NULL != module->sep) ? 1 : module->num_contexts;
    mca_btl_ofi_modex_t *blob;
    size_t addr_len = 0, blob_size, len;
    uint8_t probe[1];
    int rc, i;

    /* ask every endpoint for its address size (-FI_ETOOSMALL reports it):
     * some providers' names are strings whose length grows with the
     * endpoint's index (shm), so the stride is the longest one and shorter
     * names are zero-padded */
    for (i = 0; i < num_addrs; ++i) {
        struct fid *fid = (NULL != module->sep) ? &module->sep->fid : &module->contexts[i].ep->fid;
        len = 0;
        rc = fi_getname(fid, probe, &len);
        if (0 != rc && -FI_ETOOSMALL != rc) {
            MCA_BTL_OFI_REPORT("fi_getname", rc);
            return OPAL_ERROR;
        }
        if (len > addr_len) {
            addr_len = len;
        }
    }

    blob_size = sizeof(*blob) + (size_t) num_addrs * addr_len;
    blob = calloc(1, blob_size);
    if (NULL == blob) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    blob->layout = MCA_BTL_OFI_MODEX_LAYOUT;
    blob->num_contexts = (uint16_t) module->num_contexts;
    blob->num_addrs = (uint16_t) num_addrs;
    blob->addr_len = (uint32_t) addr_len;
    blob->sep = (NULL != module->sep);
    mca_btl_ofi_identity(blob);

    for (i = 0; i < num_addrs; ++i) {
        struct fid *fid = (NULL != module->sep) ? &module->sep->fid : &module->contexts[i].ep->fid;
        len = addr_len;
        rc = mca_btl_ofi_getname(fid, blob->addrs + (size_t) i * addr_len, &len);
        if (OPAL_SUCCESS != rc) {
            free(blob);
            return rc;
        }
    }
    /* each rail its own listener, on its own address: a probe then tests
     * the link the rail's traffic takes */
    blob->probe_port = mca_btl_ofi_probe_listen(module, blob->addrs, addr_len);
    *blob_out = blob;
    *size_out = blob_size;
    return OPAL_SUCCESS;
}

/* each part starts 8-byte aligned (its identity fields are 64-bit) */
#define MCA_BTL_OFI_MODEX_PAD(n) (((n) + 7) & ~(size_t) 7)

int mca_btl_ofi_modex_send(mca_btl_ofi_module_t **modules, int count)
{
    mca_btl_ofi_modex_t *blobs[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_modex_rails_t *all;
    size_t sizes[MCA_BTL_OFI_MAX_RAILS], total = sizeof(*all);
    char *at;
    int rc = OPAL_SUCCESS, made;

    for (made = 0; made < count; ++made) {
        rc = mca_btl_ofi_modex_blob(modules[made], &blobs[made], &sizes[made]);
        if (OPAL_SUCCESS != rc) {
            goto out_free_blobs;
        }
        total += MCA_BTL_OFI_MODEX_PAD(sizes[made]);
    }
    all = calloc(1, total);
    if (NULL == all) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_blobs;
    }
    all->layout = MCA_BTL_OFI_MODEX_RAILS_LAYOUT;
    all->count = (uint32_t) count;
    at = (char *) (all + 1);
    for (int i = 0; i < count; ++i) {
        all->sizes[i] = (uint32_t) sizes[i];
        memcpy(at, blobs[i], sizes[i]);
        at += MCA_BTL_OFI_MODEX_PAD(sizes[i]);
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_ofi_component.super.btl_version, all, total);
    if (OPAL_SUCCESS != rc) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "publishing addresses in the modex failed: %d", rc);
    }
    free(all);
out_free_blobs:
    while (made-- > 0) {
        free(blobs[made]);
    }
    return rc;
}

/* Whether a peer's rail (its first address) lies in this module's subnet. */
static bool mca_btl_ofi_rail_reaches(const mca_btl_ofi_module_t *module,
                                     const mca_btl_ofi_modex_t *blob)
{
    const uint8_t *bytes;
    int whole = module->net_bits / 8, rest = module->net_bits % 8;
    struct sockaddr sa;

    if (blob->addr_len < sizeof(struct sockaddr_in)) {
        return false;
    }
    memcpy(&sa, blob->addrs, sizeof(sa));
    if (sa.sa_family != module->net_family) {
        return false;
    }
    if (AF_INET == sa.sa_family) {
        bytes = blob->addrs + offsetof(struct sockaddr_in, sin_addr);
    } else if (AF_INET6 == sa.sa_family && blob->addr_len >= sizeof(struct sockaddr_in6)) {
        bytes = blob->addrs + offsetof(struct sockaddr_in6, sin6_addr);
    } else {
        return false;
    }
    return 0 == memcmp(bytes, module->net, (size_t) whole)
           && (0 == rest || 0 == ((bytes[whole] ^ module->net[whole]) & (0xff << (8 - rest))));
}

/* The peer's rails, checked; false when the blob is malformed. */
static bool mca_btl_ofi_rails_parse(const mca_btl_ofi_modex_rails_t *all, size_t size,
                                    const mca_btl_ofi_modex_t **blobs)
{
    const char *at = (const char *) (all + 1), *end = (const char *) all + size;

    if (size < sizeof(*all) || MCA_BTL_OFI_MODEX_RAILS_LAYOUT != all->layout || 0 == all->count
        || all->count > MCA_BTL_OFI_MAX_RAILS) {
        return false;
    }
    for (uint32_t i = 0; i < all->count; ++i) {
        const mca_btl_ofi_modex_t *blob = (const mca_btl_ofi_modex_t *) at;
        if (at > end || all->sizes[i] < sizeof(*blob) || all->sizes[i] > (size_t) (end - at)
            || MCA_BTL_OFI_MODEX_LAYOUT != blob->layout || 0 == blob->num_addrs
            || all->sizes[i] != sizeof(*blob) + (size_t) blob->num_addrs * blob->addr_len) {
            return false;
        }
        blobs[i] = blob;
        at += MCA_BTL_OFI_MODEX_PAD(all->sizes[i]);
    }
    return true;
}

/* The peer's rail this module talks to: the one on this module's subnet.
 * When no rail of ours shares a subnet with any of the peer's (routed
 * networks, or a provider without interfaces), rails pair by index. NULL:
 * this module does not reach the peer (another rail of ours does). */
static const mca_btl_ofi_modex_t *mca_btl_ofi_rail_pick(const mca_btl_ofi_module_t *module,
                                                        const mca_btl_ofi_modex_t **blobs,
                                                        uint32_t count)
{
    const mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    for (uint32_t i = 0; 0 != module->net_family && i < count; ++i) {
        if (mca_btl_ofi_rail_reaches(module, blobs[i])) {
            return blobs[i];
        }
    }
    for (int m = 0; m < c->num_modules; ++m) {
        for (uint32_t i = 0; NULL != c->modules[m] && 0 != c->modules[m]->net_family && i < count;
             ++i) {
            if (mca_btl_ofi_rail_reaches(c->modules[m], blobs[i])) {
                return NULL; /* that rail of ours pairs with it, not this one */
            }
        }
    }
    return (uint32_t) module->rail < count ? blobs[module->rail] : NULL;
}

int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                mca_btl_ofi_endpoint_t **ep_out)
{
    mca_btl_ofi_modex_rails_t *all = NULL;
    const mca_btl_ofi_modex_t *blob, *blobs[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_endpoint_t *endpoint;
    fi_addr_t *peer = NULL;
    size_t size = 0;
    int rc, i, inserted;
    bool bad;

    if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)
        && 0 == strcmp(module->info->fabric_attr->prov_name, "shm")) {
        /* shm's addresses name shared-memory files of this host */
        static bool told = false;
        if (!told) {
            told = true;
            opal_show_help(MCA_BTL_OFI_HELP_FILE, "node-local provider", true,
                           module->info->fabric_attr->prov_name, opal_process_info.nodename,
                           OPAL_NAME_PRINT(proc->proc_name));
        }
        return OPAL_ERR_UNREACH;
    }
    OPAL_MODEX_RECV(rc, &mca_btl_ofi_component.super.btl_version, &proc->proc_name, (void **) &all,
                    &size);
    if (OPAL_SUCCESS != rc || NULL == all) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "no modex entry from %s (rc %d): unreachable",
                            OPAL_NAME_PRINT(proc->proc_name), rc);
        return OPAL_ERR_UNREACH;
    }
    bad = !mca_btl_ofi_rails_parse(all, size, blobs);
    blob = bad ? NULL : mca_btl_ofi_rail_pick(module, blobs, all->count);
    if (bad) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "bad modex", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        rc = OPAL_ERR_UNREACH;
        goto out_free_blob;
    }
    if (NULL == blob) {
        /* another rail of ours may reach it: ob1 and osc/rdma use that one */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "rail %d: %s has no rail on this rail's subnet: not used for it",
                            module->rail, OPAL_NAME_PRINT(proc->proc_name));
        rc = OPAL_ERR_UNREACH;
        goto out_free_blob;
    }
    if ((0 != blob->sep) != (NULL != module->sep)) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "sep mismatch", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        rc = OPAL_ERR_UNREACH;
        goto out_free_blob;
    }

    peer = calloc(blob->num_addrs, sizeof(*peer));
    if (NULL == peer) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_blob;
    }
    endpoint = OBJ_NEW(mca_btl_ofi_endpoint_t);
    if (NULL == endpoint) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_peer;
    }
    endpoint->addrs = calloc(module->num_contexts, sizeof(fi_addr_t));
    if (NULL == endpoint->addrs) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_release_endpoint;
    }

    /* one address at a time: the blob's stride is the longest name, and
     * providers with string names walk a multi-address insert by string
     * length, not by our stride */
    for (i = 0; i < blob->num_addrs; ++i) {
        inserted = fi_av_insert(module->av, blob->addrs + (size_t) i * blob->addr_len, 1, &peer[i],
                                0, NULL);
        if (1 != inserted) {
            MCA_BTL_OFI_REPORT("fi_av_insert", inserted < 0 ? inserted : -FI_EADDRNOTAVAIL);
            rc = OPAL_ERR_UNREACH;
            goto out_release_endpoint;
        }
    }

    /* spread local contexts over the peer's contexts */
    for (i = 0; i < module->num_contexts; ++i) {
        if (blob->sep) {
            int target = i % (int) blob->num_contexts;
            endpoint->addrs[i] = fi_rx_addr(peer[0], target, MCA_BTL_OFI_RX_CTX_BITS);
        } else {
            endpoint->addrs[i] = peer[i % blob->num_addrs];
        }
    }
    endpoint->proc = proc;
    endpoint->peer_rail = 0;
    for (uint32_t r = 0; r < all->count; ++r) {
        if (blobs[r] == blob) {
            endpoint->peer_rail = (int) r;
        }
    }
    endpoint->peer_key_offset = 0 == endpoint->peer_rail
                                    ? offsetof(mca_btl_base_registration_handle_t, key)
                                    : offsetof(mca_btl_base_registration_handle_t, rail_keys)
                                          + (size_t) (endpoint->peer_rail - 1) * sizeof(uint64_t);
    memset(endpoint->rail_peers, 0, sizeof(endpoint->rail_peers));
    MCA_BTL_OFI_VERBOSE(
        MCA_BTL_OFI_VERBOSE_TRACE, "rail %d: peer %s through its rail %d (%u of its contexts, %s)",
        module->rail, OPAL_NAME_PRINT(proc->proc_name), endpoint->peer_rail,
        (unsigned) blob->num_contexts, blob->sep ? "scalable endpoint" : "plain endpoints");
    mca_btl_ofi_endpoint_identity(endpoint, blob);
    mca_btl_ofi_endpoint_host(module, endpoint, blob->addrs, blob->addr_len, blob->probe_port);
    /* /proc says nothing about a process on another node, even when the
     * hosts share a kernel and a pid namespace (containers): only peers
     * Open MPI places on this node are checked there */
    if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) {
        endpoint->checkable = false;
    }
    *ep_out = endpoint;
    rc = OPAL_SUCCESS;
    goto out_free_peer;

out_release_endpoint:
    OBJ_RELEASE(endpoint);
out_free_peer:
    free(peer);
out_free_blob:
    free(all);
    return rc;
}
