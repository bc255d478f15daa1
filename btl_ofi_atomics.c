/*
 * btl/ofi network atomics: op, fetch-op and compare-swap, 64- and 32-bit.
 *
 * Only what fi_query_atomic confirms is advertised in btl_atomic_flags; an
 * operation the provider lacks is refused with OPAL_ERR_NOT_SUPPORTED
 * before anything is posted. Operands are copied into the completion
 * object, so the caller's values may change as soon as we return.
 */

#include "btl_ofi.h"
#include "btl_ofi_atomics.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rdma.h"

#include "opal/util/proc.h"

/* fi_op for each btl op, stored +1 so that 0 means "no mapping" (FI_MIN is 0) */
static const int mca_btl_ofi_op_map[MCA_BTL_ATOMIC_LAST] = {
    [MCA_BTL_ATOMIC_ADD] = FI_SUM + 1,   [MCA_BTL_ATOMIC_AND] = FI_BAND + 1,
    [MCA_BTL_ATOMIC_OR] = FI_BOR + 1,    [MCA_BTL_ATOMIC_XOR] = FI_BXOR + 1,
    [MCA_BTL_ATOMIC_LAND] = FI_LAND + 1, [MCA_BTL_ATOMIC_LOR] = FI_LOR + 1,
    [MCA_BTL_ATOMIC_LXOR] = FI_LXOR + 1, [MCA_BTL_ATOMIC_SWAP] = FI_ATOMIC_WRITE + 1,
    [MCA_BTL_ATOMIC_MIN] = FI_MIN + 1,   [MCA_BTL_ATOMIC_MAX] = FI_MAX + 1,
};

static const struct {
    mca_btl_base_atomic_op_t op;
    uint32_t flag;
} mca_btl_ofi_op_flags[] = {
    {MCA_BTL_ATOMIC_ADD, MCA_BTL_ATOMIC_SUPPORTS_ADD},
    {MCA_BTL_ATOMIC_AND, MCA_BTL_ATOMIC_SUPPORTS_AND},
    {MCA_BTL_ATOMIC_OR, MCA_BTL_ATOMIC_SUPPORTS_OR},
    {MCA_BTL_ATOMIC_XOR, MCA_BTL_ATOMIC_SUPPORTS_XOR},
    {MCA_BTL_ATOMIC_LAND, MCA_BTL_ATOMIC_SUPPORTS_LAND},
    {MCA_BTL_ATOMIC_LOR, MCA_BTL_ATOMIC_SUPPORTS_LOR},
    {MCA_BTL_ATOMIC_LXOR, MCA_BTL_ATOMIC_SUPPORTS_LXOR},
    {MCA_BTL_ATOMIC_SWAP, MCA_BTL_ATOMIC_SUPPORTS_SWAP},
    {MCA_BTL_ATOMIC_MIN, MCA_BTL_ATOMIC_SUPPORTS_MIN},
    {MCA_BTL_ATOMIC_MAX, MCA_BTL_ATOMIC_SUPPORTS_MAX},
};

/* min and max compare as signed integers; the bitwise and arithmetic ops
 * are the same either way */
static inline enum fi_datatype mca_btl_ofi_datatype(mca_btl_base_atomic_op_t op, int flags)
{
    bool is_signed = (MCA_BTL_ATOMIC_MIN == op || MCA_BTL_ATOMIC_MAX == op);
    if (flags & MCA_BTL_ATOMIC_FLAG_32BIT) {
        return is_signed ? FI_INT32 : FI_UINT32;
    }
    return is_signed ? FI_INT64 : FI_UINT64;
}

static bool mca_btl_ofi_query(struct fid_domain *domain, enum fi_datatype dt, enum fi_op op,
                              uint64_t flags)
{
    struct fi_atomic_attr attr;
    return 0 == fi_query_atomic(domain, dt, op, &attr, flags) && attr.count >= 1;
}

static bool mca_btl_ofi_op_supported(struct fid_domain *domain, mca_btl_base_atomic_op_t op,
                                     int flags)
{
    enum fi_datatype dt = mca_btl_ofi_datatype(op, flags);
    enum fi_op fop = (enum fi_op)(mca_btl_ofi_op_map[op] - 1);
    return mca_btl_ofi_query(domain, dt, fop, 0)
           && mca_btl_ofi_query(domain, dt, fop, FI_FETCH_ATOMIC);
}

/*
 * Whether our atomics are atomic with respect to processor atomics on the
 * same memory (Open MPI's MCA_BTL_ATOMIC_SUPPORTS_GLOB). Then osc/rdma
 * works on the memory of its own node (its own window and state, and its
 * node's MPI_Win_allocate windows) with processor atomics and copies,
 * and uses the btl for other nodes only: a lock, a post or an atomic on
 * this process's own state no longer makes a round trip through the
 * provider to itself (across the simulated hosts an MPI_Win_lock of a
 * peer took 23 us of its 35 for that). True where the target's processor
 * applies every atomic with a processor atomic: ours carried as messages
 * (mca_btl_ofi_atomic_apply), and the providers that apply them in
 * software (MCA_BTL_OFI_QUIRK_CPU_ATOMICS). A provider whose NIC applies
 * them is not assumed to be. btl_ofi_global_atomics: -1 (default) for
 * those, 0 for none, 1 for any (see its registration).
 */
bool mca_btl_ofi_atomics_cpu(const mca_btl_ofi_module_t *module)
{
    return module->amo_emulated
           || (mca_btl_ofi_provider_quirks(module->info->fabric_attr->prov_name)
               & MCA_BTL_OFI_QUIRK_CPU_ATOMICS);
}

static bool mca_btl_ofi_global_atomics(const mca_btl_ofi_module_t *module)
{
    if (0 <= mca_btl_ofi_component.global_atomics) {
        return 1 == mca_btl_ofi_component.global_atomics;
    }
    return mca_btl_ofi_atomics_cpu(module);
}

void mca_btl_ofi_atomics_query(mca_btl_ofi_module_t *module)
{
    uint32_t supported = 0;
    bool all32 = true;
    size_t i;

    if (module->amo_emulated) {
        /* the target applies every op itself, in both widths */
        memset(module->atomic_ok, 3, sizeof(module->atomic_ok));
        supported = MCA_BTL_ATOMIC_SUPPORTS_CSWAP;
        for (i = 0; i < sizeof(mca_btl_ofi_op_flags) / sizeof(mca_btl_ofi_op_flags[0]); ++i) {
            supported |= mca_btl_ofi_op_flags[i].flag;
        }
        goto advertise;
    }

    memset(module->atomic_ok, 0, sizeof(module->atomic_ok));
    for (i = 0; i < sizeof(mca_btl_ofi_op_flags) / sizeof(mca_btl_ofi_op_flags[0]); ++i) {
        mca_btl_base_atomic_op_t op = mca_btl_ofi_op_flags[i].op;
        if (mca_btl_ofi_op_supported(module->domain, op, 0)) {
            supported |= mca_btl_ofi_op_flags[i].flag;
            module->atomic_ok[op] |= 1;
            if (mca_btl_ofi_op_supported(module->domain, op, MCA_BTL_ATOMIC_FLAG_32BIT)) {
                module->atomic_ok[op] |= 2;
            } else {
                all32 = false;
            }
        }
    }
    if (mca_btl_ofi_query(module->domain, FI_UINT64, FI_CSWAP, FI_COMPARE_ATOMIC)) {
        supported |= MCA_BTL_ATOMIC_SUPPORTS_CSWAP;
        module->atomic_ok[MCA_BTL_ATOMIC_LAST] |= 1;
        if (mca_btl_ofi_query(module->domain, FI_UINT32, FI_CSWAP, FI_COMPARE_ATOMIC)) {
            module->atomic_ok[MCA_BTL_ATOMIC_LAST] |= 2;
        } else {
            all32 = false;
        }
    }
advertise:
    /* MIN and MAX compare as signed integers here, but osc/rdma 4.1 also
     * issues them for unsigned MPI types (the BTL interface cannot say
     * which), giving wrong MPI results for values with the top bit set.
     * Refused, osc/rdma falls back to an exact get-op-put under its
     * accumulate lock. */
    module->atomic_ok[MCA_BTL_ATOMIC_MIN] = module->atomic_ok[MCA_BTL_ATOMIC_MAX] = 0;
    supported &= ~(MCA_BTL_ATOMIC_SUPPORTS_MIN | MCA_BTL_ATOMIC_SUPPORTS_MAX);
    if (supported && all32) {
        supported |= MCA_BTL_ATOMIC_SUPPORTS_32BIT;
    }

    /* osc/rdma 4.1.4 looks for the global bit in btl_flags (where no btl
     * sets it) when it decides to use processor atomics across nodes, so
     * Debian's never does; ours looks in btl_atomic_flags, where the API
     * puts it, and keeps its single-element accumulates atomic in that
     * mode (osc-rdma/patches 0013) */
    if (supported && mca_btl_ofi_global_atomics(module)) {
        supported |= MCA_BTL_ATOMIC_SUPPORTS_GLOB;
    }
    module->super.btl_atomic_flags = supported;
    if (0 == supported) {
        module->super.btl_flags &= ~(MCA_BTL_FLAGS_ATOMIC_OPS | MCA_BTL_FLAGS_ATOMIC_FOPS);
    }
    /* osc/rdma 4.1.4 looks for the 32-bit bit in btl_flags (not
     * btl_atomic_flags) before it uses a btl compare-and-swap on 4 bytes,
     * and no btl of Open MPI's sets it there. It is left out on purpose:
     * with it, MPI_Compare_and_swap on an MPI_INT went to the btl without
     * osc/rdma's accumulate lock, while MPI_Fetch_and_op and
     * MPI_Accumulate on the same int are applied under that lock with a
     * plain copy (on a peer whose memory osc/rdma maps), so the two were
     * not atomic with respect to each other: an MCS mutex (tail taken with
     * MPI_REPLACE, given back with compare-and-swap) lost a swap and two
     * ranks waited for each other (tests/mcs.c, 7 of 15 runs with 2 ranks
     * on tcp;ofi_rxm). Without the bit both take the lock, as over every
     * other btl. */
}

/* Is this (op, width) one the provider confirmed? One table lookup. */
static inline bool mca_btl_ofi_atomic_ok(const mca_btl_ofi_module_t *module, unsigned op, int flags)
{
    return op <= MCA_BTL_ATOMIC_LAST && !(flags & MCA_BTL_ATOMIC_FLAG_FLOAT)
           && (module->atomic_ok[op] & ((flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? 2 : 1));
}

static inline void mca_btl_ofi_store_operand(uint64_t *slot, uint64_t value, int flags)
{
    if (flags & MCA_BTL_ATOMIC_FLAG_32BIT) {
        uint32_t v32 = (uint32_t) value;
        memcpy(slot, &v32, sizeof(v32));
    } else {
        *slot = value;
    }
}

/*
 * osc/rdma 4.1 hands us a NULL remote handle for targets whose memory it
 * addresses directly (itself, or a peer's window mapped into this process)
 * and then expects the operation done. The address is then a valid local
 * address: apply the operation with processor atomics and complete it
 * through the caller's callback before returning. We never report "done in
 * place" (return 1): osc/rdma 4.1.4 then stores 8 bytes into the result
 * whatever the operation's width, overwriting the 4 bytes after a 32-bit
 * result, while its callback copies only the operation's size.
 */
static int mca_btl_ofi_atomic_local(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                                    mca_btl_base_atomic_op_t op, uint64_t address, uint64_t operand,
                                    uint64_t compare, bool is_cswap, int flags, void *result,
                                    mca_btl_base_registration_handle_t *result_handle,
                                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                    void *cbdata)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    bool narrow = !!(flags & MCA_BTL_ATOMIC_FLAG_32BIT);
    uint64_t old = mca_btl_ofi_atomic_apply(op, address, operand, compare, is_cswap, narrow);

    if (NULL != result) {
        mca_btl_ofi_store_result(result, old, narrow);
    }
    mca_btl_ofi_add64(&context->counters.atomic_local_count, 1);
    if (NULL != cbfunc) {
        cbfunc(&module->super, endpoint, result, result_handle, cbcontext, cbdata, OPAL_SUCCESS);
    }
    return OPAL_SUCCESS;
}

/*
 * One path for every network atomic: a non-fetching op is a fetching one
 * whose old value goes to a scratch word (mca_btl_ofi_rma_post says why),
 * a compare-swap one with a second operand; the post
 * and the backlog are those of puts and gets (mca_btl_ofi_rma_start).
 * Targets we address directly (no remote handle) are applied here with
 * processor atomics; providers whose atomics we cannot use get a message.
 */
static int mca_btl_ofi_atomic_start(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                                    void *result, uint64_t remote_address,
                                    mca_btl_base_registration_handle_t *result_handle,
                                    mca_btl_base_registration_handle_t *remote_handle,
                                    mca_btl_base_atomic_op_t op, uint64_t operand, uint64_t compare,
                                    bool is_cswap, int flags,
                                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                    void *cbdata)
{
    mca_btl_ofi_context_t *context;
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;
    int kind, route;

    if (OPAL_UNLIKELY(NULL == remote_handle)) {
        return mca_btl_ofi_atomic_local(module, endpoint, op, remote_address, operand, compare,
                                        is_cswap, flags, result, result_handle, cbfunc, cbcontext,
                                        cbdata);
    }
    /* a dead peer refuses it; a failed link's detour carries it */
    route = mca_btl_ofi_route_op(&module, &endpoint, &context);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != route)) {
        return route;
    }
    /* as a message of ours: behind gathered puts and gets to it still
     * unanswered, so that it is applied after them (osc/rdma's unlock and
     * complete without a flush, 0022-0024), or alone where the provider's
     * atomics are not used */
    if (OPAL_UNLIKELY(module->amo_ordered || module->amo_emulated)) {
        const mca_btl_ofi_amo_args_t amo = {.result = result,
                                            .remote_address = remote_address,
                                            .result_handle = result_handle,
                                            .remote_handle = remote_handle,
                                            .op = op,
                                            .operand = operand,
                                            .compare = compare,
                                            .is_cswap = is_cswap,
                                            .flags = flags,
                                            .cbfunc = cbfunc,
                                            .cbcontext = cbcontext,
                                            .cbdata = cbdata};
        int rc_ordered = OPAL_ERR_NOT_FOUND;

        if (module->amo_ordered) {
            rc_ordered = mca_btl_ofi_getv_atomic(module, context, endpoint, &amo);
            if (OPAL_ERR_NOT_FOUND == rc_ordered) {
                rc_ordered = mca_btl_ofi_putv_atomic(module, context, endpoint, &amo);
            }
        }
        if (OPAL_ERR_NOT_FOUND != rc_ordered) {
            return rc_ordered;
        }
        if (module->amo_emulated) {
            return mca_btl_ofi_amo_request(module, endpoint, &amo);
        }
    }

    comp = mca_btl_ofi_completion_alloc(&module->super, context, endpoint, result, result_handle,
                                        cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_ofi_store_operand(&comp->operand[0], operand, flags);
    mca_btl_ofi_store_operand(&comp->operand[1], compare, flags);
    comp->parked_op = (uint8_t) (mca_btl_ofi_op_map[op] - 1);
    comp->parked_dt = (uint8_t) mca_btl_ofi_datatype(op, flags);
    kind = is_cswap ? MCA_BTL_OFI_RMA_CSWAP
                    : (NULL != result ? MCA_BTL_OFI_RMA_FOP : MCA_BTL_OFI_RMA_AOP);

    mca_btl_ofi_inflight(context, endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    rc = mca_btl_ofi_rma_start(context, comp, kind, 0,
                               mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
                               mca_btl_ofi_rkey(endpoint, remote_handle), remote_handle);
    MCA_BTL_OFI_UNLOCK(&context->lock);

    return mca_btl_ofi_post_result(context, comp, rc, mca_btl_ofi_rma_call(kind));
}

int mca_btl_ofi_afop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     mca_btl_base_registration_handle_t *local_handle,
                     mca_btl_base_registration_handle_t *remote_handle, mca_btl_base_atomic_op_t op,
                     uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) order;

    if (OPAL_UNLIKELY(MCA_BTL_ATOMIC_LAST <= op || !mca_btl_ofi_atomic_ok(module, op, flags))) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return mca_btl_ofi_atomic_start(module, endpoint, local_address, remote_address, local_handle,
                                    remote_handle, op, operand, 0, false, flags, cbfunc, cbcontext,
                                    cbdata);
}

int mca_btl_ofi_aop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) order;

    if (OPAL_UNLIKELY(MCA_BTL_ATOMIC_LAST <= op || !mca_btl_ofi_atomic_ok(module, op, flags))) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return mca_btl_ofi_atomic_start(module, endpoint, NULL, remote_address, NULL, remote_handle, op,
                                    operand, 0, false, flags, cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_acswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) order;

    if (OPAL_UNLIKELY(!mca_btl_ofi_atomic_ok(module, MCA_BTL_ATOMIC_LAST, flags))) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return mca_btl_ofi_atomic_start(module, endpoint, local_address, remote_address, local_handle,
                                    remote_handle, MCA_BTL_ATOMIC_SWAP, value, compare, true, flags,
                                    cbfunc, cbcontext, cbdata);
}
