/*
 * btl/ofi modex (btl_ofi_modex.c): what each process publishes, and a
 * peer's entry read for one of our modules.
 */

#ifndef MCA_BTL_OFI_MODEX_H
#define MCA_BTL_OFI_MODEX_H

#include "btl_ofi_liveness.h"
#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* What each process publishes: its context layout and libfabric addresses. */
typedef struct mca_btl_ofi_modex_t {
    uint32_t layout;       /* MCA_BTL_OFI_MODEX_LAYOUT: refuse blobs of another layout */
    uint16_t num_contexts; /* contexts of the publishing module */
    uint16_t num_addrs;    /* 1 for a scalable endpoint, else one per context */
    uint32_t addr_len;     /* bytes of each address */
    uint32_t sep;          /* 1 when the addresses name a scalable endpoint */
    uint32_t pad;
    mca_btl_ofi_identity_t id; /* who the publisher is on its host */
    uint16_t probe_port;       /* TCP port of its liveness listener, 0: none */
    uint16_t reserved[3];
    uint8_t addrs[];
} mca_btl_ofi_modex_t;

#define MCA_BTL_OFI_MODEX_LAYOUT 0x0f100004u

/* What a process publishes: the parts of its modules (rails), one after
 * the other. */
typedef struct mca_btl_ofi_modex_rails_t {
    uint32_t layout; /* MCA_BTL_OFI_MODEX_RAILS_LAYOUT */
    uint32_t count;
    uint32_t sizes[MCA_BTL_OFI_MAX_RAILS];
} mca_btl_ofi_modex_rails_t;

#define MCA_BTL_OFI_MODEX_RAILS_LAYOUT 0x0f1a0001u

/* each module's part starts 8-byte aligned (its identity fields are
 * 64-bit) */
#define MCA_BTL_OFI_MODEX_PAD(n) (((n) + 7) & ~(size_t) 7)

/* Publish every module's part (COUNT modules). */
int mca_btl_ofi_modex_send(mca_btl_ofi_module_t **modules, int count);

/* PROC's entry as published (*ALL_OUT, *SIZE_OUT bytes, unchecked: the
 * rails' pairing, btl_ofi_rails.c, reads it; free it when done).
 * OPAL_ERR_UNREACH when there is none. */
int mca_btl_ofi_modex_recv(struct opal_proc_t *proc, mca_btl_ofi_modex_rails_t **all_out,
                           size_t *size_out);

END_C_DECLS

#endif /* MCA_BTL_OFI_MODEX_H */
