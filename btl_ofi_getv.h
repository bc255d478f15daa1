/*
 * btl/ofi gathered gets (btl_ofi_getv.c): small gets to one peer asked for
 * together in one message, answered with all their bytes in one.
 */

#ifndef MCA_BTL_OFI_GETV_H
#define MCA_BTL_OFI_GETV_H

#include "btl_ofi.h"
#include "btl_ofi_context.h"
#include "btl_ofi_wire.h"

BEGIN_C_DECLS

/* The most gets one message asks for. */
#define MCA_BTL_OFI_GETV_MAX 256

/* One gathered get at the origin: where its bytes go and whom to call. */
typedef struct mca_btl_ofi_getv_rec_t {
    void *local_address;
    mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext;
    void *cbdata;
} mca_btl_ofi_getv_rec_t;

/* Gets gathered for one peer and registration, from a context's first
 * get until their answer has been handed out (an item of
 * module->getv_batches). `msg' and `wire' are the request as it is sent:
 * the header, then the pieces' descriptions right behind it. */
typedef struct mca_btl_ofi_getv_batch_t {
    opal_free_list_item_t super;
    mca_btl_ofi_module_t *module;
    struct mca_btl_base_endpoint_t *to;
    uint64_t key;
    uint32_t key_rail;
    uint32_t count;
    size_t bytes;
    /* the first piece's address as the provider wants it: one get alone
     * is posted as the provider's own read */
    uint64_t first_raddr;
    mca_btl_ofi_rma_msg_t msg;
    mca_btl_ofi_putv_piece_t wire[MCA_BTL_OFI_GETV_MAX];
    mca_btl_ofi_getv_rec_t rec[MCA_BTL_OFI_GETV_MAX];
} mca_btl_ofi_getv_batch_t;

/** Gather a get of SIZE bytes (at most module->getv_max, a live peer)
 * into CONTEXT's batch for ENDPOINT; asked for when the batch is full,
 * when a get for another peer or region comes, at a flush and at the next
 * progress pass; CBFUNC runs once its bytes are in LOCAL_ADDRESS, as for
 * any get. OPAL_ERR_NOT_AVAILABLE: not gathered, the caller posts it. */
int mca_btl_ofi_getv_add(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         mca_btl_base_registration_handle_t *local_handle,
                         mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/** An atomic to ENDPOINT on CONTEXT where module->amo_ordered, while
 * CONTEXT gathers gets for it: carried at the end of their message (the
 * target reads them, then applies it, and answers both at once), after
 * any puts CONTEXT gathered for it. OPAL_ERR_NOT_FOUND, nothing done, when
 * no gets for it are gathered here (their message, if any, has left: the
 * caller's message behind it is applied after them). */
int mca_btl_ofi_getv_atomic(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                            mca_btl_ofi_endpoint_t *endpoint, const mca_btl_ofi_amo_args_t *amo);

/** Ask for what CONTEXT gathered, if anything and its gathering lock is
 * free (as mca_btl_ofi_putv_send). The progress callback's pass. */
void mca_btl_ofi_getv_send(mca_btl_ofi_context_t *context);

/** Ask for what every context of every module gathered (flush). */
void mca_btl_ofi_getv_send_all(void);

/** The target's side (a message of type MCA_BTL_OFI_MSG_GETV): check every
 * piece against the registration, answer with their bytes. */
void mca_btl_ofi_getv_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** The answer to a message of ours (RMA_RESP with op MCA_BTL_OFI_MSG_GETV):
 * the bytes to their places, then every get's callback. */
void mca_btl_ofi_getv_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** The callback of a gathered message's completion object: runs its gets'
 * callbacks with STATUS and gives the batch back. */
void mca_btl_ofi_getv_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                           void *local_address, mca_btl_base_registration_handle_t *local_handle,
                           void *context, void *cbdata, int status);

/** The callback of a get posted as the provider's read (a batch of one,
 * CONTEXT): the peer's count of such reads, the get's own callback, the
 * batch given back. */
void mca_btl_ofi_getv_lone_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                                void *local_address,
                                mca_btl_base_registration_handle_t *local_handle, void *context,
                                void *cbdata, int status);

/** The callback of the layer whose gets BATCH (a message's completion
 * object's local_address) carries. */
mca_btl_base_rdma_completion_fn_t mca_btl_ofi_getv_owner(const void *batch);

END_C_DECLS

#endif /* MCA_BTL_OFI_GETV_H */
