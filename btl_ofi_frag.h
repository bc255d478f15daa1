/*
 * btl/ofi messages: the receive buffers each context keeps posted, the
 * two-sided (pml) send path of btl_ofi_mode 1 and 2, and the small
 * messages of emulated RMA and atomics (their formats: btl_ofi_wire.h).
 */

#ifndef MCA_BTL_OFI_FRAG_H
#define MCA_BTL_OFI_FRAG_H

#include "btl_ofi.h"
#include "btl_ofi_wire.h"

BEGIN_C_DECLS

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
    bool checkpoint;              /* its completion ends endpoint->ack_open */
    uint32_t stream_len;          /* its bytes in endpoint->stream_bytes */
    volatile int32_t orphan_refs; /* an orphan's owners left (provider, pml) */
} mca_btl_ofi_frag_t;
OBJ_CLASS_DECLARATION(mca_btl_ofi_frag_t);

static inline mca_btl_ofi_frag_t *mca_btl_ofi_frag_from_op(void *op_context)
{
    return (mca_btl_ofi_frag_t *) ((char *) op_context - offsetof(mca_btl_ofi_frag_t, op));
}

/* Count a message posted (N > 0) or complete (N < 0) for ENDPOINT, as
 * mca_btl_ofi_send_inflight, save that an acknowledgement (ACK, several
 * rails) stays out of the peer's posted/completed: it is the peer's
 * bookkeeping, not work of ours that waits on it, so that one standing
 * still (a peer that finalized may never take it) makes no stall for the
 * liveness probes. It is counted in the peer's acks_open instead, so
 * that finalize's drain sees whom it is owed to. */
static inline void mca_btl_ofi_msg_inflight(mca_btl_ofi_context_t *context,
                                            mca_btl_ofi_endpoint_t *endpoint, bool ack, int64_t n)
{
    if (OPAL_UNLIKELY(ack)) {
        mca_btl_ofi_add64(&context->sends_outstanding, n);
        mca_btl_ofi_add64(&endpoint->acks_open, n);
        return;
    }
    mca_btl_ofi_send_inflight(context, endpoint, n);
}

/* The same for FRAG, while its header is ours to read. */
static inline void mca_btl_ofi_frag_inflight(mca_btl_ofi_context_t *context,
                                             mca_btl_ofi_endpoint_t *endpoint,
                                             const mca_btl_ofi_frag_t *frag, int64_t n)
{
    mca_btl_ofi_msg_inflight(context, endpoint, MCA_BTL_OFI_MSG_ACK == frag->hdr->type, n);
}

/* A message that found the transmit queue full, retried from progress. */
typedef struct mca_btl_ofi_pending_t {
    opal_list_item_t super;
    mca_btl_ofi_endpoint_t *endpoint;
    size_t len;
    ssize_t rc; /* what posting it gave, once taken off the list */
    /* every reply of ours fits: an atomic's, a put's or get's, and the
     * two in one of gathered puts that carried an atomic */
    union {
        mca_btl_ofi_amo_resp_t resp;
        mca_btl_ofi_rma_msg_t rma;
        mca_btl_ofi_amo_req_t req;
        mca_btl_ofi_putv_amo_resp_t putv_amo;
        char bytes[sizeof(mca_btl_ofi_putv_amo_resp_t)];
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

/* What handles one message type of ours: called from progress with the
 * message's LEN bytes (header included). */
typedef void (*mca_btl_ofi_msg_handler_fn_t)(mca_btl_ofi_context_t *context, const void *msg,
                                             size_t len);
/* The handler of TYPE (MCA_BTL_OFI_MSG_*, not AM: the pml's are this
 * file's); set by component init before any module posts a receive buffer. */
void mca_btl_ofi_msg_handler_set(int type, mca_btl_ofi_msg_handler_fn_t handler);

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
 * the queue is full or fragments wait in the send queue (it never goes
 * ahead of them), OPAL_ERR_UNREACH for a peer found gone; any other
 * failure is reported here. */
int mca_btl_ofi_msg_inject(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                           const void *msg, size_t len, uint64_t *count);

/* True when HDR is an acknowledgement (several rails), whose failure
 * (WHY) names no peer: said at trace level only. */
bool mca_btl_ofi_ack_failed(const mca_btl_ofi_msg_hdr_t *hdr,
                            const struct mca_btl_base_endpoint_t *endpoint, const char *why);

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

/* The same with the bytes of COUNT pieces of this process's memory (each
 * ADDR, LEN), one after the other behind HEAD: a gathered get's answer.
 * The caller checked that they fit one message. */
int mca_btl_ofi_msg_send_gather(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint,
                                const void *head, size_t head_len,
                                const mca_btl_ofi_putv_piece_t *pieces, uint32_t count);

/* The same, and then TAIL (ARG, where its TAIL_LEN bytes go) writes the
 * end of the message once the pieces were copied: a gathered get's
 * answer with the atomic applied after the reads. */
typedef void (*mca_btl_ofi_msg_tail_fn_t)(void *arg, void *at);
int mca_btl_ofi_msg_send_gather_tail(mca_btl_ofi_context_t *context,
                                     mca_btl_ofi_endpoint_t *endpoint, const void *head,
                                     size_t head_len, const mca_btl_ofi_putv_piece_t *pieces,
                                     uint32_t count, mca_btl_ofi_msg_tail_fn_t tail, void *arg,
                                     size_t tail_len);

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

/* Work of ours that waits on ENDPOINT: operations posted to it and not
 * completed, or sends the provider refused for now and we keep. */
bool mca_btl_ofi_owed(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint);

END_C_DECLS

#endif /* MCA_BTL_OFI_FRAG_H */
