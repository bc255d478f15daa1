/*
 * btl/ofi endpoints: per-peer addresses, one per local context, built from
 * the address blob each process publishes through the modex.
 */

#ifndef MCA_BTL_OFI_ENDPOINT_H
#define MCA_BTL_OFI_ENDPOINT_H

#include "btl_ofi.h"

BEGIN_C_DECLS

/* What each process publishes: its context layout and libfabric addresses. */
typedef struct mca_btl_ofi_modex_t {
    uint32_t layout;       /* MCA_BTL_OFI_MODEX_LAYOUT: refuse blobs of another layout */
    uint16_t num_contexts; /* contexts of the publishing module */
    uint16_t num_addrs;    /* 1 for a scalable endpoint, else one per context */
    uint32_t addr_len;     /* bytes of each address */
    uint32_t sep;          /* 1 when the addresses name a scalable endpoint */
    uint8_t addrs[];
} mca_btl_ofi_modex_t;

#define MCA_BTL_OFI_MODEX_LAYOUT 0x0f100001u

END_C_DECLS

#endif /* MCA_BTL_OFI_ENDPOINT_H */
