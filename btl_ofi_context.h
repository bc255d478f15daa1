/*
 * btl/ofi contexts: each one a transmit/receive path with its own
 * completion queue and lock (see btl_ofi.h for the type).
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

static inline mca_btl_ofi_context_t *mca_btl_ofi_context_get(mca_btl_ofi_module_t *module)
{
    if (OPAL_LIKELY(1 == module->num_contexts)) {
        return module->contexts;
    }
    return mca_btl_ofi_context_select(module);
}

END_C_DECLS

#endif /* MCA_BTL_OFI_CONTEXT_H */
