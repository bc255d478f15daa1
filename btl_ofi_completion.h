/*
 * btl/ofi completion objects: what carries a put's, get's or atomic's
 * callback from its post to its completion-queue entry (or, emulated, to
 * the target's answer), and what happens when one fails. Used by every
 * operation path (rdma.c, atomics.c, emulate.c) and by progress.
 */

#ifndef MCA_BTL_OFI_COMPLETION_H
#define MCA_BTL_OFI_COMPLETION_H

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
    /* an operation parked on context->rdmaq: what to post again (an
     * atomic's operands are above, its result buffer is local_address) */
    int parked_kind;   /* MCA_BTL_OFI_RMA_* */
    uint8_t parked_op; /* enum fi_op of an atomic */
    uint8_t parked_dt; /* enum fi_datatype of an atomic */
    size_t parked_size;
    uint64_t parked_raddr;
    uint64_t parked_key;
    /* a transfer split over the rails: its parts still in flight, and the
     * first error one of them met */
    volatile int32_t parts_left;
    int parts_status;
    /* with several rails (module->track): a put or get on its context's
     * `tracked' list while in flight (parked_* then describe it), and a
     * copy of the peer's registration, whose key on another rail it needs
     * if it must be sent again there. A copy: the caller's handle need
     * not outlive the call (osc/rdma passes a pointer into its cache of a
     * peer's regions, which its next lookup may reallocate) */
    opal_list_item_t track_item;
    bool tracked;
    mca_btl_base_registration_handle_t remote_copy;
    /* an emulated put or get (module->rma_emulated): bytes no response
     * covers yet, under the module lock; parked_size is the whole size and
     * parts_status the first error a response reported */
    size_t emu_left;
    size_t emu_next; /* the first byte no message was sent for yet */
    uint64_t emu_id; /* what its responses carry */
} mca_btl_ofi_completion_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_completion_t);

static inline mca_btl_ofi_completion_t *mca_btl_ofi_completion_from_ctx(void *op_context)
{
    return (mca_btl_ofi_completion_t *) ((char *) op_context
                                         - offsetof(mca_btl_ofi_completion_t, op));
}

/** The peer of a put posted without callback (its `bare' context). */
static inline mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_from_bare(void *op_context)
{
    return (mca_btl_ofi_endpoint_t *) ((char *) op_context
                                       - offsetof(mca_btl_ofi_endpoint_t, bare));
}

/** The peer of a put, get or atomic (OP_CONTEXT: its mca_btl_ofi_op_t,
 * with or without a completion object); NULL for any other operation. */
static inline mca_btl_ofi_endpoint_t *mca_btl_ofi_rma_endpoint(void *op_context)
{
    switch (((mca_btl_ofi_op_t *) op_context)->kind) {
    case MCA_BTL_OFI_OP_RDMA:
        return mca_btl_ofi_completion_from_ctx(op_context)->endpoint;
    case MCA_BTL_OFI_OP_BARE:
        return mca_btl_ofi_endpoint_from_bare(op_context);
    default:
        return NULL;
    }
}

/** Who posted an operation and whom to call back, on COMP. */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_completion_fill(mca_btl_ofi_completion_t *comp, mca_btl_base_module_t *btl,
                            mca_btl_ofi_context_t *context, mca_btl_base_endpoint_t *endpoint,
                            void *local_address, mca_btl_base_registration_handle_t *local_handle,
                            mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    comp->context = context;
    comp->btl = btl;
    comp->endpoint = endpoint;
    comp->local_address = local_address;
    comp->local_handle = local_handle;
    comp->cbfunc = cbfunc;
    comp->cbcontext = cbcontext;
    comp->cbdata = cbdata;
}

static inline __opal_attribute_always_inline__ mca_btl_ofi_completion_t *
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
    mca_btl_ofi_completion_fill(comp, btl, context, endpoint, local_address, local_handle, cbfunc,
                                cbcontext, cbdata);
    return comp;
}

/** Run the caller's callback (unless finalize is draining) and give the
 * object back; the caller counts the operation complete. */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_completion_run(mca_btl_ofi_completion_t *comp, int status)
{
    mca_btl_ofi_context_t *context = comp->context;

    if (NULL != comp->cbfunc && OPAL_LIKELY(!context->module->closing)) {
        comp->cbfunc(comp->btl, comp->endpoint, comp->local_address, comp->local_handle,
                     comp->cbcontext, comp->cbdata, status);
    }
    opal_free_list_return(&context->completions, &comp->super);
}

/** Take a completion off its context's `tracked' list (several rails);
 * true when it was sent again on another rail meanwhile: then it is only
 * given back, its copy finishes the operation. */
bool mca_btl_ofi_untrack(mca_btl_ofi_completion_t *comp);

/** Run the caller's callback and recycle the completion object. */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_completion_finish(mca_btl_ofi_completion_t *comp, int status)
{
    mca_btl_ofi_context_t *context = comp->context;
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;

    if (OPAL_UNLIKELY(context->module->track) && mca_btl_ofi_untrack(comp)) {
        return;
    }
    mca_btl_ofi_completion_run(comp, status);
    mca_btl_ofi_inflight(context, endpoint, -1);
}

/* What an RMA completion object carries: put, get, or an atomic (op,
 * fetch-op, compare-swap). */
enum {
    MCA_BTL_OFI_RMA_PUT = 1,
    MCA_BTL_OFI_RMA_GET,
    MCA_BTL_OFI_RMA_AOP,
    MCA_BTL_OFI_RMA_FOP,
    MCA_BTL_OFI_RMA_CSWAP,
    MCA_BTL_OFI_RMA_PUTV, /* a message of gathered puts (btl_ofi_putv.c) */
    MCA_BTL_OFI_RMA_GETV  /* a message of gathered gets (btl_ofi_getv.c) */
};

/** The callback of the layer that posted the operation COMP belongs to
 * (for a part of a transfer split over the rails, the whole's). */
mca_btl_base_rdma_completion_fn_t mca_btl_ofi_rdma_owner(const mca_btl_ofi_completion_t *comp);

/** The completion whose track_item ITEM is (the tracked list of a
 * context, or an endpoint's emulated operations waiting to be sent). */
static inline mca_btl_ofi_completion_t *mca_btl_ofi_completion_from_track(opal_list_item_t *item)
{
    return (mca_btl_ofi_completion_t *) ((char *) item
                                         - offsetof(mca_btl_ofi_completion_t, track_item));
}

/** The callback of a part of a transfer split over the rails: the whole
 * (CONTEXT, a completion) finishes when its last part does. */
void mca_btl_ofi_part_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                           void *local_address, mca_btl_base_registration_handle_t *local_handle,
                           void *context, void *cbdata, int status);

/* A put, get or atomic (OP_CONTEXT: its mca_btl_ofi_op_t) failed for
 * CAUSE: when its owner will not look at the status (osc/rdma 4.1) and
 * its peer is not known lost, the job stops, named, rather than lose the
 * data silently. */
void mca_btl_ofi_rdma_failed_because(mca_btl_ofi_context_t *context, void *op_context,
                                     const char *cause);

END_C_DECLS

#endif /* MCA_BTL_OFI_COMPLETION_H */
