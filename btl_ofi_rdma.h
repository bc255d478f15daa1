/*
 * btl/ofi RDMA operations: posting puts, gets and atomics (the completion
 * objects they carry are btl_ofi_completion.h's).
 */

#ifndef MCA_BTL_OFI_RDMA_H
#define MCA_BTL_OFI_RDMA_H

#include "btl_ofi.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_context.h"

BEGIN_C_DECLS

/**
 * Finish a post that failed: on -FI_EAGAIN the caller is told to retry
 * (OPAL_ERR_OUT_OF_RESOURCE: it progresses first); anything else is
 * reported and returned as an error.
 */
int mca_btl_ofi_post_failed(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                            ssize_t rc, const char *call, const char *file, int line);

/** Post COMP (from mca_btl_ofi_completion_alloc) as one put or get of
 * SIZE bytes to RADDR/KEY of its peer: a piece gathered alone
 * (btl_ofi_putv.c, btl_ofi_getv.c), on one rail, so no remote handle is
 * kept. Counted in flight and as a put or get once posted (or parked for
 * the backlog). False when the provider refuses it for good: then the
 * refusal is reported, COMP given back and nothing counted (the caller
 * sends the piece as a message). */
bool mca_btl_ofi_rma_start_lone(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                                int kind, size_t size, uint64_t raddr, uint64_t key);

/** Post the RMA operations the provider refused earlier, in order. */
void mca_btl_ofi_backlog_rdma(mca_btl_ofi_context_t *context);

/* the report names the line of the call that failed, not this helper's */
#define mca_btl_ofi_post_result(context, comp, rc, call)                                           \
    mca_btl_ofi_post_result_at(context, comp, rc, call, __FILE__, __LINE__)

/** After a successful post: with many operations in flight, let a
 * provider that only moves data when polled move them (no completion is
 * taken here: see mca_btl_ofi_context_drive). */
static inline __opal_attribute_always_inline__ void
mca_btl_ofi_keep_short(mca_btl_ofi_context_t *context)
{
    if (OPAL_UNLIKELY(context->outstanding > mca_btl_ofi_component.progress_threshold)) {
        mca_btl_ofi_context_drive(context);
    }
}

static inline __opal_attribute_always_inline__ int
mca_btl_ofi_post_result_at(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                           ssize_t rc, const char *call, const char *file, int line)
{
    if (OPAL_UNLIKELY(0 != rc)) {
        return mca_btl_ofi_post_failed(context, comp, rc, call, file, line);
    }
    mca_btl_ofi_keep_short(context);
    return OPAL_SUCCESS;
}

int mca_btl_ofi_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);

int mca_btl_ofi_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata);

static inline void *mca_btl_ofi_local_desc(mca_btl_base_registration_handle_t *handle)
{
    return NULL == handle ? NULL : mca_btl_ofi_reg_from_handle(handle)->desc;
}

/** The libfabric call behind a kind, for reports. */
static inline const char *mca_btl_ofi_rma_call(int kind)
{
    static const char *const calls[] = {"?",           "fi_write",          "fi_read",
                                        "fi_fetch_atomic", "fi_fetch_atomic", "fi_compare_atomic",
                                        "fi_send"};
    return calls[kind];
}

/** Post a write (put) or read (get) of SIZE bytes between LOCAL and
 * RADDR/KEY of the peer at PEER, with OFI_CTX as its context; the context
 * lock is held. The one place every put and get reaches the provider. */
static inline __opal_attribute_always_inline__ ssize_t
mca_btl_ofi_rdma_post(mca_btl_ofi_context_t *context, int kind, void *local, void *desc,
                      fi_addr_t peer, size_t size, uint64_t raddr, uint64_t key, void *ofi_ctx)
{
    /* KIND is a constant where this is inlined: the choices fold away */
    bool put = MCA_BTL_OFI_RMA_PUT == kind;
    uint64_t *count = put ? &context->counters.put_count : &context->counters.get_count;
    uint64_t *bytes = put ? &context->counters.put_bytes : &context->counters.get_bytes;
    ssize_t rc = MCA_BTL_OFI_FAULT(put ? MCA_BTL_OFI_FAULT_WRITE : MCA_BTL_OFI_FAULT_READ) ? -FI_EIO
                 : !put ? fi_read(context->tx, local, size, desc, peer, raddr, key, ofi_ctx)
                 : size < context->put_notify
                     ? fi_write(context->tx, local, size, desc, peer, raddr, key, ofi_ctx)
                     : fi_writedata(context->tx, local, size, desc, 0, peer, raddr, key, ofi_ctx);

    if (OPAL_LIKELY(0 == rc)) {
        ++*count;
        *bytes += size;
    }
    return rc;
}

/** Post one RMA operation (SIZE bytes, or one element for an atomic) to
 * RADDR/KEY of the completion's peer; the context lock is held. The one
 * place every put, get and atomic with a completion object reaches the
 * provider. */
static inline __opal_attribute_always_inline__ ssize_t
mca_btl_ofi_rma_post(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp, int kind,
                     size_t size, uint64_t raddr, uint64_t key)
{
    fi_addr_t peer = comp->endpoint->addrs[context->index];
    void *desc = mca_btl_ofi_local_desc(comp->local_handle);
    ssize_t rc;

    if (kind <= MCA_BTL_OFI_RMA_GET) {
        return mca_btl_ofi_rdma_post(context, kind, comp->local_address, desc, peer, size, raddr,
                                     key, &comp->op.ofi_ctx);
    }
    if (MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_ATOMIC)) {
        return -FI_EIO;
    }
    switch (kind) {
    case MCA_BTL_OFI_RMA_AOP:
    case MCA_BTL_OFI_RMA_FOP:
        /* a non-fetching op too is posted as a fetching one, its old
         * value landing in the unused second operand: libfabric 1.17's
         * shm applied non-fetching atomics with FI_DELIVERY_COMPLETE
         * wrongly when several were in flight from one process (sums too
         * large, values of other elements mixed in; fetching ones, or no
         * FI_DELIVERY_COMPLETE, right: scripts/provider-checks/
         * shm-atomic-dc.c). Found with osc/rdma's accumulate of 7
         * elements (tests/atomics.c). The same round trip: delivery
         * completion waits for the target's answer either way. */
        rc = fi_fetch_atomic(context->tx, &comp->operand[0], 1, NULL,
                             MCA_BTL_OFI_RMA_AOP == kind ? &comp->operand[1] : comp->local_address,
                             desc, peer, raddr, key, (enum fi_datatype) comp->parked_dt,
                             (enum fi_op) comp->parked_op, &comp->op.ofi_ctx);
        break;
    default:
        rc = fi_compare_atomic(context->tx, &comp->operand[0], 1, NULL, &comp->operand[1], NULL,
                               comp->local_address, desc, peer, raddr, key,
                               (enum fi_datatype) comp->parked_dt, FI_CSWAP, &comp->op.ofi_ctx);
        break;
    }
    if (OPAL_LIKELY(0 == rc)) {
        context->counters.atomic_count++;
    }
    return rc;
}

/** Post, or keep in order when the provider refuses for now (-FI_EAGAIN)
 * or others wait already: progress posts it later (the backlog). One
 * policy for every RMA operation: osc/rdma would retry a refused one
 * itself, but ob1 retries only from the callbacks of its other
 * operations, and there may be none left. The lock is held. */
static inline __opal_attribute_always_inline__ ssize_t
mca_btl_ofi_rma_start(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp, int kind,
                      size_t size, uint64_t raddr, uint64_t key,
                      const mca_btl_base_registration_handle_t *remote_handle)
{
    ssize_t rc = -FI_EAGAIN;

    if (OPAL_LIKELY(opal_list_is_empty(&context->rdmaq))) {
        rc = mca_btl_ofi_rma_post(context, comp, kind, size, raddr, key);
    }
    if (OPAL_UNLIKELY(-FI_EAGAIN == rc)) {
        comp->parked_kind = kind;
        comp->parked_size = size;
        comp->parked_raddr = raddr;
        comp->parked_key = key;
        opal_list_append(&context->rdmaq, &comp->super.super);
        context->parked = true;
        rc = 0;
    }
    if (OPAL_UNLIKELY(context->module->track) && 0 == rc && kind <= MCA_BTL_OFI_RMA_GET) {
        /* several rails: kept until complete, so that a failed rail can
         * pass it on (atomics are not: one may have been applied) */
        comp->parked_kind = kind;
        comp->parked_size = size;
        comp->parked_raddr = raddr;
        comp->parked_key = key;
        comp->remote_copy = *remote_handle;
        comp->tracked = true;
        opal_list_append(&context->tracked, &comp->track_item);
    }
    return rc;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_RDMA_H */
