/*
 * btl/ofi endpoints: one per peer and module.
 *
 * A peer's endpoint maps every local context to the peer address that
 * context should use (the part of the peer's modex entry that
 * btl_ofi_rails.c paired this module with), so any context can reach any
 * peer; it carries what the liveness checks (btl_ofi_liveness.c), the
 * numbered messages (btl_ofi_seq.c) and the rails (btl_ofi_rails.c) keep
 * per peer.
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_modex.h"
#include "btl_ofi_frag.h"

#include <stddef.h>
#include <string.h>

#include "opal/util/proc.h"
#include "opal/util/show_help.h"

static void mca_btl_ofi_endpoint_construct(mca_btl_ofi_endpoint_t *endpoint)
{
    endpoint->proc = NULL;
    endpoint->addrs = NULL;
    endpoint->lost = false;
    endpoint->dead = false;
    endpoint->live.checkable = false;
    endpoint->live.pid = 0;
    endpoint->live.start_time = 0;
    endpoint->posted = 0;
    endpoint->acks_open = 0;
    endpoint->completed = 0;
    endpoint->putv_open = 0;
    endpoint->getv_open = 0;
    endpoint->getv_lone_open = 0;
    endpoint->answer_held = false;
    endpoint->quick_sent = 0;
    endpoint->ack_open = false;
    endpoint->stream_bytes = 0;
    endpoint->stream_limit = 0;
    endpoint->held_context = NULL;
    memset(&endpoint->live.host, 0, sizeof(endpoint->live.host));
    endpoint->live.seen_completed = 0;
    endpoint->live.stall_began = 0.0;
    endpoint->live.stall_since = 0.0;
    endpoint->live.probe_wait = 0.0;
    endpoint->live.suspect = false;
    endpoint->live.refused = false;
    endpoint->live.finalized = false;
    endpoint->live.probed_at = 0.0;
    memset(&endpoint->bare, 0, sizeof(endpoint->bare));
    endpoint->bare.kind = MCA_BTL_OFI_OP_BARE;
    endpoint->rail.detour = NULL;
    endpoint->rail.detour_module = NULL;
    endpoint->rail.told = false;
    OBJ_CONSTRUCT(&endpoint->seq.lock, opal_mutex_t);
    OBJ_CONSTRUCT(&endpoint->seq.unacked, opal_list_t);
    endpoint->emu.credits = MCA_BTL_OFI_EMU_WINDOW;
    OBJ_CONSTRUCT(&endpoint->emu.waiting, opal_list_t);
    endpoint->seq.tx_seq = 0;
    endpoint->seq.tx_acked = 0;
    endpoint->live.fd = -1;
    endpoint->live.state = 0;
}

static void mca_btl_ofi_endpoint_destruct(mca_btl_ofi_endpoint_t *endpoint)
{
    if (endpoint->live.fd >= 0) {
        close(endpoint->live.fd);
        endpoint->live.fd = -1;
    }
    free(endpoint->addrs);
    endpoint->addrs = NULL;
    if (NULL != endpoint->proc) {
        OBJ_RELEASE(endpoint->proc);
    }
    /* kept messages: their memory goes with their module's free list */
    while (NULL != opal_list_remove_first(&endpoint->seq.unacked)) {
    }
    OBJ_DESTRUCT(&endpoint->seq.unacked);
    OBJ_DESTRUCT(&endpoint->emu.waiting);
    OBJ_DESTRUCT(&endpoint->seq.lock);
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_endpoint_t, opal_list_item_t, mca_btl_ofi_endpoint_construct,
                   mca_btl_ofi_endpoint_destruct);

mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_named(mca_btl_ofi_module_t *module, uint64_t origin)
{
    mca_btl_ofi_endpoint_t *endpoint = NULL;

    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_get_value_uint64(&module->endpoints_by_name, origin,
                                            (void **) &endpoint);
    if (NULL != endpoint) {
        OBJ_RETAIN(endpoint);
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    return endpoint;
}

/* Insert the peer's addresses (BLOB) into the address vector and map each
 * local context to the peer address it uses: the peer's contexts spread
 * over ours. */
static int mca_btl_ofi_endpoint_addrs(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint,
                                      const mca_btl_ofi_modex_t *blob)
{
    fi_addr_t *peer;
    int rc = OPAL_SUCCESS, inserted;

    peer = calloc(blob->num_addrs, sizeof(*peer));
    endpoint->addrs = calloc(module->num_contexts, sizeof(fi_addr_t));
    if (NULL == peer || NULL == endpoint->addrs) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_peer;
    }
    /* one address at a time: the blob's stride is the longest name, and
     * providers with string names walk a multi-address insert by string
     * length, not by our stride */
    for (int i = 0; i < blob->num_addrs; ++i) {
        inserted = fi_av_insert(module->av, blob->addrs + (size_t) i * blob->addr_len, 1, &peer[i],
                                0, NULL);
        if (1 != inserted) {
            MCA_BTL_OFI_REPORT("fi_av_insert", inserted < 0 ? inserted : -FI_EADDRNOTAVAIL);
            rc = OPAL_ERR_UNREACH;
            goto out_free_peer;
        }
    }
    for (int i = 0; i < module->num_contexts; ++i) {
        if (blob->sep) {
            int target = i % (int) blob->num_contexts;
            endpoint->addrs[i] = fi_rx_addr(peer[0], target, MCA_BTL_OFI_RX_CTX_BITS);
        } else {
            endpoint->addrs[i] = peer[i % blob->num_addrs];
        }
    }
out_free_peer:
    free(peer);
    return rc;
}

int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                const mca_btl_ofi_modex_t *blob, int peer_rail,
                                mca_btl_ofi_endpoint_t **ep_out)
{
    mca_btl_ofi_endpoint_t *endpoint;
    int rc;

    endpoint = OBJ_NEW(mca_btl_ofi_endpoint_t);
    if (NULL == endpoint) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = mca_btl_ofi_endpoint_addrs(module, endpoint, blob);
    if (OPAL_SUCCESS != rc) {
        goto out_release_endpoint;
    }
    /* our own reference: bml's del_procs drops its own before finalize
     * has drained the messages that still name this endpoint, and their
     * error reports then read a freed process ("[[INVALID],INVALID]") */
    OBJ_RETAIN(proc);
    endpoint->proc = proc;
    endpoint->rail.peer_rail = peer_rail;
    endpoint->rail.peer_key_offset =
        0 == endpoint->rail.peer_rail
            ? offsetof(mca_btl_base_registration_handle_t, key)
            : offsetof(mca_btl_base_registration_handle_t, rail_keys)
                  + (size_t) (endpoint->rail.peer_rail - 1) * sizeof(uint64_t);
    memset(endpoint->rail.peers, 0, sizeof(endpoint->rail.peers));
    MCA_BTL_OFI_VERBOSE(
        MCA_BTL_OFI_VERBOSE_TRACE, "rail %d: peer %s through its rail %d (%u of its contexts, %s)",
        module->rail, OPAL_NAME_PRINT(proc->proc_name), endpoint->rail.peer_rail,
        (unsigned) blob->num_contexts, blob->sep ? "scalable endpoint" : "plain endpoints");
    mca_btl_ofi_endpoint_identity(endpoint, &blob->id);
    mca_btl_ofi_endpoint_host(module, endpoint, blob->addrs, blob->addr_len, blob->probe_port);
    /* /proc says nothing about a process on another node, even when the
     * hosts share a kernel and a pid namespace (containers): only peers
     * Open MPI places on this node are checked there */
    if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)) {
        endpoint->live.checkable = false;
    } else {
        /* its connection runs over loopback (mca_btl_ofi_stream_room) */
        endpoint->stream_limit = module->stream_budget;
    }
    *ep_out = endpoint;
    return OPAL_SUCCESS;

out_release_endpoint:
    OBJ_RELEASE(endpoint);
    return rc;
}
