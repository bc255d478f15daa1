/*
 * btl/ofi endpoints: per-peer addresses, one per local context, built from
 * the address blob each process publishes through the modex.
 */

#ifndef MCA_BTL_OFI_ENDPOINT_H
#define MCA_BTL_OFI_ENDPOINT_H

#include "btl_ofi_context.h"
#include "btl_ofi_types.h"

BEGIN_C_DECLS

int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                mca_btl_ofi_endpoint_t **ep_out);
int mca_btl_ofi_modex_send(mca_btl_ofi_module_t **modules, int count);

/** An operation to a peer known to be gone: report the peer (once) and
 * refuse the operation with OPAL_ERR_UNREACH. */
int mca_btl_ofi_endpoint_refuse(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);

/** After a failed post or completion: when the peer (on this host) is gone,
 * mark it, report it once and return true. */
bool mca_btl_ofi_endpoint_check(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);

/** A post the provider refused, for its caller: -FI_EAGAIN is
 * OPAL_ERR_OUT_OF_RESOURCE (try again); a peer found gone is reported as
 * such, the real cause, and gives OPAL_ERR_UNREACH; anything else is
 * reported once with the call's name and fi_strerror and gives OPAL_ERROR.
 * The one place that judges a failed post. */
int mca_btl_ofi_post_refused_at(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint, const char *call, ssize_t rc,
                                const char *file, int line);
#define mca_btl_ofi_post_refused(module, endpoint, call, rc)                                       \
    mca_btl_ofi_post_refused_at(module, endpoint, call, rc, __FILE__, __LINE__)

/* What each process publishes: its context layout and libfabric addresses. */
typedef struct mca_btl_ofi_modex_t {
    uint32_t layout;       /* MCA_BTL_OFI_MODEX_LAYOUT: refuse blobs of another layout */
    uint16_t num_contexts; /* contexts of the publishing module */
    uint16_t num_addrs;    /* 1 for a scalable endpoint, else one per context */
    uint32_t addr_len;     /* bytes of each address */
    uint32_t sep;          /* 1 when the addresses name a scalable endpoint */
    /* who the publisher is on its host, so that a peer sharing the host (same
     * boot and pid namespace) can tell whether the process still exists */
    uint32_t pid;
    uint64_t pidns;      /* inode of /proc/self/ns/pid */
    uint64_t start_time; /* field 22 of /proc/self/stat: guards against pid reuse */
    char boot_id[40];    /* /proc/sys/kernel/random/boot_id */
    uint16_t probe_port; /* TCP port of its liveness listener, 0: none */
    uint16_t reserved[3];
    uint8_t addrs[];
} mca_btl_ofi_modex_t;

#define MCA_BTL_OFI_MODEX_LAYOUT 0x0f100003u

/* What a process publishes: the parts of its modules (rails), one after
 * the other. */
typedef struct mca_btl_ofi_modex_rails_t {
    uint32_t layout; /* MCA_BTL_OFI_MODEX_RAILS_LAYOUT */
    uint32_t count;
    uint32_t sizes[MCA_BTL_OFI_MAX_RAILS];
} mca_btl_ofi_modex_rails_t;

#define MCA_BTL_OFI_MODEX_RAILS_LAYOUT 0x0f1a0001u

/* Report a peer as lost, once, through the upper layer's error callback. */
void mca_btl_ofi_endpoint_lost(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                               const char *why);

/* Check that the peers sharing this host still exist (every
 * btl_ofi_peer_check_interval ms, called from the progress callback). */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module);

/** The same peer's endpoint on another rail of ours, or NULL when that
 * rail does not reach it. Looked up once, then kept with the endpoint. */
mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_on_rail(mca_btl_ofi_endpoint_t *endpoint,
                                                     mca_btl_ofi_module_t *rail);
/* A receive failed, its sender unknown: a same-host peer found gone is the
 * likely one; it is reported lost (naming it) and true returned. */
bool mca_btl_ofi_dead_sender(mca_btl_ofi_module_t *module);
/* An error without a clear cause involved this peer: probe it at the next
 * check (peers on other hosts; same-host peers are checked at once). */
void mca_btl_ofi_endpoint_suspect(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint);
/* A peer's notice that the link between one of its rails and one of ours
 * is cut (received on another rail, CONTEXT's): our traffic to it leaves
 * that rail too (see mca_btl_ofi_rail_cut in btl_ofi_endpoint.c). */
void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len);
/* MODULE's endpoint for the process named ORIGIN (mca_btl_ofi_name_key),
 * retained, or NULL. */
mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_named(mca_btl_ofi_module_t *module, uint64_t origin);
/* Where a message of ours to ENDPOINT goes: ENDPOINT on *CONTEXT, or,
 * once its rail's link failed, its detour on a context of the detour's
 * module (*CONTEXT replaced). */
static inline mca_btl_ofi_endpoint_t *mca_btl_ofi_route(mca_btl_ofi_endpoint_t *endpoint,
                                                        mca_btl_ofi_context_t **context)
{
    if (OPAL_UNLIKELY(NULL != endpoint->detour)) {
        *context = mca_btl_ofi_context_get(endpoint->detour_module);
        return endpoint->detour;
    }
    return endpoint;
}
/* Close the probes of peers' hosts still under way (module teardown). */
void mca_btl_ofi_probes_fini(mca_btl_ofi_module_t *module);

END_C_DECLS

#endif /* MCA_BTL_OFI_ENDPOINT_H */
