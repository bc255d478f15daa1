/*
 * btl/ofi put and get.
 *
 * Local buffers need no registration (we refuse providers that want
 * FI_MR_LOCAL), so the caller's local handle is only used for its
 * descriptor when it has one. Completion means remote completion: the
 * endpoint's default transmit flags carry FI_DELIVERY_COMPLETE (see
 * btl_ofi_component.c, the hints of fi_getinfo), which is what flush relies
 * on.
 */

#include "btl_ofi.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_putv.h"

#include "opal/util/error.h"
#include "opal/util/proc.h"

int mca_btl_ofi_post_failed(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                            ssize_t rc, const char *call, const char *file, int line)
{
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;

    mca_btl_ofi_inflight(context, endpoint, -1);
    opal_free_list_return(&context->completions, &comp->super);

    /* -FI_EAGAIN (the provider's queues are full) becomes
     * OPAL_ERR_OUT_OF_RESOURCE: the caller progresses, which makes room */
    return mca_btl_ofi_post_refused_at(context->module, endpoint, call, rc, file, line);
}

/* The backlog pattern (sends, messages and RMA operations alike): under one
 * hold of the context lock, post what waits, in order, until the provider
 * refuses again; an operation refused for good is taken off, the hold ends
 * and it completes with an error (its callback may post: never under the
 * lock), then the rest is tried again. */
void mca_btl_ofi_backlog_rdma(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_completion_t *comp = NULL;
    ssize_t rc;

    while (true) {
        rc = -FI_EAGAIN;
        MCA_BTL_OFI_LOCK(&context->lock);
        while (!opal_list_is_empty(&context->rdmaq)) {
            comp = (mca_btl_ofi_completion_t *) opal_list_get_first(&context->rdmaq);
            rc = mca_btl_ofi_rma_post(context, comp, comp->parked_kind, comp->parked_size,
                                      comp->parked_raddr, comp->parked_key);
            if (-FI_EAGAIN == rc) {
                break;
            }
            (void) opal_list_remove_first(&context->rdmaq);
            if (OPAL_UNLIKELY(0 != rc)) {
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (OPAL_LIKELY(0 == rc || -FI_EAGAIN == rc)) {
            return;
        }
        (void) mca_btl_ofi_post_refused(context->module, comp->endpoint,
                                        mca_btl_ofi_rma_call(comp->parked_kind), rc);
        mca_btl_ofi_completion_finish(comp, OPAL_ERROR);
    }
}

bool mca_btl_ofi_rma_start_lone(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                                int kind, size_t size, uint64_t raddr, uint64_t key)
{
    ssize_t rc;

    mca_btl_ofi_inflight(context, comp->endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    /* no remote handle: it is only kept with several rails, where nothing
     * is gathered (mca_btl_ofi_rails_join) */
    rc = mca_btl_ofi_rma_start(context, comp, kind, size, raddr, key, NULL);
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_UNLIKELY(0 != rc)) {
        /* said here, where it is seen; the piece itself still goes */
        (void) mca_btl_ofi_post_refused(context->module, comp->endpoint,
                                        mca_btl_ofi_rma_call(kind), rc);
        mca_btl_ofi_inflight(context, comp->endpoint, -1);
        opal_free_list_return(&context->completions, &comp->super);
        return false;
    }
    return true;
}

/* Put and get: one path, the kind picks fi_write or fi_read. */
static inline __opal_attribute_always_inline__ int mca_btl_ofi_rdma(
    mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, int kind, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size,
    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_context_t *context;
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;
    int route = mca_btl_ofi_route_op(&module, &endpoint, &context);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != route)) {
        return route;
    }
    comp = mca_btl_ofi_completion_alloc(&module->super, context, endpoint, local_address,
                                        local_handle, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    mca_btl_ofi_inflight(context, endpoint, 1);
    if (OPAL_UNLIKELY(module->rma_emulated)) {
        mca_btl_ofi_rma_emulate(module, context, comp, kind, size, remote_address, remote_handle);
        return OPAL_SUCCESS;
    }
    MCA_BTL_OFI_LOCK(&context->lock);
    rc = mca_btl_ofi_rma_start(context, comp, kind, size,
                               mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
                               mca_btl_ofi_rkey(endpoint, remote_handle), remote_handle);
    MCA_BTL_OFI_UNLOCK(&context->lock);

    return mca_btl_ofi_post_result(context, comp, rc, mca_btl_ofi_rma_call(kind));
}

/* The general path of put, out of line so that put's common case (bare,
 * below) needs no frame for its arguments. */
static __opal_attribute_noinline__ int mca_btl_ofi_put_general(
    mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size,
    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rdma(btl, endpoint, MCA_BTL_OFI_RMA_PUT, local_address, remote_address,
                            local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}

/* A put without callback (osc/rdma's, completed by a later flush) to a
 * live peer, not split over rails: posted with its peer's shared `bare'
 * context, so no completion object is taken, filled and given back; its
 * completion is only counted (flush waits for it; a failure stops the job
 * as for any operation whose owner ignores the status). A full queue, a
 * refusal for now or operations waiting before it: the general path,
 * which keeps it in order. */
static inline __opal_attribute_always_inline__ int mca_btl_ofi_put_bare(
    mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    ssize_t rc = -FI_EAGAIN;

    if (OPAL_UNLIKELY(!mca_btl_ofi_context_has_room(context))) {
        goto general;
    }
    mca_btl_ofi_inflight(context, endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    /* nothing parked (an RMA backlog among what may be): else the
     * general path decides */
    if (OPAL_LIKELY(!context->parked)) {
        rc = mca_btl_ofi_rdma_post(
            context, MCA_BTL_OFI_RMA_PUT, local_address, mca_btl_ofi_local_desc(local_handle),
            endpoint->addrs[context->index], size,
            mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
            mca_btl_ofi_rkey(endpoint, remote_handle), &endpoint->bare.ofi_ctx);
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_keep_short(context);
        return OPAL_SUCCESS;
    }
    mca_btl_ofi_inflight(context, endpoint, -1);
    if (-FI_EAGAIN != rc) {
        return mca_btl_ofi_post_refused(module, endpoint, "fi_write", rc);
    }
general:
    return mca_btl_ofi_put_general(&module->super, endpoint, local_address, remote_address,
                                   local_handle, remote_handle, size, NULL, NULL, NULL);
}

int mca_btl_ofi_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) flags;
    (void) order;

    if (OPAL_LIKELY(NULL == cbfunc && !endpoint->dead)) {
        /* small ones gathered into one message per peer (0 == putv_max
         * where they are not), hence copied: their buffers were taken at
         * MPI_Init, so every one within the limit is (btl_ofi_put_copied_max
         * promises it) */
        if (size <= module->putv_max
            && OPAL_SUCCESS
                   == mca_btl_ofi_putv_add(module, endpoint, local_address, remote_address,
                                           remote_handle, size)) {
            return OPAL_SUCCESS;
        }
        if (OPAL_LIKELY(size < module->bare_limit)) {
            return mca_btl_ofi_put_bare(module, endpoint, local_address, remote_address,
                                        local_handle, remote_handle, size);
        }
    }
    return mca_btl_ofi_put_general(btl, endpoint, local_address, remote_address, local_handle,
                                   remote_handle, size, cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) flags;
    (void) order;

    /* small ones gathered into one message per peer (0 == getv_max
     * where they are not); one that could not be goes on below */
    if (size <= module->getv_max && OPAL_LIKELY(!endpoint->dead)) {
        if (OPAL_SUCCESS
            == mca_btl_ofi_getv_add(module, endpoint, local_address, remote_address, local_handle,
                                    remote_handle, size, cbfunc, cbcontext, cbdata)) {
            return OPAL_SUCCESS;
        }
        if (module->amo_ordered) {
            /* no batch to gather it in: the provider's read would escape
             * the order a later atomic relies on (btl_ofi_get_ordered_max),
             * so the caller tries again after progress */
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    return mca_btl_ofi_rdma(btl, endpoint, MCA_BTL_OFI_RMA_GET, local_address, remote_address,
                            local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}
