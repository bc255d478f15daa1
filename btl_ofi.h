/*
 * btl/ofi: an Open MPI byte transfer layer over libfabric.
 *
 * Component and module types shared by every file of the component.
 * One file per object: component (MCA glue, provider choice, progress),
 * module (add/del procs, registration, flush, finalize), context (endpoints,
 * completion queues, locks), endpoint (peer addresses), rdma (put/get and
 * completion objects), atomics, frag (two-sided descriptors).
 */

#ifndef MCA_BTL_OFI_H
#define MCA_BTL_OFI_H

#include "opal_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/mca/rcache/rcache.h"
#include "opal/threads/mutex.h"
#include "opal/threads/threads.h"
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

/* Upper bound on contexts per module; also sizes the receive-context bits
 * of a scalable endpoint's address vector. */
#define MCA_BTL_OFI_MAX_CONTEXTS 64
#define MCA_BTL_OFI_RX_CTX_BITS 6

enum {
    MCA_BTL_OFI_MODE_ONE_SIDED = 0,
    MCA_BTL_OFI_MODE_TWO_SIDED = 1,
    MCA_BTL_OFI_MODE_FULL = 2,
};

/* Verbose levels of the btl_ofi_verbose stream. */
enum {
    MCA_BTL_OFI_VERBOSE_ERROR = 1, /* errors and the provider choice */
    MCA_BTL_OFI_VERBOSE_INFO = 5,  /* resources opened, limits chosen */
    MCA_BTL_OFI_VERBOSE_TRACE = 20 /* per-peer events */
};

#define MCA_BTL_OFI_VERBOSE(lvl, ...)                                            \
    opal_output_verbose((lvl), mca_btl_ofi_component.output, "btl/ofi: " __VA_ARGS__)

/**
 * The part of a registration that travels to peers (osc/rdma copies
 * btl_registration_handle_size bytes of it). No local pointers: the key
 * and, for providers with offset addressing, the region's base address in
 * the owner's address space.
 */
/* Modules, one per rail (network interface), a process may open. */
#define MCA_BTL_OFI_MAX_RAILS 8

struct mca_btl_base_registration_handle_t {
    /* the key of the region in the domain of its owner's rail 0 (first, so
     * that one rail ships what it always did: key, base) */
    uint64_t key;
    uint64_t base;
    /* its keys on the owner's rails 1, 2, ...: every process ships
     * btl_ofi_max_rails keys in all, whatever its own number of rails */
    uint64_t rail_keys[MCA_BTL_OFI_MAX_RAILS - 1];
};

static inline uint64_t *mca_btl_ofi_handle_key(struct mca_btl_base_registration_handle_t *h,
                                               int rail)
{
    return 0 == rail ? &h->key : &h->rail_keys[rail - 1];
}

/** A registration as the rcache keeps it: handle last, shipped part only.
 * Regions peers may reach are open in every rail's domain (mr[rail]). */
typedef struct mca_btl_ofi_reg_t {
    mca_rcache_base_registration_t super;
    struct mca_btl_ofi_module_t *module; /* the rail it was asked of */
    struct fid_mr *mr[MCA_BTL_OFI_MAX_RAILS];
    void *desc;
    mca_btl_base_registration_handle_t handle;
} mca_btl_ofi_reg_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_reg_t);

/**
 * What libfabric gets as an operation context: the provider's scratch
 * space, then what kind of object embeds it, so one completion queue can
 * carry RDMA, send and receive completions.
 */
enum {
    MCA_BTL_OFI_OP_RDMA = 1, /* mca_btl_ofi_completion_t */
    MCA_BTL_OFI_OP_SEND = 2, /* mca_btl_ofi_frag_t */
    MCA_BTL_OFI_OP_RECV = 3  /* mca_btl_ofi_rdesc_t */
};

typedef struct mca_btl_ofi_op_t {
    struct fi_context2 ofi_ctx;
    int kind;
} mca_btl_ofi_op_t;

/** Counters exposed as MPI_T performance variables (summed over contexts). */
typedef struct mca_btl_ofi_counters_t {
    uint64_t put_count;
    uint64_t get_count;
    uint64_t atomic_count;
    uint64_t put_bytes;
    uint64_t get_bytes;
    uint64_t send_count;
    uint64_t send_bytes;
    uint64_t recv_count;
    uint64_t recv_bytes;
    /* atomics applied to our own memory (no provider, no context lock
     * held): counted with mca_btl_ofi_add64, added to atomic_count */
    volatile int64_t atomic_local_count;
} mca_btl_ofi_counters_t;

/**
 * A communication context: one transmit/receive path with its own
 * completion queue and lock. Threads are spread over contexts; posting to
 * and polling a context happen under its lock.
 */
struct mca_btl_ofi_rdesc_t;

typedef struct mca_btl_ofi_context_t {
    opal_mutex_t lock;
    struct fid_ep *tx;  /* transmit context, or the plain endpoint */
    struct fid_ep *rx;  /* receive context, or the plain endpoint */
    struct fid_ep *ep;  /* plain endpoint owned by this context (no SEP) */
    struct fid_cq *cq;
    int index;
    /* puts, gets and atomics posted whose completion callback has not run
     * yet (what a flush waits for), and messages posted likewise (sends
     * of the pml and of emulated atomics: a flush does not wait for them;
     * udp;ofi_rxd may never complete one whose data arrived) */
    volatile int64_t outstanding;
    volatile int64_t sends_outstanding;
    mca_btl_ofi_counters_t counters;
    opal_free_list_t completions;
    /* messaging (two-sided traffic and emulated atomics): posted receive
     * descriptors and their buffers, and replies waiting for queue room */
    struct mca_btl_ofi_rdesc_t *rdescs;
    char *rbufs;
    size_t rbuf_size; /* bytes of each posted buffer */
    uint64_t rflags;  /* FI_MULTI_RECV, or 0 */
    opal_list_t pending;
    /* pml fragments the provider refused for now (-FI_EAGAIN, or a full
     * transmit queue), posted in order by progress */
    opal_list_t sendq;
    volatile int64_t nqueued; /* its length, for flush and drain (atomic) */
    /* puts and gets refused the same way (still counted as outstanding) */
    opal_list_t rdmaq;
    /* receive buffers the provider refused for now (-FI_EAGAIN) */
    struct mca_btl_ofi_rdesc_t *repost;
    /* completions the progress thread read but left to an MPI thread, in
     * queue order (only with btl_ofi_progress_thread and emulated atomics) */
    struct fi_cq_data_entry *deferred;
    int deferred_count;
    struct mca_btl_ofi_module_t *module;
} mca_btl_ofi_context_t;

struct mca_btl_ofi_module_t;

/** Per-peer state. */
struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    struct opal_proc_t *proc;
    /* address used by local context i to reach this peer */
    fi_addr_t *addrs;
    bool lost; /* reported to the upper layer as unreachable */
    /* the process behind it is known to be gone: operations to it fail at
     * once instead of waiting on a provider that may never complete them */
    volatile bool dead;
    bool checkable; /* shares our host: pid and start_time can be checked */
    /* our operations to it posted and completed (atomic): work is owed to
     * it while they differ, and it is stalled while `completed' stands */
    volatile int64_t posted;
    volatile int64_t completed;
    uint32_t pid;
    uint64_t start_time;
    /* its liveness listener (IP providers; family 0 otherwise), and when
     * its completions stood still since (seconds; liveness probes) */
    struct sockaddr_storage host;
    int64_t seen_completed;
    double stall_since;
    bool suspect; /* an error without a clear cause: probe it at the next check */
    /* the peer's rail this endpoint talks to (index of its keys in the
     * peer's registration handles), and the same peer's endpoints on our
     * other rails, found when a transfer is first split over them */
    int peer_rail;
    struct mca_btl_base_endpoint_t *rail_peers[MCA_BTL_OFI_MAX_RAILS];
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;
typedef mca_btl_base_endpoint_t mca_btl_ofi_endpoint_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_endpoint_t);

typedef struct mca_btl_ofi_module_t {
    mca_btl_base_module_t super;

    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *sep; /* scalable endpoint, NULL when contexts are plain endpoints */

    mca_btl_ofi_context_t *contexts;
    int num_contexts;
    volatile int32_t next_context;

    bool virt_addr;  /* FI_MR_VIRT_ADDR: peers address memory by virtual address */
    bool prov_key;   /* FI_MR_PROV_KEY: the provider picks registration keys */
    uint64_t key_mask;

    /* per btl op (and index MCA_BTL_ATOMIC_LAST for compare-swap): bit 0 set
     * when the 64-bit form is usable, bit 1 when the 32-bit form is */
    uint8_t atomic_ok[MCA_BTL_ATOMIC_LAST + 1];

    opal_mutex_t lock; /* endpoint and registration tables */
    opal_hash_table_t endpoints_by_proc;
    opal_hash_table_t endpoints_by_name; /* who sent an emulated atomic */
    opal_hash_table_t regs_by_key;       /* registrations peers may target */
    /* emulated atomics in flight, by the id their reply carries: a reply is
     * trusted only if its id is found here (never used as a pointer) */
    opal_hash_table_t amo_pending;
    uint64_t amo_next_id;
    opal_list_t endpoints;

    /* messaging: enabled when a context must receive (emulated atomics,
     * two-sided traffic); msg_size is the size of one receive buffer */
    bool messaging;
    bool amo_emulated; /* atomics carried as messages, applied by the target */
    size_t msg_size;
    size_t inject_size;
    int64_t tx_limit; /* operations in flight per context (tx queue size) */
    /* bytes of one FI_MULTI_RECV buffer, 0 when receives use single buffers */
    size_t multi_recv_size;

    mca_rcache_base_module_t *rcache; /* local-only registrations */
    opal_free_list_t exposed_regs;    /* registrations peers can reach */
    opal_free_list_t frags; /* two-sided send descriptors */
    mca_btl_base_module_error_cb_fn_t error_cb;
    /* background progress for manual-progress providers (btl_ofi_progress_thread) */
    opal_thread_t progress_thread;
    volatile int32_t progress_stop;
    bool progress_running;
    /* finalize is draining: the layers above are gone (their code may
     * already be unloaded), so completions are reaped without callbacks */
    bool closing;
    /* liveness probes of peers' hosts under way (btl_ofi_endpoint.c) */
    struct mca_btl_ofi_probe_t *probes;
    int num_probes;
    int probe_listener; /* our liveness listener (peers probe it), 0: none */
    /* the rail: index among this process's modules, and the subnet of its
     * interface (IP providers; family 0 otherwise), which pairs it with the
     * peer's module on the same subnet */
    int rail;
    int net_family;
    int net_bits;
    uint8_t net[16];
} mca_btl_ofi_module_t;

typedef struct mca_btl_ofi_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* MCA parameters */
    char *provider_include;
    char *provider_exclude;
    char *if_include; /* interfaces or CIDR subnets to use (btl_tcp's syntax) */
    char *if_exclude; /* interfaces or CIDR subnets never to use */
    int mode;
    int num_contexts_per_module;
    bool disable_sep;
    int progress_threshold;
    int peer_check_interval; /* ms between checks of same-host peers, <= 0: never */
    int peer_probe_after;    /* s a peer's operations may stand still before its host is probed */
    int peer_probe_timeout;  /* s a probe may go unanswered before the host is lost */
    int num_cq_read;
    int rd_num;
    int multi_recv_size;
    int progress_mode;
    int verbose;
    int emulate_atomics;
    char *version;
#if MCA_BTL_OFI_FAULT_INJECTION
    char *inject_fault;
#endif

    bool progress_thread;
    int progress_thread_interval; /* microseconds between passes */

    int output;
    bool locking; /* see MCA_BTL_OFI_LOCK */

    int max_rails; /* modules (one per interface) at most */
    size_t rail_split_size; /* puts and gets from this size are split over the rails */
    int num_modules;
    mca_btl_ofi_module_t *modules[MCA_BTL_OFI_MAX_RAILS];
} mca_btl_ofi_component_t;

OPAL_MODULE_DECLSPEC extern mca_btl_ofi_component_t mca_btl_ofi_component;
extern mca_btl_ofi_module_t mca_btl_ofi_module_template;

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
        *counter += n;
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

/** Operations of any kind in flight on a context (the transmit queue's
 * occupancy). */
static inline int64_t mca_btl_ofi_tx_busy(const mca_btl_ofi_context_t *context)
{
    return context->outstanding + context->sends_outstanding;
}

/* Provider defects we work around, found by testing libfabric 1.17. */
enum {
    /* fetching and compare atomics crash the provider (issue #11814) */
    MCA_BTL_OFI_QUIRK_FETCH_ATOMICS = 0x1,
    /* injected messages are lost once many are unacknowledged */
    MCA_BTL_OFI_QUIRK_INJECT = 0x2,
    /* multi-receive buffers lose messages: one buffer per message */
    MCA_BTL_OFI_QUIRK_MULTI_RECV = 0x4,
    /* a message of several datagrams, arriving while no receive is posted
     * (the receiver busy, late, or flooded), sometimes completes with "Truncation
     * error" (the bytes it assembled differ from the size it announced) or
     * crashes the provider: every message fits in one datagram */
    MCA_BTL_OFI_QUIRK_ONE_SEGMENT = 0x8,
};
uint32_t mca_btl_ofi_provider_quirks(const char *prov_name);

/* component */
int mca_btl_ofi_component_progress(void);
int mca_btl_ofi_select_info(struct fi_info **info_out);

/* module */
mca_btl_ofi_module_t *mca_btl_ofi_module_alloc(void);
void mca_btl_ofi_module_free(mca_btl_ofi_module_t *module);
int mca_btl_ofi_module_init(mca_btl_ofi_module_t *module, struct fi_info *info);
int mca_btl_ofi_finalize(mca_btl_base_module_t *btl);
int mca_btl_ofi_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint);

/** fi_close; a failure is reported at verbose level 1 with fi_strerror,
 * WHAT naming the object. Every libfabric object is closed through it. */
int mca_btl_ofi_close_fid(struct fid *fid, const char *what);

/* context: the optional progress thread */
int mca_btl_ofi_progress_thread_start(mca_btl_ofi_module_t *module);
void mca_btl_ofi_progress_thread_stop(mca_btl_ofi_module_t *module);

/* endpoint */
int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                mca_btl_ofi_endpoint_t **ep_out);
int mca_btl_ofi_modex_send(mca_btl_ofi_module_t **modules, int count);

/* atomics */
void mca_btl_ofi_atomics_query(mca_btl_ofi_module_t *module);

void mca_btl_ofi_amo_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len);
void mca_btl_ofi_amo_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len);
int mca_btl_ofi_afop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     mca_btl_base_registration_handle_t *local_handle,
                     mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_ofi_aop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_ofi_acswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/* Test-only fault injection (btl_ofi_inject_fault "CALL@N,..."): the Nth
 * call of CALL fails with -FI_EIO, or for CQ the Nth completion is turned
 * into an error. Built only with --enable-fault-injection (in tree:
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
    MCA_BTL_OFI_FAULT_MAX
};
#if MCA_BTL_OFI_FAULT_INJECTION
extern bool mca_btl_ofi_fault_armed;
bool mca_btl_ofi_fault_hit(int call);
#define MCA_BTL_OFI_FAULT(call) (OPAL_UNLIKELY(mca_btl_ofi_fault_armed) && mca_btl_ofi_fault_hit(call))
#else
#define mca_btl_ofi_fault_armed false
#define MCA_BTL_OFI_FAULT(call) false
#endif

/* Locks of contexts and of the module's tables: real when several threads
 * may enter the component (MPI_THREAD_MULTIPLE, or our progress thread),
 * free otherwise. Unlike OPAL_THREAD_LOCK they do not depend on
 * opal_using_threads() alone, which our own progress thread does not set. */
#define MCA_BTL_OFI_LOCK(m)                        \
    do {                                           \
        if (mca_btl_ofi_component.locking) {       \
            opal_mutex_lock(m);                    \
        }                                          \
    } while (0)
#define MCA_BTL_OFI_UNLOCK(m)                      \
    do {                                           \
        if (mca_btl_ofi_component.locking) {       \
            opal_mutex_unlock(m);                  \
        }                                          \
    } while (0)
/* 0 when the lock was taken (or locking is off), as opal_mutex_trylock */
#define MCA_BTL_OFI_TRYLOCK(m) (mca_btl_ofi_component.locking ? opal_mutex_trylock(m) : 0)

/** An operation to a peer known to be gone: report the peer (once) and
 * refuse the operation with OPAL_ERR_UNREACH. */
int mca_btl_ofi_endpoint_refuse(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);

/** After a failed post or completion: when the peer (on this host) is gone,
 * mark it, report it once and return true. */
bool mca_btl_ofi_endpoint_check(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);

/** A post the provider refused, for its caller: -FI_EAGAIN is
 * OPAL_ERR_OUT_OF_RESOURCE (try again); a peer found gone is reported as
 * such, the real cause, and gives OPAL_ERR_UNREACH; anything else is
 * reported once with the call's name and fi_strerror and gives OPAL_ERROR.
 * The one place that judges a failed post. */
int mca_btl_ofi_post_refused_at(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint, const char *call, ssize_t rc,
                                const char *file, int line);
#define mca_btl_ofi_post_refused(module, endpoint, call, rc) \
    mca_btl_ofi_post_refused_at(module, endpoint, call, rc, __FILE__, __LINE__)

/** Report a failed libfabric call once, with its name and fi_strerror. */
#define MCA_BTL_OFI_REPORT_AT(call, rc, file, line)                                      \
    opal_show_help(MCA_BTL_OFI_HELP_FILE, "fi call failed", true, opal_process_info.nodename, \
                   (call), (int) -(rc), fi_strerror((int) -(rc)), (file), (line))
#define MCA_BTL_OFI_REPORT(call, rc) MCA_BTL_OFI_REPORT_AT(call, rc, __FILE__, __LINE__)

static inline mca_btl_ofi_reg_t *mca_btl_ofi_reg_from_handle(mca_btl_base_registration_handle_t *h)
{
    return (mca_btl_ofi_reg_t *) ((char *) h - offsetof(mca_btl_ofi_reg_t, handle));
}

/** The key of a peer's region on the rail this endpoint talks to. */
static inline uint64_t mca_btl_ofi_rkey(const struct mca_btl_base_endpoint_t *endpoint,
                                        const mca_btl_base_registration_handle_t *handle)
{
    return 0 == endpoint->peer_rail ? handle->key : handle->rail_keys[endpoint->peer_rail - 1];
}

/** Remote address as the provider wants it: virtual, or offset in the region. */
static inline uint64_t mca_btl_ofi_remote_addr(const mca_btl_ofi_module_t *module, uint64_t address,
                                               const mca_btl_base_registration_handle_t *handle)
{
    return module->virt_addr ? address : address - handle->base;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_H */
