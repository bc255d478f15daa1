/*
 * btl/ofi messages: the receive buffers each context keeps posted, the
 * wire headers, and the small-message send used by emulated atomics. The
 * two-sided (pml) send path of btl_ofi_mode 1 and 2 builds on these.
 */

#ifndef MCA_BTL_OFI_FRAG_H
#define MCA_BTL_OFI_FRAG_H

#include "btl_ofi.h"

BEGIN_C_DECLS

enum {
    MCA_BTL_OFI_MSG_AMO_REQ = 1, /* emulated atomic: do this at your end */
    MCA_BTL_OFI_MSG_AMO_RESP = 2 /* emulated atomic: done, old value enclosed */
};

/* Leading bytes of every message. */
typedef struct mca_btl_ofi_msg_hdr_t {
    uint8_t type;
    uint8_t op;     /* AMO: the btl atomic op */
    uint16_t flags; /* AMO: MCA_BTL_OFI_AMO_* */
    int32_t status; /* AMO_RESP: OPAL_SUCCESS or the error the target saw */
} mca_btl_ofi_msg_hdr_t;

#define MCA_BTL_OFI_AMO_32BIT 0x1
#define MCA_BTL_OFI_AMO_CSWAP 0x2

typedef struct mca_btl_ofi_amo_req_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint64_t req_id; /* origin's completion object, echoed back untouched */
    uint64_t addr;   /* target virtual address */
    uint64_t key;    /* registration the address must lie in */
    uint64_t operand;
    uint64_t compare;
    uint64_t origin; /* origin's process name, to route the reply */
} mca_btl_ofi_amo_req_t;

typedef struct mca_btl_ofi_amo_resp_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint64_t req_id;
    uint64_t result;
} mca_btl_ofi_amo_resp_t;

/* One posted receive buffer. */
typedef struct mca_btl_ofi_rdesc_t {
    struct fi_context2 ofi_ctx;
    mca_btl_ofi_context_t *context;
    void *buf;
} mca_btl_ofi_rdesc_t;

/* A message that found the transmit queue full, retried from progress. */
typedef struct mca_btl_ofi_pending_t {
    opal_list_item_t super;
    mca_btl_ofi_endpoint_t *endpoint;
    size_t len;
    union {
        mca_btl_ofi_amo_resp_t resp;
        char bytes[sizeof(mca_btl_ofi_amo_req_t)];
    } msg;
} mca_btl_ofi_pending_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_pending_t);

int mca_btl_ofi_msg_init(mca_btl_ofi_context_t *context);
void mca_btl_ofi_msg_fini(mca_btl_ofi_context_t *context);

/* A receive completed on this descriptor: dispatch, then repost. */
void mca_btl_ofi_msg_received(mca_btl_ofi_context_t *context, mca_btl_ofi_rdesc_t *rdesc,
                              size_t len);

/* Send a small message by injection (no completion to wait for). Returns
 * OPAL_ERR_OUT_OF_RESOURCE when the queue is full. Takes the context lock. */
int mca_btl_ofi_msg_inject(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len);

/* Like mca_btl_ofi_msg_inject, but a full queue parks the message on the
 * context to be sent by a later progress call: for replies, which must
 * never be dropped. */
void mca_btl_ofi_msg_reply(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len);

/* Retry parked replies; called from progress. */
void mca_btl_ofi_msg_flush_pending(mca_btl_ofi_context_t *context);

END_C_DECLS

#endif /* MCA_BTL_OFI_FRAG_H */
