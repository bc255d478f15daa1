/*
 * btl/ofi atomics: op, fetch-op and compare-swap through the provider, on
 * our own memory with processor atomics, or emulated by messages the
 * target serves (btl_ofi_emulate.c).
 */

#ifndef MCA_BTL_OFI_ATOMICS_H
#define MCA_BTL_OFI_ATOMICS_H

#include "btl_ofi_types.h"

BEGIN_C_DECLS

void mca_btl_ofi_atomics_query(mca_btl_ofi_module_t *module);
/* One of several rails: carry atomics as messages where that costs the
 * target no more progress than the provider's own. */
void mca_btl_ofi_atomics_rails(mca_btl_ofi_module_t *module);

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
int mca_btl_ofi_afop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                     void *local_address, uint64_t remote_address,
                     mca_btl_base_registration_handle_t *local_handle,
                     mca_btl_base_registration_handle_t *remote_handle, mca_btl_base_atomic_op_t op,
                     uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_ofi_aop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    uint64_t remote_address, mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int mca_btl_ofi_acswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

END_C_DECLS

#endif /* MCA_BTL_OFI_ATOMICS_H */
