/*
 * btl/ofi messages: the receive buffers each context keeps posted, the
 * wire headers, the two-sided (pml) send path of btl_ofi_mode 1 and 2, and
 * the small injected messages of emulated atomics.
 */

#ifndef MCA_BTL_OFI_FRAG_H
#define MCA_BTL_OFI_FRAG_H

#include "btl_ofi.h"

BEGIN_C_DECLS

enum {
    MCA_BTL_OFI_MSG_AMO_REQ = 1,  /* emulated atomic: do this at your end */
    MCA_BTL_OFI_MSG_AMO_RESP = 2, /* emulated atomic: done, old value enclosed */
    MCA_BTL_OFI_MSG_AM = 3,       /* pml payload for the active-message tag in op */
    MCA_BTL_OFI_MSG_RAIL_CUT = 4, /* a link between a rail of the sender and one of ours is cut */
    MCA_BTL_OFI_MSG_ACK = 5,      /* numbered messages of one link arrived, up to a number */
    MCA_BTL_OFI_MSG_PUT = 6,      /* emulated put: store the enclosed bytes */
    MCA_BTL_OFI_MSG_GET = 7,      /* emulated get: send me these bytes */
    MCA_BTL_OFI_MSG_RMA_RESP = 8  /* emulated put stored, or get's bytes enclosed */
};

/* hdr.rail of a message without a number */
#define MCA_BTL_OFI_NO_SEQ 0xff

/* Leading bytes of every message. */
typedef struct mca_btl_ofi_msg_hdr_t {
    uint8_t type;
    uint8_t op;    /* AMO: the btl atomic op; AM: the active-message tag */
    uint8_t flags; /* AMO: MCA_BTL_OFI_AMO_* */
    /* With several rails a message of the pml or of an atomic is numbered
     * on the link it was first posted to: `rail' is the receiver's rail
     * at that link's end (MCA_BTL_OFI_NO_SEQ: not numbered), `seq' its
     * number there. Sent again on another rail after that link failed, it
     * keeps both, so that the receiver takes it once (btl_ofi_frag.c). */
    uint8_t rail;
    uint32_t seq;
    /* the sender's process name (mca_btl_ofi_name_key): an atomic's
     * request is answered to it, a numbered message counted for it */
    uint64_t origin;
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
} mca_btl_ofi_amo_req_t;

typedef struct mca_btl_ofi_amo_resp_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint64_t req_id;
    uint64_t result;
    int32_t status; /* OPAL_SUCCESS or the error the target saw */
    uint32_t pad;
} mca_btl_ofi_amo_resp_t;

/* An emulated put or get (where the provider's RMA cannot be trusted):
 * a put's bytes follow the header, one message per piece; a get is one
 * message, answered with one response per piece. */
typedef struct mca_btl_ofi_rma_msg_t {
    mca_btl_ofi_msg_hdr_t hdr; /* RMA_RESP: op is MCA_BTL_OFI_MSG_GET when bytes follow */
    uint64_t req_id;           /* origin's operation, echoed back untouched */
    uint64_t addr;             /* target address (RESP: the request's, echoed) */
    uint64_t key;              /* PUT, GET: registration the bytes must lie in */
    uint64_t len;              /* bytes enclosed (PUT, RESP) or asked for (GET) */
    int32_t status;            /* RESP: OPAL_SUCCESS or the error the target saw */
    uint32_t pieces;           /* RESP: the messages of the window it accounts for */
    /* PUT, GET: the target's rail whose key `key' is; a piece queued when
     * its link failed is numbered on another rail's link, so hdr.rail
     * cannot tell */
    uint32_t key_rail;
    uint32_t pad;
} mca_btl_ofi_rma_msg_t;

/* Size of one emulated-RMA message where any message size works. */
#define MCA_BTL_OFI_RMA_MSG_SIZE 16384

/* Emulated-RMA messages that may be in flight to one peer: a put's pieces
 * not yet answered, a get's pieces asked for and not yet arrived. More
 * overrun the receiver's side of udp;ofi_rxd, which then loses messages
 * it acknowledged (seen with a thousand in flight). */
#define MCA_BTL_OFI_EMU_WINDOW 32

/* The link between the sender's rail from_rail and the receiver's rail
 * `rail' is cut: the receiver's traffic to the sender leaves it too. */
typedef struct mca_btl_ofi_rail_cut_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint32_t rail;
    uint32_t from_rail;
} mca_btl_ofi_rail_cut_t;

/* The numbered messages the receiver posted on the link ending at its
 * rail `rail' arrived, every one below `base' (sent every quarter window,
 * MCA_BTL_OFI_SEQ_WINDOW): it may forget them. */
typedef struct mca_btl_ofi_msg_ack_t {
    mca_btl_ofi_msg_hdr_t hdr;
    uint32_t rail;
    uint32_t base;
} mca_btl_ofi_msg_ack_t;

/* One posted receive buffer: a single message, or with FI_MULTI_RECV
 * many, packed back to back until the provider releases it. */
typedef struct mca_btl_ofi_rdesc_t {
    mca_btl_ofi_op_t op;
    mca_btl_ofi_context_t *context;
    void *buf;
    struct mca_btl_ofi_rdesc_t *next_repost; /* on context->repost */
} mca_btl_ofi_rdesc_t;

/* Where a fragment is, for numbered messages (several rails). */
enum {
    MCA_BTL_OFI_FRAG_PLAIN = 0, /* not numbered, or not posted yet */
    MCA_BTL_OFI_FRAG_SENT = 1,  /* numbered and in flight: on its context's `sent' list */
    MCA_BTL_OFI_FRAG_KEPT = 2,  /* completed, kept on its endpoint's `unacked' list */
    MCA_BTL_OFI_FRAG_COPY = 3,  /* ours, posted again on another rail: given back when done */
    MCA_BTL_OFI_FRAG_ORPHAN = 4 /* in flight on a failed link, its copy sent on: the pml
                                 * was told it was sent; given back by whichever of the
                                 * provider's completion and the pml's free comes last */
};

/* A two-sided send descriptor: the wire header sits right before the
 * segment, so header and payload leave in one contiguous send. */
typedef struct mca_btl_ofi_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segment;
    mca_btl_ofi_op_t op;
    mca_btl_ofi_msg_hdr_t *hdr;
    mca_btl_ofi_endpoint_t *endpoint;
    mca_btl_ofi_context_t *context;
    /* the module whose list it comes from and whose btl the pml used: a
     * fragment sent on another rail (a detour) still goes back there */
    mca_btl_ofi_module_t *home;
    int state;                    /* MCA_BTL_OFI_FRAG_* */
    volatile int32_t orphan_refs; /* an orphan's owners left (provider, pml) */
} mca_btl_ofi_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_frag_t);

static inline mca_btl_ofi_frag_t *mca_btl_ofi_frag_from_op(void *op_context)
{
    return (mca_btl_ofi_frag_t *) ((char *) op_context - offsetof(mca_btl_ofi_frag_t, op));
}

/* A message that found the transmit queue full, retried from progress. */
typedef struct mca_btl_ofi_pending_t {
    opal_list_item_t super;
    mca_btl_ofi_endpoint_t *endpoint;
    size_t len;
    ssize_t rc; /* what posting it gave, once taken off the list */
    union {
        mca_btl_ofi_amo_resp_t resp;
        mca_btl_ofi_rma_msg_t rma;
        char bytes[sizeof(mca_btl_ofi_amo_req_t) > sizeof(mca_btl_ofi_rma_msg_t)
                       ? sizeof(mca_btl_ofi_amo_req_t)
                       : sizeof(mca_btl_ofi_rma_msg_t)];
    } msg;
} mca_btl_ofi_pending_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_pending_t);

int mca_btl_ofi_frags_init(mca_btl_ofi_module_t *module);

mca_btl_base_descriptor_t *mca_btl_ofi_alloc(mca_btl_base_module_t *btl,
                                             mca_btl_base_endpoint_t *endpoint, uint8_t order,
                                             size_t size, uint32_t flags);
int mca_btl_ofi_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des);
mca_btl_base_descriptor_t *mca_btl_ofi_prepare_src(mca_btl_base_module_t *btl,
                                                   mca_btl_base_endpoint_t *endpoint,
                                                   struct opal_convertor_t *convertor,
                                                   uint8_t order, size_t reserve, size_t *size,
                                                   uint32_t flags);
int mca_btl_ofi_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                     mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int mca_btl_ofi_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                      struct opal_convertor_t *convertor, void *header, size_t header_size,
                      size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                      mca_btl_base_descriptor_t **descriptor);

/* A send completed (or failed): callback, then recycle if we own it. */
void mca_btl_ofi_frag_sent(mca_btl_ofi_frag_t *frag, int status);

int mca_btl_ofi_msg_init(mca_btl_ofi_context_t *context);
void mca_btl_ofi_msg_fini(mca_btl_ofi_context_t *context);

/* A receive completed on this descriptor: dispatch the message (len
 * bytes, at buf for a multi-receive buffer), then repost the buffer once
 * the provider is done with it. */
void mca_btl_ofi_msg_received(mca_btl_ofi_context_t *context, mca_btl_ofi_rdesc_t *rdesc,
                              uint64_t flags, size_t len, void *buf);

/* Whether this receive completion is an emulated atomic's, put's or get's
 * request, which the progress thread may serve itself (one that does not
 * release a buffer). */
bool mca_btl_ofi_msg_is_request(mca_btl_ofi_context_t *context,
                                const struct fi_cq_data_entry *entry);

/* Send a small message of ours (injected when the provider allows, else
 * from a fragment) and, once posted, add one to *count (NULL: nothing) in
 * the same hold of the context lock. Returns OPAL_ERR_OUT_OF_RESOURCE when
 * the queue is full, OPAL_ERR_UNREACH for a peer found gone; any other
 * failure is reported here. */
int mca_btl_ofi_msg_inject(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len, uint64_t *count);

/* Like mca_btl_ofi_msg_inject, but a full queue parks the message on the
 * context to be sent by a later progress call: for replies, which must
 * never be dropped. */
void mca_btl_ofi_msg_reply(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len);

/* Send HEAD (HEAD_LEN bytes, a header of ours) followed by DATA_LEN bytes
 * from DATA in one message from a fragment of ours: posted now, or kept
 * in order for progress to post when the queue is full, never dropped.
 * OPAL_ERR_OUT_OF_RESOURCE when no fragment could be had, OPAL_ERR_UNREACH
 * for a peer found gone; a message the provider refuses for good is
 * reported here and counts as sent. */
int mca_btl_ofi_msg_send_copy(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                              const void *head, size_t head_len, const void *data, size_t data_len);

/* FROM's link (MODULE's rail) failed: post on TO (TO_MODULE's endpoint
 * for the same peer) every message for FROM that may not have arrived:
 * copies of the numbered ones in flight or not yet acknowledged, which
 * keep their numbers, then the fragments and replies still queued.
 * Returns how many were sent again (the numbered ones), -1 when one could
 * not be copied (out of memory). */
int mca_btl_ofi_frags_move(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *from,
                           mca_btl_ofi_module_t *to_module, mca_btl_ofi_endpoint_t *to);

/* Acknowledge what peers numbered to MODULE's rail and we have not
 * acknowledged yet (several rails; from the periodic peer check). */
void mca_btl_ofi_seq_ack_due(mca_btl_ofi_module_t *module);
/* A link of MODULE's rail failed: an acknowledgement sent on it may be
 * lost, so the next mca_btl_ofi_seq_ack_due sends each again (over the
 * detour where there is one). */
void mca_btl_ofi_seq_ack_again(mca_btl_ofi_module_t *module);

/* Retry what waits for queue room: receive buffers, then pml fragments,
 * then replies (the backlog pattern of mca_btl_ofi_backlog_rdma); called
 * from progress. */
void mca_btl_ofi_backlog_msgs(mca_btl_ofi_context_t *context);

/* Post a pml fragment on CONTEXT, or keep it in order behind others for
 * progress to post. */
int mca_btl_ofi_frag_start(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                           mca_btl_ofi_frag_t *frag);
/* Give back an orphan (MCA_BTL_OFI_FRAG_ORPHAN) once its last owner is
 * done with it. */
void mca_btl_ofi_orphan_release(mca_btl_ofi_frag_t *frag);

END_C_DECLS

#endif /* MCA_BTL_OFI_FRAG_H */
