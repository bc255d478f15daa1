/*
 * btl/ofi progress (btl_ofi_progress.c); the progress callback and the
 * progress thread are declared in btl_ofi.h with the component's entry
 * points.
 */

#ifndef MCA_BTL_OFI_PROGRESS_H
#define MCA_BTL_OFI_PROGRESS_H

#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* Drain up to btl_ofi_num_cq_read completions of CONTEXT, each handed to
 * its owner; returns how many completed. */
int mca_btl_ofi_context_progress(mca_btl_ofi_context_t *context);

END_C_DECLS

#endif /* MCA_BTL_OFI_PROGRESS_H */
