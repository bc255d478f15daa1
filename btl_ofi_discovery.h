/*
 * btl/ofi discovery (btl_ofi_discovery.c): which providers and interfaces
 * the selection lists allow, and a module opened on each candidate taken.
 */

#ifndef MCA_BTL_OFI_DISCOVERY_H
#define MCA_BTL_OFI_DISCOVERY_H

#include "btl_ofi_types.h"

#include <ifaddrs.h>
#include <net/if.h>

BEGIN_C_DECLS

/* The selection lists, split once, and this host's interfaces. */
typedef struct mca_btl_ofi_lists_t {
    char **prov_include, **prov_exclude, **if_include, **if_exclude;
    struct ifaddrs *ifs;
} mca_btl_ofi_lists_t;

/* The lists of btl_ofi_provider_include/exclude and btl_ofi_if_include/
 * exclude split, and this host's interfaces; false (said) when the
 * interface lists contradict each other. Closed with
 * mca_btl_ofi_lists_close. */
bool mca_btl_ofi_lists_open(mca_btl_ofi_lists_t *lists);
void mca_btl_ofi_lists_close(mca_btl_ofi_lists_t *lists);

/* Every candidate provider domain (ALL), and the same asked with
 * FI_DELIVERY_COMPLETE (WITH_DC); either may be NULL. */
void mca_btl_ofi_candidates(struct fi_info **all, struct fi_info **with_dc);

/* A module (a rail) opened on each candidate the lists allow, in
 * libfabric's order, each refusal said: how many were taken (into TAKEN,
 * their interfaces into TAKEN_IF); SEEN: every provider met. */
int mca_btl_ofi_take_candidates(struct fi_info *all, struct fi_info *with_dc,
                                mca_btl_ofi_lists_t *lists, mca_btl_ofi_module_t **taken,
                                char (*taken_if)[IF_NAMESIZE + 1], char ***seen);

END_C_DECLS

#endif /* MCA_BTL_OFI_DISCOVERY_H */
