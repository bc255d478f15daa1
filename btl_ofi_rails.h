/*
 * btl/ofi rail failover (btl_ofi_rails.c).
 */

#ifndef MCA_BTL_OFI_RAILS_H
#define MCA_BTL_OFI_RAILS_H

#include "btl_ofi_types.h"

BEGIN_C_DECLS

/* ENDPOINT's host stopped answering on MODULE's rail: when another rail of
 * ours still reaches it, fail over to that rail and return true; else
 * false (the caller declares the peer lost). WHY (LEN bytes) receives the
 * cause either way. */
bool mca_btl_ofi_rail_cut(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint, char *why,
                          size_t len);
/* A peer's notice that the link between one of its rails and one of ours
 * is cut (received on another rail, CONTEXT's): our traffic to it leaves
 * that rail too (see mca_btl_ofi_rail_cut). */
void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len);

/* Look at the peers and act on what is found (btl_ofi_rails.c). */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_RAILS_H */
