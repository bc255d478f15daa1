/*
 * btl/ofi peer liveness: who is alive.
 *
 * Same-host peers are looked up in /proc (their identity comes with their
 * modex entry); peers on other hosts are probed through a TCP listener of
 * theirs and, once we posted to them, watched through a liveness
 * connection that a finalizing process closes with a goodbye byte. The
 * periodic look (mca_btl_ofi_peers_scan) returns what it finds as
 * verdicts; btl_ofi_rails.c's peer check (mca_btl_ofi_peers_check, from
 * the progress callback) acts on them: a peer lost, or, with several
 * rails, one rail's link cut (a failover, not a death). Nothing here
 * calls up. Peers an operation was refused for are named from progress
 * too (mca_btl_ofi_refusals_report).
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_modex.h"

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

#include "opal/util/proc.h"

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

void mca_btl_ofi_identity(mca_btl_ofi_identity_t *blob)
{
    struct stat st;
    unsigned flags;
    char state;
    FILE *f;

    memset(blob, 0, sizeof(*blob));
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
void mca_btl_ofi_endpoint_identity(mca_btl_ofi_endpoint_t *endpoint,
                                   const mca_btl_ofi_identity_t *peer)
{
    static mca_btl_ofi_identity_t self;
    static bool known = false;

    if (!known) {
        mca_btl_ofi_identity(&self);
        known = true;
    }
    endpoint->live.checkable = 0 != peer->pid && 0 != peer->pidns && 0 != peer->start_time
                               && '\0' != self.boot_id[0] && self.pidns == peer->pidns
                               && 0 == strncmp(self.boot_id, peer->boot_id, sizeof(self.boot_id))
                               && self.pid != peer->pid;
    endpoint->live.pid = peer->pid;
    endpoint->live.start_time = peer->start_time;
}

static bool mca_btl_ofi_endpoint_gone(const mca_btl_ofi_endpoint_t *endpoint)
{
    uint64_t start_time;
    unsigned flags;
    char state;

    if (!mca_btl_ofi_proc_stat(endpoint->live.pid, &state, &flags, &start_time)) {
        return ENOENT == errno || ESRCH == errno;
    }
    return 'Z' == state || 'X' == state || (flags & MCA_BTL_OFI_PF_EXITING)
           || start_time != endpoint->live.start_time;
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
void mca_btl_ofi_endpoint_host(const mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                               const uint8_t *addr, size_t len, uint16_t port)
{
    struct sockaddr sa;

    if (!mca_btl_ofi_ip_provider(module) || 0 == port || len < sizeof(sa)) {
        return;
    }
    memcpy(&sa, addr, sizeof(sa));
    if ((AF_INET == sa.sa_family && len >= sizeof(struct sockaddr_in))
        || (AF_INET6 == sa.sa_family && len >= sizeof(struct sockaddr_in6))) {
        memcpy(&endpoint->live.host, addr,
               AF_INET == sa.sa_family ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
        if (AF_INET == sa.sa_family) {
            ((struct sockaddr_in *) &endpoint->live.host)->sin_port = htons(port);
        } else {
            ((struct sockaddr_in6 *) &endpoint->live.host)->sin6_port = htons(port);
        }
    }
}

/* Open MPI's MPI_Finalize state (ompi/runtime/mpiruntime.h, found at
 * init: mca_btl_ofi_component.mpi_state): OMPI_MPI_STATE_FINALIZE_STARTED
 * is 3 in Open MPI 4.x. Not found (a process without libmpi): never
 * finalizing. */
#define MCA_BTL_OFI_MPI_FINALIZE_STARTED 3

bool mca_btl_ofi_mpi_finalizing(void)
{
    const volatile int32_t *state = mca_btl_ofi_component.mpi_state;

    return NULL != state && *state >= MCA_BTL_OFI_MPI_FINALIZE_STARTED;
}

/* The verdict's one way out: the upper layer's error callback (ob1's ends
 * the job, printing INFO), or INFO printed where there is none. Once
 * MPI_Finalize began here, every peer has entered its own (Open MPI's
 * finalize fence comes first) and may exit: a message of ours still on
 * its way to it then fails (coll/ofi's done counts across hosts did, and
 * a probe of the exited peer's host was refused), which ended the job
 * with exit code 255 after every rank had finished its work. A peer that
 * really died then is the runtime's to report. */
void mca_btl_ofi_module_fatal(mca_btl_ofi_module_t *module, opal_proc_t *proc, char *info)
{
    if (module->closing) {
        return;
    }
    if (mca_btl_ofi_mpi_finalizing()) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "in MPI_Finalize, not an error: %s", info);
        return;
    }
    if (NULL != module->error_cb) {
        /* ob1's callback ends the job, printing INFO */
        module->error_cb(&module->super, MCA_BTL_ERROR_FLAGS_FATAL, proc, info);
    } else {
        opal_output(0, "%s", info);
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
    if (!endpoint->dead && !(endpoint->live.checkable && mca_btl_ofi_endpoint_gone(endpoint))) {
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
        if (endpoint->live.checkable && !endpoint->lost
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
    if (endpoint->lost) {
        return OPAL_ERR_UNREACH; /* named already */
    }
    /* An operation's path never stops the job itself: it marks the peer,
     * and the caller, told to progress and try again, lets the next
     * progress pass name it (mca_btl_ofi_refusals_report), which ends the
     * job through the upper layer; a retry after that is refused. */
    endpoint->live.refused = true;
    module->deferred = true;
    return OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_ofi_refusals_report(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_endpoint_t *endpoint, *found;

    do {
        found = NULL;
        if (0 != MCA_BTL_OFI_TRYLOCK(&module->lock)) {
            module->deferred = true; /* the next pass then */
            return;
        }
        OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
            if (endpoint->live.refused) {
                endpoint->live.refused = false;
                found = endpoint;
                OBJ_RETAIN(found);
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&module->lock);
        if (NULL != found) {
            (void) mca_btl_ofi_endpoint_check(module, found); /* dead: named once */
            OBJ_RELEASE(found);
        }
    } while (NULL != found);
}

static double mca_btl_ofi_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
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

void mca_btl_ofi_host_name(const struct sockaddr_storage *host, char *buf, size_t len)
{
    const void *ip = AF_INET == host->ss_family
                         ? (const void *) &((const struct sockaddr_in *) host)->sin_addr
                         : (const void *) &((const struct sockaddr_in6 *) host)->sin6_addr;
    if (NULL == inet_ntop(host->ss_family, ip, buf, (socklen_t) len)) {
        snprintf(buf, len, "?");
    }
}

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
int mca_btl_ofi_probe_now(const struct sockaddr_storage *host, int wait_ms)
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

static bool mca_btl_ofi_live_event(mca_btl_ofi_endpoint_t *endpoint, char *why, size_t why_len);

/* Under the module lock: whether our liveness connection to ENDPOINT's
 * peer closed without a goodbye now (WHY filled then). */
static bool mca_btl_ofi_live_closed_now(mca_btl_ofi_endpoint_t *endpoint, char *why, size_t why_len)
{
    struct pollfd pfd = {.fd = endpoint->live.fd, .events = POLLIN};

    return pfd.fd >= 0 && 1 == poll(&pfd, 1, 0) && 0 != pfd.revents
           && mca_btl_ofi_live_event(endpoint, why, why_len);
}

void mca_btl_ofi_endpoint_suspect(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    char name[INET6_ADDRSTRLEN], why[MCA_BTL_OFI_WHY_LEN];
    double now;
    bool gone;
    int err;

    if (NULL == endpoint || mca_btl_ofi_endpoint_check(module, endpoint) || endpoint->live.checkable
        || 0 == endpoint->live.host.ss_family || endpoint->lost || endpoint->live.suspect
        || endpoint->live.finalized) {
        return;
    }
    /* a post that keeps failing (sockets refuses every write to a dead
     * peer at once, thousands a second) probes once a second at most */
    now = mca_btl_ofi_seconds();
    if (now - endpoint->live.probed_at < 1.0) {
        return;
    }
    endpoint->live.probed_at = now;
    err = mca_btl_ofi_probe_now(&endpoint->live.host, MCA_BTL_OFI_SUSPECT_WAIT_MS);
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "probe of peer %s after an error: %s",
                        OPAL_NAME_PRINT(endpoint->proc->proc_name),
                        EINPROGRESS == err ? "no answer yet"
                        : 0 == err         ? "alive"
                                           : strerror(err));
    if (ECONNREFUSED == err) {
        mca_btl_ofi_host_name(&endpoint->live.host, name, sizeof(name));
        snprintf(why, sizeof(why),
                 "the process no longer exists (an operation to it failed, and its host %s "
                 "refused our liveness probe)",
                 name);
        endpoint->dead = true;
        mca_btl_ofi_endpoint_lost(module, endpoint, why);
        return;
    }
    /* a process being killed closes its connections as it goes, its
     * listener among the last: a probe may still be accepted while our
     * liveness connection has already closed without a goodbye (sockets
     * fails the operation with EIO then, and the report's help message
     * may hold this process until the runtime ended the job, unnamed) */
    MCA_BTL_OFI_LOCK(&module->lock);
    gone = mca_btl_ofi_live_closed_now(endpoint, why, sizeof(why));
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (gone) {
        endpoint->dead = true;
        mca_btl_ofi_endpoint_lost(module, endpoint, why);
    } else if (0 != err) {
        endpoint->live.suspect = true; /* no verdict yet: the next check probes it */
    }
}

bool mca_btl_ofi_endpoint_left(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    char why[MCA_BTL_OFI_WHY_LEN];
    bool closed;

    if (endpoint->lost || endpoint->dead || endpoint->live.finalized) {
        return true;
    }
    if (endpoint->live.checkable) {
        return mca_btl_ofi_endpoint_gone(endpoint);
    }
    if (0 == endpoint->live.host.ss_family) {
        return false; /* no way to know: finalize waits */
    }
    /* a goodbye on our liveness connection (finalized set), or the
     * connection closed without one */
    MCA_BTL_OFI_LOCK(&module->lock);
    closed = mca_btl_ofi_live_closed_now(endpoint, why, sizeof(why));
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (closed || endpoint->live.finalized) {
        return true;
    }
    return ECONNREFUSED == mca_btl_ofi_probe_now(&endpoint->live.host, MCA_BTL_OFI_SUSPECT_WAIT_MS);
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
        uint32_t unacked = endpoint->seq.tx_seq - endpoint->seq.tx_acked;
        int64_t done = endpoint->completed + (int64_t) endpoint->seq.tx_acked;
        if (endpoint->lost || endpoint->live.checkable || 0 == endpoint->live.host.ss_family
            || endpoint->live.finalized) {
            continue;
        }
        if (endpoint->live.suspect) {
            endpoint->live.suspect = false;
            mca_btl_ofi_probe_start(module, &endpoint->live.host, now, now);
        } else if ((endpoint->posted == endpoint->completed && 0 == unacked)
                   || done != endpoint->live.seen_completed || 0.0 == endpoint->live.stall_since) {
            endpoint->live.seen_completed = done;
            endpoint->live.stall_began = endpoint->live.stall_since = now;
            endpoint->live.probe_wait = after;
        } else if (now - endpoint->live.stall_since >= endpoint->live.probe_wait) {
            /* a peer that answers but stays busy is probed less and less
             * often, so that a long computation outside MPI does not fill
             * its listener's queue (it empties it only when it progresses) */
            endpoint->live.stall_since = now;
            endpoint->live.probe_wait =
                2.0 * endpoint->live.probe_wait < most ? 2.0 * endpoint->live.probe_wait : most;
            mca_btl_ofi_probe_start(module, &endpoint->live.host, now, endpoint->live.stall_began);
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
            if (endpoint->lost || endpoint->live.finalized) {
                continue;
            }
            if (ECONNREFUSED == err && mca_btl_ofi_same_addr(&endpoint->live.host, &probe->host)) {
                if (endpoint->posted == endpoint->completed
                    && endpoint->seq.tx_seq != endpoint->seq.tx_acked) {
                    /* its process is gone, and only messages of ours that
                     * completed wait for its acknowledgement (several
                     * rails): nothing of ours waits on it, and it may have
                     * finalized before acknowledging them (its goodbye
                     * unheard: our liveness connection was not up yet).
                     * Gone, not lost: a crash is the runtime's to report,
                     * as on one rail */
                    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                                        "peer %s left (its host %s refused our probe) with "
                                        "nothing of ours in flight: not lost",
                                        OPAL_NAME_PRINT(endpoint->proc->proc_name), name);
                    endpoint->live.finalized = true;
                    continue;
                }
                snprintf(why[n], sizeof(why[n]),
                         "the process no longer exists (its host %s refused our liveness "
                         "probe; our operations to it stood still %.1f s)",
                         name, now - probe->stalled_since);
            } else if (ECONNREFUSED != err
                       && mca_btl_ofi_same_host(&endpoint->live.host, &probe->host)) {
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
uint16_t mca_btl_ofi_probe_listen(mca_btl_ofi_module_t *module, const uint8_t *addr, size_t len)
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
        endpoint->live.state = MCA_BTL_OFI_LIVE_DONE; /* the stall probes still watch it */
        return;
    }
    err = mca_btl_ofi_probe_connect(&endpoint->live.host, &endpoint->live.fd);

    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_TRACE, "liveness connection to peer %s: %s",
                        OPAL_NAME_PRINT(endpoint->proc->proc_name),
                        0 == err ? "open" : strerror(err));
    if (0 == err || EINPROGRESS == err) {
        endpoint->live.state = 0 == err ? MCA_BTL_OFI_LIVE_UP : MCA_BTL_OFI_LIVE_CONNECTING;
        mca_btl_ofi_live_keepalive(endpoint->live.fd);
        return;
    }
    /* no verdict from a refused connection: the stall probes judge the
     * peer if work of ours waits on it (it may have finalized already) */
    if (endpoint->live.fd >= 0) {
        close(endpoint->live.fd);
        endpoint->live.fd = -1;
    }
    endpoint->live.state = MCA_BTL_OFI_LIVE_DONE;
}

static void mca_btl_ofi_live_close(mca_btl_ofi_endpoint_t *endpoint)
{
    close(endpoint->live.fd);
    endpoint->live.fd = -1;
    endpoint->live.state = MCA_BTL_OFI_LIVE_DONE;
}

/* The liveness sockets to watch (module lock held): ours to the peers we
 * posted to (opened here when due) and the ones peers keep to us; into
 * *PFDS (malloc'ed) with their endpoints in *OWNER (NULL: a peer's
 * connection to us, last). Returns how many, 0 with nothing allocated. */
static size_t mca_btl_ofi_live_fds(mca_btl_ofi_module_t *module, struct pollfd **pfds_out,
                                   mca_btl_ofi_endpoint_t ***owner_out)
{
    mca_btl_ofi_endpoint_t *endpoint, **owner;
    struct pollfd *pfds;
    size_t count = 0, k = 0;

    OPAL_LIST_FOREACH (endpoint, &module->endpoints, mca_btl_ofi_endpoint_t) {
        if (MCA_BTL_OFI_LIVE_NONE == endpoint->live.state && !endpoint->live.checkable
            && !endpoint->lost && 0 != endpoint->live.host.ss_family && endpoint->posted > 0) {
            mca_btl_ofi_live_open(module, endpoint, count);
        }
        count += endpoint->live.fd >= 0;
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
        if (endpoint->live.fd >= 0) {
            pfds[k].fd = endpoint->live.fd;
            pfds[k].events = MCA_BTL_OFI_LIVE_CONNECTING == endpoint->live.state ? POLLOUT : POLLIN;
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
    *pfds_out = pfds;
    *owner_out = owner;
    return k;
}

/* What our liveness connection to ENDPOINT says now that it has an event:
 * connected, a hello or goodbye, a keepalive unanswered (the host or the
 * link: suspect), or closed. True (WHY filled) when the process ended
 * without MPI_Finalize. */
static bool mca_btl_ofi_live_event(mca_btl_ofi_endpoint_t *endpoint, char *why, size_t why_len)
{
    char buf[16], name[INET6_ADDRSTRLEN];
    socklen_t len = sizeof(int);
    ssize_t got;
    bool heard;
    int err = 0;

    if (MCA_BTL_OFI_LIVE_CONNECTING == endpoint->live.state) {
        if (0 != getsockopt(endpoint->live.fd, SOL_SOCKET, SO_ERROR, &err, &len)) {
            err = errno;
        }
        if (0 == err) {
            endpoint->live.state = MCA_BTL_OFI_LIVE_UP;
        } else {
            mca_btl_ofi_live_close(endpoint); /* no verdict (see live_open) */
        }
        return false;
    }
    got = recv(endpoint->live.fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got < 0 && (EAGAIN == errno || EWOULDBLOCK == errno)) {
        return false;
    }
    err = got < 0 ? errno : 0;
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_TRACE,
                        "liveness connection to peer %s: %zd byte(s)%s%s",
                        OPAL_NAME_PRINT(endpoint->proc->proc_name), got, 0 != err ? ", " : "",
                        0 != err ? strerror(err) : "");
    if (got > 0 && NULL != memchr(buf, MCA_BTL_OFI_LIVE_BYE, (size_t) got)) {
        endpoint->live.finalized = true;
        mca_btl_ofi_live_close(endpoint);
        return false;
    }
    if (got > 0) {
        if (NULL != memchr(buf, MCA_BTL_OFI_LIVE_HELLO, (size_t) got)) {
            endpoint->live.state = MCA_BTL_OFI_LIVE_HEARD;
        }
        return false;
    }
    if (ETIMEDOUT == err || EHOSTUNREACH == err || ENETUNREACH == err) {
        /* keepalive unanswered: the host or the link, not the process
         * (which may still be reached on another rail): probe it */
        mca_btl_ofi_live_close(endpoint);
        endpoint->live.suspect = true;
        return false;
    }
    /* closed. Before its hello, the peer may just have finalized (the
     * connection reached its listener's queue as it closed) or refused it
     * (too many): no verdict */
    heard = MCA_BTL_OFI_LIVE_HEARD == endpoint->live.state;
    mca_btl_ofi_live_close(endpoint);
    if (!heard || endpoint->lost) {
        return false;
    }
    mca_btl_ofi_host_name(&endpoint->live.host, name, sizeof(name));
    snprintf(why, why_len,
             "the process ended without MPI_Finalize (its host %s closed our liveness "
             "connection to it%s%s)",
             name, 0 != err ? ": " : "", 0 != err ? strerror(err) : "");
    return true;
}

/* Under the module lock: open liveness connections to the peers we posted
 * to, look at all of them and at the ones peers keep to us (closed by
 * their peer: closed here too, and dropped from the list). Peers whose
 * connection closed without a goodbye are retained into lost[] with
 * why[]; returns how many. */
static int mca_btl_ofi_live_check(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t **lost,
                                  char (*why)[MCA_BTL_OFI_WHY_LEN])
{
    mca_btl_ofi_endpoint_t **owner = NULL;
    struct pollfd *pfds = NULL;
    size_t k = mca_btl_ofi_live_fds(module, &pfds, &owner), base;
    int n = 0, kept = 0;

    if (0 == k) {
        return 0;
    }
    if (poll(pfds, (nfds_t) k, 0) <= 0) {
        free(pfds);
        return 0;
    }
    for (size_t i = 0; i < k; ++i) {
        if (0 == pfds[i].revents) {
            continue;
        }
        if (NULL == owner[i]) {
            /* a peer's connection to us: only its end matters, to it */
            char buf[16];
            ssize_t got = recv(pfds[i].fd, buf, sizeof(buf), MSG_DONTWAIT);

            if (0 == got || (got < 0 && EAGAIN != errno && EWOULDBLOCK != errno)) {
                close(pfds[i].fd);
                pfds[i].fd = -1;
            }
            continue;
        }
        if (mca_btl_ofi_live_event(owner[i], why[n], sizeof(why[n]))) {
            OBJ_RETAIN(owner[i]);
            lost[n++] = owner[i];
        }
    }
    /* the peers' connections that closed leave the list */
    base = k - (size_t) module->num_live_in;
    for (int i = 0; i < module->num_live_in; ++i) {
        if (pfds[base + (size_t) i].fd >= 0) {
            module->live_in[kept++] = module->live_in[i];
        }
    }
    module->num_live_in = kept;
    free(pfds);
    return n;
}

/*
 * A dead peer is marked, so that the next operation to it fails and reports
 * it; it is reported at once when work of ours waits on it. A peer that
 * went away while nothing was owed to it (a job's ranks leave
 * MPI_Finalize at different times, a disconnected spawned job exits) ends
 * nothing. Peers on other hosts are probed (above).
 */
bool mca_btl_ofi_peers_scan(mca_btl_ofi_module_t *module, mca_btl_ofi_verdicts_t *v)
{
    mca_btl_ofi_endpoint_t *endpoint, *dead = NULL, **lost = NULL;
    char(*why)[MCA_BTL_OFI_WHY_LEN] = NULL;
    int interval = mca_btl_ofi_component.peer_check_interval, nlost = 0, n, *errs = NULL;
    size_t count;
    bool proc_due;
    double now;

    memset(v, 0, sizeof(*v));
    if (interval <= 0 || module->closing || 0 != MCA_BTL_OFI_TRYLOCK(&module->lock)) {
        return false;
    }
    now = mca_btl_ofi_seconds();
    if (now < module->next_check) {
        MCA_BTL_OFI_UNLOCK(&module->lock);
        return false;
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
        if (!proc_due || !endpoint->live.checkable || endpoint->lost) {
            continue;
        }
        if (!endpoint->dead) {
            if (!mca_btl_ofi_endpoint_gone(endpoint)) {
                continue;
            }
            endpoint->dead = true;
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "peer %s (pid %u) no longer exists",
                                OPAL_NAME_PRINT(endpoint->proc->proc_name),
                                (unsigned) endpoint->live.pid);
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
            /* goodbyes first: a peer that finalized closed its listener
             * after saying it, and a probe refused then is no verdict */
            nlost = mca_btl_ofi_live_check(module, lost, why);
            for (int i = 0; i < nlost; ++i) {
                errs[i] = ECONNREFUSED; /* the process is gone, its host and link are not */
            }
            n = mca_btl_ofi_hosts_check(module, now, lost + nlost, why + nlost, errs + nlost);
            nlost += n;
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    v->lost = lost;
    v->why = why;
    v->errs = errs;
    v->nlost = nlost;
    v->dead = dead;
    return true;
}

void mca_btl_ofi_verdicts_free(mca_btl_ofi_verdicts_t *v)
{
    for (int i = 0; i < v->nlost; ++i) {
        OBJ_RELEASE(v->lost[i]);
    }
    if (NULL != v->dead) {
        OBJ_RELEASE(v->dead);
    }
    free(v->lost);
    free(v->why);
    free(v->errs);
    memset(v, 0, sizeof(*v));
}
