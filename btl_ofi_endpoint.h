/*
 * btl/ofi endpoints: per-peer addresses, one per local context, built from
 * the peer's modex entry (btl_ofi_modex.h), and the route of an operation
 * to a peer.
 */

#ifndef MCA_BTL_OFI_ENDPOINT_H
#define MCA_BTL_OFI_ENDPOINT_H

#include "btl_ofi_context.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_modex.h"
#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* MODULE's endpoint for PROC, built from the part BLOB of its modex entry
 * that MODULE pairs with (the peer's rail PEER_RAIL: mca_btl_ofi_rail_pair
 * chose it). */
int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                const mca_btl_ofi_modex_t *blob, int peer_rail,
                                mca_btl_ofi_endpoint_t **ep_out);

/* MODULE's endpoint for the process named ORIGIN (mca_btl_ofi_name_key),
 * retained, or NULL. */
mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_named(mca_btl_ofi_module_t *module, uint64_t origin);
/* Where traffic of MODULE's to ENDPOINT goes once this rail's link to the
 * peer failed: its detour, the same peer's endpoint on another rail's
 * module (*MODULE and *ENDPOINT replaced); else unchanged. The one place
 * that swaps. */
static inline void mca_btl_ofi_detour(mca_btl_ofi_module_t **module,
                                      mca_btl_ofi_endpoint_t **endpoint)
{
    if (OPAL_UNLIKELY(NULL != (*endpoint)->rail.detour)) {
        *module = (*endpoint)->rail.detour_module;
        *endpoint = (*endpoint)->rail.detour;
    }
}

/* The routing decision of an operation (put, get, atomic, send), written
 * once: a peer known dead refuses it (mca_btl_ofi_endpoint_refuse), else
 * it takes the detour if there is one (mca_btl_ofi_detour: *MODULE and
 * *ENDPOINT replaced), and *CONTEXT is the calling thread's context of the
 * module that carries it. */
static inline int mca_btl_ofi_route_op(mca_btl_ofi_module_t **module,
                                       mca_btl_ofi_endpoint_t **endpoint,
                                       mca_btl_ofi_context_t **context)
{
    if (OPAL_UNLIKELY((*endpoint)->dead)) {
        *context = NULL;
        return mca_btl_ofi_endpoint_refuse(*module, *endpoint);
    }
    mca_btl_ofi_detour(module, endpoint);
    *context = mca_btl_ofi_context_get(*module);
    return OPAL_SUCCESS;
}

/* Where a message of ours to ENDPOINT goes from *CONTEXT: ENDPOINT, or
 * its detour, with *CONTEXT then a context of the detour's module. */
static inline mca_btl_ofi_endpoint_t *mca_btl_ofi_route(mca_btl_ofi_endpoint_t *endpoint,
                                                        mca_btl_ofi_context_t **context)
{
    mca_btl_ofi_module_t *module = (*context)->module;
    mca_btl_ofi_endpoint_t *to = endpoint;

    mca_btl_ofi_detour(&module, &to);
    if (OPAL_UNLIKELY(to != endpoint)) {
        *context = mca_btl_ofi_context_get(module);
    }
    return to;
}

END_C_DECLS

#endif /* MCA_BTL_OFI_ENDPOINT_H */
