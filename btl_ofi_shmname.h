/*
 * btl/ofi names of the shm provider's endpoints (btl_ofi_shmname.c).
 */

#ifndef MCA_BTL_OFI_SHMNAME_H
#define MCA_BTL_OFI_SHMNAME_H

#include <stddef.h>

BEGIN_C_DECLS

/* Write into NAME (SIZE bytes) the "fi_shm://" address for our endpoint
 * of context INDEX: unique, kept for removal at exit. The first call of a
 * process also removes the regions that processes of this pid namespace
 * which no longer exist left in /dev/shm. OPAL_SUCCESS, or OPAL_ERROR if
 * SIZE is too small. */
int mca_btl_ofi_shm_name(char *name, size_t size, int index);

END_C_DECLS

#endif
