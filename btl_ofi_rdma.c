/*
 * btl/ofi put and get.
 *
 * Local buffers need no registration (we refuse providers that want
 * FI_MR_LOCAL), so the caller's local handle is only used for its
 * descriptor when it has one. Completion means remote completion: the
 * endpoint's default transmit flags carry FI_DELIVERY_COMPLETE (see
 * btl_ofi_context.c), which is what flush relies on.
 */

#include "btl_ofi.h"
#include "btl_ofi_rdma.h"

static void mca_btl_ofi_completion_construct(mca_btl_ofi_completion_t *comp)
{
    memset(&comp->op, 0, sizeof(comp->op));
    comp->op.kind = MCA_BTL_OFI_OP_RDMA;
    comp->cbfunc = NULL;
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_completion_t, opal_free_list_item_t,
                   mca_btl_ofi_completion_construct, NULL);

int mca_btl_ofi_post_failed(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                            ssize_t rc, const char *call, const char *file, int line)
{
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;

    (void) mca_btl_ofi_inflight(context, endpoint, -1);
    opal_free_list_return(&context->completions, &comp->super);

    if (-FI_EAGAIN == rc) {
        /* the provider's queues are full: make room, let the caller retry */
        (void) mca_btl_ofi_context_progress(context);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (mca_btl_ofi_endpoint_check(context->module, endpoint)) {
        return OPAL_ERR_UNREACH; /* reported as a lost peer, the real cause */
    }
    MCA_BTL_OFI_REPORT_AT(call, rc, file, line);
    return OPAL_ERROR;
}

/* Post a put or get; the context lock is held. */
static inline ssize_t mca_btl_ofi_rdma_post(mca_btl_ofi_context_t *context,
                                            mca_btl_ofi_completion_t *comp, int kind,
                                            size_t size, uint64_t raddr, uint64_t key)
{
    fi_addr_t peer = comp->endpoint->addrs[context->index];
    void *desc = mca_btl_ofi_local_desc(comp->local_handle);
    ssize_t rc;

    if (MCA_BTL_OFI_PARKED_PUT == kind) {
        rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_WRITE)
                 ? -FI_EIO
                 : fi_write(context->tx, comp->local_address, size, desc, peer, raddr, key,
                            &comp->op.ofi_ctx);
        if (OPAL_LIKELY(0 == rc)) {
            context->counters.put_count++;
            context->counters.put_bytes += size;
        }
    } else {
        rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_READ)
                 ? -FI_EIO
                 : fi_read(context->tx, comp->local_address, size, desc, peer, raddr, key,
                           &comp->op.ofi_ctx);
        if (OPAL_LIKELY(0 == rc)) {
            context->counters.get_count++;
            context->counters.get_bytes += size;
        }
    }
    return rc;
}

/* A put or get the provider refused (-FI_EAGAIN) stays with us, in order,
 * and progress posts it again; the lock is held. osc/rdma would retry a
 * refused operation itself, but ob1 retries only from the completion
 * callbacks of its other operations, and there may be none left. */
static inline ssize_t mca_btl_ofi_rdma_start(mca_btl_ofi_context_t *context,
                                             mca_btl_ofi_completion_t *comp, int kind,
                                             size_t size, uint64_t raddr, uint64_t key)
{
    ssize_t rc = -FI_EAGAIN;

    if (OPAL_LIKELY(opal_list_is_empty(&context->rdmaq))) {
        rc = mca_btl_ofi_rdma_post(context, comp, kind, size, raddr, key);
    }
    if (OPAL_UNLIKELY(-FI_EAGAIN == rc)) {
        comp->parked_kind = kind;
        comp->parked_size = size;
        comp->parked_raddr = raddr;
        comp->parked_key = key;
        opal_list_append(&context->rdmaq, &comp->super.super);
        rc = 0;
    }
    return rc;
}

void mca_btl_ofi_rdma_flush_parked(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;

    while (true) {
        MCA_BTL_OFI_LOCK(&context->lock);
        if (opal_list_is_empty(&context->rdmaq)) {
            MCA_BTL_OFI_UNLOCK(&context->lock);
            return;
        }
        comp = (mca_btl_ofi_completion_t *) opal_list_get_first(&context->rdmaq);
        rc = mca_btl_ofi_rdma_post(context, comp, comp->parked_kind, comp->parked_size,
                                   comp->parked_raddr, comp->parked_key);
        if (-FI_EAGAIN == rc) {
            MCA_BTL_OFI_UNLOCK(&context->lock);
            return;
        }
        (void) opal_list_remove_first(&context->rdmaq);
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (OPAL_UNLIKELY(0 != rc)) {
            if (!mca_btl_ofi_endpoint_check(context->module, comp->endpoint)) {
                MCA_BTL_OFI_REPORT(MCA_BTL_OFI_PARKED_PUT == comp->parked_kind ? "fi_write"
                                                                               : "fi_read",
                                   rc);
            }
            mca_btl_ofi_completion_finish(comp, OPAL_ERROR);
        }
    }
}

int mca_btl_ofi_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;
    (void) flags;
    (void) order;

    if (OPAL_UNLIKELY(endpoint->dead)) {
        return mca_btl_ofi_endpoint_refuse(module, endpoint);
    }

    comp = mca_btl_ofi_completion_alloc(btl, context, endpoint, local_address, local_handle,
                                        cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    (void) mca_btl_ofi_inflight(context, endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    rc = mca_btl_ofi_rdma_start(context, comp, MCA_BTL_OFI_PARKED_PUT, size,
                                mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
                                remote_handle->key);
    MCA_BTL_OFI_UNLOCK(&context->lock);

    return mca_btl_ofi_post_result(context, comp, rc, "fi_write");
}

int mca_btl_ofi_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;
    (void) flags;
    (void) order;

    if (OPAL_UNLIKELY(endpoint->dead)) {
        return mca_btl_ofi_endpoint_refuse(module, endpoint);
    }

    comp = mca_btl_ofi_completion_alloc(btl, context, endpoint, local_address, local_handle,
                                        cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    (void) mca_btl_ofi_inflight(context, endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    rc = mca_btl_ofi_rdma_start(context, comp, MCA_BTL_OFI_PARKED_GET, size,
                                mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
                                remote_handle->key);
    MCA_BTL_OFI_UNLOCK(&context->lock);

    return mca_btl_ofi_post_result(context, comp, rc, "fi_read");
}
