/*
 * btl/ofi progress: reading the contexts' completion queues and handing
 * each completion to its owner (an RMA operation, a send, a received
 * message), completion errors and what they say about peers, and the
 * optional progress thread.
 *
 * Only progress runs this: the component's progress callback, a flush
 * waiting for its operations, and the progress thread. The operations'
 * own paths (put, get, atomics, send) never read a completion queue: a
 * full context answers OPAL_ERR_OUT_OF_RESOURCE and the caller
 * progresses, so failover and fatal-error code run from here only.
 */

/* first: it selects the system's extensions (dladdr) */
#include "opal_config.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "btl_ofi.h"
#include "btl_ofi_context.h"
#include "btl_ofi_progress.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_answers.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_rdma.h"

/* Largest batch read from a completion queue in one call; the
 * btl_ofi_num_cq_read parameter is clamped to it. */
#define MCA_BTL_OFI_CQ_BATCH_MAX 128

/* The peer an operation was posted to; NULL for a receive (its sender is
 * unknown when it fails). */
static mca_btl_ofi_endpoint_t *mca_btl_ofi_op_endpoint(void *op_context)
{
    if (MCA_BTL_OFI_OP_SEND == ((mca_btl_ofi_op_t *) op_context)->kind) {
        return mca_btl_ofi_frag_from_op(op_context)->endpoint;
    }
    return mca_btl_ofi_rma_endpoint(op_context);
}

static void mca_btl_ofi_context_report_error(mca_btl_ofi_context_t *context,
                                             const struct fi_cq_err_entry *err)
{
    mca_btl_ofi_endpoint_t *endpoint = NULL;
    char detail[256] = "", peer[256];

    snprintf(peer, sizeof(peer), "unknown (%s)",
             NULL == err->op_context ? "a peer's operation on this process" : "a receive");
    if (NULL != err->op_context) {
        endpoint = mca_btl_ofi_op_endpoint(err->op_context);
    }
    if (NULL != endpoint && NULL != endpoint->proc) {
        snprintf(peer, sizeof(peer), "%s on %s", OPAL_NAME_PRINT(endpoint->proc->proc_name),
                 NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?");
    }
    (void) fi_cq_strerror(context->cq, err->prov_errno, err->err_data, detail, sizeof(detail));
    MCA_BTL_OFI_SHOW_HELP("completion error", opal_process_info.nodename, context->index, peer,
                          err->err, fi_strerror(err->err), err->prov_errno, detail);
}

/* A completion error that means the peer is gone (it exited, its host or
 * connection failed): tell the upper layer once per peer through the BTL
 * error callback, naming the peer; ob1 then ends the job with that text
 * instead of waiting for traffic that will never come. */
static void mca_btl_ofi_peer_lost(mca_btl_ofi_context_t *context, void *op_context, int err,
                                  int prov_errno)
{
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_endpoint_t *endpoint = mca_btl_ofi_op_endpoint(op_context);
    char info[256];

    if (NULL == endpoint) {
        /* a receive that failed lost a message from an unknown sender: the
         * upper layer would wait for it forever, so it must stop instead;
         * a peer on this host that died mid-message (shm reports EIO) is
         * named as the cause */
        if (mca_btl_ofi_dead_sender(module)) {
            return;
        }
        snprintf(info, sizeof(info),
                 "btl/ofi on %s lost an incoming message (receive completed with error: "
                 "%s); the job cannot continue without it",
                 opal_process_info.nodename, fi_strerror(err));
        mca_btl_ofi_module_fatal(module, NULL, info);
        return;
    }
    switch (err) {
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_ETIMEDOUT:
    case FI_EADDRNOTAVAIL:
        mca_btl_ofi_endpoint_lost(module, endpoint, fi_strerror(err));
        break;
    case FI_ECANCELED:
        /* ofi_rxm cancels what was queued on a connection that closed
         * under it, and its errno says so: the peer's process is gone (a
         * live peer closes no connection while our operations to it are
         * in flight). Named here, before the report: a probe could still
         * find the dying process's listener open, and the report's help
         * message holds this process while the runtime ends the job (the
         * host then went unnamed: tests/hosts lost:tcp+ofi_rxm:msg:kill,
         * 1 run of a fresh CI) */
        if (ENOTCONN == prov_errno || ECONNRESET == prov_errno || EPIPE == prov_errno) {
            snprintf(info, sizeof(info),
                     "its connection closed (the provider canceled an operation to it: %s)",
                     strerror(prov_errno));
            mca_btl_ofi_endpoint_lost(module, endpoint, info);
            break;
        }
        mca_btl_ofi_endpoint_suspect(module, endpoint);
        break;
    default:
        /* other errors (EIO, ECANCELED...) name no cause: look at the peer
         * (in /proc on this host, by a probe on another) */
        mca_btl_ofi_endpoint_suspect(module, endpoint);
        break;
    }
}

/* Whether the status of a failed operation whose callback is CBFUNC
 * would go unseen: no callback at all, or one of osc/rdma's (found by the
 * shared object, or linked into libmpi the exported symbol, that holds
 * it). osc/rdma 4.1 ignores the status its completion callbacks receive
 * (it only asserts on it in debug builds); ob1 and direct users of the
 * BTL API act on it. */
static void mca_btl_ofi_rdma_failed(mca_btl_ofi_context_t *context, void *op_context, int err)
{
    mca_btl_ofi_rdma_failed_because(context, op_context, fi_strerror(err));
}

/* An error completion with no context of ours: the provider failed an
 * operation a peer aimed at this process (udp;ofi_rxd reports a remote
 * write that did not deliver all its bytes this way). Unless it was an
 * access refused (tcp;ofi_rxm reports those here too), the peer was told
 * nothing and this process's memory may lack what it wrote: the job
 * stops, unless a peer on this host died (then named as the cause). */
static void mca_btl_ofi_remote_failed(mca_btl_ofi_context_t *context, int err)
{
    char info[512];

    if (FI_EACCES == err || FI_EPERM == err || FI_EKEYREJECTED == err) {
        /* an access the provider refused (a key or region not open to
         * it): this memory is unchanged and the peer's own operation
         * fails, so the peer's owner learns of it */
        return;
    }
    if (mca_btl_ofi_dead_sender(context->module)) {
        return;
    }
    snprintf(info, sizeof(info),
             "btl/ofi on %s: provider %s reported an error (%s) on an operation a peer aimed at "
             "this process; what it wrote here may be incomplete: the job cannot continue",
             opal_process_info.nodename, context->module->info->fabric_attr->prov_name,
             fi_strerror(err));
    mca_btl_ofi_module_fatal(context->module, NULL, info);
}

/* A failed operation of ours, in this order: its peer named if it is
 * lost (the failed operation's owner may end the job on it, as ob1 does,
 * without saying which peer it was), the error reported, then a
 * put/get/atomic whose owner will not look at the status stops the job.
 * The report comes second because showing a help message may hold this
 * process for a second while the runtime relays it (seen when a host's
 * processes were all killed: the runtime ended the job meanwhile, and
 * nobody named the host). A failed receive names no peer and stops the
 * job: its report comes first. ACT false: the report only (a failed
 * send's owner gets the status). */
static void mca_btl_ofi_op_failed(mca_btl_ofi_context_t *context, const struct fi_cq_err_entry *err,
                                  bool act)
{
    int kind = ((mca_btl_ofi_op_t *) err->op_context)->kind;
    bool report_first = MCA_BTL_OFI_OP_RECV == kind || !act;

    if (MCA_BTL_OFI_OP_SEND == kind) {
        const mca_btl_ofi_frag_t *frag = mca_btl_ofi_frag_from_op(err->op_context);
        if (mca_btl_ofi_ack_failed(frag->hdr, frag->endpoint, fi_strerror(err->err))) {
            return;
        }
        if (OPAL_UNLIKELY(mca_btl_ofi_mpi_finalizing())) {
            /* its peer may have left MPI_Finalize already (see
             * mca_btl_ofi_module_fatal); its owner still gets the status */
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                                "in MPI_Finalize, a message to peer %s failed (%s): not an error",
                                NULL != frag->endpoint && NULL != frag->endpoint->proc
                                    ? OPAL_NAME_PRINT(frag->endpoint->proc->proc_name)
                                    : "?",
                                fi_strerror(err->err));
            return;
        }
    }

    if (report_first) {
        mca_btl_ofi_context_report_error(context, err);
    }
    if (act) {
        mca_btl_ofi_peer_lost(context, err->op_context, err->err, err->prov_errno);
    }
    if (!report_first) {
        mca_btl_ofi_context_report_error(context, err);
    }
    if (act && (MCA_BTL_OFI_OP_RDMA == kind || MCA_BTL_OFI_OP_BARE == kind)) {
        mca_btl_ofi_rdma_failed(context, err->op_context, err->err);
    }
}

/* A message received, for the MPI_T counters. Unlocked: two threads may
 * deliver completions of one context at once (a locked add then, as
 * mca_btl_ofi_add64 does). */
static inline void mca_btl_ofi_count_recv(mca_btl_ofi_context_t *context, size_t len)
{
    mca_btl_ofi_add64((volatile int64_t *) &context->counters.recv_count, 1);
    mca_btl_ofi_add64((volatile int64_t *) &context->counters.recv_bytes, (int64_t) len);
}

/* One completion, to the object that posted it: E's fields other than
 * op_context are read for a receive only. */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_dispatch(mca_btl_ofi_context_t *context, const struct fi_cq_data_entry *e, int status)
{
    void *op_context = e->op_context;

    if (OPAL_UNLIKELY(e->flags & FI_REMOTE_WRITE)) {
        /* a peer's put announced (btl_ofi_put_notify_size): its arrival
         * is this call's event, there is nothing to finish */
        mca_btl_ofi_add64(&context->counters.put_notified, 1);
        return;
    }
    switch (((mca_btl_ofi_op_t *) op_context)->kind) {
    case MCA_BTL_OFI_OP_BARE:
        /* a put without callback: counted; a failure was acted on before */
        mca_btl_ofi_inflight(context, mca_btl_ofi_endpoint_from_bare(op_context), -1);
        break;
    case MCA_BTL_OFI_OP_RDMA:
        mca_btl_ofi_completion_finish(mca_btl_ofi_completion_from_ctx(op_context), status);
        break;
    case MCA_BTL_OFI_OP_SEND:
        mca_btl_ofi_frag_sent(mca_btl_ofi_frag_from_op(op_context), status);
        break;
    case MCA_BTL_OFI_OP_MOVED:
        /* sent again on another rail, which finishes it: only given back */
        (void) mca_btl_ofi_untrack(mca_btl_ofi_completion_from_ctx(op_context));
        break;
    default:
        if ((e->flags & FI_RECV) && e->len > 0 && OPAL_SUCCESS == status) {
            mca_btl_ofi_count_recv(context, e->len);
        }
        mca_btl_ofi_msg_received(context, (mca_btl_ofi_rdesc_t *) op_context, e->flags,
                                 OPAL_SUCCESS == status ? e->len : 0, e->buf);
        break;
    }
}

#if MCA_BTL_OFI_FAULT_INJECTION
/* Fault injection (testing): turn the chosen completion into an error,
 * reported and delivered as a real one would be. A failed receive keeps
 * its buffer's reposting, so only the message is lost. */
static void mca_btl_ofi_fault_completions(mca_btl_ofi_context_t *context,
                                          struct fi_cq_data_entry *entries, ssize_t count)
{
    for (ssize_t i = 0; i < count; ++i) {
        int kind;

        if (entries[i].flags & FI_REMOTE_WRITE) {
            entries[i].data = 0; /* a peer's put announced: no operation of ours */
            continue;
        }
        kind = ((mca_btl_ofi_op_t *) entries[i].op_context)->kind;
        if (MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_CQ)
            || ((MCA_BTL_OFI_OP_RDMA == kind || MCA_BTL_OFI_OP_BARE == kind)
                && MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_RMACQ))) {
            struct fi_cq_err_entry err = {
                .op_context = entries[i].op_context, .flags = entries[i].flags, .err = FI_EIO};
            mca_btl_ofi_op_failed(context, &err,
                                  (MCA_BTL_OFI_OP_RECV == kind && (entries[i].flags & FI_RECV))
                                      || MCA_BTL_OFI_OP_RDMA == kind
                                      || MCA_BTL_OFI_OP_BARE == kind);
            entries[i].len = 0;
            entries[i].flags &= ~FI_RECV;
            /* an RDMA or send completion now carries the error status */
            entries[i].data = 1;
        } else {
            entries[i].data = 0;
        }
        if (MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_REMOTE)) {
            /* beside this completion, the provider's report of a peer's
             * operation on this process that failed, as udp;ofi_rxd gives
             * it for a remote write short of its bytes */
            struct fi_cq_err_entry err = {.err = FI_ETRUNC};
            mca_btl_ofi_context_report_error(context, &err);
            mca_btl_ofi_remote_failed(context, FI_ETRUNC);
        }
    }
}
#endif

/* Operations parked on the context (replies, receive buffers, sends,
 * RMA the provider refused for now) found under its lock, posted once the
 * lock is released; nothing to do on almost every call. */
static inline void mca_btl_ofi_backlogs(mca_btl_ofi_context_t *context, bool msgs, bool rdma)
{
    if (OPAL_UNLIKELY(msgs)) {
        mca_btl_ofi_backlog_msgs(context);
    }
    if (OPAL_UNLIKELY(rdma)) {
        mca_btl_ofi_backlog_rdma(context);
    }
}

/* A read that returned no completion (COUNT <= 0), with the lock held: an
 * error entry to read and deliver, the provider's own failure, or nothing
 * (-FI_EAGAIN); the backlogs found under the lock run in the last two
 * cases. Releases the lock. */
static int mca_btl_ofi_context_idle(mca_btl_ofi_context_t *context, ssize_t count, bool msgs,
                                    bool rdma)
{
    struct fi_cq_err_entry err;

    if (-FI_EAVAIL == count) {
        memset(&err, 0, sizeof(err));
        count = fi_cq_readerr(context->cq, &err, 0);
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (count < 0) {
            MCA_BTL_OFI_REPORT("fi_cq_readerr", count);
            return 0;
        }
        if (NULL == err.op_context) {
            mca_btl_ofi_context_report_error(context, &err);
            mca_btl_ofi_remote_failed(context, err.err);
            return 1;
        }
        /* one sent again on another rail: its failure here is expected */
        if (MCA_BTL_OFI_OP_MOVED != ((mca_btl_ofi_op_t *) err.op_context)->kind) {
            mca_btl_ofi_op_failed(context, &err, true);
        }
        struct fi_cq_data_entry failed = {.op_context = err.op_context, .flags = err.flags};
        mca_btl_ofi_dispatch(context, &failed, OPAL_ERROR);
        return 1;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    mca_btl_ofi_backlogs(context, msgs, rdma);
    if (OPAL_UNLIKELY(-FI_EAGAIN != count && 0 != count)) {
        MCA_BTL_OFI_REPORT("fi_cq_read", count);
    }
    return 0;
}

/* Whether another thread is still running the callbacks of completions
 * it read from CONTEXT (the lock held). Both sides under the lock: a
 * plain flag that helgrind can follow, and the clear costs one
 * uncontended lock per batch, with locking on only. */
static inline bool mca_btl_ofi_delivery_busy(const mca_btl_ofi_context_t *context)
{
    return OPAL_UNLIKELY(mca_btl_ofi_component.locking) && context->delivering;
}

/* We are about to run callbacks (the lock held) */
static inline void mca_btl_ofi_delivery_start(mca_btl_ofi_context_t *context)
{
    context->delivering = mca_btl_ofi_component.locking;
}

/* ... and ran them (the lock not held) */
static inline void mca_btl_ofi_delivery_end(mca_btl_ofi_context_t *context)
{
    if (OPAL_UNLIKELY(mca_btl_ofi_component.locking)) {
        opal_mutex_lock(&context->lock);
        context->delivering = false;
        opal_mutex_unlock(&context->lock);
    }
}

/* Deliver COUNT completions read (the lock released): callbacks run
 * unlocked, they may post new operations to this context. */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_deliver(mca_btl_ofi_context_t *context, struct fi_cq_data_entry *entries, ssize_t count)
{
#if MCA_BTL_OFI_FAULT_INJECTION
    if (OPAL_UNLIKELY(mca_btl_ofi_fault_armed)) {
        mca_btl_ofi_fault_completions(context, entries, count);
    }
#endif
    for (ssize_t i = 0; i < count; ++i) {
        mca_btl_ofi_dispatch(
            context, entries + i,
            OPAL_UNLIKELY(mca_btl_ofi_fault_armed && entries[i].data) ? OPAL_ERROR : OPAL_SUCCESS);
    }
    if (OPAL_UNLIKELY(context->module->rma_emulated)) {
        /* the put pieces served above answered together */
        mca_btl_ofi_rma_answers_send();
    }
}

/* Progress of a context with something parked (see `parked'): the
 * backlogs to post again, or completions the progress thread deferred. */
static __opal_attribute_noinline__ int
mca_btl_ofi_context_progress_parked(mca_btl_ofi_context_t *context)
{
    struct fi_cq_data_entry entries[MCA_BTL_OFI_CQ_BATCH_MAX];
    int batch = mca_btl_ofi_component.num_cq_read;
    bool msgs, rdma;
    ssize_t count;

    /* read under the lock (other threads queue to them); what callbacks
     * below add is posted by the next call */
    msgs = !opal_list_is_empty(&context->pending) || NULL != context->repost
           || !opal_list_is_empty(&context->sendq);
    rdma = !opal_list_is_empty(&context->rdmaq);
    if (context->deferred_count > 0) {
        /* what the progress thread read comes first, in queue order */
        count = context->deferred_count < batch ? context->deferred_count : batch;
        memcpy(entries, context->deferred, (size_t) count * sizeof(entries[0]));
        context->deferred_count -= (int) count;
        memmove(context->deferred, context->deferred + count,
                (size_t) context->deferred_count * sizeof(entries[0]));
    } else {
        count = fi_cq_read(context->cq, entries, batch);
    }
    context->parked = msgs || rdma || context->deferred_count > 0;
    if (count <= 0) {
        return mca_btl_ofi_context_idle(context, count, msgs, rdma);
    }
    mca_btl_ofi_delivery_start(context);
    MCA_BTL_OFI_UNLOCK(&context->lock);
    mca_btl_ofi_deliver(context, entries, count);
    mca_btl_ofi_delivery_end(context);
    mca_btl_ofi_backlogs(context, msgs, rdma);
    return (int) count;
}

int mca_btl_ofi_context_progress(mca_btl_ofi_context_t *context)
{
    struct fi_cq_data_entry entries[MCA_BTL_OFI_CQ_BATCH_MAX];
    ssize_t count;

    /* puts and gets gathered since the last pass leave now: none waits
     * for more than the caller's next call into MPI. Without threads in
     * the component nothing else writes the count: a look first; with
     * them only the calls' tries of the gathering locks read it */
    if (mca_btl_ofi_component.locking || OPAL_UNLIKELY(0 != context->putv.count)) {
        mca_btl_ofi_putv_send(context);
    }
    if (mca_btl_ofi_component.locking || OPAL_UNLIKELY(NULL != context->getv.batch)) {
        mca_btl_ofi_getv_send(context);
    }
    /* answers held by the last pass (btl_ofi_answers.c) that no message
     * of ours carried meanwhile */
    if (mca_btl_ofi_component.locking || OPAL_UNLIKELY(0 != context->held_count)) {
        mca_btl_ofi_answers_release(context);
    }
    /* another thread is draining this context: nothing to add. Draining
     * includes running the callbacks of what it read: a thread that read
     * the next completions meanwhile ran theirs first, and a receiver
     * saw a peer's later message before its earlier one (coll/ofi over
     * tcp;ofi_rxm with MPI_THREAD_MULTIPLE: a later call's flag seen, the
     * call's own data not yet copied, a result two calls old; 3 of 25
     * runs of tests/coll colltest_mt) */
    if (0 != MCA_BTL_OFI_TRYLOCK(&context->lock)) {
        return 0;
    }
    if (mca_btl_ofi_delivery_busy(context)) {
        MCA_BTL_OFI_UNLOCK(&context->lock);
        return 0;
    }
    if (OPAL_UNLIKELY(context->parked)) {
        return mca_btl_ofi_context_progress_parked(context);
    }
    count = fi_cq_read(context->cq, entries, mca_btl_ofi_component.num_cq_read);
    if (count <= 0) {
        return mca_btl_ofi_context_idle(context, count, false, false);
    }
    mca_btl_ofi_delivery_start(context);
    MCA_BTL_OFI_UNLOCK(&context->lock);
    mca_btl_ofi_deliver(context, entries, count);
    mca_btl_ofi_delivery_end(context);
    return (int) count;
}

/* ------------------------------------------------- the progress callback */

/* What the operations' paths left for progress (they never report a lost
 * peer nor stop the job themselves): failed emulated puts and gets, and
 * the peers they were refused for. */
static void mca_btl_ofi_deferred_run(mca_btl_ofi_module_t *module)
{
    module->deferred = false;
    mca_btl_ofi_rma_failures(module);
    mca_btl_ofi_refusals_report(module);
}

/* Visit every context of every module once, each bounded by
 * btl_ofi_num_cq_read completions, so one busy context cannot starve the
 * others and a single call stays short, and run what the operations'
 * paths deferred (with one module and one context the progress callback
 * comes here every MCA_BTL_OFI_CHECK_CALLS calls: its common call stays
 * one context's read); CHECK: look at the peers too. */
int mca_btl_ofi_progress_all(bool check)
{
    int count = 0;

    for (int m = 0; m < mca_btl_ofi_component.num_modules; ++m) {
        mca_btl_ofi_module_t *module = mca_btl_ofi_component.modules[m];
        if (OPAL_UNLIKELY(NULL == module)) {
            continue; /* finalized while another rail lives on */
        }
        for (int i = 0; i < module->num_contexts; ++i) {
            count += mca_btl_ofi_context_progress(module->contexts + i);
        }
        if (OPAL_UNLIKELY(module->deferred)) {
            mca_btl_ofi_deferred_run(module);
        }
        if (OPAL_UNLIKELY(check)) {
            mca_btl_ofi_peers_check(module);
        }
    }
    return count;
}

/* Calls between two looks at the peers, and what a call that found
 * nothing to do counts for: a caller with nothing to do may sleep between
 * calls (mpi_yield_when_idle: Open MPI 4.1 was seen to sleep there), so
 * that 256 idle calls took about a second, and a peer that died while
 * nothing of ours waited on it was named only after the runtime had ended
 * the job. Idle calls count 16: a look every 16 of them. The looks
 * themselves are paced by the clock (mca_btl_ofi_peers_check). */
#define MCA_BTL_OFI_CHECK_IDLE_WEIGHT 16

int mca_btl_ofi_component_progress(void)
{
    /* per thread, so that counting needs no atomics; initial-exec: a
     * shared object's thread-local variable otherwise costs a call to
     * __tls_get_addr on every access (callgrind: a fifth of this function's
     * instructions); glibc keeps room for a few bytes of such variables in
     * objects opened later with dlopen, as Open MPI opens us */
    static __thread int32_t budget __attribute__((tls_model("initial-exec"))) =
        MCA_BTL_OFI_CHECK_CALLS;
    mca_btl_ofi_context_t *only = mca_btl_ofi_component.only_context;
    int count;

    if (OPAL_UNLIKELY(--budget <= 0)) {
        budget = MCA_BTL_OFI_CHECK_CALLS;
        return mca_btl_ofi_progress_all(true);
    }
    count = OPAL_LIKELY(NULL != only) ? mca_btl_ofi_context_progress(only)
                                      : mca_btl_ofi_progress_all(false);
    if (0 == count) {
        budget -= MCA_BTL_OFI_CHECK_IDLE_WEIGHT - 1;
    }
    return count;
}

/* ---------------------------------------------------------- progress thread */

/*
 * The progress thread only drives the provider: a zero-count fi_cq_read
 * runs the provider's progress engine (answering peers' RMA and atomics
 * aimed at this process, moving its protocol along) and leaves every
 * completion queued for the thread that calls the component's progress
 * callback, because the layers above (ob1, osc/rdma) expect their
 * callbacks on an MPI thread. The providers here signal no wait object on
 * traffic that produces no local completion (a peer's put), so the thread
 * cannot block until "something happened": it sleeps
 * btl_ofi_progress_thread_interval microseconds between passes.
 */
/* Room for this many deferred completions per context. */
#define MCA_BTL_OFI_DEFERRED_MAX (4 * MCA_BTL_OFI_CQ_BATCH_MAX)

/* With emulated atomics a peer's atomic is a message this process must
 * answer (and with emulated RMA its puts and gets), so driving the
 * provider is not enough: the thread reads the queue, answers those
 * requests itself (they touch only registered memory and our own tables,
 * under our locks) and defers every other completion, in order, to the
 * next progress call on an MPI thread. */
static void mca_btl_ofi_progress_thread_serve(mca_btl_ofi_context_t *context)
{
    struct fi_cq_data_entry entries[MCA_BTL_OFI_CQ_BATCH_MAX];
    int serve[MCA_BTL_OFI_CQ_BATCH_MAX];
    int batch = mca_btl_ofi_component.num_cq_read, nserve = 0;
    ssize_t count;

    /* answers held by its last pass (or the MPI thread's), as progress
     * does: a busy MPI thread must not keep them (btl_ofi_answers.c) */
    mca_btl_ofi_answers_release(context);
    if (0 != opal_mutex_trylock(&context->lock)) {
        return;
    }
    if (context->deferred_count + batch > MCA_BTL_OFI_DEFERRED_MAX) {
        /* the MPI thread is behind: only drive the provider */
        (void) fi_cq_read(context->cq, NULL, 0);
        opal_mutex_unlock(&context->lock);
        return;
    }
    count = fi_cq_read(context->cq, entries, batch);
    for (ssize_t i = 0; i < count; ++i) {
        if (entries[i].flags & FI_REMOTE_WRITE) {
            /* a peer's put announced: counted, nothing to hand over */
            mca_btl_ofi_add64(&context->counters.put_notified, 1);
        } else if (mca_btl_ofi_msg_is_request(context, entries + i)) {
            serve[nserve++] = (int) i;
            mca_btl_ofi_count_recv(context, entries[i].len);
        } else {
            context->deferred[context->deferred_count++] = entries[i];
            context->parked = true;
        }
    }
    opal_mutex_unlock(&context->lock);

    for (int j = 0; j < nserve; ++j) {
        struct fi_cq_data_entry *e = entries + serve[j];
        mca_btl_ofi_msg_received(context, (mca_btl_ofi_rdesc_t *) e->op_context, e->flags, e->len,
                                 e->buf);
    }
    if (nserve > 0) {
        mca_btl_ofi_rma_answers_send();
    }
    if (nserve > 0 && (!opal_list_is_empty(&context->pending) || NULL != context->repost)) {
        mca_btl_ofi_backlog_msgs(context);
    }
}

static void *mca_btl_ofi_progress_thread_main(opal_object_t *object)
{
    opal_thread_t *thread = (opal_thread_t *) object;
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) thread->t_arg;
    long usec = mca_btl_ofi_component.progress_thread_interval;
    struct timespec pause = {.tv_sec = usec / 1000000, .tv_nsec = (usec % 1000000) * 1000};

    while (0 == module->progress_stop) {
        for (int i = 0; i < module->num_contexts; ++i) {
            mca_btl_ofi_context_t *context = module->contexts + i;
            if (NULL != context->deferred) {
                mca_btl_ofi_progress_thread_serve(context);
                continue;
            }
            /* a context another thread is draining is progressing already */
            if (0 == opal_mutex_trylock(&context->lock)) {
                (void) fi_cq_read(context->cq, NULL, 0);
                opal_mutex_unlock(&context->lock);
            }
        }
        /* the interval, not a race: no wait object fires on a peer's put
         * (see the comment above mca_btl_ofi_progress_thread_serve) */
        (void) nanosleep(&pause, NULL);
    }
    return NULL;
}

int mca_btl_ofi_progress_thread_start(mca_btl_ofi_module_t *module)
{
    int rc;

    if (FI_PROGRESS_MANUAL != module->info->domain_attr->data_progress) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "progress thread not started: provider %s progresses data itself",
                            module->info->fabric_attr->prov_name);
        return OPAL_SUCCESS;
    }
    if (module->amo_emulated || module->rma_emulated) {
        for (int i = 0; i < module->num_contexts; ++i) {
            module->contexts[i].deferred_count = 0;
            module->contexts[i].deferred =
                calloc(MCA_BTL_OFI_DEFERRED_MAX, sizeof(struct fi_cq_data_entry));
            if (NULL == module->contexts[i].deferred) {
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
        }
    }
    /* The thread serves emulated atomics itself: their replies take
     * objects from Open MPI's free lists and retain endpoints, which are
     * thread-safe only while opal_using_threads() is true. Under
     * MPI_THREAD_SINGLE it is false, and the application's thread uses the
     * same lists at the same time; so, as Open MPI's own failure detector
     * does before it starts its thread, say that threads are in use. */
    if (!opal_using_threads()) {
        (void) opal_set_using_threads(true);
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "progress thread: Open MPI's lists and reference counts made "
                            "thread-safe (the application asked for no threads)");
    }
    OBJ_CONSTRUCT(&module->progress_thread, opal_thread_t);
    module->progress_thread.t_run = mca_btl_ofi_progress_thread_main;
    module->progress_thread.t_arg = module;
    module->progress_stop = 0;
    rc = opal_thread_start(&module->progress_thread);
    if (OPAL_SUCCESS != rc) {
        OBJ_DESTRUCT(&module->progress_thread);
        MCA_BTL_OFI_SHOW_HELP("progress thread", opal_process_info.nodename, rc);
        return rc;
    }
    module->progress_running = true;
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                        "progress thread started: a pass every %d microseconds",
                        mca_btl_ofi_component.progress_thread_interval);
    return OPAL_SUCCESS;
}

void mca_btl_ofi_progress_thread_stop(mca_btl_ofi_module_t *module)
{
    if (!module->progress_running) {
        return;
    }
    (void) opal_atomic_swap_32(&module->progress_stop, 1);
    (void) opal_thread_join(&module->progress_thread, NULL);
    OBJ_DESTRUCT(&module->progress_thread);
    module->progress_running = false;
}
