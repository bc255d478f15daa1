/*
 * btl/ofi rail failover: a rail whose link to a peer fails while another
 * rail still reaches it is left for the others.
 *
 * mca_btl_ofi_rail_cut (called by the peer check, btl_ofi_liveness.c, when
 * a peer's host stops answering on one rail) probes the peer's other
 * rails; when one answers, the endpoint takes a detour there for every
 * later operation, what was in flight on the cut link is posted again on
 * it, and the peer hears of it over the working rail
 * (mca_btl_ofi_rail_cut_heard on its side). Rail selection, pairing and
 * speeds are the component's (btl_ofi_component.c); the split of large
 * transfers is btl_ofi_rdma.c's.
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_seq.h"
#include "btl_ofi_rdma.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "opal/util/proc.h"

/*
 * Rail failover. A peer whose host does not answer on one rail may still
 * answer on another: then only this rail's link is cut (a cable, a switch
 * port). Its puts and gets in flight on the cut link are sent again on
 * the rail that answers (they write or read the same bytes twice at
 * most, which an access epoch allows), and every later operation for the
 * peer takes that rail (its endpoint's detour). Messages (of the pml and
 * of emulated atomics) are numbered per link with several rails: those
 * that may not have arrived are sent again with their numbers, and the
 * receiver takes each once (btl_ofi_frag.c). An atomic of the provider in
 * flight on the cut link cannot be sent again: it may have been applied,
 * and twice would be wrong; with one in flight the peer is lost, as
 * before. The peer is told over the rail that answers, so that its own
 * traffic to us leaves the cut link before it stalls there.
 */

/* Leave ENDPOINT's rail (MODULE) for PEER, the same process's endpoint on
 * RAIL (or for the detour taken before). True when nothing is lost: what
 * was in flight could be moved; AGAIN (if not NULL) then says what was
 * sent again. */
static bool mca_btl_ofi_rail_failover(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint, mca_btl_ofi_module_t *rail,
                                      mca_btl_ofi_endpoint_t *peer, char *again, size_t len)
{
    int msgs, rdma;

    module->link_failed = true;
    mca_btl_ofi_seq_ack_again(module);
    if (NULL == endpoint->rail.detour) {
        endpoint->rail.detour_module = rail;
        opal_atomic_wmb();
        endpoint->rail.detour = peer;
    }
    rdma = mca_btl_ofi_rdma_move(module, endpoint, endpoint->rail.detour_module,
                                 endpoint->rail.detour);
    msgs = mca_btl_ofi_frags_move(module, endpoint, endpoint->rail.detour_module,
                                  endpoint->rail.detour);
    if (msgs < 0) {
        return false;
    }
    if (NULL != again) {
        snprintf(again, len, "%d message%s and %d put%s or get%s in flight or unacknowledged", msgs,
                 1 == msgs ? "" : "s", rdma, 1 == rdma ? "" : "s", 1 == rdma ? "" : "s");
    }
    /* what remains counted is an atomic posted on the cut link: emulated,
     * its request or reply is sent again; the provider's cannot be known
     * applied or not */
    return module->amo_emulated || endpoint->posted == endpoint->completed;
}

/* Tell the peer at PEER (on RAIL, which works) that its rail PEER_RAIL's
 * link to our rail OUR_RAIL is cut. */
static void mca_btl_ofi_rail_cut_tell(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *rail = endpoint->rail.detour_module;
    mca_btl_ofi_rail_cut_t msg;

    if (endpoint->rail.told || !rail->messaging) {
        return; /* told before; or the peer finds out itself, when its traffic stalls */
    }
    endpoint->rail.told = true;
    memset(&msg, 0, sizeof(msg));
    msg.hdr.type = MCA_BTL_OFI_MSG_RAIL_CUT;
    msg.hdr.origin = mca_btl_ofi_component.my_name;
    msg.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    msg.rail = (uint32_t) endpoint->rail.peer_rail;
    msg.from_rail = (uint32_t) module->rail;
    mca_btl_ofi_msg_reply(mca_btl_ofi_context_get(rail), endpoint->rail.detour, &msg, sizeof(msg));
}

/* The peer ENDPOINT of MODULE did not answer a probe: when another rail of
 * ours reaches it, fail over to that rail (true: the peer is not lost).
 * Otherwise WHY says what was seen. */
bool mca_btl_ofi_rail_cut(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint, char *why,
                          size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    char here[INET6_ADDRSTRLEN], there[INET6_ADDRSTRLEN], again[128];

    if (NULL != endpoint->rail.detour) {
        /* failed over before: only what was queued on this rail then can
         * still stand still here */
        if (mca_btl_ofi_rail_failover(module, endpoint, NULL, NULL, NULL, 0)) {
            return true;
        }
        snprintf(why, len,
                 "the link of rail %d to it failed earlier (its traffic took rail %d since), and "
                 "an atomic posted on it before that is stuck there",
                 module->rail, endpoint->rail.detour_module->rail);
        return false;
    }
    for (int r = 0; r < c->num_modules; ++r) {
        mca_btl_ofi_module_t *rail = c->modules[r];
        mca_btl_ofi_endpoint_t *peer;

        if (NULL == rail || rail == module) {
            continue;
        }
        peer = mca_btl_ofi_endpoint_on_rail(endpoint, rail);
        if (NULL == peer || peer->lost || peer->dead || NULL != peer->rail.detour
            || 0 == peer->live.host.ss_family
            || 0 != mca_btl_ofi_probe_now(&peer->live.host, MCA_BTL_OFI_SUSPECT_WAIT_MS)) {
            continue;
        }
        mca_btl_ofi_host_name(&endpoint->live.host, here, sizeof(here));
        mca_btl_ofi_host_name(&peer->live.host, there, sizeof(there));
        if (!mca_btl_ofi_rail_failover(module, endpoint, rail, peer, again, sizeof(again))) {
            snprintf(why, len,
                     "its address %s on rail %d does not answer while %s on rail %d does: the "
                     "link of rail %d is cut or down, and an atomic to the peer was in flight on "
                     "it (btl/ofi cannot know whether the provider applied it, so it cannot send "
                     "it again on another rail)",
                     here, module->rail, there, rail->rail, module->rail);
            return false;
        }
        opal_output(0,
                    "btl/ofi on %s: peer %s on %s: its address %s on rail %d does not answer "
                    "while %s on rail %d does: the link of rail %d is cut or down; traffic to "
                    "this peer takes rail %d from now on (sent again on it: %s)",
                    opal_process_info.nodename, OPAL_NAME_PRINT(endpoint->proc->proc_name),
                    NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?",
                    here, module->rail, there, rail->rail, module->rail, rail->rail, again);
        mca_btl_ofi_rail_cut_tell(module, endpoint);
        return true;
    }
    return false;
}

void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_module_t *module = context->module, *cut;
    mca_btl_ofi_endpoint_t *live = NULL, *endpoint = NULL;
    mca_btl_ofi_rail_cut_t msg;
    char why[MCA_BTL_OFI_WHY_LEN], again[128];

    if (len < sizeof(msg)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short rail notice");
        return;
    }
    memcpy(&msg, buf, sizeof(msg));
    if (msg.rail >= (uint32_t) c->num_modules || NULL == (cut = c->modules[msg.rail])
        || cut == module) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a rail notice for rail %u",
                            (unsigned) msg.rail);
        return;
    }
    live = mca_btl_ofi_endpoint_named(module, msg.hdr.origin);
    if (NULL == live) {
        return; /* a peer we no longer know (its procs were deleted) */
    }
    endpoint = mca_btl_ofi_endpoint_named(cut, msg.hdr.origin);
    if (NULL != endpoint && !endpoint->lost) {
        why[0] = '\0';
        if (NULL != endpoint->rail.detour) {
            /* found by us too: only the count below is new */
        } else if (mca_btl_ofi_rail_failover(cut, endpoint, module, live, again, sizeof(again))) {
            opal_output(0,
                        "btl/ofi on %s: peer %s on %s finds the link between its rail %u and "
                        "our rail %d cut or down; traffic to this peer takes rail %d from now on "
                        "(sent again on it: %s)",
                        opal_process_info.nodename, OPAL_NAME_PRINT(live->proc->proc_name),
                        NULL != live->proc->proc_hostname ? live->proc->proc_hostname : "?",
                        (unsigned) msg.from_rail, cut->rail, module->rail, again);
            mca_btl_ofi_rail_cut_tell(cut, endpoint);
        } else {
            snprintf(why, sizeof(why),
                     "it finds the link between its rail %u and our rail %d cut or down, and an "
                     "atomic of ours to it was in flight on that link (btl/ofi cannot know "
                     "whether the provider applied it, so it cannot send it again on another "
                     "rail)",
                     (unsigned) msg.from_rail, cut->rail);
        }
        if ('\0' != why[0]) {
            endpoint->dead = true;
            mca_btl_ofi_endpoint_lost(cut, endpoint, why);
        }
    }
    if (NULL != endpoint) {
        OBJ_RELEASE(endpoint);
    }
    OBJ_RELEASE(live);
}

/* The periodic look at the peers (from the progress callback), and what
 * follows from it: a peer whose host does not answer on this rail while
 * it does on another has its link cut (the rail failover above); any
 * other lost peer is named and the job ends; a same-host peer found gone
 * is named if work of ours waits on it. With several rails, what peers
 * sent while traffic paused is acknowledged now, not 32 messages later:
 * they keep copies until then. */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_verdicts_t v;

    if (!mca_btl_ofi_peers_scan(module, &v)) {
        return;
    }
    for (int i = 0; i < v.nlost; ++i) {
        mca_btl_ofi_endpoint_t *peer = v.lost[i];

        if (ECONNREFUSED != v.errs[i] && !peer->lost
            && mca_btl_ofi_rail_cut(module, peer, v.why[i], sizeof(v.why[i]))) {
            continue;
        }
        peer->dead = true;
        mca_btl_ofi_endpoint_lost(module, peer, v.why[i]);
    }
    if (NULL != v.dead && mca_btl_ofi_owed(module, v.dead)) {
        (void) mca_btl_ofi_endpoint_check(module, v.dead);
    }
    mca_btl_ofi_verdicts_free(&v);
    if (module->track) {
        mca_btl_ofi_seq_ack_due(module);
    }
}
