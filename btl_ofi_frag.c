/*
 * btl/ofi messages: posted receive buffers, dispatch of what arrives, and
 * injected sends (see btl_ofi_frag.h).
 */

#include "btl_ofi.h"
#include "btl_ofi_frag.h"

OBJ_CLASS_INSTANCE(mca_btl_ofi_pending_t, opal_list_item_t, NULL, NULL);

static int mca_btl_ofi_msg_post(mca_btl_ofi_rdesc_t *rdesc)
{
    mca_btl_ofi_context_t *context = rdesc->context;
    ssize_t rc;

    OPAL_THREAD_LOCK(&context->lock);
    rc = fi_recv(context->rx, rdesc->buf, context->module->msg_size, NULL, FI_ADDR_UNSPEC,
                 &rdesc->ofi_ctx);
    OPAL_THREAD_UNLOCK(&context->lock);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_recv", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_msg_init(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_module_t *module = context->module;
    int count = mca_btl_ofi_component.rd_num;

    context->rdescs = calloc(count, sizeof(*context->rdescs));
    context->rbufs = malloc((size_t) count * module->msg_size);
    if (NULL == context->rdescs || NULL == context->rbufs) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < count; ++i) {
        context->rdescs[i].context = context;
        context->rdescs[i].buf = context->rbufs + (size_t) i * module->msg_size;
        if (OPAL_SUCCESS != mca_btl_ofi_msg_post(context->rdescs + i)) {
            return OPAL_ERROR;
        }
    }
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
    free(context->rdescs);
    free(context->rbufs);
    context->rdescs = NULL;
    context->rbufs = NULL;
}

void mca_btl_ofi_msg_received(mca_btl_ofi_context_t *context, mca_btl_ofi_rdesc_t *rdesc,
                              size_t len)
{
    const mca_btl_ofi_msg_hdr_t *hdr = (const mca_btl_ofi_msg_hdr_t *) rdesc->buf;

    if (OPAL_LIKELY(len >= sizeof(*hdr))) {
        switch (hdr->type) {
        case MCA_BTL_OFI_MSG_AMO_REQ:
            mca_btl_ofi_amo_serve(context, rdesc->buf, len);
            break;
        case MCA_BTL_OFI_MSG_AMO_RESP:
            mca_btl_ofi_amo_answer(context, rdesc->buf, len);
            break;
        default:
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                "dropped a message of unknown type %d (%zu bytes)", hdr->type,
                                len);
            break;
        }
    }
    (void) mca_btl_ofi_msg_post(rdesc);
}

int mca_btl_ofi_msg_inject(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len)
{
    ssize_t rc;

    OPAL_THREAD_LOCK(&context->lock);
    rc = fi_inject(context->tx, msg, len, endpoint->addrs[context->index]);
    OPAL_THREAD_UNLOCK(&context->lock);
    if (OPAL_LIKELY(0 == rc)) {
        return OPAL_SUCCESS;
    }
    if (-FI_EAGAIN == rc) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    MCA_BTL_OFI_REPORT("fi_inject", rc);
    return OPAL_ERROR;
}

void mca_btl_ofi_msg_reply(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len)
{
    mca_btl_ofi_pending_t *pending;

    if (opal_list_is_empty(&context->pending)
        && OPAL_ERR_OUT_OF_RESOURCE != mca_btl_ofi_msg_inject(context, endpoint, msg, len)) {
        return;
    }
    /* keep replies in order behind those already waiting */
    pending = OBJ_NEW(mca_btl_ofi_pending_t);
    if (NULL == pending) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "out of memory queuing a reply");
        return;
    }
    OBJ_RETAIN(endpoint);
    pending->endpoint = endpoint;
    pending->len = len;
    memcpy(pending->msg.bytes, msg, len);
    OPAL_THREAD_LOCK(&context->lock);
    opal_list_append(&context->pending, &pending->super);
    OPAL_THREAD_UNLOCK(&context->lock);
}

void mca_btl_ofi_msg_flush_pending(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_pending_t *pending;

    while (true) {
        OPAL_THREAD_LOCK(&context->lock);
        pending = (mca_btl_ofi_pending_t *) opal_list_get_first(&context->pending);
        if (pending == (mca_btl_ofi_pending_t *) opal_list_get_end(&context->pending)) {
            OPAL_THREAD_UNLOCK(&context->lock);
            return;
        }
        OPAL_THREAD_UNLOCK(&context->lock);
        if (OPAL_ERR_OUT_OF_RESOURCE
            == mca_btl_ofi_msg_inject(context, pending->endpoint, pending->msg.bytes,
                                      pending->len)) {
            return;
        }
        OPAL_THREAD_LOCK(&context->lock);
        opal_list_remove_item(&context->pending, &pending->super);
        OPAL_THREAD_UNLOCK(&context->lock);
        OBJ_RELEASE(pending->endpoint);
        OBJ_RELEASE(pending);
    }
}
