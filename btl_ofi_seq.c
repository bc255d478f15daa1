/*
 * btl/ofi numbered messages: nothing lost, nothing taken twice, when a
 * rail's link fails (several rails only; one rail never numbers).
 *
 * A provider's send completion does not prove delivery (ofi_rxm completes
 * a message once its TCP socket took it), so a message posted on a link
 * that fails may be lost although it completed, or have arrived although
 * it never completes. With several
 * rails every message of the pml or of an atomic is numbered per link
 * (hdr.rail, hdr.seq); the sender keeps it, once complete, until the
 * receiver acknowledges its number (an ACK every quarter window), and
 * posts no more than MCA_BTL_OFI_SEQ_WINDOW beyond the last number
 * acknowledged. When the link fails the sender posts copies of all it
 * still keeps or has in flight on another rail, numbers unchanged, and
 * the receiver, which remembers the numbers it had in that window, takes
 * each message once: none is lost, none delivered (nor an atomic applied)
 * twice, even if the cut link later delivers what it held.
 *
 * The sender's side: numbering at the post (mca_btl_ofi_seq_send), keeping
 * a complete message until its acknowledgement (mca_btl_ofi_seq_settle,
 * _keep), and the copies failover posts again on the working rail
 * (mca_btl_ofi_frag_copy, _resend: btl_ofi_rails.c takes every message and
 * reply of the peer off the failed rail). The receiver's side: taking each number once
 * (mca_btl_ofi_seq_accept) and acknowledging (mca_btl_ofi_seq_ack_due,
 * _ack_again; the sender reads them in mca_btl_ofi_seq_acked).
 * btl_ofi_frag.c posts and receives the messages and calls in here: the
 * one circle between the two files, as this layer is a part of the
 * message path that posts its own acknowledgements and copies through it.
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_seq.h"

#include <string.h>

/* fi_send of FRAG's LEN bytes with several rails (context lock held): a
 * message of the pml or of an atomic is numbered on its link, unless it is
 * a copy sent again (which keeps its number); every one but a copy waits
 * on the context's `sent' list for its completion, so that failover finds
 * what a failed link holds. */
ssize_t mca_btl_ofi_seq_send(mca_btl_ofi_context_t *context, mca_btl_ofi_frag_t *frag, size_t len)
{
    mca_btl_ofi_endpoint_t *endpoint = frag->endpoint;
    bool copy = MCA_BTL_OFI_FRAG_COPY == frag->state;
    bool number = !copy && mca_btl_ofi_msg_numbered(frag->hdr->type);
    ssize_t rc;

    if (number) {
        MCA_BTL_OFI_LOCK(&endpoint->seq.lock);
        if ((int32_t) (endpoint->seq.tx_seq - endpoint->seq.tx_acked) >= MCA_BTL_OFI_SEQ_WINDOW) {
            /* the peer would not know a number this far ahead: wait for its
             * acknowledgement (progress posts it then, from the queue) */
            MCA_BTL_OFI_UNLOCK(&endpoint->seq.lock);
            return -FI_EAGAIN;
        }
        frag->hdr->rail = (uint8_t) endpoint->rail.peer_rail;
        frag->hdr->seq = endpoint->seq.tx_seq;
    }
    rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_SEND)
             ? -FI_EIO
             : fi_send(context->tx, frag->hdr, len, NULL, endpoint->addrs[context->index],
                       &frag->op.ofi_ctx);
    if (number) {
        if (OPAL_LIKELY(0 == rc)) {
            ++endpoint->seq.tx_seq;
        }
        MCA_BTL_OFI_UNLOCK(&endpoint->seq.lock);
    }
    if (OPAL_LIKELY(0 == rc) && !copy) {
        frag->state = MCA_BTL_OFI_FRAG_SENT;
        opal_list_append(&context->sent, &frag->base.super.super);
    }
    return rc;
}

mca_btl_ofi_frag_t *mca_btl_ofi_frag_copy(mca_btl_ofi_frag_t *frag)
{
    mca_btl_ofi_frag_t *copy = (mca_btl_ofi_frag_t *) opal_free_list_get(&frag->home->frags);

    if (OPAL_UNLIKELY(NULL == copy)) {
        return NULL;
    }
    memcpy(copy->hdr, frag->hdr, sizeof(*frag->hdr) + frag->segment.seg_len);
    copy->segment.seg_len = frag->segment.seg_len;
    copy->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    copy->endpoint = frag->endpoint;
    copy->context = frag->context;
    return copy;
}

void mca_btl_ofi_frag_resend(mca_btl_ofi_frag_t *frag)
{
    mca_btl_ofi_endpoint_t *endpoint = frag->endpoint;
    mca_btl_ofi_module_t *module = frag->home;

    mca_btl_ofi_detour(&module, &endpoint);
    frag->state = MCA_BTL_OFI_FRAG_COPY;
    frag->endpoint = endpoint;
    frag->context = mca_btl_ofi_context_get(module);
    (void) mca_btl_ofi_frag_start(module, frag->context, frag);
}

/* Keep KEEP (ours, complete) until the peer acknowledges its number; sent
 * again at once when its link failed meanwhile. */
void mca_btl_ofi_seq_keep(mca_btl_ofi_frag_t *keep)
{
    mca_btl_ofi_endpoint_t *endpoint = keep->endpoint;
    bool acked, resend = false;

    MCA_BTL_OFI_LOCK(&endpoint->seq.lock);
    /* the acknowledgement may come before the completion */
    acked = (int32_t) (keep->hdr->seq - endpoint->seq.tx_acked) < 0;
    if (!acked) {
        /* read under the lock that failover takes to empty `unacked' */
        resend = NULL != endpoint->rail.detour;
        if (!resend) {
            keep->state = MCA_BTL_OFI_FRAG_KEPT;
            opal_list_append(&endpoint->seq.unacked, &keep->base.super.super);
        }
    }
    MCA_BTL_OFI_UNLOCK(&endpoint->seq.lock);
    if (acked) {
        keep->state = MCA_BTL_OFI_FRAG_PLAIN;
        opal_free_list_return(&keep->home->frags, &keep->base.super);
    } else if (resend) {
        mca_btl_ofi_frag_resend(keep);
    }
}

/* The completion of a fragment not PLAIN (several rails). True when it is
 * done with; else the caller goes on as for any fragment, and keeps *KEEP
 * (when set) once the pml's callback ran. */
bool mca_btl_ofi_seq_settle(mca_btl_ofi_frag_t *frag, int status, mca_btl_ofi_frag_t **keep)
{
    mca_btl_ofi_context_t *context = frag->context;
    int state;

    /* under the lock: failover may be making it an orphan right now */
    MCA_BTL_OFI_LOCK(&context->lock);
    state = frag->state;
    if (MCA_BTL_OFI_FRAG_SENT == state) {
        opal_list_remove_item(&context->sent, &frag->base.super.super);
        frag->state = MCA_BTL_OFI_FRAG_PLAIN;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);

    switch (state) {
    case MCA_BTL_OFI_FRAG_COPY:
        frag->state = MCA_BTL_OFI_FRAG_PLAIN;
        mca_btl_ofi_frag_inflight(context, frag->endpoint, frag, -1);
        opal_free_list_return(&frag->home->frags, &frag->base.super);
        return true;
    case MCA_BTL_OFI_FRAG_ORPHAN:
        /* counted as complete when its copy took over */
        mca_btl_ofi_orphan_release(frag);
        return true;
    default:
        break;
    }
    if (OPAL_SUCCESS == status && !context->module->closing
        && MCA_BTL_OFI_NO_SEQ != frag->hdr->rail) {
        /* ours after the callback: kept itself; the pml's: a copy, now */
        *keep = (frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
                    ? frag
                    : mca_btl_ofi_frag_copy(frag);
    }
    return false;
}

/* Acknowledge to ENDPOINT's peer its numbered messages below BASE, over
 * the link's detour once it failed (the acknowledgement is not numbered:
 * a later one says the same and more); none to a peer that finalized. */
static void mca_btl_ofi_seq_ack(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                uint32_t base)
{
    mca_btl_ofi_msg_ack_t ack;

    if (endpoint->live.finalized) {
        return;
    }
    memset(&ack, 0, sizeof(ack));
    ack.hdr.type = MCA_BTL_OFI_MSG_ACK;
    ack.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    ack.hdr.origin = mca_btl_ofi_component.my_name;
    ack.rail = (uint32_t) endpoint->rail.peer_rail;
    ack.base = base;
    mca_btl_ofi_detour(&module, &endpoint);
    mca_btl_ofi_msg_reply(mca_btl_ofi_context_get(module), endpoint, &ack, sizeof(ack));
}

/* Record number SEQ in IN: true the first time it is seen. *ACK is set to
 * the number to acknowledge when a quarter window arrived since the last. */
static bool mca_btl_ofi_seq_record(mca_btl_ofi_seq_in_t *in, uint32_t seq, bool *ack)
{
    uint32_t ahead = seq - in->base, bit = seq % MCA_BTL_OFI_SEQ_WINDOW;
    uint64_t mask = UINT64_C(1) << (bit % 64);
    bool fresh;

    if (ahead >= MCA_BTL_OFI_SEQ_WINDOW) {
        if ((int32_t) ahead > 0) {
            /* beyond what the sender may post unacknowledged */
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                "dropped a message numbered %u, %u past the window", (unsigned) seq,
                                (unsigned) ahead);
        }
        return false;
    }
    fresh = !(in->seen[bit / 64] & mask);
    in->seen[bit / 64] |= mask;
    while (true) {
        bit = in->base % MCA_BTL_OFI_SEQ_WINDOW;
        mask = UINT64_C(1) << (bit % 64);
        if (!(in->seen[bit / 64] & mask)) {
            break;
        }
        in->seen[bit / 64] &= ~mask;
        ++in->base;
    }
    *ack = in->base - in->acked >= MCA_BTL_OFI_SEQ_WINDOW / 4;
    return fresh;
}

/* A numbered message arrived (on any rail): true the first time its number
 * is seen on its link, false for a copy of one taken before. */
bool mca_btl_ofi_seq_accept(const mca_btl_ofi_msg_hdr_t *hdr)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_seq_in_t *in = NULL;
    mca_btl_ofi_endpoint_t *endpoint;
    mca_btl_ofi_module_t *module;
    bool fresh, ack = false;
    uint32_t base;

    if (hdr->rail >= c->num_modules || NULL == (module = c->modules[hdr->rail])) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a message numbered on rail %u",
                            (unsigned) hdr->rail);
        return false;
    }
    MCA_BTL_OFI_LOCK(&module->lock);
    if (OPAL_SUCCESS
        != opal_hash_table_get_value_uint64(&module->seq_in, hdr->origin, (void **) &in)) {
        /* the sender's first message on this link */
        in = calloc(1, sizeof(*in));
        if (NULL == in
            || OPAL_SUCCESS != opal_hash_table_set_value_uint64(&module->seq_in, hdr->origin, in)) {
            MCA_BTL_OFI_UNLOCK(&module->lock);
            free(in);
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                "out of memory recording a message's number: taken unchecked");
            return true;
        }
    }
    fresh = mca_btl_ofi_seq_record(in, hdr->seq, &ack);
    base = in->base;
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (OPAL_UNLIKELY(ack)) {
        /* no endpoint yet (the pml adds a sender when its first message
         * comes): acknowledged with a later message */
        endpoint = mca_btl_ofi_endpoint_named(module, hdr->origin);
        if (NULL != endpoint) {
            MCA_BTL_OFI_LOCK(&module->lock);
            ack = (int32_t) (base - in->acked) > 0;
            if (ack) {
                in->acked = base;
            }
            MCA_BTL_OFI_UNLOCK(&module->lock);
            if (ack) {
                mca_btl_ofi_seq_ack(module, endpoint, base);
            }
            OBJ_RELEASE(endpoint);
        }
    }
    return fresh;
}

void mca_btl_ofi_seq_ack_again(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_seq_in_t *in;
    void *node = NULL;
    uint64_t origin;

    MCA_BTL_OFI_LOCK(&module->lock);
    if (OPAL_SUCCESS
        == opal_hash_table_get_first_key_uint64(&module->seq_in, &origin, (void **) &in, &node)) {
        do {
            in->acked = in->base - 1;
        } while (OPAL_SUCCESS
                 == opal_hash_table_get_next_key_uint64(&module->seq_in, &origin, (void **) &in,
                                                        node, &node));
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
}

void mca_btl_ofi_seq_ack_due(mca_btl_ofi_module_t *module)
{
    struct {
        uint64_t origin;
        uint32_t base;
    } *due = NULL;
    mca_btl_ofi_seq_in_t *in;
    mca_btl_ofi_endpoint_t *endpoint;
    void *node = NULL;
    uint64_t origin;
    size_t n = 0, size;

    MCA_BTL_OFI_LOCK(&module->lock);
    size = opal_hash_table_get_size(&module->seq_in);
    if (size > 0 && NULL != (due = malloc(size * sizeof(*due)))
        && OPAL_SUCCESS
               == opal_hash_table_get_first_key_uint64(&module->seq_in, &origin, (void **) &in,
                                                       &node)) {
        do {
            if (in->acked != in->base && n < size) {
                due[n].origin = origin;
                due[n++].base = in->base;
                in->acked = in->base;
            }
        } while (OPAL_SUCCESS
                 == opal_hash_table_get_next_key_uint64(&module->seq_in, &origin, (void **) &in,
                                                        node, &node));
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    for (size_t i = 0; i < n; ++i) {
        endpoint = mca_btl_ofi_endpoint_named(module, due[i].origin);
        if (NULL != endpoint) {
            mca_btl_ofi_seq_ack(module, endpoint, due[i].base);
            OBJ_RELEASE(endpoint);
        }
    }
    free(due);
}

/* The peer acknowledged numbered messages of ours: forget them. */
void mca_btl_ofi_seq_acked(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    (void) context;
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_endpoint_t *endpoint;
    opal_list_item_t *item, *next;
    mca_btl_ofi_msg_ack_t ack;
    opal_list_t done;

    if (len < sizeof(ack)) {
        return;
    }
    memcpy(&ack, buf, sizeof(ack));
    if (ack.rail >= (uint32_t) c->num_modules || NULL == c->modules[ack.rail]
        || NULL == (endpoint = mca_btl_ofi_endpoint_named(c->modules[ack.rail], ack.hdr.origin))) {
        return;
    }
    OBJ_CONSTRUCT(&done, opal_list_t);
    MCA_BTL_OFI_LOCK(&endpoint->seq.lock);
    if ((int32_t) (ack.base - endpoint->seq.tx_acked) > 0
        && (int32_t) (endpoint->seq.tx_seq - ack.base) >= 0) {
        endpoint->seq.tx_acked = ack.base;
        OPAL_LIST_FOREACH_SAFE (item, next, &endpoint->seq.unacked, opal_list_item_t) {
            if ((int32_t) (((mca_btl_ofi_frag_t *) item)->hdr->seq - ack.base) < 0) {
                opal_list_remove_item(&endpoint->seq.unacked, item);
                opal_list_append(&done, item);
            }
        }
    }
    MCA_BTL_OFI_UNLOCK(&endpoint->seq.lock);
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item;

        frag->state = MCA_BTL_OFI_FRAG_PLAIN;
        opal_free_list_return(&frag->home->frags, &frag->base.super);
    }
    OBJ_DESTRUCT(&done);
    OBJ_RELEASE(endpoint);
}
