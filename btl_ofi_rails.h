/*
 * btl/ofi rails (btl_ofi_rails.c): selection, speeds, pairing, the split
 * of large puts and gets, failover.
 */

#ifndef MCA_BTL_OFI_RAILS_H
#define MCA_BTL_OFI_RAILS_H

#include <net/if.h>

#include "btl_ofi_types.h"

BEGIN_C_DECLS

struct ifaddrs;

/* ---- selection and speeds (the component's init) */

/* Why the candidate INFO on interface IFACE (NULL: none) does not become
 * one more rail beside the NTAKEN taken (TAKEN, on interfaces TAKEN_IF),
 * or NULL. */
const char *mca_btl_ofi_rail_refusal(mca_btl_ofi_module_t *const *taken,
                                     char (*taken_if)[IF_NAMESIZE + 1], int ntaken,
                                     const struct fi_info *info, const char *iface);
/* MODULE's subnet, from the interface IFACE (among IFS) holding INFO's
 * source address: what pairs it with the peers' rails. */
void mca_btl_ofi_rail_net(mca_btl_ofi_module_t *module, const struct fi_info *info,
                          const char *iface, const struct ifaddrs *ifs);
/* MODULE's bandwidth and latency (btl_ofi_bandwidth_IF, _latency_IF, the
 * link's speed), said at verbose level 1. */
void mca_btl_ofi_rail_speed(mca_btl_ofi_module_t *module, const struct fi_info *info,
                            const char *iface);
/* MODULE is one of several rails: numbered messages, tracked operations,
 * atomics as messages where they cost no more, large puts and gets split
 * (before the modules are handed to the BTL framework). */
void mca_btl_ofi_rails_join(mca_btl_ofi_module_t *module);

/* ---- pairing (add_procs) */

/* MODULE's endpoint for PROC, through the rail of PROC's that MODULE
 * pairs with (same subnet, else same index). OPAL_ERR_UNREACH, said once,
 * when MODULE does not reach PROC or PROC's entry is missing, malformed
 * or of another endpoint kind. */
int mca_btl_ofi_rail_endpoint(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                              mca_btl_ofi_endpoint_t **ep_out);

/* ---- failover (progress) */

/* A peer's notice that the link between one of its rails and one of ours
 * is cut (received on another rail, CONTEXT's): our traffic to it leaves
 * that rail too. */
void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len);
/* Look at the peers and act on what is found: a rail's link cut, a peer
 * lost (from the progress callback). */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_RAILS_H */
