/*
 * btl/ofi messages: posted receive buffers, dispatch of what arrives, and
 * injected sends (see btl_ofi_frag.h).
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_context.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_answers.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_seq.h"

#include "opal/datatype/opal_convertor.h"

OBJ_CLASS_INSTANCE(mca_btl_ofi_pending_t, opal_list_item_t, NULL, NULL);

static void mca_btl_ofi_frag_construct(mca_btl_ofi_frag_t *frag)
{
    memset(&frag->op, 0, sizeof(frag->op));
    frag->op.kind = MCA_BTL_OFI_OP_SEND;
    frag->base.des_segments = &frag->segment;
    frag->base.des_segment_count = 1;
    frag->hdr = NULL;
    frag->endpoint = NULL;
    frag->context = NULL;
    frag->state = MCA_BTL_OFI_FRAG_PLAIN;
    frag->checkpoint = false;
    frag->stream_len = 0;
    frag->orphan_refs = 0;
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_frag_t, mca_btl_base_descriptor_t, mca_btl_ofi_frag_construct, NULL);

/* Point a new descriptor at its payload buffer: header, then segment. */
static int mca_btl_ofi_frag_item_init(opal_free_list_item_t *item, void *ctx)
{
    mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item;

    frag->hdr = (mca_btl_ofi_msg_hdr_t *) item->ptr;
    /* once, when the list grows: padding the upper layer leaves unset in
     * its headers then carries zeros, never old heap contents */
    memset(item->ptr, 0, ((mca_btl_ofi_module_t *) ctx)->msg_size);
    frag->segment.seg_addr.pval = frag->hdr + 1;
    frag->segment.seg_len = 0;
    frag->home = (mca_btl_ofi_module_t *) ctx;
    return OPAL_SUCCESS;
}

int mca_btl_ofi_frags_init(mca_btl_ofi_module_t *module)
{
    /* the list starts and grows by about 1 MiB of messages (every byte
     * touched: mca_btl_ofi_frag_item_init), 16 to 64 of them: with 64
     * messages of 64 KiB (tcp;ofi_rxm) a process held 3 MiB more */
    size_t per_mib = ((size_t) 1 << 20) / module->msg_size;
    int count = per_mib < 16 ? 16 : per_mib > 64 ? 64 : (int) per_mib;

    return opal_free_list_init(&module->frags, sizeof(mca_btl_ofi_frag_t), opal_cache_line_size,
                               OBJ_CLASS(mca_btl_ofi_frag_t), module->msg_size,
                               opal_cache_line_size, count, -1, count, NULL, 0, NULL,
                               mca_btl_ofi_frag_item_init, module);
}

mca_btl_base_descriptor_t *mca_btl_ofi_alloc(mca_btl_base_module_t *btl,
                                             mca_btl_base_endpoint_t *endpoint, uint8_t order,
                                             size_t size, uint32_t flags)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_frag_t *frag;

    if (OPAL_UNLIKELY(size > btl->btl_max_send_size)) {
        return NULL;
    }
    frag = (mca_btl_ofi_frag_t *) opal_free_list_get(&module->frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->segment.seg_len = size;
    frag->base.des_flags = flags;
    frag->base.order = order;
    frag->endpoint = endpoint;
    return &frag->base;
}

/* Give back an orphan (see MCA_BTL_OFI_FRAG_ORPHAN) once its last owner
 * is done with it. */
void mca_btl_ofi_orphan_release(mca_btl_ofi_frag_t *frag)
{
    if (0 == opal_atomic_add_fetch_32(&frag->orphan_refs, -1)) {
        frag->state = MCA_BTL_OFI_FRAG_PLAIN;
        opal_free_list_return(&frag->home->frags, &frag->base.super);
    }
}

int mca_btl_ofi_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) des;

    if (OPAL_UNLIKELY(MCA_BTL_OFI_FRAG_ORPHAN == frag->state)) {
        /* the provider may still read it */
        mca_btl_ofi_orphan_release(frag);
        return OPAL_SUCCESS;
    }
    opal_free_list_return(&((mca_btl_ofi_module_t *) btl)->frags, &des->super);
    return OPAL_SUCCESS;
}

mca_btl_base_descriptor_t *mca_btl_ofi_prepare_src(mca_btl_base_module_t *btl,
                                                   mca_btl_base_endpoint_t *endpoint,
                                                   struct opal_convertor_t *convertor,
                                                   uint8_t order, size_t reserve, size_t *size,
                                                   uint32_t flags)
{
    size_t max_data = *size;
    mca_btl_base_descriptor_t *des;
    mca_btl_ofi_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;

    if (reserve + max_data > btl->btl_max_send_size) {
        max_data = btl->btl_max_send_size - reserve;
    }
    des = mca_btl_ofi_alloc(btl, endpoint, order, reserve + max_data, flags);
    if (OPAL_UNLIKELY(NULL == des)) {
        return NULL;
    }
    frag = (mca_btl_ofi_frag_t *) des;
    iov.iov_base = (char *) frag->segment.seg_addr.pval + reserve;
    iov.iov_len = max_data;
    if (OPAL_UNLIKELY(opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0)) {
        mca_btl_ofi_free(btl, des);
        return NULL;
    }
    frag->segment.seg_len = reserve + max_data;
    *size = max_data;
    return des;
}

/* Send FRAG's LEN bytes to its endpoint (context lock held). */
/* After a message is posted where the provider only queues it until it
 * is driven (module->kick): one pass of its engine, which writes it to
 * its socket and takes no completion of ours (a zero-count read). The
 * context lock is held. */
static inline void mca_btl_ofi_kick(mca_btl_ofi_context_t *context)
{
    if (OPAL_UNLIKELY(context->module->kick)) {
        (void) fi_cq_read(context->cq, NULL, 0);
    }
}

/* Unacknowledged messages to one peer between two acknowledged ones
 * (mca_btl_ofi_frag_send_quick): at most twice this many small messages
 * to a peer are ever unread by its provider, against tx_attr->size (256
 * on sockets) with every message acknowledged. */
#define MCA_BTL_OFI_QUICK_RUN 16

/* fi_send where the provider acknowledges every message it is given
 * with a completion level (MCA_BTL_OFI_QUIRK_SEND_ACKED: sockets, whose
 * acknowledgement costs each end one more send and receive, on the path
 * of every exchange). A small message goes injected with
 * FI_INJECT_COMPLETE, unacknowledged, for up to MCA_BTL_OFI_QUICK_RUN in
 * a row to its peer; the next goes acknowledged (a checkpoint) and, until
 * its acknowledgement comes back, further small ones to that peer wait
 * (-FI_EAGAIN: kept in order, posted by progress). Its acknowledgement
 * says the peer's provider read everything before it, so no peer ever
 * has more than twice the run unread from us. Without that bound (every
 * message unacknowledged) a sender ran ahead of its receiver and
 * tests/twosided stream hung on sockets in 2 runs of 4: the bound is what
 * the acknowledgements gave. Larger messages are acknowledged as before
 * and serve as a checkpoint when none is in flight. The context lock is
 * held; one context per module, so the endpoint's fields are under it. */
static __opal_attribute_noinline__ ssize_t
mca_btl_ofi_frag_send_quick(mca_btl_ofi_context_t *context, mca_btl_ofi_frag_t *frag, size_t len)
{
    mca_btl_ofi_endpoint_t *endpoint = frag->endpoint;
    const bool small = len <= context->module->quick_max;
    const bool quick = small && endpoint->quick_sent < MCA_BTL_OFI_QUICK_RUN;
    const bool checkpoint = !quick && !endpoint->ack_open;
    struct iovec iov = {.iov_base = frag->hdr, .iov_len = len};
    struct fi_msg msg = {.msg_iov = &iov,
                         .iov_count = 1,
                         .addr = endpoint->addrs[context->index],
                         .context = &frag->op.ofi_ctx};
    ssize_t rc;

    if (small && !quick && !checkpoint) {
        return -FI_EAGAIN;
    }
    if (MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_SEND)) {
        return -FI_EIO;
    }
    rc = quick ? fi_sendmsg(context->tx, &msg, FI_COMPLETION | FI_INJECT | FI_INJECT_COMPLETE)
               : fi_send(context->tx, frag->hdr, len, NULL, msg.addr, msg.context);
    if (OPAL_LIKELY(0 == rc)) {
        frag->checkpoint = checkpoint;
        if (quick) {
            ++endpoint->quick_sent;
            ++context->counters.send_quick;
        } else if (checkpoint) {
            endpoint->quick_sent = 0;
            endpoint->ack_open = true;
        }
    }
    return rc;
}

static inline ssize_t mca_btl_ofi_frag_fi_send_plain(mca_btl_ofi_context_t *context,
                                                     mca_btl_ofi_frag_t *frag, size_t len)
{
    if (OPAL_UNLIKELY(context->module->quick_max)) {
        return mca_btl_ofi_frag_send_quick(context, frag, len);
    }
    return MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_SEND)
               ? -FI_EIO
               : fi_send(context->tx, frag->hdr, len, NULL, frag->endpoint->addrs[context->index],
                         &frag->op.ofi_ctx);
}

/* A message to a peer with a budget of bytes in flight
 * (mca_btl_ofi_stream_room): -FI_EAGAIN while the budget is spent; its
 * bytes count until its completion (mca_btl_ofi_frag_sent). The context
 * lock is held. */
static __opal_attribute_noinline__ ssize_t
mca_btl_ofi_frag_send_metered(mca_btl_ofi_context_t *context, mca_btl_ofi_frag_t *frag, size_t len)
{
    ssize_t rc;

    if (!mca_btl_ofi_stream_room(context, frag->endpoint, len)) {
        return -FI_EAGAIN;
    }
    rc = mca_btl_ofi_frag_fi_send_plain(context, frag, len);
    if (OPAL_LIKELY(0 == rc)) {
        frag->stream_len = (uint32_t) len;
        mca_btl_ofi_add64(&frag->endpoint->stream_bytes, (int64_t) len);
    }
    return rc;
}

static inline ssize_t mca_btl_ofi_frag_fi_send(mca_btl_ofi_context_t *context,
                                               mca_btl_ofi_frag_t *frag, size_t len)
{
    if (OPAL_UNLIKELY(context->module->track)) {
        return mca_btl_ofi_seq_send(context, frag, len);
    }
    if (OPAL_UNLIKELY(frag->endpoint->stream_limit)) {
        return mca_btl_ofi_frag_send_metered(context, frag, len);
    }
    return mca_btl_ofi_frag_fi_send_plain(context, frag, len);
}

/* Post a fragment's message; the context lock is held. -FI_EAGAIN when the
 * transmit queue is full (ours or the provider's). */
static inline ssize_t mca_btl_ofi_frag_post(mca_btl_ofi_context_t *context,
                                            mca_btl_ofi_frag_t *frag)
{
    const size_t len = sizeof(*frag->hdr) + frag->segment.seg_len;
    size_t wire = len;
    ssize_t rc;

    /* no progress from here (unlike mca_btl_ofi_context_has_room): the lock
     * is held, and progress itself calls this to empty the queue */
    if (OPAL_UNLIKELY(mca_btl_ofi_tx_queued(context) >= context->module->tx_limit)) {
        return -FI_EAGAIN;
    }
    /* a pml message carries the answer we hold for its peer, where it has
     * room (btl_ofi_answers.c; one rail: no numbered copies to keep) */
    if (OPAL_UNLIKELY(frag->endpoint->answer_held) && MCA_BTL_OFI_MSG_AM == frag->hdr->type
        && !context->module->track) {
        wire = mca_btl_ofi_answer_ride(context, frag->endpoint, frag->hdr, len);
    }
    rc = mca_btl_ofi_frag_fi_send(context, frag, wire);
    if (OPAL_UNLIKELY(wire != len)) {
        mca_btl_ofi_answer_rode(context, frag->endpoint, frag->hdr, 0 == rc);
    }
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_kick(context);
        /* under the lock, so its completion cannot be read before this */
        mca_btl_ofi_frag_inflight(context, frag->endpoint, frag, 1);
        context->counters.send_count++;
        context->counters.send_bytes += wire;
    }
    return rc;
}

/* Post a pml fragment on CONTEXT, or keep it in order behind others for
 * progress to post (see mca_btl_ofi_send). */
int mca_btl_ofi_frag_start(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                           mca_btl_ofi_frag_t *frag)
{
    ssize_t rc = -FI_EAGAIN;

    MCA_BTL_OFI_LOCK(&context->lock);
    if (OPAL_LIKELY(opal_list_is_empty(&context->sendq))) {
        rc = mca_btl_ofi_frag_post(context, frag);
    }
    if (OPAL_UNLIKELY(-FI_EAGAIN == rc)) {
        /* Keep it, behind any already waiting, for progress to post. Handing
         * the refusal back would stall ob1: it retries a refused fragment
         * only when another of its sends completes, and there may be none
         * (shm refuses sends while a large message to that peer is in
         * flight). */
        opal_list_append(&context->sendq, &frag->base.super.super);
        context->parked = true;
        mca_btl_ofi_add64(&context->nqueued, 1);
        rc = 0;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_LIKELY(0 == rc)) {
        return OPAL_SUCCESS;
    }
    if (OPAL_ERR_UNREACH == mca_btl_ofi_post_refused(module, frag->endpoint, "fi_send", rc)) {
        return OPAL_ERR_UNREACH;
    }
    /* The fragment fails through its callback, as a failed completion
     * would: an error returned here is dropped by some callers (libnbc's
     * rounds), which then wait forever for a message never sent. */
    mca_btl_ofi_frag_inflight(context, frag->endpoint, frag, 1);
    mca_btl_ofi_frag_sent(frag, OPAL_ERROR);
    return OPAL_SUCCESS;
}

int mca_btl_ofi_msg_send_copy(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                              const void *head, size_t head_len, const void *data, size_t data_len)
{
    const mca_btl_ofi_putv_piece_t piece = {.addr = (uint64_t) (uintptr_t) data, .len = data_len};

    assert(head_len >= sizeof(mca_btl_ofi_msg_hdr_t)
           && head_len + data_len <= context->module->msg_size);
    return mca_btl_ofi_msg_send_gather(context, endpoint, head, head_len, &piece,
                                       data_len > 0 ? 1 : 0);
}

int mca_btl_ofi_msg_send_gather(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                                const void *head, size_t head_len,
                                const mca_btl_ofi_putv_piece_t *pieces, uint32_t count)
{
    return mca_btl_ofi_msg_send_gather_tail(context, endpoint, head, head_len, pieces, count, NULL,
                                            NULL, 0);
}

int mca_btl_ofi_msg_send_gather_tail(mca_btl_ofi_context_t *context,
                                     mca_btl_ofi_endpoint_t *endpoint, const void *head,
                                     size_t head_len, const mca_btl_ofi_putv_piece_t *pieces,
                                     uint32_t count, mca_btl_ofi_msg_tail_fn_t tail, void *arg,
                                     size_t tail_len)
{
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_frag_t *frag;
    char *at;
    int rc;

    frag = (mca_btl_ofi_frag_t *) opal_free_list_get(&module->frags);
    if (OPAL_UNLIKELY(NULL == frag)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "out of memory for a message to %s",
                            OPAL_NAME_PRINT(endpoint->proc->proc_name));
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(frag->hdr, head, head_len);
    at = (char *) frag->hdr + head_len;
    for (uint32_t i = 0; i < count; ++i) {
        /* the caller checked that they fit one message */
        memcpy(at, (const void *) (uintptr_t) pieces[i].addr, pieces[i].len);
        at += pieces[i].len;
    }
    if (NULL != tail) {
        tail(arg, at);
        at += tail_len;
    }
    assert((size_t) (at - (char *) frag->hdr) <= module->msg_size);
    frag->segment.seg_len = (size_t) (at - (char *) frag->hdr) - sizeof(*frag->hdr);
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP; /* no callback: ours */
    frag->endpoint = endpoint;
    frag->context = context;
    rc = mca_btl_ofi_frag_start(module, context, frag);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        opal_free_list_return(&module->frags, &frag->base.super); /* not posted */
    }
    return rc;
}

/* fi_inject of LEN bytes at BUF to TO on CONTEXT, unless fragments wait
 * in its send queue (a message goes behind them, through fi_send): 0
 * (sent and counted), -FI_EAGAIN, or the provider's error. */
static ssize_t mca_btl_ofi_inject_in_order(mca_btl_ofi_context_t *context, const void *buf,
                                           size_t len, fi_addr_t to)
{
    ssize_t rc = -FI_EAGAIN;

    MCA_BTL_OFI_LOCK(&context->lock);
    if (OPAL_LIKELY(opal_list_is_empty(&context->sendq))) {
        rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_SEND) ? -FI_EIO
                                                       : fi_inject(context->tx, buf, len, to);
    }
    if (OPAL_LIKELY(0 == rc)) {
        context->counters.send_count++;
        context->counters.send_bytes += len;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    return rc;
}

/* A descriptor whose sender wants no callback, injected where the
 * provider takes it whole at once: true when sent (the descriptor
 * released if it is ours); false when it must go by fi_send from the
 * descriptor, which also reports a refusal. Where it is sent matters as
 * much as how fast: a message handed to fi_send may still need its
 * sender to drive the provider after btl_send returned (shm moves it by
 * its segmentation protocol, and refuses a peer's next sends until the
 * previous one's response is read), and a sender that does not wait for
 * it (coll/ofi's messages, a pml's eager send it completes at once) may
 * not come back: Open MPI's MPI_Comm_spawn broadcasts, then waits in
 * PMIx_Connect, and the spawn hung on shm with the broadcast's second
 * message queued here. An injected message is in the peer's memory (shm)
 * or written (the network providers' inject) when fi_inject returns. */
static bool mca_btl_ofi_send_inject(mca_btl_base_module_t *btl, mca_btl_ofi_context_t *context,
                                    mca_btl_ofi_frag_t *frag)
{
    size_t len = sizeof(*frag->hdr) + frag->segment.seg_len;
    fi_addr_t to = frag->endpoint->addrs[context->index];

    /* an answer held for the peer rides on fi_send's path (frag_post) */
    if (len > context->module->inject_size || context->module->track
        || OPAL_UNLIKELY(__atomic_load_n(&frag->endpoint->answer_held, __ATOMIC_RELAXED))
        || 0 != mca_btl_ofi_inject_in_order(context, frag->hdr, len, to)) {
        return false;
    }
    if (frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
        (void) mca_btl_ofi_free(btl, &frag->base);
    }
    return true;
}

int mca_btl_ofi_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                     mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) des;
    mca_btl_ofi_context_t *context;
    int route = mca_btl_ofi_route_op(&module, &endpoint, &context);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != route)) {
        return route;
    }

    frag->hdr->type = MCA_BTL_OFI_MSG_AM;
    frag->hdr->op = tag;
    frag->hdr->flags = 0; /* every header byte goes on the wire */
    frag->hdr->rail = MCA_BTL_OFI_NO_SEQ;
    frag->hdr->seq = 0;
    frag->hdr->origin = mca_btl_ofi_component.my_name;
    frag->endpoint = endpoint;
    frag->context = context;
    if (!(des->des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK)
        && mca_btl_ofi_send_inject(btl, context, frag)) {
        return 1; /* sent: no callback comes */
    }
    /* ob1 relies on the callback even when it gave us ownership */
    des->des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    return mca_btl_ofi_frag_start(module, context, frag);
}

/* Post the fragments send() had to keep, in order, under one hold of the
 * lock, until the queue is full again (the backlog pattern of this
 * component: see mca_btl_ofi_backlog_rdma). A fragment the provider
 * rejects for good leaves the hold and completes with an error. */
static void mca_btl_ofi_backlog_sends(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_frag_t *frag = NULL;
    ssize_t rc;

    while (true) {
        rc = -FI_EAGAIN;
        MCA_BTL_OFI_LOCK(&context->lock);
        while (!opal_list_is_empty(&context->sendq)) {
            /* off the queue before it is posted: a numbered one goes on
             * the context's `sent' list through the same list item */
            frag = (mca_btl_ofi_frag_t *) opal_list_remove_first(&context->sendq);
            rc = mca_btl_ofi_frag_post(context, frag);
            if (-FI_EAGAIN == rc) {
                opal_list_prepend(&context->sendq, &frag->base.super.super);
                break;
            }
            mca_btl_ofi_add64(&context->nqueued, -1);
            if (OPAL_UNLIKELY(0 != rc)) {
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (OPAL_LIKELY(0 == rc || -FI_EAGAIN == rc)) {
            return;
        }
        (void) mca_btl_ofi_post_refused(context->module, frag->endpoint, "fi_send", rc);
        mca_btl_ofi_frag_inflight(context, frag->endpoint, frag, 1);
        mca_btl_ofi_frag_sent(frag, OPAL_ERROR);
    }
}

/* Largest message sendi builds on the stack and injects. */
#define MCA_BTL_OFI_SENDI_MAX 1024

int mca_btl_ofi_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    size_t len = sizeof(mca_btl_ofi_msg_hdr_t) + header_size + payload_size;
    size_t position;
    uint64_t buf[MCA_BTL_OFI_SENDI_MAX / sizeof(uint64_t)];
    mca_btl_ofi_msg_hdr_t *hdr = (mca_btl_ofi_msg_hdr_t *) buf;
    mca_btl_ofi_endpoint_t *to = endpoint;
    mca_btl_ofi_context_t *context;
    ssize_t rc;

    /* the routing of every operation; sendi is not offered with several
     * rails, so no detour is taken here in practice, but a descriptor
     * handed back stays the caller's module's */
    rc = mca_btl_ofi_route_op(&module, &to, &context);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        return (int) rc;
    }
    if (OPAL_UNLIKELY(len > module->inject_size || len > sizeof(buf))) {
        goto out_descriptor;
    }
    hdr->type = MCA_BTL_OFI_MSG_AM;
    hdr->op = tag;
    hdr->flags = 0;
    hdr->rail = MCA_BTL_OFI_NO_SEQ;
    hdr->seq = 0;
    hdr->origin = mca_btl_ofi_component.my_name;
    memcpy(hdr + 1, header, header_size);
    position = convertor->bConverted;
    if (payload_size) {
        struct iovec iov = {.iov_base = (char *) (hdr + 1) + header_size, .iov_len = payload_size};
        uint32_t iov_count = 1;
        size_t max_data = payload_size;
        if (OPAL_UNLIKELY(opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0
                          || max_data != payload_size)) {
            return OPAL_ERROR;
        }
    }

    /* fragments waiting: -FI_EAGAIN, go behind them through send() */
    rc = mca_btl_ofi_inject_in_order(context, buf, len, to->addrs[context->index]);
    if (OPAL_LIKELY(0 == rc)) {
        return OPAL_SUCCESS;
    }
    if (-FI_EAGAIN != rc) {
        return mca_btl_ofi_post_refused(module, to, "fi_inject", rc);
    }
    /* queue full: rewind what we packed so the caller can send it again */
    if (payload_size) {
        opal_convertor_set_position(convertor, &position);
    }

out_descriptor:
    if (NULL != descriptor) {
        *descriptor = mca_btl_ofi_alloc(btl, endpoint, order, header_size + payload_size, flags);
    }
    return OPAL_ERR_OUT_OF_RESOURCE;
}

void mca_btl_ofi_frag_sent(mca_btl_ofi_frag_t *frag, int status)
{
    mca_btl_ofi_context_t *context = frag->context;
    mca_btl_ofi_module_t *module = frag->home;
    mca_btl_ofi_endpoint_t *endpoint = frag->endpoint;
    uint32_t flags = frag->base.des_flags;             /* the callback may free the frag */
    bool ack = MCA_BTL_OFI_MSG_ACK == frag->hdr->type; /* and its header */
    mca_btl_ofi_frag_t *keep = NULL;

    if (OPAL_UNLIKELY(frag->checkpoint)) {
        /* its peer read every message we sent before it (frag_send_quick,
         * which reads the flag under the lock) */
        frag->checkpoint = false;
        MCA_BTL_OFI_LOCK(&context->lock);
        endpoint->ack_open = false;
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
    if (OPAL_UNLIKELY(frag->stream_len)) {
        /* read or failed: its bytes no longer wait on the peer */
        mca_btl_ofi_add64(&endpoint->stream_bytes, -(int64_t) frag->stream_len);
        frag->stream_len = 0;
    }
    if (OPAL_UNLIKELY(MCA_BTL_OFI_FRAG_PLAIN != frag->state)
        && mca_btl_ofi_seq_settle(frag, status, &keep)) {
        return;
    }
    if ((flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) && OPAL_LIKELY(!context->module->closing)) {
        frag->base.des_cbfunc(&module->super, frag->endpoint, &frag->base, status);
    }
    if (OPAL_UNLIKELY(NULL != keep)) {
        mca_btl_ofi_seq_keep(keep);
    } else if ((flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) || context->module->closing) {
        opal_free_list_return(&module->frags, &frag->base.super);
    }
    mca_btl_ofi_msg_inflight(context, endpoint, ack, -1);
}

/* Hand a pml message to the callback registered for its tag. */
static void mca_btl_ofi_am_deliver(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_msg_hdr_t *hdr = (const mca_btl_ofi_msg_hdr_t *) buf;
    const mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + hdr->op;
    mca_btl_base_segment_t segment;
    mca_btl_base_descriptor_t des;

    if (OPAL_UNLIKELY(hdr->flags & MCA_BTL_OFI_AM_ANSWER)) {
        /* our answer first: the sender made it before this message */
        len = mca_btl_ofi_answer_take(context, buf, len);
        if (0 == len) {
            return;
        }
    }
    if (OPAL_UNLIKELY(NULL == reg->cbfunc || context->module->closing)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a message for unregistered tag %d",
                            hdr->op);
        return;
    }
    segment.seg_addr.pval = (void *) (uintptr_t) (hdr + 1);
    segment.seg_len = len - sizeof(*hdr);
    memset(&des, 0, sizeof(des));
    des.des_segments = &segment;
    des.des_segment_count = 1;
    reg->cbfunc(&context->module->super, hdr->op, &des, reg->cbdata);
}

/* Post one receive buffer. A full receive queue parks it on the context,
 * to be posted again by progress: a buffer is never lost. Full is
 * -FI_EAGAIN, or -FI_ENOMEM (the provider's pool of receive entries is
 * empty: entries come back as messages complete); a buffer dropped there
 * would be gone for good, and with every buffer gone that way no message
 * could arrive again. (libfabric 1.17's shm answered FI_ENOMEM for good
 * when unexpected messages filled its pool while multi-receive buffers
 * were being posted: shm gets single buffers, MCA_BTL_OFI_QUIRK_MULTI_RECV.) */
static int mca_btl_ofi_msg_post(mca_btl_ofi_rdesc_t *rdesc)
{
    mca_btl_ofi_context_t *context = rdesc->context;
    struct iovec iov = {.iov_base = rdesc->buf, .iov_len = context->rbuf_size};
    struct fi_msg msg = {
        .msg_iov = &iov,
        .desc = NULL,
        .iov_count = 1,
        .addr = FI_ADDR_UNSPEC,
        .context = &rdesc->op.ofi_ctx,
        .data = 0,
    };
    ssize_t rc;

    MCA_BTL_OFI_LOCK(&context->lock);
    rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_REPOST)
             ? -FI_ENOMEM
             : fi_recvmsg(context->rx, &msg, context->rflags);
    if (OPAL_UNLIKELY(-FI_EAGAIN == rc || -FI_ENOMEM == rc)) {
        rdesc->next_repost = context->repost;
        context->repost = rdesc;
        context->parked = true;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_LIKELY(0 == rc || -FI_EAGAIN == rc || -FI_ENOMEM == rc)) {
        return OPAL_SUCCESS;
    }
    MCA_BTL_OFI_REPORT("fi_recvmsg", rc);
    return OPAL_ERROR;
}

/* Multi-receive buffers where the provider has them and accepts our
 * threshold (the largest message must always fit in what is left), else
 * one buffer per message. */
static void mca_btl_ofi_msg_layout(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_module_t *module = context->module;
    size_t min_left = module->msg_size;
    int rc;

    context->rbuf_size = module->msg_size;
    context->rflags = 0;
    if (0 == module->multi_recv_size) {
        return;
    }
    rc = fi_setopt(&context->rx->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min_left,
                   sizeof(min_left));
    if (0 != rc) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "context %d: FI_OPT_MIN_MULTI_RECV refused (%s), one buffer per "
                            "message",
                            context->index, fi_strerror(-rc));
        return;
    }
    context->rbuf_size = module->multi_recv_size;
    context->rflags = FI_MULTI_RECV;
}

int mca_btl_ofi_msg_init(mca_btl_ofi_context_t *context)
{
    int count = mca_btl_ofi_component.rd_num;

    mca_btl_ofi_msg_layout(context);
    context->repost = NULL;
    context->rdescs = calloc(count, sizeof(*context->rdescs));
    context->rbufs = malloc((size_t) count * context->rbuf_size);
    if (NULL == context->rdescs || NULL == context->rbufs) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < count; ++i) {
        context->rdescs[i].op.kind = MCA_BTL_OFI_OP_RECV;
        context->rdescs[i].context = context;
        context->rdescs[i].buf = context->rbufs + (size_t) i * context->rbuf_size;
        if (OPAL_SUCCESS != mca_btl_ofi_msg_post(context->rdescs + i)) {
            return OPAL_ERROR;
        }
    }
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "context %d: %d receive buffers of %zu bytes%s",
                        context->index, count, context->rbuf_size,
                        context->rflags ? " (multi-receive)" : "");
    return OPAL_SUCCESS;
}

/* Called once the endpoints are closed, so no posted buffer is in use. */
void mca_btl_ofi_msg_fini(mca_btl_ofi_context_t *context)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(&context->pending))) {
        OBJ_RELEASE(((mca_btl_ofi_pending_t *) item)->endpoint);
        OBJ_RELEASE(item);
    }
    /* fragments never posted: their memory goes with the free list */
    while (NULL != opal_list_remove_first(&context->sendq)) {
    }
    context->nqueued = 0;
    free(context->rdescs);
    free(context->rbufs);
    context->rdescs = NULL;
    context->rbufs = NULL;
    context->repost = NULL;
}

/*
 * Delivery by table: each message type of ours is handled by the file
 * that owns its protocol (emulated RMA and atomics, rail notices,
 * acknowledgements), which component init registers here. This file posts
 * and receives messages and never calls up into those protocols itself.
 */
static mca_btl_ofi_msg_handler_fn_t mca_btl_ofi_msg_handlers[MCA_BTL_OFI_MSG_TYPES] = {
    [MCA_BTL_OFI_MSG_AM] = mca_btl_ofi_am_deliver,
};

void mca_btl_ofi_msg_handler_set(int type, mca_btl_ofi_msg_handler_fn_t handler)
{
    assert(type > 0 && type < MCA_BTL_OFI_MSG_TYPES);
    mca_btl_ofi_msg_handlers[type] = handler;
}

static void mca_btl_ofi_msg_handle(mca_btl_ofi_context_t *context, void *msg, size_t len)
{
    const mca_btl_ofi_msg_hdr_t *hdr = (const mca_btl_ofi_msg_hdr_t *) msg;

    if (OPAL_UNLIKELY(len < sizeof(*hdr))) {
        return;
    }
    if (OPAL_UNLIKELY(MCA_BTL_OFI_NO_SEQ != hdr->rail) && !mca_btl_ofi_seq_accept(hdr)) {
        return; /* taken before, from the failed link or its copy */
    }
    if (OPAL_UNLIKELY(hdr->type >= MCA_BTL_OFI_MSG_TYPES
                      || NULL == mca_btl_ofi_msg_handlers[hdr->type])) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped a message of unknown type %d (%zu bytes)", hdr->type, len);
        return;
    }
    mca_btl_ofi_msg_handlers[hdr->type](context, msg, len);
}

bool mca_btl_ofi_msg_is_request(mca_btl_ofi_context_t *context,
                                const struct fi_cq_data_entry *entry)
{
    const mca_btl_ofi_rdesc_t *rdesc = (const mca_btl_ofi_rdesc_t *) entry->op_context;
    const mca_btl_ofi_msg_hdr_t *hdr;

    if (MCA_BTL_OFI_OP_RECV != rdesc->op.kind || !(entry->flags & FI_RECV)
        || (entry->flags & FI_MULTI_RECV) || entry->len < sizeof(mca_btl_ofi_amo_req_t)) {
        return false;
    }
    hdr = (const mca_btl_ofi_msg_hdr_t *) (context->rflags ? entry->buf : rdesc->buf);
    /* emulated puts and gets are served the same way (only our memory
     * and tables, under our locks) */
    return NULL != hdr
           && (MCA_BTL_OFI_MSG_AMO_REQ == hdr->type || MCA_BTL_OFI_MSG_PUT == hdr->type
               || MCA_BTL_OFI_MSG_GET == hdr->type || MCA_BTL_OFI_MSG_PUTV == hdr->type
               || MCA_BTL_OFI_MSG_GETV == hdr->type);
}

void mca_btl_ofi_msg_received(mca_btl_ofi_context_t *context, mca_btl_ofi_rdesc_t *rdesc,
                              uint64_t flags, size_t len, void *buf)
{
    if (0 == context->rflags) {
        mca_btl_ofi_msg_handle(context, rdesc->buf, len);
        (void) mca_btl_ofi_msg_post(rdesc);
        return;
    }
    /* a multi-receive buffer: an entry carries a message (FI_RECV), the
     * buffer's release (FI_MULTI_RECV), or both */
    if (len > 0 && (flags & FI_RECV) && NULL != buf) {
        mca_btl_ofi_msg_handle(context, buf, len);
    }
    if (flags & FI_MULTI_RECV) {
        (void) mca_btl_ofi_msg_post(rdesc);
    }
}

/* Post one message of ours (an atomic's request or reply); the context
 * lock is held. What the provider injects goes at once; a longer message
 * is sent from a fragment of ours, released by its completion. Returns 0,
 * -FI_EAGAIN with nothing posted (queue or fragments exhausted), or the
 * provider's error. */
static ssize_t mca_btl_ofi_msg_post_locked(mca_btl_ofi_context_t *context,
                                           mca_btl_ofi_endpoint_t *endpoint, const void *msg,
                                           size_t len)
{
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_frag_t *frag;
    ssize_t rc;

    /* with several rails every message gets a completion (module->track) */
    if (OPAL_LIKELY(len <= module->inject_size && !module->track)) {
        return MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_SEND)
                   ? -FI_EIO
                   : fi_inject(context->tx, msg, len, endpoint->addrs[context->index]);
    }
    frag = (mca_btl_ofi_frag_t *) opal_free_list_get(&module->frags);
    if (NULL == frag) {
        return -FI_EAGAIN;
    }
    memcpy(frag->hdr, msg, len);
    frag->segment.seg_len = len - sizeof(*frag->hdr);
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->endpoint = endpoint;
    frag->context = context;
    mca_btl_ofi_frag_inflight(context, endpoint, frag, 1);
    rc = mca_btl_ofi_frag_fi_send(context, frag, len);
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_kick(context);
    } else {
        mca_btl_ofi_frag_inflight(context, endpoint, frag, -1);
        opal_free_list_return(&module->frags, &frag->base.super);
    }
    return rc;
}

/* An acknowledgement (several rails) is the peer's bookkeeping, not work
 * of ours: nothing here waits on it. To a peer that finalized it was not
 * needed (a peer's last messages are acknowledged at our next periodic
 * check, which may come after it left and closed its connections); to a
 * live peer on a failing link, that peer keeps its copies and watches
 * the link itself (its stall probes count messages not acknowledged),
 * and failover acknowledges again. So its failure names no peer and ends
 * nothing: said at trace level. True when HDR is one. */
bool mca_btl_ofi_ack_failed(const mca_btl_ofi_msg_hdr_t *hdr,
                            const mca_btl_ofi_endpoint_t *endpoint, const char *why)
{
    if (MCA_BTL_OFI_MSG_ACK != hdr->type) {
        return false;
    }
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_TRACE, "an acknowledgement to peer %s failed: %s%s",
                        NULL != endpoint->proc ? OPAL_NAME_PRINT(endpoint->proc->proc_name) : "?",
                        why, endpoint->live.finalized ? " (it finalized)" : "");
    return true;
}

/* What a refused message means for its caller; reported once. */
static int mca_btl_ofi_msg_refused(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                                   const void *msg, size_t len, ssize_t rc)
{
    if (-FI_EAGAIN != rc && mca_btl_ofi_ack_failed(msg, endpoint, fi_strerror((int) -rc))) {
        return OPAL_ERROR;
    }
    return mca_btl_ofi_post_refused(
        context->module, endpoint,
        len <= context->module->inject_size && !context->module->track ? "fi_inject" : "fi_send",
        rc);
}

int mca_btl_ofi_msg_inject(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len, uint64_t *count)
{
    ssize_t rc = -FI_EAGAIN;

    MCA_BTL_OFI_LOCK(&context->lock);
    /* never ahead of messages waiting in the send queue (gathered puts an
     * atomic must follow: mca_btl_ofi_putv_ahead); refused meanwhile, the
     * caller progresses, which posts them, and tries again */
    if (OPAL_LIKELY(opal_list_is_empty(&context->sendq))) {
        rc = mca_btl_ofi_msg_post_locked(context, endpoint, msg, len);
    }
    if (OPAL_LIKELY(0 == rc) && NULL != count) {
        ++*count;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    return OPAL_LIKELY(0 == rc) ? OPAL_SUCCESS
                                : mca_btl_ofi_msg_refused(context, endpoint, msg, len, rc);
}

void mca_btl_ofi_msg_reply(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len)
{
    mca_btl_ofi_pending_t *pending;
    ssize_t rc = -FI_EAGAIN;

    if (OPAL_UNLIKELY(len > sizeof(pending->msg))) {
        /* a reply longer than the queue keeps: a bug of ours, said, not
         * written past its room */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "internal error: a reply of %zu bytes, more than the %zu a reply may "
                            "have; dropped",
                            len, sizeof(pending->msg));
        return;
    }
    MCA_BTL_OFI_LOCK(&context->lock);
    /* replies already waiting go first */
    if (opal_list_is_empty(&context->pending)) {
        rc = mca_btl_ofi_msg_post_locked(context, endpoint, msg, len);
    }
    if (-FI_EAGAIN == rc) {
        pending = OBJ_NEW(mca_btl_ofi_pending_t);
        if (OPAL_UNLIKELY(NULL == pending)) {
            MCA_BTL_OFI_UNLOCK(&context->lock);
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "out of memory queuing a reply");
            return;
        }
        OBJ_RETAIN(endpoint);
        pending->endpoint = endpoint;
        pending->len = len;
        memcpy(pending->msg.bytes, msg, len);
        opal_list_append(&context->pending, &pending->super);
        context->parked = true;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_UNLIKELY(0 != rc && -FI_EAGAIN != rc)) {
        (void) mca_btl_ofi_msg_refused(context, endpoint, msg, len, rc);
    }
}

void mca_btl_ofi_backlog_msgs(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_pending_t *pending;
    mca_btl_ofi_rdesc_t *parked;
    opal_list_t done;
    ssize_t rc;

    /* receive buffers first: without them no peer can make progress */
    MCA_BTL_OFI_LOCK(&context->lock);
    parked = context->repost;
    context->repost = NULL;
    MCA_BTL_OFI_UNLOCK(&context->lock);
    while (NULL != parked) {
        mca_btl_ofi_rdesc_t *next = parked->next_repost;
        (void) mca_btl_ofi_msg_post(parked); /* parks it again if still refused */
        parked = next;
    }
    if (OPAL_UNLIKELY(!opal_list_is_empty(&context->sendq))) {
        mca_btl_ofi_backlog_sends(context);
    }
    if (opal_list_is_empty(&context->pending)) {
        return;
    }

    /* Parked replies, in order, under one hold of the lock: a reply is
     * taken off the list in the same hold that posted it, so two threads
     * progressing this context never send one twice. A refused one (not
     * -FI_EAGAIN) is dropped and reported after the lock is let go. */
    OBJ_CONSTRUCT(&done, opal_list_t);
    MCA_BTL_OFI_LOCK(&context->lock);
    while (!opal_list_is_empty(&context->pending)) {
        pending = (mca_btl_ofi_pending_t *) opal_list_get_first(&context->pending);
        rc = mca_btl_ofi_msg_post_locked(context, pending->endpoint, pending->msg.bytes,
                                         pending->len);
        if (-FI_EAGAIN == rc) {
            break;
        }
        opal_list_remove_item(&context->pending, &pending->super);
        pending->rc = rc;
        opal_list_append(&done, &pending->super);
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    while (NULL != (pending = (mca_btl_ofi_pending_t *) opal_list_remove_first(&done))) {
        if (OPAL_UNLIKELY(0 != pending->rc)) {
            (void) mca_btl_ofi_msg_refused(context, pending->endpoint, pending->msg.bytes,
                                           pending->len, pending->rc);
        }
        OBJ_RELEASE(pending->endpoint);
        OBJ_RELEASE(pending);
    }
    OBJ_DESTRUCT(&done);
}

/* Work of ours that waits on this peer: operations posted to it and not
 * completed, or sends the provider refused for now and we keep. */
bool mca_btl_ofi_owed(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
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
