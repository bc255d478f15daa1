/*
 * btl/ofi put and get.
 *
 * Local buffers need no registration (we refuse providers that want
 * FI_MR_LOCAL), so the caller's local handle is only used for its
 * descriptor when it has one. Completion means remote completion: the
 * endpoint's default transmit flags carry FI_DELIVERY_COMPLETE (see
 * btl_ofi_component.c, the hints of fi_getinfo), which is what flush relies
 * on.
 */

#include "btl_ofi.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_rdma.h"

#include "opal/util/error.h"
#include "opal/util/proc.h"

/* Take off CONTEXT (locked) every put and get of FROM, parked or in
 * flight, onto OUT. One in flight stays the provider's until it completes
 * (if ever): it becomes MOVED, given back by that completion. */
static void mca_btl_ofi_rdma_take(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *from,
                                  opal_list_t *out)
{
    opal_list_item_t *item, *next;

    OPAL_LIST_FOREACH_SAFE (item, next, &context->rdmaq, opal_list_item_t) {
        mca_btl_ofi_completion_t *comp = (mca_btl_ofi_completion_t *) item;

        if (comp->endpoint == from && comp->tracked) {
            opal_list_remove_item(&context->rdmaq, item);
            opal_list_remove_item(&context->tracked, &comp->track_item);
            comp->tracked = false;
            opal_list_append(out, item); /* never posted: kind stays RDMA */
        }
    }
    OPAL_LIST_FOREACH_SAFE (item, next, &context->tracked, opal_list_item_t) {
        mca_btl_ofi_completion_t *comp = mca_btl_ofi_completion_from_track(item);

        if (comp->endpoint == from) {
            opal_list_remove_item(&context->tracked, item);
            comp->tracked = false;
            comp->op.kind = MCA_BTL_OFI_OP_MOVED;
            opal_list_append(out, &comp->super.super);
        }
    }
}

int mca_btl_ofi_rdma_move(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *from,
                          mca_btl_ofi_module_t *to_module, mca_btl_ofi_endpoint_t *to)
{
    opal_list_item_t *item;
    opal_list_t taken;
    int moved = 0;

    OBJ_CONSTRUCT(&taken, opal_list_t);
    for (int i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;

        MCA_BTL_OFI_LOCK(&context->lock);
        mca_btl_ofi_rdma_take(context, from, &taken);
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
    while (NULL != (item = opal_list_remove_first(&taken))) {
        mca_btl_ofi_completion_t *old = (mca_btl_ofi_completion_t *) item, *comp;
        mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(to_module);
        ssize_t rc = -FI_ENOMEM;

        /* the local buffer's descriptor is the old rail's: none is needed
         * (no provider we take wants FI_MR_LOCAL) */
        comp = (mca_btl_ofi_completion_t *) opal_free_list_get(&context->completions);
        if (OPAL_LIKELY(NULL != comp)) {
            mca_btl_ofi_completion_fill(comp, old->btl, context, to, old->local_address, NULL,
                                        old->cbfunc, old->cbcontext, old->cbdata);
            comp->remote_handle = old->remote_handle;
            mca_btl_ofi_inflight(context, to, 1);
            MCA_BTL_OFI_LOCK(&context->lock);
            rc = mca_btl_ofi_rma_start(context, comp, old->parked_kind, old->parked_size,
                                       old->parked_raddr, mca_btl_ofi_rkey(to, old->remote_handle));
            MCA_BTL_OFI_UNLOCK(&context->lock);
        }
        /* the old one is done with as far as flush and the peer's stall
         * are concerned */
        mca_btl_ofi_inflight(old->context, from, -1);
        if (MCA_BTL_OFI_OP_MOVED != old->op.kind) {
            opal_free_list_return(&old->context->completions, &old->super);
        }
        if (OPAL_UNLIKELY(0 != rc)) {
            (void) mca_btl_ofi_post_refused(to_module, to, mca_btl_ofi_rma_call(old->parked_kind),
                                            rc);
            if (NULL != comp) {
                mca_btl_ofi_completion_finish(comp, OPAL_ERROR);
            }
            continue;
        }
        ++moved;
    }
    OBJ_DESTRUCT(&taken);
    return moved;
}

int mca_btl_ofi_post_failed(mca_btl_ofi_context_t *context, mca_btl_ofi_completion_t *comp,
                            ssize_t rc, const char *call, const char *file, int line)
{
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;

    mca_btl_ofi_inflight(context, endpoint, -1);
    opal_free_list_return(&context->completions, &comp->super);

    /* -FI_EAGAIN (the provider's queues are full) becomes
     * OPAL_ERR_OUT_OF_RESOURCE: the caller progresses, which makes room */
    return mca_btl_ofi_post_refused_at(context->module, endpoint, call, rc, file, line);
}

/* The backlog pattern (sends, messages and RMA operations alike): under one
 * hold of the context lock, post what waits, in order, until the provider
 * refuses again; an operation refused for good is taken off, the hold ends
 * and it completes with an error (its callback may post: never under the
 * lock), then the rest is tried again. */
void mca_btl_ofi_backlog_rdma(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_completion_t *comp = NULL;
    ssize_t rc;

    while (true) {
        rc = -FI_EAGAIN;
        MCA_BTL_OFI_LOCK(&context->lock);
        while (!opal_list_is_empty(&context->rdmaq)) {
            comp = (mca_btl_ofi_completion_t *) opal_list_get_first(&context->rdmaq);
            rc = mca_btl_ofi_rma_post(context, comp, comp->parked_kind, comp->parked_size,
                                      comp->parked_raddr, comp->parked_key);
            if (-FI_EAGAIN == rc) {
                break;
            }
            (void) opal_list_remove_first(&context->rdmaq);
            if (OPAL_UNLIKELY(0 != rc)) {
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (OPAL_LIKELY(0 == rc || -FI_EAGAIN == rc)) {
            return;
        }
        (void) mca_btl_ofi_post_refused(context->module, comp->endpoint,
                                        mca_btl_ofi_rma_call(comp->parked_kind), rc);
        mca_btl_ofi_completion_finish(comp, OPAL_ERROR);
    }
}

/* ------------------------------------------------------------------ rails */

/*
 * A large put or get split in page-aligned parts over every rail that
 * reaches the peer (this one among them), each part in proportion to its
 * rail's bandwidth (equal rails, equal parts). The whole counts as one
 * operation of the caller's rail, finished when the last part is: a flush
 * of that rail waits for every part, each remotely complete on its own
 * rail. OPAL_ERR_NOT_AVAILABLE: fewer than two rails reach the peer.
 */
/* One part of a split transfer: its rail, the peer's endpoint there, the
 * context and completion object it is posted with, its bytes. */
typedef struct mca_btl_ofi_part_t {
    mca_btl_ofi_module_t *rail;
    mca_btl_ofi_endpoint_t *ep;
    mca_btl_ofi_context_t *ctx;
    mca_btl_ofi_completion_t *comp;
    size_t off, len;
} mca_btl_ofi_part_t;

/* The rails that reach ENDPOINT's peer (MODULE's among them) and each
 * one's share of SIZE bytes, into PARTS; how many, below 2 when the
 * transfer cannot be split. */
static int mca_btl_ofi_split_plan(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                  size_t size, mca_btl_ofi_part_t *parts)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    size_t off = 0;
    double total = 0;
    int n = 0, m = 0;

    for (int r = 0; r < c->num_modules; ++r) {
        mca_btl_ofi_module_t *rail = c->modules[r];
        mca_btl_ofi_endpoint_t *peer;

        if (NULL == rail) {
            continue;
        }
        peer = rail == module ? endpoint : mca_btl_ofi_endpoint_on_rail(endpoint, rail);
        if (NULL != peer && !peer->dead && !peer->lost && NULL == peer->rail.detour) {
            parts[n].rail = rail;
            parts[n++].ep = peer;
            total += rail->super.btl_bandwidth; /* at least 1 (mca_btl_ofi_rail_speed) */
        }
    }
    if (n < 2) {
        return n;
    }
    /* the parts, page-aligned shares rounded down (so never past the
     * end), rails whose share rounds to nothing left out; the last rail
     * takes the rest, never nothing as its own share was rounded off */
    for (int r = 0; r < n; ++r) {
        size_t len = r == n - 1
                         ? size - off
                         : (size_t) ((double) size * parts[r].rail->super.btl_bandwidth / total)
                               & ~(size_t) 4095;

        if (0 == len) {
            continue;
        }
        parts[m].rail = parts[r].rail;
        parts[m].ep = parts[r].ep;
        parts[m].off = off;
        parts[m++].len = len;
        off += len;
    }
    return m;
}

/* Post every part (each counted in flight for its own peer endpoint); a
 * part refused for good completes with the error, which the whole takes. */
static void mca_btl_ofi_split_post(mca_btl_ofi_part_t *parts, int n, int kind,
                                   uint64_t remote_address,
                                   mca_btl_base_registration_handle_t *remote_handle)
{
    for (int i = 0; i < n; ++i) {
        mca_btl_ofi_part_t *p = parts + i;
        ssize_t rc;

        p->comp->remote_handle = remote_handle;
        mca_btl_ofi_inflight(p->ctx, p->ep, 1);
        if (OPAL_UNLIKELY(p->rail->rma_emulated)) {
            mca_btl_ofi_rma_emulate(p->rail, p->ctx, p->comp, kind, p->len, remote_address + p->off,
                                    remote_handle);
            continue;
        }
        MCA_BTL_OFI_LOCK(&p->ctx->lock);
        rc = mca_btl_ofi_rma_start(
            p->ctx, p->comp, kind, p->len,
            mca_btl_ofi_remote_addr(p->rail, remote_address + p->off, remote_handle),
            mca_btl_ofi_rkey(p->ep, remote_handle));
        MCA_BTL_OFI_UNLOCK(&p->ctx->lock);
        if (OPAL_UNLIKELY(0 != rc)) {
            (void) mca_btl_ofi_post_refused(p->rail, p->ep, mca_btl_ofi_rma_call(kind), rc);
            mca_btl_ofi_completion_finish(p->comp, OPAL_ERROR);
        }
    }
}

static int mca_btl_ofi_rdma_split(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                                  mca_btl_ofi_endpoint_t *endpoint, int kind, void *local_address,
                                  uint64_t remote_address,
                                  mca_btl_base_registration_handle_t *local_handle,
                                  mca_btl_base_registration_handle_t *remote_handle, size_t size,
                                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                                  void *cbdata)
{
    mca_btl_ofi_part_t parts[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_completion_t *whole;
    int n = mca_btl_ofi_split_plan(module, endpoint, size, parts);

    if (n < 2) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    whole = mca_btl_ofi_completion_alloc(&module->super, context, endpoint, local_address,
                                         local_handle, cbfunc, cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == whole)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (int i = 0; i < n; ++i) {
        mca_btl_ofi_part_t *p = parts + i;

        p->ctx = p->rail == module ? context : mca_btl_ofi_context_get(p->rail);
        /* the local region is registered in the caller's rail only; no
         * provider we take needs a local descriptor (FI_MR_LOCAL) */
        p->comp = mca_btl_ofi_completion_alloc(
            &p->rail->super, p->ctx, p->ep, (char *) local_address + p->off,
            p->rail == module ? local_handle : NULL, mca_btl_ofi_part_done, whole, NULL);
        if (OPAL_UNLIKELY(NULL == p->comp)) {
            while (i-- > 0) {
                opal_free_list_return(&parts[i].ctx->completions, &parts[i].comp->super);
            }
            opal_free_list_return(&context->completions, &whole->super);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    whole->parts_left = n;
    whole->parts_status = OPAL_SUCCESS;
    /* the whole counts for flush on its context; each part counts for its
     * own peer endpoint (what is in flight on a rail's link) */
    mca_btl_ofi_add64(&context->outstanding, 1);
    mca_btl_ofi_split_post(parts, n, kind, remote_address, remote_handle);
    return OPAL_SUCCESS;
}

/* Put and get: one path, the kind picks fi_write or fi_read. */
static inline __opal_attribute_always_inline__ int mca_btl_ofi_rdma(
    mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, int kind, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size,
    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    mca_btl_ofi_completion_t *comp;
    ssize_t rc;

    int route = mca_btl_ofi_route_op(&module, &endpoint);

    if (OPAL_UNLIKELY(OPAL_SUCCESS != route)) {
        return route;
    }
    if (OPAL_UNLIKELY(&module->super != btl)) {
        /* this rail's link to the peer failed: another rail carries it */
        btl = &module->super;
        context = mca_btl_ofi_context_get(module);
    }
    if (OPAL_UNLIKELY(size >= mca_btl_ofi_component.rail_split_size
                      && mca_btl_ofi_component.num_modules > 1)) {
        int ret =
            mca_btl_ofi_rdma_split(module, context, endpoint, kind, local_address, remote_address,
                                   local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
        if (OPAL_ERR_NOT_AVAILABLE != ret) {
            return ret;
        }
    }
    comp = mca_btl_ofi_completion_alloc(btl, context, endpoint, local_address, local_handle, cbfunc,
                                        cbcontext, cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    comp->remote_handle = remote_handle;

    mca_btl_ofi_inflight(context, endpoint, 1);
    if (OPAL_UNLIKELY(module->rma_emulated)) {
        mca_btl_ofi_rma_emulate(module, context, comp, kind, size, remote_address, remote_handle);
        return OPAL_SUCCESS;
    }
    MCA_BTL_OFI_LOCK(&context->lock);
    rc = mca_btl_ofi_rma_start(context, comp, kind, size,
                               mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
                               mca_btl_ofi_rkey(endpoint, remote_handle));
    MCA_BTL_OFI_UNLOCK(&context->lock);

    return mca_btl_ofi_post_result(context, comp, rc, mca_btl_ofi_rma_call(kind));
}

/* The general path of put, out of line so that put's common case (bare,
 * below) needs no frame for its arguments. */
static __opal_attribute_noinline__ int mca_btl_ofi_put_general(
    mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size,
    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rdma(btl, endpoint, MCA_BTL_OFI_RMA_PUT, local_address, remote_address,
                            local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}

/* A put without callback (osc/rdma's, completed by a later flush) to a
 * live peer, not split over rails: posted with its peer's shared `bare'
 * context, so no completion object is taken, filled and given back; its
 * completion is only counted (flush waits for it; a failure stops the job
 * as for any operation whose owner ignores the status). A full queue, a
 * refusal for now or operations waiting before it: the general path,
 * which keeps it in order. */
static inline __opal_attribute_always_inline__ int mca_btl_ofi_put_bare(
    mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint, void *local_address,
    uint64_t remote_address, mca_btl_base_registration_handle_t *local_handle,
    mca_btl_base_registration_handle_t *remote_handle, size_t size)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    ssize_t rc = -FI_EAGAIN;

    if (OPAL_UNLIKELY(!mca_btl_ofi_context_has_room(context))) {
        goto general;
    }
    mca_btl_ofi_inflight(context, endpoint, 1);
    MCA_BTL_OFI_LOCK(&context->lock);
    /* nothing parked (an RMA backlog among what may be): else the
     * general path decides */
    if (OPAL_LIKELY(!context->parked)) {
        rc = mca_btl_ofi_rdma_post(
            context, MCA_BTL_OFI_RMA_PUT, local_address, mca_btl_ofi_local_desc(local_handle),
            endpoint->addrs[context->index], size,
            mca_btl_ofi_remote_addr(module, remote_address, remote_handle),
            mca_btl_ofi_rkey(endpoint, remote_handle), &endpoint->bare.ofi_ctx);
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (OPAL_LIKELY(0 == rc)) {
        mca_btl_ofi_keep_short(context);
        return OPAL_SUCCESS;
    }
    mca_btl_ofi_inflight(context, endpoint, -1);
    if (-FI_EAGAIN != rc) {
        return mca_btl_ofi_post_refused(module, endpoint, "fi_write", rc);
    }
general:
    return mca_btl_ofi_put_general(&module->super, endpoint, local_address, remote_address,
                                   local_handle, remote_handle, size, NULL, NULL, NULL);
}

int mca_btl_ofi_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    (void) flags;
    (void) order;

    if (OPAL_LIKELY(NULL == cbfunc && size < module->bare_limit && !endpoint->dead)) {
        return mca_btl_ofi_put_bare(module, endpoint, local_address, remote_address, local_handle,
                                    remote_handle, size);
    }
    return mca_btl_ofi_put_general(btl, endpoint, local_address, remote_address, local_handle,
                                   remote_handle, size, cbfunc, cbcontext, cbdata);
}

int mca_btl_ofi_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                    void *local_address, uint64_t remote_address,
                    mca_btl_base_registration_handle_t *local_handle,
                    mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
                    int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                    void *cbdata)
{
    (void) flags;
    (void) order;
    return mca_btl_ofi_rdma(btl, endpoint, MCA_BTL_OFI_RMA_GET, local_address, remote_address,
                            local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
}
