/*
 * btl/ofi atomics: op, fetch-op and compare-swap through the provider, on
 * our own memory with processor atomics, or emulated by messages the
 * target serves (btl_ofi_emulate.c).
 */

#ifndef MCA_BTL_OFI_ATOMICS_H
#define MCA_BTL_OFI_ATOMICS_H

#include "btl_ofi_emulate.h"
#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* Which atomics MODULE offers (btl_atomic_flags), through the provider or
 * as messages (module->amo_emulated). */
void mca_btl_ofi_atomics_query(mca_btl_ofi_module_t *module);

/* Whether the target's processor applies every atomic of MODULE with a
 * processor atomic (ours carried as messages, or a provider that applies
 * them in software: MCA_BTL_OFI_QUIRK_CPU_ATOMICS), so that ours served
 * from messages are atomic with respect to the provider's. */
bool mca_btl_ofi_atomics_cpu(const mca_btl_ofi_module_t *module);

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
