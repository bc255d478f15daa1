/*
 * btl/ofi gathered gets: small gets to one peer asked for together in one
 * message, whose answer carries all their bytes.
 *
 * osc/rdma splits a get with a derived datatype into one btl get per
 * contiguous piece, each with its callback, and waits for them all: a
 * column of a matrix of doubles is a get of 8 bytes per row, and a
 * provider's read takes about one exchange each however small. Gets of at
 * most module->getv_max bytes are therefore noted in a batch for their
 * peer and region instead (what to read, where it goes, whom to call);
 * the batch is asked for in one message when the next get does not fit,
 * when a get for another peer or region comes, at a flush, and at the
 * next progress pass, which is where osc/rdma waits for its gets. The
 * target checks every piece against the registration its key names (one
 * piece outside it refuses the whole message, as the provider refuses a
 * read) and answers with every piece's bytes, one after the other; the
 * origin copies them to their places and runs each get's callback, in the
 * order the gets were issued. A batch of one get is posted as the
 * provider's own read, which alone is faster than a message and its
 * answer.
 *
 * The message's completion object (counted in flight until the answer,
 * so that a flush waits for it) has mca_btl_ofi_getv_done for its
 * callback and the batch for its local address: a failure (the target
 * refused, the message could not be sent) reaches every get's callback
 * the way it reaches an emulated get's (mca_btl_ofi_rma_account).
 *
 * One batch per context, under its own lock (context->getv.lock, taken
 * only where threads may run in the component, always before the context
 * lock). Where gathered puts are (btl_ofi_module.c says where).
 */

#include "btl_ofi.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_rdma.h"

#include <inttypes.h>
#include <string.h>

#include "opal/util/proc.h"

/* Room in a batch for one more get of SIZE bytes: the request (its
 * descriptions) and the answer (the bytes) each fit one message. */
static inline bool mca_btl_ofi_getv_fits(const mca_btl_ofi_module_t *module,
                                         const mca_btl_ofi_getv_batch_t *batch, size_t size)
{
    return batch->count < MCA_BTL_OFI_GETV_MAX
           && sizeof(mca_btl_ofi_rma_msg_t) + (batch->count + 1) * sizeof(mca_btl_ofi_putv_piece_t)
                  <= module->msg_size
           && sizeof(mca_btl_ofi_rma_msg_t) + batch->bytes + size <= module->msg_size;
}

/* A get posted as the provider's read (a batch of one) completed: its
 * peer's count of such reads in flight goes down (an atomic to it waits
 * for them: mca_btl_ofi_getv_atomic), then the get's own callback. */
void mca_btl_ofi_getv_lone_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                                void *local_address,
                                mca_btl_base_registration_handle_t *local_handle, void *context,
                                void *cbdata, int status)
{
    mca_btl_ofi_getv_batch_t *batch = (mca_btl_ofi_getv_batch_t *) context;
    const mca_btl_ofi_getv_rec_t *rec = &batch->rec[0];
    (void) cbdata;

    (void) __atomic_sub_fetch(&batch->to->getv_lone_open, 1, __ATOMIC_RELAXED);
    if (NULL != rec->cbfunc) {
        rec->cbfunc(btl, endpoint, local_address, local_handle, rec->cbcontext, rec->cbdata,
                    status);
    }
    opal_free_list_return(&batch->module->getv_batches, &batch->super);
}

/* A batch of one get: posted as the provider's read, the batch kept until
 * it completes (mca_btl_ofi_getv_lone_done). False when it could not be
 * (then it goes as a message). */
static bool mca_btl_ofi_getv_one(mca_btl_ofi_context_t *context, mca_btl_ofi_getv_batch_t *batch)
{
    const mca_btl_ofi_getv_rec_t *rec = &batch->rec[0];
    mca_btl_ofi_completion_t *comp;

    comp = mca_btl_ofi_completion_alloc(&context->module->super, context, batch->to,
                                        rec->local_address, rec->local_handle,
                                        mca_btl_ofi_getv_lone_done, batch, NULL);
    if (NULL == comp) {
        return false;
    }
    (void) __atomic_add_fetch(&batch->to->getv_lone_open, 1, __ATOMIC_RELAXED);
    if (!mca_btl_ofi_rma_start_lone(context, comp, MCA_BTL_OFI_RMA_GET, batch->wire[0].len,
                                    batch->first_raddr, batch->key)) {
        (void) __atomic_sub_fetch(&batch->to->getv_lone_open, 1, __ATOMIC_RELAXED);
        return false;
    }
    return true;
}

/* Ask for CONTEXT's batch (there is one), AMO's request (or NULL) at the
 * end of its message; its gathering lock is held. A batch of one without
 * an atomic goes as the provider's read. */
static int mca_btl_ofi_getv_post(mca_btl_ofi_context_t *context, const mca_btl_ofi_amo_req_t *amo)
{
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_getv_batch_t *batch = context->getv.batch;
    mca_btl_ofi_endpoint_t *endpoint = batch->to, *to;
    mca_btl_ofi_context_t *via = context;
    mca_btl_ofi_completion_t *comp;
    int rc;

    context->getv.batch = NULL;
    if (1 == batch->count && NULL == amo && mca_btl_ofi_getv_one(context, batch)) {
        return OPAL_SUCCESS; /* the batch given back when the read completes */
    }
    context->getv.counters.get_count += batch->count;
    context->getv.counters.get_bytes += batch->bytes;
    context->getv.counters.get_gathered += batch->count;
    /* the message's completion: taken even from a full transmit queue
     * (the gets it carries were taken already) */
    comp = (mca_btl_ofi_completion_t *) opal_free_list_get(&context->completions);
    if (OPAL_UNLIKELY(NULL == comp)) {
        char info[256];

        snprintf(info, sizeof(info),
                 "btl/ofi on %s: out of memory for the completion of %u gathered gets from %s: "
                 "the job cannot continue",
                 opal_process_info.nodename, batch->count,
                 OPAL_NAME_PRINT(endpoint->proc->proc_name));
        mca_btl_ofi_module_fatal(module, endpoint->proc, info);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_ofi_completion_fill(comp, &module->super, context, endpoint, batch, NULL,
                                mca_btl_ofi_getv_done, NULL, NULL);
    comp->parked_kind = MCA_BTL_OFI_RMA_GETV;
    comp->parked_size = batch->bytes;
    comp->parked_raddr = 0;
    comp->parked_key = batch->key;
    comp->parts_status = OPAL_SUCCESS;
    comp->emu_next = batch->bytes;
    comp->emu_left = 1; /* its one answer */
    comp->emu_id = mca_btl_ofi_emu_request_add(module, comp);
    mca_btl_ofi_inflight(context, endpoint, 1);
    /* open until answered (mca_btl_ofi_rma_account) */
    (void) __atomic_add_fetch(&endpoint->getv_open, 1, __ATOMIC_RELAXED);
    /* as an emulated get: out of the transmit queue's count (its message
     * is counted as a send) */
    mca_btl_ofi_add64(&context->emulated, 1);

    memset(&batch->msg, 0, sizeof(batch->msg));
    batch->msg.hdr.type = MCA_BTL_OFI_MSG_GETV;
    batch->msg.hdr.flags = NULL != amo ? MCA_BTL_OFI_PUTV_AMO : 0;
    batch->msg.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    batch->msg.hdr.origin = mca_btl_ofi_component.my_name;
    batch->msg.req_id = comp->emu_id;
    batch->msg.key = batch->key;
    batch->msg.len = batch->bytes;
    batch->msg.pieces = batch->count;
    batch->msg.key_rail = batch->key_rail;
    to = mca_btl_ofi_route(endpoint, &via);
    /* the descriptions lie right behind the header (btl_ofi_getv.h) */
    rc = mca_btl_ofi_msg_send_copy(
        via, to, &batch->msg, sizeof(batch->msg) + batch->count * sizeof(mca_btl_ofi_putv_piece_t),
        amo, NULL != amo ? sizeof(*amo) : 0);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        /* no answer will come: counted answered with the error */
        mca_btl_ofi_rma_account(module, comp, 1, rc);
    }
    return rc;
}

/* Ask for CONTEXT's batch, if any; its gathering lock is held. */
static void mca_btl_ofi_getv_post_any(mca_btl_ofi_context_t *context)
{
    if (NULL != context->getv.batch) {
        (void) mca_btl_ofi_getv_post(context, NULL);
    }
}

/* Room for an atomic at the end of BATCH: its request in the message,
 * its answer in the answer's. */
static inline bool mca_btl_ofi_getv_amo_fits(const mca_btl_ofi_module_t *module,
                                             const mca_btl_ofi_getv_batch_t *batch)
{
    return sizeof(mca_btl_ofi_rma_msg_t) + batch->count * sizeof(mca_btl_ofi_putv_piece_t)
                   + sizeof(mca_btl_ofi_amo_req_t)
               <= module->msg_size
           && sizeof(mca_btl_ofi_rma_msg_t) + batch->bytes + sizeof(mca_btl_ofi_amo_resp_t)
                  <= module->msg_size;
}

int mca_btl_ofi_getv_atomic(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                            mca_btl_ofi_endpoint_t *endpoint, const mca_btl_ofi_amo_args_t *amo)
{
    mca_btl_ofi_getv_batch_t *batch;
    mca_btl_ofi_completion_t *comp;
    mca_btl_ofi_amo_req_t req;
    int rc;

    MCA_BTL_OFI_LOCK(&context->getv.lock);
    batch = context->getv.batch;
    if (NULL == batch || batch->to != endpoint) {
        MCA_BTL_OFI_UNLOCK(&context->getv.lock);
        /* the provider's reads keep no order with our messages: the
         * caller tries again after progress, once they completed */
        if (0 < __atomic_load_n(&endpoint->getv_lone_open, __ATOMIC_RELAXED)) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        return OPAL_ERR_NOT_FOUND; /* puts' turn (mca_btl_ofi_putv_atomic) */
    }
    if (!mca_btl_ofi_getv_amo_fits(module, batch)) {
        /* asked for alone (a message: a batch of one always has room, its
         * get at most msg_size / 4), the atomic goes behind it as a
         * message (mca_btl_ofi_putv_atomic sees getv_open) */
        (void) mca_btl_ofi_getv_post(context, NULL);
        MCA_BTL_OFI_UNLOCK(&context->getv.lock);
        return OPAL_ERR_NOT_FOUND;
    }
    comp = mca_btl_ofi_amo_prepare(module, context, endpoint, amo, &req);
    if (OPAL_UNLIKELY(NULL == comp)) {
        MCA_BTL_OFI_UNLOCK(&context->getv.lock);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* puts gathered for it leave first: the atomic follows them too */
    mca_btl_ofi_putv_send_to(context, endpoint);
    rc = mca_btl_ofi_getv_post(context, &req);
    MCA_BTL_OFI_UNLOCK(&context->getv.lock);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        mca_btl_ofi_amo_unprepare(module, context, endpoint, comp, &req);
    }
    return rc;
}

void mca_btl_ofi_getv_send(mca_btl_ofi_context_t *context)
{
    /* a try, as mca_btl_ofi_putv_send */
    if (0 == MCA_BTL_OFI_TRYLOCK(&context->getv.lock)) {
        mca_btl_ofi_getv_post_any(context);
        MCA_BTL_OFI_UNLOCK(&context->getv.lock);
    }
}

void mca_btl_ofi_getv_send_all(void)
{
    for (int m = 0; m < mca_btl_ofi_component.num_modules; ++m) {
        mca_btl_ofi_module_t *module = mca_btl_ofi_component.modules[m];

        if (NULL == module || 0 == module->getv_max) {
            continue;
        }
        for (int i = 0; i < module->num_contexts; ++i) {
            mca_btl_ofi_context_t *context = module->contexts + i;

            MCA_BTL_OFI_LOCK(&context->getv.lock);
            mca_btl_ofi_getv_post_any(context);
            MCA_BTL_OFI_UNLOCK(&context->getv.lock);
        }
    }
}

int mca_btl_ofi_getv_add(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         mca_btl_base_registration_handle_t *local_handle,
                         mca_btl_base_registration_handle_t *remote_handle, size_t size,
                         mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    const uint64_t key = mca_btl_ofi_rkey(endpoint, remote_handle);
    mca_btl_ofi_getv_batch_t *batch;
    mca_btl_ofi_getv_rec_t *rec;

    MCA_BTL_OFI_LOCK(&context->getv.lock);
    batch = context->getv.batch;
    if (NULL != batch
        && (batch->to != endpoint || batch->key != key
            || !mca_btl_ofi_getv_fits(module, batch, size))) {
        (void) mca_btl_ofi_getv_post(context, NULL);
        batch = NULL;
    }
    if (NULL == batch) {
        batch = (mca_btl_ofi_getv_batch_t *) opal_free_list_get(&module->getv_batches);
        if (OPAL_UNLIKELY(NULL == batch)) {
            MCA_BTL_OFI_UNLOCK(&context->getv.lock);
            return OPAL_ERR_NOT_AVAILABLE; /* the caller posts it as the provider's */
        }
        batch->module = module;
        batch->to = endpoint;
        batch->key = key;
        batch->key_rail = (uint32_t) endpoint->rail.peer_rail;
        batch->count = 0;
        batch->bytes = 0;
        batch->first_raddr = mca_btl_ofi_remote_addr(module, remote_address, remote_handle);
        context->getv.batch = batch;
    }
    batch->wire[batch->count].addr = remote_address;
    batch->wire[batch->count].len = size;
    rec = &batch->rec[batch->count];
    rec->local_address = local_address;
    rec->local_handle = local_handle;
    rec->cbfunc = cbfunc;
    rec->cbcontext = cbcontext;
    rec->cbdata = cbdata;
    ++batch->count;
    batch->bytes += size;
    MCA_BTL_OFI_UNLOCK(&context->getv.lock);
    return OPAL_SUCCESS;
}

void mca_btl_ofi_getv_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                           void *local_address, mca_btl_base_registration_handle_t *local_handle,
                           void *context, void *cbdata, int status)
{
    mca_btl_ofi_getv_batch_t *batch = (mca_btl_ofi_getv_batch_t *) local_address;
    (void) local_handle;
    (void) context;
    (void) cbdata;

    for (uint32_t i = 0; i < batch->count; ++i) {
        const mca_btl_ofi_getv_rec_t *rec = &batch->rec[i];

        if (NULL != rec->cbfunc) {
            rec->cbfunc(btl, endpoint, rec->local_address, rec->local_handle, rec->cbcontext,
                        rec->cbdata, status);
        }
    }
    opal_free_list_return(&batch->module->getv_batches, &batch->super);
}

mca_btl_base_rdma_completion_fn_t mca_btl_ofi_getv_owner(const void *batch)
{
    return ((const mca_btl_ofi_getv_batch_t *) batch)->rec[0].cbfunc;
}

/* The atomic at the end of a message of gathered gets: applied once the
 * gets' bytes were copied into the answer, its own answer written behind
 * them (mca_btl_ofi_msg_send_gather_tail) */
typedef struct {
    mca_btl_ofi_module_t *module;
    mca_btl_ofi_amo_req_t req;
    mca_btl_ofi_amo_resp_t resp;
    bool applied;
} mca_btl_ofi_getv_amo_t;

static void mca_btl_ofi_getv_amo_apply(void *arg, void *at)
{
    mca_btl_ofi_getv_amo_t *amo = (mca_btl_ofi_getv_amo_t *) arg;

    mca_btl_ofi_amo_apply_req(amo->module, &amo->req, &amo->resp);
    amo->applied = true;
    if (NULL != at) {
        memcpy(at, &amo->resp, sizeof(amo->resp));
    }
}

void mca_btl_ofi_getv_serve(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *req = (const mca_btl_ofi_rma_msg_t *) buf;
    const mca_btl_ofi_putv_piece_t *pieces = (const mca_btl_ofi_putv_piece_t *) (req + 1);
    const bool with_amo = len >= sizeof(*req) && (req->hdr.flags & MCA_BTL_OFI_PUTV_AMO);
    const size_t extra = with_amo ? sizeof(mca_btl_ofi_amo_req_t) : 0;
    mca_btl_ofi_getv_amo_t amo = {.module = context->module, .applied = false};
    mca_btl_ofi_endpoint_t *origin, *to;
    mca_btl_ofi_putv_amo_resp_t failed;
    mca_btl_ofi_rma_msg_t resp;
    int rc;

    if (len < sizeof(*req) + extra || (len - sizeof(*req) - extra) / sizeof(*pieces) != req->pieces
        || (len - sizeof(*req) - extra) % sizeof(*pieces) != 0) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped a malformed message of gathered gets");
        return;
    }
    origin = mca_btl_ofi_pieces_check(context->module, req, pieces, MCA_RCACHE_ACCESS_REMOTE_READ,
                                      &resp);
    if (NULL == origin) {
        return;
    }
    if (with_amo) {
        /* the atomic after the gets (an osc/rdma release or complete):
         * copied out, it follows pieces of any number */
        memcpy(&amo.req, (const char *) (pieces + req->pieces), sizeof(amo.req));
        resp.hdr.flags = MCA_BTL_OFI_PUTV_AMO;
    }
    /* the answer is one message too */
    if (OPAL_SUCCESS == resp.status
        && req->len + (with_amo ? sizeof(amo.resp) : 0)
               > context->module->msg_size - sizeof(resp)) {
        resp.status = OPAL_ERR_BAD_PARAM;
    }
    /* over the rail that works, if this one's link to it failed */
    to = mca_btl_ofi_route(origin, &context);
    if (OPAL_SUCCESS == resp.status) {
        rc = mca_btl_ofi_msg_send_gather_tail(context, to, &resp, sizeof(resp), pieces, req->pieces,
                                              with_amo ? mca_btl_ofi_getv_amo_apply : NULL, &amo,
                                              with_amo ? sizeof(amo.resp) : 0);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            /* the bytes could not go: the origin's gets fail, told so */
            resp.status = rc;
        }
    }
    if (OPAL_SUCCESS != resp.status) {
        resp.len = 0;
        if (with_amo) {
            /* the atomic is the caller's own operation: applied (once)
             * and answered even where the gets failed */
            if (!amo.applied) {
                mca_btl_ofi_getv_amo_apply(&amo, NULL);
            }
            failed.resp = resp;
            failed.amo = amo.resp;
            mca_btl_ofi_msg_reply(context, to, &failed, sizeof(failed));
        } else {
            mca_btl_ofi_msg_reply(context, to, &resp, sizeof(resp));
        }
    }
    OBJ_RELEASE(origin);
}

/* The gets of COMP answered by RESP: their bytes to their places, then
 * the accounting that runs their callbacks. */
static void mca_btl_ofi_getv_answered(mca_btl_ofi_module_t *module, mca_btl_ofi_completion_t *comp,
                                      const mca_btl_ofi_rma_msg_t *resp)
{
    mca_btl_ofi_getv_batch_t *batch;
    const char *data;

    if (OPAL_LIKELY(OPAL_SUCCESS == resp->status)) {
        batch = (mca_btl_ofi_getv_batch_t *) comp->local_address;
        data = (const char *) (resp + 1);
        for (uint32_t i = 0; i < batch->count; ++i) {
            memcpy(batch->rec[i].local_address, data, batch->wire[i].len);
            data += batch->wire[i].len;
        }
    } else if (OPAL_ERR_BAD_PARAM == resp->status) {
        MCA_BTL_OFI_SHOW_HELP("rma refused", "get", opal_process_info.nodename,
                              OPAL_NAME_PRINT(comp->endpoint->proc->proc_name));
    }
    /* its one answer (emu_left 1): completed (the gets' callbacks run in
     * mca_btl_ofi_getv_done), or failed from progress */
    mca_btl_ofi_rma_account(module, comp, 1, resp->status);
}

void mca_btl_ofi_getv_answer(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *resp = (const mca_btl_ofi_rma_msg_t *) buf;
    mca_btl_ofi_module_t *module = mca_btl_ofi_emu_request_module(context, resp->req_id);
    /* the answer of an atomic that followed the gets ends it */
    const size_t extra =
        (resp->hdr.flags & MCA_BTL_OFI_PUTV_AMO) ? sizeof(mca_btl_ofi_amo_resp_t) : 0;
    mca_btl_ofi_completion_t *comp = NULL;
    mca_btl_ofi_amo_resp_t amo;

    if (OPAL_UNLIKELY(len < sizeof(*resp) + extra)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped a short answer to gathered gets (%zu bytes)", len);
        return;
    }
    len -= extra;
    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_get_value_uint64(&module->emu_requests, resp->req_id, (void **) &comp);
    if (NULL != comp
        && (MCA_BTL_OFI_RMA_GETV != comp->parked_kind
            || (OPAL_SUCCESS == resp->status
                && (resp->len != comp->parked_size || len - sizeof(*resp) != resp->len)))) {
        comp = NULL;
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (NULL == comp) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped an answer to gathered gets with unknown id %" PRIu64,
                            resp->req_id);
    } else {
        mca_btl_ofi_getv_answered(module, comp, resp);
    }
    if (0 != extra) {
        /* then the atomic that followed the gets (its own id) */
        memcpy(&amo, (const char *) buf + len, sizeof(amo));
        mca_btl_ofi_amo_answer(context, &amo, sizeof(amo));
    }
}
