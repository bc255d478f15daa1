/*
 * btl/ofi defaults for libfabric's own provider variables
 * (btl_ofi_provenv.c).
 */

#ifndef MCA_BTL_OFI_PROVENV_H
#define MCA_BTL_OFI_PROVENV_H

#include <rdma/fabric.h>

BEGIN_C_DECLS

/* Set, in the environment, our values of the provider variables whose
 * libfabric defaults do not fit a BTL, where the user set none. LARGEST:
 * the largest message we send on tcp;ofi_rxm, our header included.
 * Called at component open, before libfabric reads them (at its first
 * fi_getinfo); later calls change nothing. */
void mca_btl_ofi_provenv_set(size_t largest);

/* Say on the verbose stream (level 1) which of those values the provider
 * INFO that was taken uses, and whose they are (ours or the user's). */
void mca_btl_ofi_provenv_say(const struct fi_info *info);

END_C_DECLS

#endif
