/*
 * btl/ofi gathered puts (btl_ofi_putv.c): small puts without callback to
 * one peer carried together in one message.
 */

#ifndef MCA_BTL_OFI_PUTV_H
#define MCA_BTL_OFI_PUTV_H

#include "btl_ofi.h"
#include "btl_ofi_context.h"
#include "btl_ofi_wire.h"

BEGIN_C_DECLS

/** Gather a put of SIZE bytes (at most module->putv_max, no callback, a
 * live peer) into CONTEXT's message for ENDPOINT; the message leaves when
 * it is full, when a put for another peer or region comes, at a flush and
 * at the next progress pass. The bytes are copied: the caller's buffer is
 * free on return. */
int mca_btl_ofi_putv_add(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         mca_btl_base_registration_handle_t *remote_handle, size_t size);

/** Take the gathering buffers of every context of MODULE now rather than
 * at its first put, so that mca_btl_ofi_putv_add cannot fail for want of
 * them: a put of at most putv_max bytes is then always copied before
 * btl_put returns (btl_ofi_put_copied_max). False, with putv_max set to 0
 * and the cause said, where they could not be had. */
bool mca_btl_ofi_putv_prepare(mca_btl_ofi_module_t *module);

/** Send what CONTEXT gathered, if anything and its gathering lock is free
 * (a thread holding it is adding a put or sending: it, or the next pass,
 * sends). The progress callback's pass. */
void mca_btl_ofi_putv_send(mca_btl_ofi_context_t *context);

/** An atomic to ENDPOINT on CONTEXT where module->amo_ordered: applied at
 * the target after the puts to it gathered or still unanswered (and the
 * gathered gets to it still unanswered: mca_btl_ofi_getv_atomic first). Carried in
 * the message of the puts CONTEXT gathered for it, when there are and it
 * fits (one exchange for both), else as a message of its own behind them
 * (messages of one context leave in order, the target serves them in
 * order). OPAL_ERR_NOT_FOUND, nothing done, when no such puts are open:
 * the caller posts it as usual. */
int mca_btl_ofi_putv_atomic(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                            mca_btl_ofi_endpoint_t *endpoint, const mca_btl_ofi_amo_args_t *amo);

/** Send what CONTEXT gathered, if it is for ENDPOINT (a message to it must
 * follow them: mca_btl_ofi_getv_atomic). The gathering lock is taken. */
void mca_btl_ofi_putv_send_to(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint);

/** Send what every context of every module gathered (flush, drain). */
void mca_btl_ofi_putv_send_all(void);

/** The target's side (a message of type MCA_BTL_OFI_MSG_PUTV, LEN bytes at
 * MSG): check every piece against the registration, store them all, and
 * answer once. */
void mca_btl_ofi_putv_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** The target's checks of a message of pieces (gathered puts or gets,
 * REQ followed by the pieces' descriptions): the origin's endpoint
 * (retained; NULL: unknown, the message dropped and said so), and in RESP
 * the answer's header, its status OPAL_SUCCESS only when the registration
 * REQ names grants NEED (or remote atomics) and holds every piece, and the
 * pieces' lengths add up to REQ's. */
mca_btl_ofi_endpoint_t *mca_btl_ofi_pieces_check(mca_btl_ofi_module_t *module,
                                                 const mca_btl_ofi_rma_msg_t *req,
                                                 const mca_btl_ofi_putv_piece_t *pieces,
                                                 int32_t need, mca_btl_ofi_rma_msg_t *resp);

/** The answer to a gathered message of ours (MCA_BTL_OFI_MSG_RMA_RESP with
 * op MCA_BTL_OFI_MSG_PUTV): its puts are complete. */
void mca_btl_ofi_putv_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** Free what CONTEXT gathered puts in (at its destruction). */
void mca_btl_ofi_putv_fini(mca_btl_ofi_context_t *context);

END_C_DECLS

#endif /* MCA_BTL_OFI_PUTV_H */
