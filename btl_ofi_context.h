/*
 * btl/ofi contexts: each one a transmit/receive path with its own
 * completion queue and lock (see btl_ofi_types.h for the type).
 */

#ifndef MCA_BTL_OFI_CONTEXT_H
#define MCA_BTL_OFI_CONTEXT_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/* Open COUNT contexts (of one scalable endpoint when USE_SEP); on failure
 * nothing is left open. Receive buffers are not posted here (frag.c's
 * mca_btl_ofi_msg_init, once every context is enabled). */
int mca_btl_ofi_contexts_create(mca_btl_ofi_module_t *module, int count, bool use_sep);
/* Close the endpoints and completion queues: the provider no longer uses
 * any buffer of ours ... */
void mca_btl_ofi_contexts_close(mca_btl_ofi_module_t *module);
/* ... then, once the receive buffers are given back, free the contexts. */
void mca_btl_ofi_contexts_free(mca_btl_ofi_module_t *module);

/* The context bound to the calling thread (handed out on first use). */
mca_btl_ofi_context_t *mca_btl_ofi_context_select(mca_btl_ofi_module_t *module);

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
 * full context is not drained here: the caller gets
 * OPAL_ERR_OUT_OF_RESOURCE, and osc/rdma and ob1 answer it by progressing
 * (our progress callback reads the completions, and handles their errors,
 * there) before they try again. So no put, get, atomic or send ever runs
 * completion callbacks, failover or fatal-error code from inside itself. */
static inline bool mca_btl_ofi_context_has_room(mca_btl_ofi_context_t *context)
{
    /* those carried as messages included (their messages are posted
     * against the queue's own occupancy, mca_btl_ofi_tx_queued) */
    return OPAL_LIKELY(mca_btl_ofi_tx_busy(context) < context->module->tx_limit);
}

/* Let the provider move data without taking any completion: a zero-count
 * read runs the progress engine of providers that only move data when
 * polled (tcp;ofi_rxm, udp;ofi_rxd) and leaves every completion, and
 * every error, for the progress callback. Skipped while another thread
 * holds the context: it is progressing already. */
static inline void mca_btl_ofi_context_drive(mca_btl_ofi_context_t *context)
{
    if (0 == MCA_BTL_OFI_TRYLOCK(&context->lock)) {
        (void) fi_cq_read(context->cq, NULL, 0);
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
}

END_C_DECLS

#endif /* MCA_BTL_OFI_CONTEXT_H */
