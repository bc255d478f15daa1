/*
 * btl/ofi emulated RMA and atomics (btl_ofi_emulate.c).
 */

#ifndef MCA_BTL_OFI_EMULATE_H
#define MCA_BTL_OFI_EMULATE_H

#include "btl_ofi_context.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_types.h"
#include "btl_ofi_wire.h"

BEGIN_C_DECLS

/** Register COMP (an emulated atomic, put or get of MODULE) under a new
 * id, which its responses carry; the rail in the top byte, so that a
 * response that comes on another rail (its link failed) finds MODULE. */
static inline uint64_t mca_btl_ofi_emu_request_add(mca_btl_ofi_module_t *module,
                                                   mca_btl_ofi_completion_t *comp)
{
    uint64_t id;

    MCA_BTL_OFI_LOCK(&module->lock);
    id = ((uint64_t) module->rail << 56) | (++module->emu_next_id & (UINT64_MAX >> 8));
    (void) opal_hash_table_set_value_uint64(&module->emu_requests, id, comp);
    MCA_BTL_OFI_UNLOCK(&module->lock);
    return id;
}

/** The module whose operation ID is (see mca_btl_ofi_emu_request_add); the
 * receiving CONTEXT's when the id names no open rail. */
static inline mca_btl_ofi_module_t *mca_btl_ofi_emu_request_module(mca_btl_ofi_context_t *context,
                                                                   uint64_t id)
{
    uint64_t rail = id >> 56;

    if (rail < (uint64_t) mca_btl_ofi_component.num_modules
        && NULL != mca_btl_ofi_component.modules[rail]) {
        return mca_btl_ofi_component.modules[rail];
    }
    return context->module;
}

/** Start COMP's put or get (KIND) of SIZE bytes at REMOTE_ADDRESS as
 * messages; the operation is counted in flight and completes once every
 * piece is answered. */
void mca_btl_ofi_rma_emulate(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                             mca_btl_ofi_completion_t *comp, int kind, size_t size,
                             uint64_t remote_address,
                             mca_btl_base_registration_handle_t *remote_handle);

/** Count BYTES of COMP's emulated operation (MODULE's) answered, STATUS
 * being what the target saw: completes it when nothing is left, a failed
 * one from progress (mca_btl_ofi_rma_failures). */
void mca_btl_ofi_rma_account(mca_btl_ofi_module_t *module, mca_btl_ofi_completion_t *comp,
                             size_t bytes, int status);
/** The target's side of an emulated put or get (a message of type
 * MCA_BTL_OFI_MSG_PUT or _GET, LEN bytes at MSG): store the bytes, or
 * send them, and answer. */
void mca_btl_ofi_rma_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** Complete the emulated puts and gets that failed (from progress; their
 * own paths only queue them): as a failed completion of the provider's
 * would, the job stops if the owner ignores the status. */
void mca_btl_ofi_rma_failures(mca_btl_ofi_module_t *module);

/** Send the answer to put pieces this thread holds back while it
 * delivers a batch of completions (see btl_ofi_emulate.c): called at the
 * end of every batch that may have served pieces. */
void mca_btl_ofi_rma_answers_send(void);

/** A response to an emulated put or get of ours (MCA_BTL_OFI_MSG_RMA_RESP):
 * count its bytes, copy a get's in, complete the operation at the last. */
void mca_btl_ofi_rma_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/** An atomic as a message: the target applies it with processor atomics
 * and answers with the old value. */
int mca_btl_ofi_amo_request(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                            const mca_btl_ofi_amo_args_t *amo);
/** The origin's half of an atomic as a message: its completion (counted
 * in flight, registered to be answered) and its request in *REQ, to be
 * sent; NULL when no completion can be had. Undone, if it cannot be sent,
 * by mca_btl_ofi_amo_unprepare. */
mca_btl_ofi_completion_t *mca_btl_ofi_amo_prepare(mca_btl_ofi_module_t *module,
                                                  mca_btl_ofi_context_t *context,
                                                  mca_btl_base_endpoint_t *endpoint,
                                                  const mca_btl_ofi_amo_args_t *amo,
                                                  mca_btl_ofi_amo_req_t *req);
void mca_btl_ofi_amo_unprepare(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                               mca_btl_base_endpoint_t *endpoint, mca_btl_ofi_completion_t *comp,
                               const mca_btl_ofi_amo_req_t *req);
/** The target's work for atomic request REQ: checked against the
 * registration its key names and applied; the answer in *OUT. */
void mca_btl_ofi_amo_apply_req(mca_btl_ofi_module_t *module, const mca_btl_ofi_amo_req_t *req,
                               mca_btl_ofi_amo_resp_t *out);
/** The target's side of an emulated atomic (MCA_BTL_OFI_MSG_AMO_REQ). */
void mca_btl_ofi_amo_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len);
/** The answer to an emulated atomic of ours (MCA_BTL_OFI_MSG_AMO_RESP). */
void mca_btl_ofi_amo_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len);

/* OP applied to the word at ADDRESS with processor atomics (compare-swap
 * when IS_CSWAP, 32 bits when NARROW); the old value. */
uint64_t mca_btl_ofi_atomic_apply(mca_btl_base_atomic_op_t op, uint64_t address, uint64_t operand,
                                  uint64_t compare, bool is_cswap, bool narrow);

/* An atomic's old value into the caller's result (4 bytes when NARROW). */
static inline void mca_btl_ofi_store_result(void *result, uint64_t old, bool narrow)
{
    if (narrow) {
        uint32_t v32 = (uint32_t) old;
        memcpy(result, &v32, sizeof(v32));
    } else {
        memcpy(result, &old, sizeof(old));
    }
}
END_C_DECLS

#endif /* MCA_BTL_OFI_EMULATE_H */
