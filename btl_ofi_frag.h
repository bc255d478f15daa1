/*
 * btl/ofi fragments: the descriptors of two-sided (send/receive) traffic.
 *
 * This version carries one-sided traffic only (btl_ofi_mode 0); the
 * send path of btl_ofi_mode 1 and 2 builds on these types.
 */

#ifndef MCA_BTL_OFI_FRAG_H
#define MCA_BTL_OFI_FRAG_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/* Header carried in front of every two-sided payload. */
typedef struct mca_btl_ofi_header_t {
    mca_btl_base_tag_t tag;
    uint8_t pad[3];
    uint32_t len;
} mca_btl_ofi_header_t;

typedef struct mca_btl_ofi_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segment;
    struct mca_btl_base_endpoint_t *endpoint;
    mca_btl_ofi_header_t hdr;
} mca_btl_ofi_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_frag_t);

END_C_DECLS

#endif /* MCA_BTL_OFI_FRAG_H */
