/*
 * btl/ofi gathered puts: small puts without callback to one peer, sent
 * together as one message that the target's progress stores.
 *
 * osc/rdma splits a put with a derived datatype into one btl put per
 * contiguous piece: a column of a matrix of doubles is a put of 8 bytes
 * per row. A provider's RMA takes about one exchange per put whatever its
 * size (tcp;ofi_rxm here: 1024 puts of 8 bytes and a flush, 10 ms on one
 * node, 17 ms across the simulated hosts, where Open MPI's osc/pt2pt,
 * which packs the datatype into one message, took 0.07 ms). Puts without
 * callback (osc/rdma's, completed by the next flush) of at most
 * module->putv_max bytes are therefore copied into a message for their
 * peer and region instead: the message leaves when the next piece does
 * not fit, when a put for another peer or region comes, at a flush, and
 * at the next progress pass, so that a run of puts issued back to back
 * travels together and none waits long. The target checks every piece
 * against the registration its key names (a piece outside it refuses the
 * whole message, nothing stored, as the provider refuses a put), stores
 * them and answers once; the message's completion object counts as one
 * operation in flight until then, so a flush waits for every piece to be
 * in the target's memory, as for a put of the provider's.
 *
 * One gathering per context, under its own lock (context->putv.lock,
 * taken only where threads may run in the component, as the context lock
 * is, and always before that one): MPI_THREAD_MULTIPLE programs gather
 * too (ARMCI-MPI asks for it, and its strided puts are such puts).
 */

#include "btl_ofi.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_answers.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_wire.h"

#include <inttypes.h>
#include <string.h>

#include "opal/util/proc.h"

/* the most pieces one message can describe: every piece at least a byte */
static inline size_t mca_btl_ofi_putv_room(const mca_btl_ofi_module_t *module)
{
    return module->msg_size - sizeof(mca_btl_ofi_rma_msg_t);
}

/* Room for CONTEXT's gathering, taken at its first put (false: none, the
 * put goes as the provider's). */
static bool mca_btl_ofi_putv_buffers(mca_btl_ofi_context_t *context)
{
    size_t room = mca_btl_ofi_putv_room(context->module);

    context->putv.head = malloc(sizeof(mca_btl_ofi_rma_msg_t) + room);
    context->putv.data = malloc(room);
    if (NULL == context->putv.head || NULL == context->putv.data) {
        free(context->putv.head);
        free(context->putv.data);
        context->putv.head = context->putv.data = NULL;
        return false;
    }
    return true;
}

bool mca_btl_ofi_putv_prepare(mca_btl_ofi_module_t *module)
{
    for (int i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;
        bool ok;

        MCA_BTL_OFI_LOCK(&context->putv.lock);
        ok = NULL != context->putv.head || mca_btl_ofi_putv_buffers(context);
        MCA_BTL_OFI_UNLOCK(&context->putv.lock);
        if (OPAL_UNLIKELY(!ok)) {
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                "out of memory for the buffers small puts are gathered in "
                                "(%zu bytes per context): puts go one by one",
                                2 * mca_btl_ofi_putv_room(module));
            module->putv_max = 0;
            return false;
        }
    }
    return true;
}

void mca_btl_ofi_putv_fini(mca_btl_ofi_context_t *context)
{
    free(context->putv.head);
    free(context->putv.data);
    context->putv.head = context->putv.data = NULL;
    context->putv.to = NULL;
    context->putv.count = 0;
    context->putv.bytes = 0;
}

/* Send what CONTEXT gathered (something is), and AMO's request after the
 * data when not NULL; its gathering lock is held. An error only when the
 * message could not be sent (the puts then fail through their completion,
 * the atomic is the caller's to undo). */
static int mca_btl_ofi_putv_post(mca_btl_ofi_context_t *context, const mca_btl_ofi_amo_req_t *amo)
{
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_endpoint_t *endpoint = context->putv.to, *to;
    mca_btl_ofi_rma_msg_t *msg = (mca_btl_ofi_rma_msg_t *) context->putv.head;
    mca_btl_ofi_context_t *via = context;
    mca_btl_ofi_completion_t *comp;
    const uint32_t count = context->putv.count;
    const size_t bytes = context->putv.bytes;
    const uint64_t key = context->putv.key;
    int rc;

    context->putv.to = NULL;
    context->putv.count = 0;
    context->putv.bytes = 0;
    context->putv.counters.put_count += count;
    context->putv.counters.put_bytes += bytes;
    context->putv.counters.put_gathered += count;

    /* the message's completion: counted in flight until its answer, so
     * that a flush waits for it; taken even from a full transmit queue
     * (the puts it carries were taken already) */
    comp = (mca_btl_ofi_completion_t *) opal_free_list_get(&context->completions);
    if (OPAL_UNLIKELY(NULL == comp)) {
        char info[256];

        /* the puts it carries were taken: without it they are lost */
        snprintf(info, sizeof(info),
                 "btl/ofi on %s: out of memory for the completion of %u gathered puts to %s: "
                 "the job cannot continue",
                 opal_process_info.nodename, count, OPAL_NAME_PRINT(endpoint->proc->proc_name));
        mca_btl_ofi_module_fatal(module, endpoint->proc, info);
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_ofi_completion_fill(comp, &module->super, context, endpoint, NULL, NULL, NULL, NULL,
                                NULL);
    comp->parked_kind = MCA_BTL_OFI_RMA_PUTV;
    comp->parked_size = bytes;
    comp->parked_raddr = 0;
    comp->parked_key = key;
    comp->parts_status = OPAL_SUCCESS;
    comp->emu_next = bytes;
    comp->emu_left = 1; /* its one answer */
    comp->emu_id = mca_btl_ofi_emu_request_add(module, comp);
    mca_btl_ofi_inflight(context, endpoint, 1);
    /* open until answered (mca_btl_ofi_rma_account) */
    (void) __atomic_add_fetch(&endpoint->putv_open, 1, __ATOMIC_RELAXED);
    /* as an emulated put: out of the transmit queue's count (its message
     * is counted as a send) */
    mca_btl_ofi_add64(&context->emulated, 1);

    msg->hdr.type = MCA_BTL_OFI_MSG_PUTV;
    msg->hdr.op = 0;
    msg->hdr.flags = NULL != amo ? MCA_BTL_OFI_PUTV_AMO : 0;
    msg->hdr.rail = MCA_BTL_OFI_NO_SEQ;
    msg->hdr.seq = 0;
    msg->hdr.origin = mca_btl_ofi_component.my_name;
    msg->req_id = comp->emu_id;
    msg->addr = 0;
    msg->key = key;
    msg->len = bytes;
    msg->status = 0;
    msg->pieces = count;
    msg->key_rail = context->putv.key_rail;
    msg->pad = 0;
    to = mca_btl_ofi_route(endpoint, &via);
    {
        const mca_btl_ofi_putv_piece_t tail[2] = {
            {.addr = (uint64_t) (uintptr_t) context->putv.data, .len = bytes},
            {.addr = (uint64_t) (uintptr_t) amo, .len = sizeof(*amo)}};

        rc = mca_btl_ofi_msg_send_gather(via, to, msg,
                                         sizeof(*msg) + count * sizeof(mca_btl_ofi_putv_piece_t),
                                         tail, NULL != amo ? 2 : 1);
    }
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        /* no answer will come: counted answered with the error, as an
         * emulated put's piece that could not be sent */
        mca_btl_ofi_rma_account(module, comp, 1, rc);
        return rc;
    }
    if (NULL != amo) {
        ++context->putv.counters.atomic_count;
    }
    return OPAL_SUCCESS;
}

/* At a flush, one piece gathered alone: posted as the provider's own put,
 * which is faster than a message and its answer (tcp;ofi_rxm, 8 bytes and
 * a flush: 12 against 16.5 us on one node). False when it could not be
 * (then it goes as a message; a refusal for good is reported first). The
 * gathering lock is held.
 *
 * With one thread, from the gathering buffer and without a completion
 * object, as put_bare posts: the flush that called this waits for it, so
 * the buffer is not written again before it completes. Where other
 * threads may gather on this context meanwhile, the piece is copied into
 * the put's completion object (room for 16 bytes, the common case of one
 * word), which lives until the put completes; a larger one goes as a
 * message. */
static bool mca_btl_ofi_putv_one(mca_btl_ofi_context_t *context)
{
    mca_btl_ofi_endpoint_t *endpoint = context->putv.to;
    const mca_btl_ofi_putv_piece_t *piece =
        (const mca_btl_ofi_putv_piece_t *) (context->putv.head + sizeof(mca_btl_ofi_rma_msg_t));
    mca_btl_ofi_completion_t *comp;
    ssize_t rc = -FI_EAGAIN;

    if (!mca_btl_ofi_context_has_room(context) || context->module->bare_limit <= piece->len) {
        return false;
    }
    if (mca_btl_ofi_component.locking) {
        if (piece->len > sizeof(comp->operand)
            || NULL
                   == (comp = mca_btl_ofi_completion_alloc(&context->module->super, context,
                                                           endpoint, NULL, NULL, NULL, NULL,
                                                           NULL))) {
            return false;
        }
        memcpy(comp->operand, context->putv.data, piece->len);
        comp->local_address = comp->operand;
        if (!mca_btl_ofi_rma_start_lone(context, comp, MCA_BTL_OFI_RMA_PUT, piece->len,
                                        context->putv.first_raddr, context->putv.key)) {
            return false;
        }
    } else {
        mca_btl_ofi_inflight(context, endpoint, 1);
        MCA_BTL_OFI_LOCK(&context->lock);
        if (!context->parked) {
            rc = mca_btl_ofi_rdma_post(context, MCA_BTL_OFI_RMA_PUT, context->putv.data, NULL,
                                       endpoint->addrs[context->index], piece->len,
                                       context->putv.first_raddr, context->putv.key,
                                       &endpoint->bare.ofi_ctx);
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
        if (0 != rc) {
            /* said here, where it is seen; the piece itself still goes */
            (void) mca_btl_ofi_post_refused(context->module, endpoint, "fi_write", rc);
            mca_btl_ofi_inflight(context, endpoint, -1);
            return false;
        }
    }
    context->putv.to = NULL;
    context->putv.count = 0;
    context->putv.bytes = 0;
    return true;
}

void mca_btl_ofi_putv_send_all(void)
{
    for (int m = 0; m < mca_btl_ofi_component.num_modules; ++m) {
        mca_btl_ofi_module_t *module = mca_btl_ofi_component.modules[m];

        if (NULL == module || 0 == module->putv_max) {
            continue;
        }
        for (int i = 0; i < module->num_contexts; ++i) {
            mca_btl_ofi_context_t *context = module->contexts + i;

            MCA_BTL_OFI_LOCK(&context->putv.lock);
            if (0 != context->putv.count
                && (1 != context->putv.count || !mca_btl_ofi_putv_one(context))) {
                (void) mca_btl_ofi_putv_post(context, NULL);
            }
            MCA_BTL_OFI_UNLOCK(&context->putv.lock);
        }
    }
}

int mca_btl_ofi_putv_atomic(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                            mca_btl_ofi_endpoint_t *endpoint, const mca_btl_ofi_amo_args_t *amo)
{
    mca_btl_ofi_completion_t *comp;
    mca_btl_ofi_amo_req_t req;
    bool open;
    int rc;

    MCA_BTL_OFI_LOCK(&context->putv.lock);
    if (0 != context->putv.count && context->putv.to == endpoint) {
        /* the common case (a lock released after puts): in their message,
         * one exchange for both */
        if ((context->putv.count + 1) * sizeof(mca_btl_ofi_putv_piece_t) + context->putv.bytes
                + sizeof(req)
            <= mca_btl_ofi_putv_room(module)) {
            comp = mca_btl_ofi_amo_prepare(module, context, endpoint, amo, &req);
            if (OPAL_UNLIKELY(NULL == comp)) {
                MCA_BTL_OFI_UNLOCK(&context->putv.lock);
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            if (amo->flags & MCA_BTL_OFI_ATOMIC_FLAG_UNHURRIED) {
                /* its answer may wait for the target's next message to us */
                req.hdr.flags |= MCA_BTL_OFI_AMO_UNHURRIED;
            }
            rc = mca_btl_ofi_putv_post(context, &req);
            MCA_BTL_OFI_UNLOCK(&context->putv.lock);
            if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
                mca_btl_ofi_amo_unprepare(module, context, endpoint, comp, &req);
            }
            return rc;
        }
        (void) mca_btl_ofi_putv_post(context, NULL);
    }
    open = 0 < __atomic_load_n(&endpoint->putv_open, __ATOMIC_RELAXED)
           || 0 < __atomic_load_n(&endpoint->getv_open, __ATOMIC_RELAXED);
    MCA_BTL_OFI_UNLOCK(&context->putv.lock);
    if (!open) {
        return OPAL_ERR_NOT_FOUND; /* nothing to follow: the provider's own */
    }
    /* a message of its own, behind theirs */
    return mca_btl_ofi_amo_request(module, endpoint, amo);
}

void mca_btl_ofi_putv_send_to(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *endpoint)
{
    MCA_BTL_OFI_LOCK(&context->putv.lock);
    if (0 != context->putv.count && context->putv.to == endpoint) {
        (void) mca_btl_ofi_putv_post(context, NULL);
    }
    MCA_BTL_OFI_UNLOCK(&context->putv.lock);
}

void mca_btl_ofi_putv_send(mca_btl_ofi_context_t *context)
{
    /* a try: the count is read under the lock only (a look without it
     * raced with mca_btl_ofi_putv_add: helgrind), and a progress pass
     * never waits behind a thread that is gathering */
    if (0 != MCA_BTL_OFI_TRYLOCK(&context->putv.lock)) {
        return;
    }
    if (0 != context->putv.count) {
        (void) mca_btl_ofi_putv_post(context, NULL);
    }
    MCA_BTL_OFI_UNLOCK(&context->putv.lock);
}

int mca_btl_ofi_putv_add(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                         void *local_address, uint64_t remote_address,
                         mca_btl_base_registration_handle_t *remote_handle, size_t size)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    const uint64_t key = mca_btl_ofi_rkey(endpoint, remote_handle);
    mca_btl_ofi_putv_piece_t *piece;

    MCA_BTL_OFI_LOCK(&context->putv.lock);
    if (OPAL_UNLIKELY(NULL == context->putv.head) && !mca_btl_ofi_putv_buffers(context)) {
        MCA_BTL_OFI_UNLOCK(&context->putv.lock);
        return OPAL_ERR_NOT_AVAILABLE; /* the caller posts it as the provider's */
    }
    if (0 != context->putv.count
        && (context->putv.to != endpoint || context->putv.key != key
            || (context->putv.count + 1) * sizeof(*piece) + context->putv.bytes + size
                   > mca_btl_ofi_putv_room(module))) {
        (void) mca_btl_ofi_putv_post(context, NULL);
    }
    if (0 == context->putv.count) {
        context->putv.to = endpoint;
        context->putv.key = key;
        context->putv.key_rail = (uint32_t) endpoint->rail.peer_rail;
        context->putv.first_raddr = mca_btl_ofi_remote_addr(module, remote_address, remote_handle);
    }
    piece = (mca_btl_ofi_putv_piece_t *) (context->putv.head + sizeof(mca_btl_ofi_rma_msg_t))
            + context->putv.count;
    piece->addr = remote_address;
    piece->len = size;
    memcpy(context->putv.data + context->putv.bytes, local_address, size);
    ++context->putv.count;
    context->putv.bytes += size;
    MCA_BTL_OFI_UNLOCK(&context->putv.lock);
    return OPAL_SUCCESS;
}

mca_btl_ofi_endpoint_t *mca_btl_ofi_pieces_check(mca_btl_ofi_module_t *module,
                                                 const mca_btl_ofi_rma_msg_t *req,
                                                 const mca_btl_ofi_putv_piece_t *pieces,
                                                 int32_t need, mca_btl_ofi_rma_msg_t *resp)
{
    const bool put = MCA_BTL_OFI_MSG_PUTV == req->hdr.type;
    mca_btl_ofi_endpoint_t *origin = mca_btl_ofi_endpoint_named(module, req->hdr.origin);
    mca_btl_ofi_reg_t *reg;
    uint64_t sum = 0;

    if (NULL == origin) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped gathered %s from a process we do not know",
                            put ? "puts" : "gets");
        return NULL;
    }
    reg = mca_btl_ofi_reg_by_key(module, req->key_rail, req->key);

    memset(resp, 0, sizeof(*resp));
    resp->hdr.type = MCA_BTL_OFI_MSG_RMA_RESP;
    resp->hdr.op = req->hdr.type;
    resp->hdr.rail = MCA_BTL_OFI_NO_SEQ;
    resp->hdr.origin = mca_btl_ofi_component.my_name;
    resp->req_id = req->req_id;
    resp->len = req->len;
    resp->pieces = req->pieces;
    resp->status = OPAL_SUCCESS;
    if (NULL == reg || !(reg->super.access_flags & (need | MCA_RCACHE_ACCESS_REMOTE_ATOMIC))) {
        resp->status = OPAL_ERR_BAD_PARAM;
    }
    /* every piece inside the registration, their lengths the total */
    for (uint32_t i = 0; OPAL_SUCCESS == resp->status && i < req->pieces; ++i) {
        const uint64_t a = pieces[i].addr, n = pieces[i].len;

        if (n > req->len - sum || a < (uint64_t) (uintptr_t) reg->super.base
            || (n > 0 && n - 1 > (uint64_t) (uintptr_t) reg->super.bound - a)) {
            resp->status = OPAL_ERR_BAD_PARAM;
        }
        sum += n;
    }
    if (OPAL_SUCCESS == resp->status && sum != req->len) {
        resp->status = OPAL_ERR_BAD_PARAM;
    }
    return origin;
}

void mca_btl_ofi_putv_serve(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *req = (const mca_btl_ofi_rma_msg_t *) buf;
    const mca_btl_ofi_putv_piece_t *pieces = (const mca_btl_ofi_putv_piece_t *) (req + 1);
    const size_t extra = (req->hdr.flags & MCA_BTL_OFI_PUTV_AMO) ? sizeof(mca_btl_ofi_amo_req_t) : 0;
    mca_btl_ofi_endpoint_t *origin, *to;
    mca_btl_ofi_putv_amo_resp_t answer;
    mca_btl_ofi_rma_msg_t resp;
    const char *data;

    if (len < sizeof(*req) || (len - sizeof(*req)) / sizeof(*pieces) < req->pieces
        || len - sizeof(*req) - req->pieces * sizeof(*pieces) != req->len + extra) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a malformed message of gathered puts");
        return;
    }
    /* every piece checked before any is stored */
    origin = mca_btl_ofi_pieces_check(context->module, req, pieces, MCA_RCACHE_ACCESS_REMOTE_WRITE,
                                      &resp);
    if (NULL == origin) {
        return;
    }
    if (OPAL_SUCCESS == resp.status) {
        data = (const char *) (pieces + req->pieces);
        for (uint32_t i = 0; i < req->pieces; ++i) {
            memcpy((void *) (uintptr_t) pieces[i].addr, data, pieces[i].len);
            data += pieces[i].len;
        }
    }
    /* over the rail that works, if this one's link to it failed */
    to = mca_btl_ofi_route(origin, &context);
    if (0 != extra) {
        /* the atomic after them, both answered in one message */
        mca_btl_ofi_amo_req_t amo;

        memcpy(&amo, (const char *) (pieces + req->pieces) + req->len, sizeof(amo));
        mca_btl_ofi_amo_apply_req(context->module, &amo, &answer.amo);
        answer.resp = resp;
        answer.resp.hdr.flags = MCA_BTL_OFI_PUTV_AMO;
        if (amo.hdr.flags & MCA_BTL_OFI_AMO_UNHURRIED) {
            mca_btl_ofi_answer_hold(context, to, &answer);
        } else {
            mca_btl_ofi_msg_reply(context, to, &answer, sizeof(answer));
        }
    } else {
        mca_btl_ofi_msg_reply(context, to, &resp, sizeof(resp));
    }
    OBJ_RELEASE(origin);
}

void mca_btl_ofi_putv_answer(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *resp = (const mca_btl_ofi_rma_msg_t *) buf;
    mca_btl_ofi_module_t *module = mca_btl_ofi_emu_request_module(context, resp->req_id);
    mca_btl_ofi_completion_t *comp = NULL;

    (void) len; /* checked by the caller, but for the atomic's part */
    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_get_value_uint64(&module->emu_requests, resp->req_id, (void **) &comp);
    if (NULL != comp
        && (MCA_BTL_OFI_RMA_PUTV != comp->parked_kind || resp->len != comp->parked_size)) {
        comp = NULL;
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (NULL == comp) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped an answer to gathered puts with unknown id %" PRIu64,
                            resp->req_id);
    } else {
        if (OPAL_UNLIKELY(OPAL_ERR_BAD_PARAM == resp->status)) {
            MCA_BTL_OFI_SHOW_HELP("rma refused", "put", opal_process_info.nodename,
                                  OPAL_NAME_PRINT(comp->endpoint->proc->proc_name));
        }
        /* its one answer (emu_left 1): completed, or failed from progress */
        mca_btl_ofi_rma_account(module, comp, 1, resp->status);
    }
    /* then the atomic that followed the puts (its own id, looked up anew) */
    if (resp->hdr.flags & MCA_BTL_OFI_PUTV_AMO) {
        mca_btl_ofi_amo_answer(context, resp + 1, len - sizeof(*resp));
    }
}
