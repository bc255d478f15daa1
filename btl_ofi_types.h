/*
 * btl/ofi types: the component, its modules (one per rail), their contexts,
 * endpoints, registrations and counters. Every file's header includes this
 * one, so a type is declared once and no header needs another's functions.
 */

#ifndef MCA_BTL_OFI_TYPES_H
#define MCA_BTL_OFI_TYPES_H

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

#include "btl_ofi_wire.h"

/* peers a context holds an answer for at most (btl_ofi_answers.c): one
 * more is answered at once */
#define MCA_BTL_OFI_HELD_MAX 8

/* btl_atomic_op's flags: the caller will not wait for this atomic's
 * completion soon (osc/rdma's MPI_Win_complete), so its target may answer
 * it with its next message to the caller (btl_ofi_atomic_unhurried_flag
 * publishes the value; a bit the BTL 3.1 flags leave free) */
#define MCA_BTL_OFI_ATOMIC_FLAG_UNHURRIED 0x10000
#include "opal/util/output.h"
#include "opal/util/show_help.h"

BEGIN_C_DECLS

/* Upper bound on contexts per module; also sizes the receive-context bits
 * of a scalable endpoint's address vector. */
#define MCA_BTL_OFI_MAX_CONTEXTS 64
#define MCA_BTL_OFI_RX_CTX_BITS 6

enum {
    MCA_BTL_OFI_MODE_ONE_SIDED = 0,
    MCA_BTL_OFI_MODE_TWO_SIDED = 1,
    MCA_BTL_OFI_MODE_FULL = 2,
};

/* btl_ofi_progress "default" is ours: manual data progress where the
 * provider offers it. We poll from opal_progress anyway, and a provider's
 * own progress thread competing with that poll costs orders of magnitude
 * on a loaded node (README, "Data progress", has the measurement). */
#define MCA_BTL_OFI_PROGRESS_DEFAULT (-1)

/**
 * The part of a registration that travels to peers (osc/rdma copies
 * btl_registration_handle_size bytes of it). No local pointers: the key
 * and, for providers with offset addressing, the region's base address in
 * the owner's address space.
 */
/* Numbered messages (several rails) a process may have posted on one link
 * and not yet seen acknowledged: the receiver remembers which of this many
 * arrived. A power of two, a multiple of 64. */
#define MCA_BTL_OFI_SEQ_WINDOW 128

/* What a process received of the messages a peer numbered on one link:
 * every number below `base', which of the next MCA_BTL_OFI_SEQ_WINDOW,
 * and the number last acknowledged. */
typedef struct mca_btl_ofi_seq_in_t {
    uint32_t base;
    uint32_t acked;
    uint64_t seen[MCA_BTL_OFI_SEQ_WINDOW / 64];
} mca_btl_ofi_seq_in_t;

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
    MCA_BTL_OFI_OP_RECV = 3, /* mca_btl_ofi_rdesc_t */
    MCA_BTL_OFI_OP_BARE = 4, /* a put without callback: the endpoint's `bare' */
    MCA_BTL_OFI_OP_MOVED = 5 /* a put or get sent again on another rail: its
                              * completion only gives the object back */
};

typedef struct mca_btl_ofi_op_t {
    struct fi_context2 ofi_ctx;
    int kind;
} mca_btl_ofi_op_t;

/** An atomic as the BTL API hands it over (btl_atomic_op, _fop, _cswap),
 * passed whole to the paths that carry it in a message of ours: alone
 * (mca_btl_ofi_amo_request) or behind gathered puts or gets
 * (mca_btl_ofi_putv_atomic, mca_btl_ofi_getv_atomic). */
typedef struct mca_btl_ofi_amo_args_t {
    void *result; /* the old value's place, NULL for a non-fetching op */
    uint64_t remote_address;
    mca_btl_base_registration_handle_t *result_handle;
    mca_btl_base_registration_handle_t *remote_handle;
    mca_btl_base_atomic_op_t op;
    uint64_t operand;
    uint64_t compare;
    bool is_cswap;
    int flags;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
} mca_btl_ofi_amo_args_t;

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
    /* of put_count, the puts gathered into messages (btl_ofi_putv.c) */
    uint64_t put_gathered;
    /* of get_count, the gets gathered into messages (btl_ofi_getv.c) */
    uint64_t get_gathered;
    /* answers to a peer's gathered puts that rode at the end of a message
     * of ours to it instead of going alone (btl_ofi_answers.c) */
    uint64_t answer_carried;
    /* messages sent unacknowledged where the provider acknowledges every
     * other (mca_btl_ofi_frag_send_quick) */
    uint64_t send_quick;
    /* tries of a message to a peer of this node held back until earlier
     * ones completed (mca_btl_ofi_stream_room) */
    uint64_t stream_held;
    /* peers' puts that arrived in our memory with remote completion data
     * (btl_ofi_put_notify_size): counted with mca_btl_ofi_add64 */
    volatile int64_t put_notified;
    /* btl_flush calls (osc/rdma's flushes, and its flush_local where a put
     * was not copied): counted with mca_btl_ofi_add64 */
    volatile int64_t flush_count;
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
    struct fid_ep *tx; /* transmit context, or the plain endpoint */
    struct fid_ep *rx; /* receive context, or the plain endpoint */
    struct fid_ep *ep; /* plain endpoint owned by this context (no SEP) */
    struct fid_cq *cq;
    int index;
    /* puts, gets and atomics posted whose completion callback has not run
     * yet (what a flush waits for), and messages posted likewise (sends
     * of the pml and of emulated atomics: a flush does not wait for them;
     * udp;ofi_rxd may never complete one whose data arrived) */
    volatile int64_t outstanding;
    volatile int64_t sends_outstanding;
    /* of `outstanding', the puts and gets carried as messages: they hold
     * no place in the transmit queue (their messages do, as sends), and
     * must not keep their own messages out of it (atomic) */
    volatile int64_t emulated;
    /* something may wait on pending, repost, sendq, rdmaq or deferred
     * (below): set, under the lock, by whoever parks it there; cleared by
     * progress once it finds all five empty. One test instead of five per
     * progress call */
    bool parked;
    /* with locking on: a thread is running the callbacks of completions
     * it read here (outside the lock). No other thread reads this queue
     * meanwhile: callbacks of one context run in the order the provider
     * completed them (see mca_btl_ofi_context_progress) */
    bool delivering;
    /* puts of at least this many bytes carry remote completion data
     * (fi_writedata): SIZE_MAX where the provider has none or
     * btl_ofi_put_notify_size is 0 (copied from the module: the put path
     * reads the context only) */
    size_t put_notify;
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
    /* with several rails, the puts and gets posted here and not yet
     * complete, so that a rail whose link fails can send them again on
     * another (module->track) */
    opal_list_t tracked;
    /* and the numbered messages posted here, not yet complete (module->track) */
    opal_list_t sent;
    /* receive buffers the provider refused for now (-FI_EAGAIN) */
    struct mca_btl_ofi_rdesc_t *repost;
    /* completions the progress thread read but left to an MPI thread, in
     * queue order (only with btl_ofi_progress_thread and emulated atomics) */
    struct fi_cq_data_entry *deferred;
    int deferred_count;
    /* small puts without callback gathered for one peer, sent as one
     * message (btl_ofi_putv.c) */
    struct {
        /* held while gathering and sending (taken only where threads may
         * run in the component, as the context lock; taken before it) */
        opal_mutex_t lock;
        /* the puts gathered, counted under the lock above (the pvars add
         * them to the context's own counters) */
        mca_btl_ofi_counters_t counters;
        struct mca_btl_base_endpoint_t *to; /* NULL: nothing gathered */
        uint64_t key;
        uint32_t key_rail;
        uint32_t count; /* pieces */
        size_t bytes;   /* their data */
        char *head;     /* header, then the pieces' descriptions */
        char *data;     /* their bytes */
        /* the first piece's address as the provider wants it: a flush
         * that finds one piece posts it as the provider's own put */
        uint64_t first_raddr;
    } putv;
    /* small gets gathered for one peer, asked for in one message
     * (btl_ofi_getv.c) */
    struct {
        opal_mutex_t lock; /* as putv.lock */
        mca_btl_ofi_counters_t counters;
        struct mca_btl_ofi_getv_batch_t *batch; /* NULL: nothing gathered */
    } getv;
    /* peers we hold an answer for (btl_ofi_answers.c), retained, under
     * the lock: sent at the next progress pass unless a message of ours
     * to the peer carried it first */
    struct mca_btl_base_endpoint_t *held[MCA_BTL_OFI_HELD_MAX];
    int held_count;
    struct mca_btl_ofi_module_t *module;
} mca_btl_ofi_context_t;

struct mca_btl_ofi_module_t;

/** Who a peer is and whether it lives (btl_ofi_liveness.c). */
typedef struct mca_btl_ofi_ep_live_t {
    bool checkable; /* shares our host: pid and start_time can be checked */
    bool suspect;   /* an error without a clear cause: probe it at the next check */
    bool refused;   /* dead, and an operation was refused: progress reports it */
    /* it said goodbye on our liveness connection: it ended with
     * MPI_Finalize, so it is gone, never lost (no probe, no verdict) */
    bool finalized;
    uint32_t pid;
    uint64_t start_time;
    /* its liveness listener (IP providers; family 0 otherwise), and when
     * its completions stood still since (seconds; liveness probes) */
    struct sockaddr_storage host;
    int64_t seen_completed;
    double stall_began; /* since when nothing completed, for the report */
    double stall_since; /* since the last probe (or stall_began) */
    double probe_wait;  /* stall before the next probe: doubles while it answers */
    double probed_at;   /* when a failed operation last probed it at once */
    /* our liveness connection to its listener (a peer on another host we
     * posted to), and how far it got */
    int fd;
    int state;
} mca_btl_ofi_ep_live_t;

/** Where a peer is reached among the rails (btl_ofi_rails.c). */
typedef struct mca_btl_ofi_ep_rail_t {
    /* the peer's rail this endpoint talks to (index of its keys in the
     * peer's registration handles), and the same peer's endpoints on our
     * other rails, found when a transfer is first split over them */
    int peer_rail;
    size_t peer_key_offset; /* where that rail's key is in a registration handle */
    struct mca_btl_base_endpoint_t *peers[MCA_BTL_OFI_MAX_RAILS];
    /* this rail's link to the peer failed while another rail reaches it:
     * every operation for it takes that rail's endpoint instead (set once,
     * detour_module first) */
    struct mca_btl_base_endpoint_t *volatile detour;
    struct mca_btl_ofi_module_t *detour_module;
    bool told; /* the peer was sent our notice of that failure */
} mca_btl_ofi_ep_rail_t;

/** With several rails (module->track), the numbered messages of this
 * rail's link, so that none is lost or taken twice when it fails
 * (btl_ofi_seq.c). Ours to the peer: the next number, the first the peer
 * has not acknowledged, and those completed but not acknowledged (kept to
 * be sent again). Under lock, which is taken last. What the peer numbered
 * to us is its module's (seq_in), as a message may come before its
 * endpoint exists. */
typedef struct mca_btl_ofi_ep_seq_t {
    opal_mutex_t lock;
    uint32_t tx_seq;
    uint32_t tx_acked;
    opal_list_t unacked;
} mca_btl_ofi_ep_seq_t;

/** Emulated puts and gets to a peer (module->rma_emulated,
 * btl_ofi_emulate.c): messages that may still be in flight without
 * overrunning its receive side, and the operations waiting to send more,
 * under the module lock. */
typedef struct mca_btl_ofi_ep_emu_t {
    int32_t credits;
    opal_list_t waiting;
} mca_btl_ofi_ep_emu_t;

/** Per-peer state: what every operation reads first, then one part per
 * concern. */
struct mca_btl_base_endpoint_t {
    opal_list_item_t super;
    struct opal_proc_t *proc;
    /* address used by local context i to reach this peer */
    fi_addr_t *addrs;
    bool lost; /* reported to the upper layer as unreachable */
    /* the process behind it is known to be gone: operations to it fail at
     * once instead of waiting on a provider that may never complete them */
    volatile bool dead;
    /* our operations to it posted and completed (atomic): work is owed to
     * it while they differ, and it is stalled while `completed' stands */
    volatile int64_t posted;
    volatile int64_t completed;
    /* our acknowledgements to it in flight (several rails; atomic): not
     * in `posted' (nothing of ours waits on them), but finalize's drain
     * waits for them, which it may stop doing once the peer left */
    volatile int64_t acks_open;
    /* the operation context of every put to this peer posted without a
     * callback (osc/rdma's, flushed later): its completion only has to be
     * counted, so it needs no object of its own. Shared by all such puts
     * in flight, which is allowed only when the provider keeps nothing in
     * it (no FI_CONTEXT mode: module->bare_limit) */
    mca_btl_ofi_op_t bare;
    /* messages of gathered puts to it posted and not yet answered
     * (btl_ofi_putv.c; atomic): an atomic to it while any is goes as a
     * message behind them where module->amo_ordered */
    volatile int32_t putv_open;
    /* likewise messages of gathered gets from it, and its gets posted as
     * the provider's reads, until complete (btl_ofi_getv.c) */
    volatile int32_t getv_open;
    volatile int32_t getv_lone_open;
    /* an answer to its gathered puts and the atomic after them, which it
     * does not wait for (btl_ofi_answers.c): held for our next message to
     * it, under held_context's lock */
    bool answer_held;
    /* where module->quick_max: messages sent to it unacknowledged since
     * the last acknowledged one was posted, and whether that one is still
     * in flight (cleared by its completion); under the context lock */
    uint16_t quick_sent;
    bool ack_open;
    /* bytes of our messages to it posted and not complete, and how many
     * may be (0: no budget; mca_btl_ofi_stream_room) */
    volatile int64_t stream_bytes;
    int64_t stream_limit;
    struct mca_btl_ofi_context_t *held_context;
    mca_btl_ofi_putv_amo_resp_t held_answer;
    mca_btl_ofi_ep_rail_t rail;
    mca_btl_ofi_ep_live_t live;
    mca_btl_ofi_ep_seq_t seq;
    mca_btl_ofi_ep_emu_t emu;
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

    bool virt_addr; /* FI_MR_VIRT_ADDR: peers address memory by virtual address */
    /* puts without callback below this size share their peer's `bare'
     * context: 0 when the provider keeps state in contexts (FI_CONTEXT)
     * or with several rails (track), else every size */
    size_t bare_limit;
    /* puts from this size carry remote completion data, SIZE_MAX: none
     * (see btl_ofi_put_notify_size) */
    size_t put_notify;
    bool prov_key; /* FI_MR_PROV_KEY: the provider picks registration keys */
    /* several rails: puts and gets are kept on their context's `tracked'
     * list until complete, and every message has a completion (no
     * fi_inject), so that a failed rail's traffic can be moved or known
     * in flight */
    bool track;
    uint64_t key_mask;

    /* per btl op (and index MCA_BTL_ATOMIC_LAST for compare-swap): bit 0 set
     * when the 64-bit form is usable, bit 1 when the 32-bit form is */
    uint8_t atomic_ok[MCA_BTL_ATOMIC_LAST + 1];

    opal_mutex_t lock; /* endpoint and registration tables */
    opal_hash_table_t endpoints_by_proc;
    opal_hash_table_t endpoints_by_name; /* who sent an emulated atomic */
    opal_hash_table_t regs_by_key;       /* registrations peers may target */
    /* emulated atomics, puts and gets in flight, by the id their replies
     * carry: a reply is trusted only if its id is found here (never used
     * as a pointer) */
    opal_hash_table_t emu_requests;
    uint64_t emu_next_id;
    /* emulated puts and gets that failed, completed by the next progress
     * pass (mca_btl_ofi_rma_failures), under `lock' */
    opal_list_t emu_failed;
    /* work an operation's path left for the next progress pass: a verdict
     * on a peer it found dead, a failed emulated put or get */
    volatile bool deferred;
    /* numbered messages peers posted on this rail's links, by sender
     * name: mca_btl_ofi_seq_in_t (btl_ofi_seq.c), under `lock' */
    opal_hash_table_t seq_in;
    opal_list_t endpoints;
    /* endpoints del_procs let go of: messages still queued or in flight
     * name them until finalize has drained (released there) */
    opal_list_t retired;

    /* messaging: enabled when a context must receive (emulated atomics,
     * two-sided traffic); msg_size is the size of one receive buffer */
    bool messaging;
    bool amo_emulated; /* atomics carried as messages, applied by the target */
    bool rma_emulated; /* puts and gets carried as messages (btl_ofi_emulate.c) */
    size_t rma_chunk;  /* data bytes one such message carries */
    /* puts without callback of at most this many bytes are gathered into
     * messages (btl_ofi_putv.c); 0: none are */
    size_t putv_max;
    /* an atomic to a peer with gathered puts open (not yet answered) goes
     * as a message behind them, so that it is applied after them: one
     * context (its messages leave in order), one rail, and atomics the
     * target's processor applies (btl_ofi_put_copied_ordered) */
    bool amo_ordered;
    /* gets up to this size are gathered into messages (btl_ofi_getv.c),
     * 0: none are; and the batches they are gathered in */
    size_t getv_max;
    opal_free_list_t getv_batches;
    size_t msg_size;
    size_t inject_size;
    /* drive the provider once after each message posted: it only queues
     * them until driven (MCA_BTL_OFI_QUIRK_INJECT_QUEUED, mca_btl_ofi_kick) */
    bool kick;
    /* messages up to this size may go unacknowledged, a few at a time per
     * peer (mca_btl_ofi_frag_fi_send); 0: every one is sent with the
     * endpoint's flags. One context, one rail, MCA_BTL_OFI_QUIRK_SEND_ACKED */
    size_t quick_max;
    /* bytes of messages in flight to each peer of this node
     * (endpoint->stream_limit), 0: no budget. One rail,
     * MCA_BTL_OFI_QUIRK_STREAM_STALL */
    int64_t stream_budget;
    int64_t tx_limit; /* operations in flight per context (tx queue size) */
    /* bytes of one FI_MULTI_RECV buffer, 0 when receives use single buffers */
    size_t multi_recv_size;

    mca_rcache_base_module_t *rcache; /* local-only registrations */
    opal_free_list_t exposed_regs;    /* registrations peers can reach */
    opal_free_list_t frags;           /* two-sided send descriptors */
    mca_btl_base_module_error_cb_fn_t error_cb;
    /* background progress for manual-progress providers (btl_ofi_progress_thread) */
    opal_thread_t progress_thread;
    volatile int32_t progress_stop;
    bool progress_running;
    /* finalize is draining: the layers above are gone (their code may
     * already be unloaded), so completions are reaped without callbacks */
    bool closing;
    /* a link of this rail to a peer failed (its traffic took another rail) */
    bool link_failed;
    /* liveness probes of peers' hosts under way (btl_ofi_liveness.c) */
    struct mca_btl_ofi_probe_t *probes;
    int num_probes;
    int probe_listener; /* our liveness listener (peers probe it), 0: none */
    int *live_in;       /* connections peers made to it, kept open until they close */
    int num_live_in;
    int live_max;      /* most of either, so that they never take the fds a job needs */
    double next_check; /* when peers are next checked (seconds) */
    double next_proc;  /* when same-host peers are next looked up in /proc */
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
    double peer_probe_after; /* s a peer's operations may stand still before its host is probed */
    int peer_probe_timeout;  /* s a probe may go unanswered before the host is lost */
    int num_cq_read;
    int rd_num;
    int multi_recv_size;
    int progress_mode;
    int verbose;
    int emulate_atomics;
    int emulate_rma;
    int global_atomics; /* -1 where known, 0 or 1: see mca_btl_ofi_global_atomics */
    char *version;
#if MCA_BTL_OFI_FAULT_INJECTION
    char *inject_fault;
#endif

    bool progress_thread;
    int progress_thread_interval; /* microseconds between passes */

    int output;
    bool locking;     /* see MCA_BTL_OFI_LOCK */
    uint64_t my_name; /* this process's name as a key (mca_btl_ofi_name_key) */

    int max_rails;             /* modules (one per interface) at most */
    size_t rail_split_size;    /* puts and gets from this size are split over the rails */
    size_t put_notify_size;    /* puts from this size carry remote CQ data, 0: none */
    size_t put_gather_size;    /* puts up to this size gathered into messages, 0: none */
    size_t get_gather_size;    /* gets likewise */
    size_t put_copied_max;     /* btl_ofi_put_copied_max: puts copied before btl_put returns */
    bool put_copied_ordered;   /* btl_ofi_put_copied_ordered: atomics applied after them */
    size_t stream_budget;      /* btl_ofi_stream_budget */
    int atomic_unhurried_flag; /* btl_ofi_atomic_unhurried_flag (btl_ofi_answers.c) */
    size_t get_ordered_max;    /* btl_ofi_get_ordered_max: atomics applied after such gets */
    /* storage of btl_ofi_bandwidth_IF and btl_ofi_latency_IF, one per rail
     * (registered at init, when the rails' interfaces are known) */
    unsigned int rail_bandwidth[MCA_BTL_OFI_MAX_RAILS];
    unsigned int rail_latency[MCA_BTL_OFI_MAX_RAILS];
    int num_modules;
    mca_btl_ofi_module_t *modules[MCA_BTL_OFI_MAX_RAILS];
    /* the context when there is one module with one context (the common
     * case), else NULL: the progress callback then goes straight to it */
    struct mca_btl_ofi_context_t *only_context;
    /* Open MPI's ompi_mpi_state (libmpi, above this layer: looked up by
     * name at init), NULL in a process without it; read by
     * mca_btl_ofi_mpi_finalizing */
    const volatile int32_t *mpi_state;
} mca_btl_ofi_component_t;

/* Open MPI finds the component by this exported name. Our own code
 * reaches the same object through a hidden alias (defined beside it in
 * btl_ofi_component.c), which the compiler addresses directly rather than
 * through the GOT as it must an exported variable: one load less on every
 * access, several per operation on the hot paths. */
OPAL_MODULE_DECLSPEC extern mca_btl_ofi_component_t mca_btl_ofi_component;
extern mca_btl_ofi_component_t mca_btl_ofi_component_hidden __opal_attribute_visibility__("hidden");
#ifndef MCA_BTL_OFI_COMPONENT_DEFINITION
#define mca_btl_ofi_component mca_btl_ofi_component_hidden
#endif
extern mca_btl_ofi_module_t mca_btl_ofi_module_template;

END_C_DECLS

#endif /* MCA_BTL_OFI_TYPES_H */
