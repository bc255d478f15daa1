/*
 * btl/ofi answers that may wait.
 *
 * A message of gathered puts is answered once every piece is stored
 * (btl_ofi_putv.c); an atomic carried at its end is answered in the same
 * message. The origin needs that answer for a flush, and for an atomic it
 * waits for (osc/rdma's unlock). It does not need it soon when the atomic
 * was issued with MCA_BTL_OFI_ATOMIC_FLAG_UNHURRIED: osc/rdma's
 * MPI_Win_complete raises its targets' counts of completes that way
 * behind the epoch's puts (osc-rdma/patches 0023), and returns.
 *
 * Sent at once, that answer was the target's second message of the epoch:
 * the target's MPI_Win_wait sees the complete only after the progress pass
 * that served it returned, so the answer left before the target's next
 * MPI_Win_post, and a message costs 9-15 us of the sender's processor over
 * the simulated hosts' veth. Held instead, it leaves at the end of the
 * target's next message to that origin (the post, one message for both;
 * the receiver takes the answer first) or at the target's next progress
 * pass, whichever comes first: never later than the next pass, which is
 * the earliest the origin could need it (anything it waits on at that
 * target needs the target's progress too).
 *
 * Per context, under its lock: the peers holding an answer (retained, at
 * most MCA_BTL_OFI_HELD_MAX; one more is answered at once) and each peer's
 * answer in its endpoint. Only one-rail, one-context modules issue such
 * atomics in gathered messages (module->amo_ordered), so the message that
 * carries an answer leaves from the context that holds it.
 */

#include "btl_ofi.h"
#include "btl_ofi_answers.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include <string.h>

void mca_btl_ofi_answer_hold(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                             const mca_btl_ofi_putv_amo_resp_t *answer)
{
    mca_btl_ofi_putv_amo_resp_t earlier;
    bool send_earlier = false, send_now = false;

    MCA_BTL_OFI_LOCK(&context->lock);
    if (to->answer_held && to->held_context == context) {
        /* its answers leave in the order they were made */
        earlier = to->held_answer;
        send_earlier = true;
    } else if (to->answer_held || context->held_count >= MCA_BTL_OFI_HELD_MAX) {
        send_now = true; /* held elsewhere, or no room: not held at all */
    } else {
        OBJ_RETAIN(to);
        context->held[context->held_count++] = to;
    }
    if (!send_now) {
        to->held_answer = *answer;
        to->held_context = context;
        to->answer_held = true;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (send_earlier) {
        mca_btl_ofi_msg_reply(context, to, &earlier, sizeof(earlier));
    }
    if (send_now) {
        mca_btl_ofi_msg_reply(context, to, answer, sizeof(*answer));
    }
}

void mca_btl_ofi_answers_release(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_putv_amo_resp_t answers[MCA_BTL_OFI_HELD_MAX];
    mca_btl_ofi_endpoint_t *to[MCA_BTL_OFI_HELD_MAX];
    bool held[MCA_BTL_OFI_HELD_MAX];
    int n;

    /* a try, as the gathered puts' pass: a thread holding the lock is
     * posting or reading, and the next pass sends them */
    if (0 != MCA_BTL_OFI_TRYLOCK(&context->lock)) {
        return;
    }
    n = context->held_count;
    context->held_count = 0;
    for (int i = 0; i < n; ++i) {
        to[i] = context->held[i];
        held[i] = to[i]->answer_held;
        if (held[i]) {
            answers[i] = to[i]->held_answer;
            to[i]->answer_held = false;
        }
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    for (int i = 0; i < n; ++i) {
        if (held[i]) {
            mca_btl_ofi_msg_reply(context, to[i], &answers[i], sizeof(answers[i]));
        }
        OBJ_RELEASE(to[i]);
    }
}

size_t mca_btl_ofi_answer_ride(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                               void *msg, size_t len)
{
    const size_t wire = len + sizeof(to->held_answer);

    if (!to->answer_held || to->held_context != context || wire > context->module->msg_size) {
        return len;
    }
    memcpy((char *) msg + len, &to->held_answer, sizeof(to->held_answer));
    ((mca_btl_ofi_msg_hdr_t *) msg)->flags |= MCA_BTL_OFI_AM_ANSWER;
    return wire;
}

void mca_btl_ofi_answer_rode(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to, void *msg,
                             bool sent)
{
    if (sent) {
        /* still on the context's list: the next pass drops its reference */
        to->answer_held = false;
        context->counters.answer_carried++;
    } else {
        ((mca_btl_ofi_msg_hdr_t *) msg)->flags &= (uint8_t) ~MCA_BTL_OFI_AM_ANSWER;
    }
}

size_t mca_btl_ofi_answer_take(mca_btl_ofi_context_t *context, const void *msg, size_t len)
{
    mca_btl_ofi_putv_amo_resp_t answer;

    if (OPAL_UNLIKELY(len < sizeof(mca_btl_ofi_msg_hdr_t) + sizeof(answer))) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped a message of %zu bytes too short for the answer it says it "
                            "carries",
                            len);
        return 0;
    }
    len -= sizeof(answer);
    /* copied out: it follows a payload of any length */
    memcpy(&answer, (const char *) msg + len, sizeof(answer));
    if (OPAL_UNLIKELY(MCA_BTL_OFI_MSG_RMA_RESP != answer.resp.hdr.type
                      || MCA_BTL_OFI_MSG_PUTV != answer.resp.hdr.op)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped an answer of type %d (op %d) carried by a message: not one "
                            "to gathered puts",
                            answer.resp.hdr.type, answer.resp.hdr.op);
        return len;
    }
    mca_btl_ofi_rma_answer(context, &answer, sizeof(answer));
    return len;
}

void mca_btl_ofi_answers_fini(mca_btl_ofi_context_t *context)
{
    for (int i = 0; i < context->held_count; ++i) {
        context->held[i]->answer_held = false;
        OBJ_RELEASE(context->held[i]);
    }
    context->held_count = 0;
}
