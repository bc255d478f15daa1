/*
 * btl/ofi contexts: each one a transmit/receive path with its own
 * completion queue and lock (see btl_ofi_types.h for the type).
 */

#ifndef MCA_BTL_OFI_CONTEXT_H
#define MCA_BTL_OFI_CONTEXT_H

#include "btl_ofi.h"

BEGIN_C_DECLS

int mca_btl_ofi_contexts_create(mca_btl_ofi_module_t *module, int count, bool use_sep);
void mca_btl_ofi_contexts_destroy(mca_btl_ofi_module_t *module);

/* The context bound to the calling thread (handed out on first use). */
mca_btl_ofi_context_t *mca_btl_ofi_context_select(mca_btl_ofi_module_t *module);

/* Drain up to btl_ofi_num_cq_read completions; returns how many completed. */
int mca_btl_ofi_context_progress(mca_btl_ofi_context_t *context);

/* A put, get or atomic (OP_CONTEXT: its mca_btl_ofi_op_t) failed for
 * CAUSE: when its owner will not look at the status (osc/rdma 4.1) and
 * its peer is not known lost, the job stops, named, rather than lose the
 * data silently. */
void mca_btl_ofi_rdma_failed_because(mca_btl_ofi_context_t *context, void *op_context,
                                     const char *cause);

static inline mca_btl_ofi_context_t *mca_btl_ofi_context_get(mca_btl_ofi_module_t *module)
{
    if (OPAL_LIKELY(1 == module->num_contexts)) {
        return module->contexts;
    }
    return mca_btl_ofi_context_select(module);
}

/* Room for one more operation on the context's transmit queue. Never more
 * in flight than the provider's queue holds: udp;ofi_rxd accepts more
 * sends than its tx_attr->size and silently never delivers the excess. A
 * full context is drained once before giving up, so the caller's
 * OPAL_ERR_OUT_OF_RESOURCE retry finds room. */
static inline bool mca_btl_ofi_context_has_room(mca_btl_ofi_context_t *context)
{
    if (OPAL_LIKELY(mca_btl_ofi_tx_busy(context) < context->module->tx_limit)) {
        return true;
    }
    (void) mca_btl_ofi_context_progress(context);
    return mca_btl_ofi_tx_busy(context) < context->module->tx_limit;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_CONTEXT_H */
