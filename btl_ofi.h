/*
 * btl/ofi: an Open MPI byte transfer layer over libfabric.
 *
 * What every file of the component shares: its version, verbose stream,
 * locks, error reports, small shared helpers, and the component's and
 * module's entry points (the types are in btl_ofi_types.h, the wire
 * formats of our own messages in btl_ofi_wire.h). The files, each .c but
 * component.c and module.c with a header of its name for what it exports
 * (those two export only through this header), in layers: a file calls
 * only files below it.
 *
 *   component  MCA variables, init (the modules discovery opened,
 *              published); sets the message handlers of the protocols below
 *   discovery  the candidates fi_getinfo offers, the provider and
 *              interface lists, why a candidate is refused, a module opened
 *              on each one taken
 *   module     a module's life, add/del procs, memory registration
 *              (rcache), flush, finalize
 *   progress   the progress callback: reads the completion queues, hands
 *              each completion to its owner, completion errors, runs what
 *              the operations' paths deferred, the progress thread
 *   provenv    our defaults for libfabric's provider variables (ofi_rxm's
 *              receive queue and bounce buffers), set at open where the
 *              user set none
 *   rails      several modules as one: rail selection and speeds, pairing
 *              with a peer's rails, the split of large puts and gets,
 *              failover from a rail whose link to a peer failed (moving its
 *              traffic), the periodic peer check's consequences
 *   atomics    op, fetch-op, compare-swap through the provider or locally
 *   rdma       put and get on one rail, posting RMA, the RMA backlog
 *   emulate    puts, gets and atomics carried as messages, one request
 *              registry; the target's side of them
 *   seq, frag  messages: frag posts and receives them (two-sided
 *              descriptors, receive buffers, delivery by message type to
 *              the handler component set), seq numbers them with several
 *              rails. One layer in two files: frag's paths number and check
 *              through seq, seq sends acknowledgements and copies through
 *              frag (the only two files that call each other)
 *   endpoint   a peer's endpoint: its addresses, lookup by name, the route
 *              of an operation to it (mca_btl_ofi_route_op)
 *   modex      what each process publishes, a peer's entry read
 *   completion the completion objects of puts, gets and atomics; the
 *              verdict on one that failed
 *   liveness   who is alive: /proc, probes, liveness connections, the
 *              look at the peers, the lost-peer verdicts and their one way
 *              out (mca_btl_ofi_module_fatal)
 *   context    endpoints' transmit/receive contexts, completion queues and
 *              their locks, the thread-to-context binding
 *   shmname    names of shm endpoints: unique, removed at exit, the
 *              regions of processes that are gone swept from /dev/shm
 *
 * The operations' own paths (put, get, atomics, send) never read a
 * completion queue (a full context answers OPAL_ERR_OUT_OF_RESOURCE and
 * the caller progresses) and never stop the job: a peer found dead is
 * marked and the operation refused for now, a failed emulated put or get
 * queued; the next progress pass names the peer or completes the
 * operation (mca_btl_ofi_refusals_report, mca_btl_ofi_rma_failures), so
 * failover and fatal errors act from progress. One exception: a post the
 * provider refuses for good (not -FI_EAGAIN) is judged at once
 * (mca_btl_ofi_post_refused: /proc, or a probe of up to 200 ms, then the
 * verdict), because the error goes back to the caller only when the peer
 * lives; deferring it would have every caller keep the operation until
 * the verdict (ob1 stops the job, naming no peer, when a send completes
 * with an error).
 */

#ifndef MCA_BTL_OFI_H
#define MCA_BTL_OFI_H

#include "btl_ofi_types.h"

#include <netinet/in.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

BEGIN_C_DECLS

/* Our own component version: `ompi_info` prints it, so users and tests can
 * tell this component from the btl/ofi that Open MPI ships (4.1.x). */
#define MCA_BTL_OFI_VERSION_MAJOR 0
#define MCA_BTL_OFI_VERSION_MINOR 1
#define MCA_BTL_OFI_VERSION_RELEASE 0
#define MCA_BTL_OFI_VERSION_STRING "0.1.0"

#define MCA_BTL_OFI_HELP_FILE "help-btl-ofi.txt"

/* fi_getinfo is asked for the API version of the headers we are built
 * with (FI_MAJOR_VERSION, FI_MINOR_VERSION): the semantics we test. */
#define MCA_BTL_OFI_FI_API FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Verbose levels of the btl_ofi_verbose stream. */
enum {
    MCA_BTL_OFI_VERBOSE_ERROR = 1, /* errors and the provider choice */
    MCA_BTL_OFI_VERBOSE_INFO = 5,  /* resources opened, limits chosen */
    MCA_BTL_OFI_VERBOSE_TRACE = 20 /* per-peer events */
};

#define MCA_BTL_OFI_VERBOSE(lvl, ...)                                                              \
    opal_output_verbose((lvl), mca_btl_ofi_component.output, "btl/ofi: " __VA_ARGS__)

/** Add to a counter that several threads may update. A locked
 * instruction only when more than one thread can run in the component
 * (MPI threads or our progress thread: the choice made once at init, as
 * MCA_BTL_OFI_LOCK does); a plain add otherwise, which is most of the cost
 * of an operation's bookkeeping saved. */
static inline void mca_btl_ofi_add64(volatile int64_t *counter, int64_t n)
{
    if (mca_btl_ofi_component.locking) {
        (void) opal_atomic_fetch_add_64(counter, n);
    } else {
        /* one thread: no volatile load and store, a single add */
        *(int64_t *) counter += n;
    }
}

/** Count operations posted (n > 0) or completed (n < 0) on a context, for
 * one peer: flush and drain wait on the first, a lost peer is judged by
 * the second. */
static inline void mca_btl_ofi_inflight(mca_btl_ofi_context_t *context,
                                        struct mca_btl_base_endpoint_t *endpoint, int64_t n)
{
    mca_btl_ofi_add64(&context->outstanding, n);
    mca_btl_ofi_add64(n > 0 ? &endpoint->posted : &endpoint->completed, n > 0 ? n : -n);
}

/** The same for a message. */
static inline void mca_btl_ofi_send_inflight(mca_btl_ofi_context_t *context,
                                             struct mca_btl_base_endpoint_t *endpoint, int64_t n)
{
    mca_btl_ofi_add64(&context->sends_outstanding, n);
    mca_btl_ofi_add64(n > 0 ? &endpoint->posted : &endpoint->completed, n > 0 ? n : -n);
}

/** Whether a message of LEN bytes may go to ENDPOINT now, where it has a
 * budget (endpoint->stream_limit: a peer of this node on sockets, whose
 * connection stops for good once it holds too much the peer has not read;
 * btl_ofi_module.c, mca_btl_ofi_provider_quirks, says how). Bytes of our
 * messages to it posted and not complete count; one alone always goes. A
 * refusal is counted (stream_held) and the caller keeps the message, in
 * order, for progress to post once completions made room (the backlogs).
 * The context lock is held. */
static inline bool mca_btl_ofi_stream_room(mca_btl_ofi_context_t *context,
                                           const struct mca_btl_base_endpoint_t *endpoint,
                                           size_t len)
{
    int64_t inflight = endpoint->stream_bytes;

    if (0 == inflight || inflight + (int64_t) len <= endpoint->stream_limit) {
        return true;
    }
    ++context->counters.stream_held;
    return false;
}

/** Operations of any kind in flight on a context: what a new operation
 * is admitted against, and what closing waits for. */
static inline int64_t mca_btl_ofi_tx_busy(const mca_btl_ofi_context_t *context)
{
    return context->outstanding + context->sends_outstanding;
}

/** The places of the provider's transmit queue in use: puts and gets
 * carried as messages hold none (their messages do, counted as sends),
 * so they must not keep their own messages out of the queue. */
static inline int64_t mca_btl_ofi_tx_queued(const mca_btl_ofi_context_t *context)
{
    return mca_btl_ofi_tx_busy(context) - context->emulated;
}

/* Provider facts and defects we work around, found by testing (and
 * reading) libfabric 1.17. */
enum {
    /* fetching and compare atomics crash the provider (issue #11814) */
    MCA_BTL_OFI_QUIRK_FETCH_ATOMICS = 0x1,
    /* injected messages are lost once many are unacknowledged */
    MCA_BTL_OFI_QUIRK_INJECT = 0x2,
    /* multi-receive buffers lose messages (udp;ofi_rxd) or cannot be
     * posted again once unexpected messages fill the provider's pool
     * (shm): one buffer per message */
    MCA_BTL_OFI_QUIRK_MULTI_RECV = 0x4,
    /* a message of several datagrams, arriving while no receive is posted
     * (the receiver busy, late, or flooded), sometimes completes with "Truncation
     * error" (the bytes it assembled differ from the size it announced) or
     * crashes the provider: every message fits in one datagram */
    MCA_BTL_OFI_QUIRK_ONE_SEGMENT = 0x8,
    /* an endpoint with a link that failed cannot be closed (the provider
     * crashes flushing it): left open at exit */
    MCA_BTL_OFI_QUIRK_CLOSE_FAILED = 0x10,
    /* a read or write longer than one datagram, to or from a process whose
     * socket drops datagrams (flooded), completes with only its first 120
     * bytes in place, or never: puts and gets go as one-datagram messages */
    MCA_BTL_OFI_QUIRK_RMA = 0x20,
    /* with manual data progress, a message waits in the provider's
     * transmit queue until the provider is driven again (sockets) */
    MCA_BTL_OFI_QUIRK_INJECT_QUEUED = 0x40,
    /* the target's processor applies every atomic with processor atomics
     * (libfabric's shared handlers, compare-and-swap loops): ofi_rxm and
     * ofi_rxd carry atomics as messages themselves, shm and sockets apply
     * them in software (btl_ofi_global_atomics -1) */
    MCA_BTL_OFI_QUIRK_CPU_ATOMICS = 0x80,
    /* a message sent with any completion level but FI_INJECT_COMPLETE is
     * acknowledged by a message of the receiver's own (sockets: one more
     * send and receive at each end per message) */
    MCA_BTL_OFI_QUIRK_SEND_ACKED = 0x100,
    /* a connection between two processes of one node (loopback, 64 KiB
     * segments) can stop for good once the receiver fell behind: every
     * peer there gets a budget of bytes in flight (mca_btl_ofi_stream_room) */
    MCA_BTL_OFI_QUIRK_STREAM_STALL = 0x200,
};

/* Under MCA_BTL_OFI_QUIRK_STREAM_STALL: the largest message (the module's
 * eager limit and send size, for every peer), and the bytes of messages in
 * flight to one peer of this node (btl_ofi_stream_budget's default). What
 * messages of ours can then leave unread in one direction of a
 * connection: the budget, 16 unacknowledged small ones
 * (mca_btl_ofi_frag_send_quick) and the provider's acknowledgements,
 * about 26 KiB, below the 64 KiB at which Linux closes a loopback
 * receiver's window whose buffer is the default 128 KiB
 * (btl_ofi_module.c says why that matters). */
#define MCA_BTL_OFI_STREAM_PIECE 16384
#define MCA_BTL_OFI_STREAM_BUDGET 20480
uint32_t mca_btl_ofi_provider_quirks(const char *prov_name);

/* Our largest message's payload on tcp;ofi_rxm unless the user sets
 * btl_ofi_max_send_size (btl_ofi_module.c's table of limits); ofi_rxm's
 * eager limit is made to cover it with our header (btl_ofi_provenv.c) */
#define MCA_BTL_OFI_RXM_MAX_SEND 65536

/* Whether the user left the variable btl_ofi_<name> at its default (a
 * variable not registered counts as set). Here, not in a file, because
 * the component, the module and the rails ask it and none of them may
 * call the others' way. */
static inline bool mca_btl_ofi_param_is_default(const char *name)
{
    const mca_base_var_t *var = NULL;
    int idx = mca_base_var_find("opal", "btl", "ofi", name);

    if (idx < 0 || OPAL_SUCCESS != mca_base_var_get(idx, &var) || NULL == var) {
        return false;
    }
    return MCA_BASE_VAR_SOURCE_DEFAULT == var->mbv_source;
}

/* The raw address bytes and family of a socket address, or NULL (the
 * component's interface lists and the rails' subnets read them). */
static inline const unsigned char *mca_btl_ofi_sa_bytes(const struct sockaddr *sa, size_t len,
                                                        int *family)
{
    if (NULL == sa || len < sizeof(sa->sa_family)) {
        return NULL;
    }
    *family = sa->sa_family;
    if (AF_INET == sa->sa_family && len >= sizeof(struct sockaddr_in)) {
        return (const unsigned char *) &((const struct sockaddr_in *) sa)->sin_addr;
    }
    if (AF_INET6 == sa->sa_family && len >= sizeof(struct sockaddr_in6)) {
        return (const unsigned char *) &((const struct sockaddr_in6 *) sa)->sin6_addr;
    }
    return NULL;
}

/* module */
mca_btl_ofi_module_t *mca_btl_ofi_module_alloc(void);
void mca_btl_ofi_module_free(mca_btl_ofi_module_t *module);
int mca_btl_ofi_module_init(mca_btl_ofi_module_t *module, struct fi_info *info);
int mca_btl_ofi_finalize(mca_btl_base_module_t *btl);
int mca_btl_ofi_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint);
/** Stop the job through the upper layer's error callback with INFO naming
 * PROC (or NULL) and the cause; without a callback INFO is printed. Not
 * while the module closes, nor once MPI_Finalize began in this process
 * (INFO then at verbose level 5 only). (btl_ofi_liveness.c: the verdicts'
 * way out) */
void mca_btl_ofi_module_fatal(mca_btl_ofi_module_t *module, opal_proc_t *proc, char *info);
/** Whether this process is in MPI_Finalize (or past it): its peers may
 * then leave at any time, after their own, and what fails towards them
 * is no fault of theirs. */
bool mca_btl_ofi_mpi_finalizing(void);

/** fi_close; a failure is reported at verbose level 1 with fi_strerror,
 * WHAT naming the object. Every libfabric object is closed through it. */
int mca_btl_ofi_close_fid(struct fid *fid, const char *what);

/* Test-only fault injection (btl_ofi_inject_fault "CALL@N,..."): the Nth
 * call of CALL fails with -FI_EIO, or for CQ the Nth completion is turned
 * into an error; REPOST: the Nth posting of a receive buffer and the
 * MCA_BTL_OFI_FAULT_REPOST_RUN after it find the receive queue full
 * (-FI_ENOMEM, as libfabric's shm was seen to answer). Built only with --enable-fault-injection (in
 * tree:
 * --enable-btl-ofi-fault-injection), as the test suite builds; otherwise
 * every test of it is the constant false and the compiler removes it. */
enum {
    MCA_BTL_OFI_FAULT_GETINFO,
    MCA_BTL_OFI_FAULT_MR_REG,
    MCA_BTL_OFI_FAULT_WRITE,
    MCA_BTL_OFI_FAULT_READ,
    MCA_BTL_OFI_FAULT_ATOMIC,
    MCA_BTL_OFI_FAULT_SEND,
    MCA_BTL_OFI_FAULT_CQ,
    MCA_BTL_OFI_FAULT_RMACQ,
    MCA_BTL_OFI_FAULT_REMOTE,
    MCA_BTL_OFI_FAULT_REPOST,
    MCA_BTL_OFI_FAULT_MAX
};
#define MCA_BTL_OFI_FAULT_REPOST_RUN 64
#if MCA_BTL_OFI_FAULT_INJECTION
extern bool mca_btl_ofi_fault_armed;
bool mca_btl_ofi_fault_hit(int call);
#define MCA_BTL_OFI_FAULT(call)                                                                    \
    (OPAL_UNLIKELY(mca_btl_ofi_fault_armed) && mca_btl_ofi_fault_hit(call))
#else
#define mca_btl_ofi_fault_armed false
#define MCA_BTL_OFI_FAULT(call) false
#endif

/* Locks of contexts and of the module's tables: real when several threads
 * may enter the component (MPI_THREAD_MULTIPLE, or our progress thread),
 * free otherwise. Unlike OPAL_THREAD_LOCK they do not depend on
 * opal_using_threads() alone, which our own progress thread does not set. */
#define MCA_BTL_OFI_LOCK(m)                                                                        \
    do {                                                                                           \
        if (mca_btl_ofi_component.locking) {                                                       \
            opal_mutex_lock(m);                                                                    \
        }                                                                                          \
    } while (0)
#define MCA_BTL_OFI_UNLOCK(m)                                                                      \
    do {                                                                                           \
        if (mca_btl_ofi_component.locking) {                                                       \
            opal_mutex_unlock(m);                                                                  \
        }                                                                                          \
    } while (0)
/* 0 when the lock was taken (or locking is off), as opal_mutex_trylock */
#define MCA_BTL_OFI_TRYLOCK(m) (mca_btl_ofi_component.locking ? opal_mutex_trylock(m) : 0)

/* The registration peers reach with KEY, a key of rail RAIL (MODULE's own
 * when RAIL names no open rail), or NULL. */
static inline mca_btl_ofi_reg_t *mca_btl_ofi_reg_by_key(mca_btl_ofi_module_t *module, unsigned rail,
                                                        uint64_t key)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_module_t *keys =
        rail < (unsigned) c->num_modules && NULL != c->modules[rail] ? c->modules[rail] : module;
    mca_btl_ofi_reg_t *reg = NULL;

    MCA_BTL_OFI_LOCK(&keys->lock);
    (void) opal_hash_table_get_value_uint64(&keys->regs_by_key, key, (void **) &reg);
    MCA_BTL_OFI_UNLOCK(&keys->lock);
    return reg;
}

/** Show TOPIC of btl/ofi's help file with its arguments (opal_show_help,
 * which Open MPI's runtime aggregates across processes), and, at
 * btl_ofi_verbose 1 or more, the same text as one line on the component's
 * own stream: Open MPI 4.1.4 loses some show_help messages on their way
 * through mpirun (README, Known limits), the stream does not. A macro
 * because opal_show_help takes no va_list (its va_list twin,
 * opal_show_vhelp, is not routed through the runtime). */
#define MCA_BTL_OFI_SHOW_HELP(topic, ...)                                                          \
    do {                                                                                           \
        (void) opal_show_help(MCA_BTL_OFI_HELP_FILE, (topic), true, __VA_ARGS__);                  \
        mca_btl_ofi_help_copy((topic), __VA_ARGS__);                                               \
    } while (0)
void mca_btl_ofi_help_copy(const char *topic, ...);

/** Report a failed libfabric call once, with its name and fi_strerror. */
#define MCA_BTL_OFI_REPORT_AT(call, rc, file, line)                                                \
    MCA_BTL_OFI_SHOW_HELP("fi call failed", opal_process_info.nodename, (call), (int) -(rc),       \
                          fi_strerror((int) -(rc)), (file), (line))
#define MCA_BTL_OFI_REPORT(call, rc) MCA_BTL_OFI_REPORT_AT(call, rc, __FILE__, __LINE__)

static inline mca_btl_ofi_reg_t *mca_btl_ofi_reg_from_handle(mca_btl_base_registration_handle_t *h)
{
    return (mca_btl_ofi_reg_t *) ((char *) h - offsetof(mca_btl_ofi_reg_t, handle));
}

/** The key of a peer's region on the rail this endpoint talks to. */
static inline uint64_t mca_btl_ofi_rkey(const struct mca_btl_base_endpoint_t *endpoint,
                                        const mca_btl_base_registration_handle_t *handle)
{
    return *(const uint64_t *) ((const char *) handle + endpoint->rail.peer_key_offset);
}

/** Remote address as the provider wants it: virtual, or offset in the region. */
static inline uint64_t mca_btl_ofi_remote_addr(const mca_btl_ofi_module_t *module, uint64_t address,
                                               const mca_btl_base_registration_handle_t *handle)
{
    return module->virt_addr ? address : address - handle->base;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_H */
