/*
 * btl/ofi RDMA operations and the completion objects that carry an
 * operation's callback from the post to its completion-queue entry.
 */

#ifndef MCA_BTL_OFI_RDMA_H
#define MCA_BTL_OFI_RDMA_H

#include "btl_ofi.h"
#include "btl_ofi_context.h"

BEGIN_C_DECLS

typedef struct mca_btl_ofi_completion_t {
    opal_free_list_item_t super;
    /* handed to libfabric as the operation context */
    mca_btl_ofi_op_t op;
    mca_btl_ofi_context_t *context;
    mca_btl_base_module_t *btl;
    mca_btl_base_endpoint_t *endpoint;
    void *local_address;
    mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
    /* atomic operand and compare value: libfabric reads them after the post
     * returns, so they live here rather than on the caller's stack */
    uint64_t operand[2];
    /* a put or get parked on context->rdmaq: what to post again */
    int parked_kind; /* MCA_BTL_OFI_PARKED_PUT or _GET */
    size_t parked_size;
    uint64_t parked_raddr;
    uint64_t parked_key;
    /* a transfer split over the rails: its parts still in flight, and the
     * first error one of them met */
    volatile int32_t parts_left;
    int parts_status;
} mca_btl_ofi_completion_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_completion_t);

static inline mca_btl_ofi_completion_t *mca_btl_ofi_completion_from_ctx(void *op_context)
{
    return (mca_btl_ofi_completion_t *) ((char *) op_context
                                         - offsetof(mca_btl_ofi_completion_t, op));
}

static inline mca_btl_ofi_completion_t *
mca_btl_ofi_completion_alloc(mca_btl_base_module_t *btl, mca_btl_ofi_context_t *context,
                             mca_btl_base_endpoint_t *endpoint, void *local_address,
                             mca_btl_base_registration_handle_t *local_handle,
                             mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                             void *cbdata)
{
    mca_btl_ofi_completion_t *comp;

    if (OPAL_UNLIKELY(!mca_btl_ofi_context_has_room(context))) {
        return NULL;
    }
    comp = (mca_btl_ofi_completion_t *) opal_free_list_get(&context->completions);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return NULL;
    }
    comp->context = context;
    comp->btl = btl;
    comp->endpoint = endpoint;
    comp->local_address = local_address;
    comp->local_handle = local_handle;
    comp->cbfunc = cbfunc;
    comp->cbcontext = cbcontext;
    comp->cbdata = cbdata;
    return comp;
}

/** Run the caller's callback and recycle the completion object. */
static inline void mca_btl_ofi_completion_finish(mca_btl_ofi_completion_t *comp, int status)
{
    mca_btl_ofi_context_t *context = comp->context;
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;

    if (NULL != comp->cbfunc && OPAL_LIKELY(!context->module->closing)) {
        comp->cbfunc(comp->btl, comp->endpoint, comp->local_address, comp->local_handle,
                     comp->cbcontext, comp->cbdata, status);
    }
    opal_free_list_return(&context->completions, &comp->super);
    mca_btl_ofi_inflight(context, endpoint, -1);
}

/**
 * Finish a post: on success the operation is in flight; on -FI_EAGAIN the
 * context is progressed and the caller told to retry; anything else is
 * reported and returned as an error. Called with the context lock held.
 */
int mca_btl_ofi_post_failed(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                            ssize_t rc, const char *call, const char *file, int line);

enum { MCA_BTL_OFI_PARKED_PUT = 1, MCA_BTL_OFI_PARKED_GET = 2 };

/** Post the puts and gets the provider refused earlier, in order. */
void mca_btl_ofi_backlog_rdma(mca_btl_ofi_context_t *context);

/* the report names the line of the call that failed, not this helper's */
#define mca_btl_ofi_post_result(context, comp, rc, call) \
    mca_btl_ofi_post_result_at(context, comp, rc, call, __FILE__, __LINE__)

static inline int mca_btl_ofi_post_result_at(mca_btl_ofi_context_t *context,
                                             mca_btl_ofi_completion_t *comp, ssize_t rc,
                                             const char *call, const char *file, int line)
{
    if (OPAL_UNLIKELY(0 != rc)) {
        return mca_btl_ofi_post_failed(context, comp, rc, call, file, line);
    }
    if (OPAL_UNLIKELY(context->outstanding > mca_btl_ofi_component.progress_threshold)) {
        /* keep the queue short where the provider only moves data when polled */
        (void) mca_btl_ofi_context_progress(context);
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);

int mca_btl_ofi_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);

static inline void *mca_btl_ofi_local_desc(mca_btl_base_registration_handle_t *handle)
{
    return NULL == handle ? NULL : mca_btl_ofi_reg_from_handle(handle)->desc;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_RDMA_H */
