/*
 * btl/ofi progress (btl_ofi_progress.c): the progress callback, a flush's
 * passes, and the optional progress thread.
 */

#ifndef MCA_BTL_OFI_PROGRESS_H
#define MCA_BTL_OFI_PROGRESS_H

#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* Drain up to btl_ofi_num_cq_read completions of CONTEXT, each handed to
 * its owner; returns how many completed. */
int mca_btl_ofi_context_progress(mca_btl_ofi_context_t *context);

/* The component's progress callback. */
int mca_btl_ofi_component_progress(void);
/** Progress every context of every module once; CHECK: look at the peers
 * too (the progress callback does so every 256 calls, or every 16
 * that find nothing to do). */
int mca_btl_ofi_progress_all(bool check);
/* progress calls (or flush passes) between two looks at the peers */
#define MCA_BTL_OFI_CHECK_CALLS 256

/* The optional progress thread of MODULE. */
int mca_btl_ofi_progress_thread_start(mca_btl_ofi_module_t *module);
void mca_btl_ofi_progress_thread_stop(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_PROGRESS_H */
