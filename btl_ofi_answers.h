/*
 * btl/ofi answers that may wait (btl_ofi_answers.c): the answer to a
 * peer's gathered puts and the atomic after them, when the peer said it
 * does not wait for it, held for our next message to that peer.
 */

#ifndef MCA_BTL_OFI_ANSWERS_H
#define MCA_BTL_OFI_ANSWERS_H

#include "btl_ofi.h"
#include "btl_ofi_context.h"
#include "btl_ofi_wire.h"

BEGIN_C_DECLS

/** Hold ANSWER for TO on CONTEXT: it leaves at the end of CONTEXT's next
 * message to TO that has room for it, else at CONTEXT's next progress
 * pass. An answer TO already had waiting leaves now, before this one is
 * held; with MCA_BTL_OFI_HELD_MAX peers held already, ANSWER leaves now. */
void mca_btl_ofi_answer_hold(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                             const mca_btl_ofi_putv_amo_resp_t *answer);

/** Send every answer CONTEXT still holds (a progress pass, before it reads
 * completions: the pass that held them has returned to the caller). */
void mca_btl_ofi_answers_release(mca_btl_ofi_context_t *context);

/** With CONTEXT's lock held, before LEN bytes at MSG (a pml message in a
 * buffer of module->msg_size bytes, the size of the receiver's buffers
 * too) go to TO: TO's held answer appended and MCA_BTL_OFI_AM_ANSWER set
 * when it fits. The length to send. */
size_t mca_btl_ofi_answer_ride(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                               void *msg, size_t len);

/** ... and after it was posted (SENT) or not: the answer is gone, or
 * stays held and MSG is as it was. CONTEXT's lock still held. */
void mca_btl_ofi_answer_rode(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to, void *msg,
                             bool sent);

/** The receiver of a pml message of LEN bytes at MSG carrying an answer
 * (MCA_BTL_OFI_AM_ANSWER): the answer taken; the message's length without
 * it, or 0 when MSG is too short to carry one (dropped, said). */
size_t mca_btl_ofi_answer_take(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** Drop what CONTEXT still holds (its destruction: no peer waits). */
void mca_btl_ofi_answers_fini(mca_btl_ofi_context_t *context);

END_C_DECLS

#endif /* MCA_BTL_OFI_ANSWERS_H */
