/*
 * btl/ofi emulated RMA and atomics: puts, gets and atomics carried as
 * messages that the target's progress serves.
 *
 * Where the provider's own RMA loses data (udp;ofi_rxd under floods,
 * MCA_BTL_OFI_QUIRK_RMA, or btl_ofi_emulate_rma 1) or its atomics cannot be
 * used (fetching atomics crash in udp;ofi_rxd of libfabric 1.17; with
 * several rails, where a numbered message caught on a failed link can be
 * sent again), the origin sends requests and the target answers them from
 * its progress loop (btl_ofi_frag.c hands both sides their messages). Every
 * request in flight is registered under an id that its answer carries
 * (mca_btl_ofi_emu_request_add): one registry for atomics, puts and gets.
 */

#include "btl_ofi.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_putv.h"

#include <inttypes.h>
#include <string.h>

#include "opal/util/error.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

/* ------------------------------------------------------- emulated RMA */

/*
 * Emulated puts and gets (module->rma_emulated). Where the provider's RMA
 * loses data (udp;ofi_rxd, MCA_BTL_OFI_QUIRK_RMA) a put travels as
 * messages of rma_chunk bytes, each stored by the target's progress into
 * the registration it names and answered once stored (the pieces of a
 * batch together, mca_btl_ofi_rma_hold); a get asks for up to a window of
 * pieces per request, which the target answers with the bytes, in
 * messages of rma_chunk. The
 * operation completes (its callback runs, flush stops waiting) once
 * responses covering every byte arrived, so a completed put is in the
 * target's memory. With several rails the messages are numbered like the
 * pml's: one caught on a link that fails is sent again on another and
 * taken once.
 */

void mca_btl_ofi_rma_account(mca_btl_ofi_module_t *module, mca_btl_ofi_completion_t *comp,
                             size_t bytes, int status)
{
    bool done;

    MCA_BTL_OFI_LOCK(&module->lock);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != status) && OPAL_SUCCESS == comp->parts_status) {
        comp->parts_status = status;
    }
    comp->emu_left -= bytes;
    done = 0 == comp->emu_left;
    if (done) {
        (void) opal_hash_table_remove_value_uint64(&module->emu_requests, comp->emu_id);
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (!done) {
        return;
    }
    if (MCA_BTL_OFI_RMA_PUTV == comp->parked_kind) {
        (void) __atomic_sub_fetch(&comp->endpoint->putv_open, 1, __ATOMIC_RELAXED);
    } else if (MCA_BTL_OFI_RMA_GETV == comp->parked_kind) {
        (void) __atomic_sub_fetch(&comp->endpoint->getv_open, 1, __ATOMIC_RELAXED);
    }
    mca_btl_ofi_add64(&comp->context->emulated, -1);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != comp->parts_status)) {
        /* this may run on the put's or get's own path (a piece that could
         * not be sent), which never stops the job itself: the next
         * progress pass completes it (mca_btl_ofi_rma_failures) */
        MCA_BTL_OFI_LOCK(&module->lock);
        opal_list_append(&module->emu_failed, &comp->super.super);
        MCA_BTL_OFI_UNLOCK(&module->lock);
        module->deferred = true;
        return;
    }
    mca_btl_ofi_completion_finish(comp, OPAL_SUCCESS);
}

void mca_btl_ofi_rma_failures(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_completion_t *comp;

    while (true) {
        MCA_BTL_OFI_LOCK(&module->lock);
        comp = (mca_btl_ofi_completion_t *) opal_list_remove_first(&module->emu_failed);
        MCA_BTL_OFI_UNLOCK(&module->lock);
        if (NULL == comp) {
            return;
        }
        /* as a failed completion of the provider's own would be */
        mca_btl_ofi_rdma_failed_because(comp->context, &comp->op,
                                        OPAL_ERR_BAD_PARAM == comp->parts_status
                                            ? "the target refused the range"
                                            : opal_strerror(comp->parts_status));
        mca_btl_ofi_completion_finish(comp, comp->parts_status);
    }
}

/* The messages (window places) LEN bytes of an emulated put or get take:
 * one per rma_chunk bytes. */
static inline uint32_t mca_btl_ofi_rma_pieces(const mca_btl_ofi_module_t *module, size_t len)
{
    return len <= module->rma_chunk
               ? 1
               : (uint32_t) ((len + module->rma_chunk - 1) / module->rma_chunk);
}

/* Send what ENDPOINT's window lets through of the operations waiting on
 * it: a put's bytes, one piece per message, or a get's request for them.
 * A piece whose message cannot be sent is counted answered, with the
 * error. */
static void mca_btl_ofi_rma_pump(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint)
{
    struct {
        mca_btl_ofi_completion_t *comp;
        size_t off, len;
    } batch[MCA_BTL_OFI_EMU_WINDOW];
    mca_btl_ofi_context_t *via = mca_btl_ofi_context_get(module);
    mca_btl_ofi_endpoint_t *to;
    mca_btl_ofi_rma_msg_t msg;
    int count = 0, i, rc;

    MCA_BTL_OFI_LOCK(&module->lock);
    while (endpoint->emu.credits > 0 && count < MCA_BTL_OFI_EMU_WINDOW
           && !opal_list_is_empty(&endpoint->emu.waiting)) {
        mca_btl_ofi_completion_t *comp =
            mca_btl_ofi_completion_from_track(opal_list_get_first(&endpoint->emu.waiting));
        size_t left = comp->parked_size - comp->emu_next;
        bool put = MCA_BTL_OFI_RMA_PUT == comp->parked_kind;
        /* a put's piece is one message; a get asks for as many pieces
         * as the window has room for, in one request */
        size_t most = module->rma_chunk * (put ? 1 : (size_t) endpoint->emu.credits);
        size_t len = left < most ? left : most;

        /* a get waits until half the window is free again (the answers
         * in flight call this again), else the answers coming back one
         * by one would each start a request of one piece */
        if (!put && len < left && endpoint->emu.credits < MCA_BTL_OFI_EMU_WINDOW / 2) {
            break;
        }

        batch[count].comp = comp;
        batch[count].off = comp->emu_next;
        batch[count].len = len;
        comp->emu_next += len;
        ++count;
        endpoint->emu.credits -= (int32_t) mca_btl_ofi_rma_pieces(module, len);
        if (comp->emu_next == comp->parked_size) {
            (void) opal_list_remove_first(&endpoint->emu.waiting);
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (0 == count) {
        return;
    }
    /* over another rail, if this one's link to the peer failed */
    to = mca_btl_ofi_route(endpoint, &via);
    memset(&msg, 0, sizeof(msg));
    msg.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    msg.hdr.origin = mca_btl_ofi_component.my_name;
    /* the pieces' bytes are not counted yet: no operation can complete
     * (and its object be reused) while this loop reads it */
    for (i = 0; i < count; ++i) {
        mca_btl_ofi_completion_t *comp = batch[i].comp;
        bool put = MCA_BTL_OFI_RMA_PUT == comp->parked_kind;

        msg.hdr.type = put ? MCA_BTL_OFI_MSG_PUT : MCA_BTL_OFI_MSG_GET;
        msg.req_id = comp->emu_id;
        msg.addr = comp->parked_raddr + batch[i].off;
        msg.key = comp->parked_key;
        msg.key_rail = (uint32_t) endpoint->rail.peer_rail;
        msg.len = batch[i].len;
        rc = mca_btl_ofi_msg_send_copy(
            via, to, &msg, sizeof(msg),
            put ? (const char *) comp->local_address + batch[i].off : NULL, put ? batch[i].len : 0);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            MCA_BTL_OFI_LOCK(&module->lock);
            endpoint->emu.credits += (int32_t) mca_btl_ofi_rma_pieces(module, batch[i].len);
            MCA_BTL_OFI_UNLOCK(&module->lock);
            mca_btl_ofi_rma_account(module, comp, batch[i].len, rc);
        }
    }
}

/* Start COMP's put or get of SIZE bytes at REMOTE_ADDRESS as messages;
 * the operation is counted in flight. Its pieces leave as the peer's
 * window allows (mca_btl_ofi_rma_pump), the rest when responses free it. */
void mca_btl_ofi_rma_emulate(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                             mca_btl_ofi_completion_t *comp, int kind, size_t size,
                             uint64_t remote_address,
                             mca_btl_base_registration_handle_t *remote_handle)
{
    mca_btl_ofi_endpoint_t *endpoint = comp->endpoint;
    bool put = MCA_BTL_OFI_RMA_PUT == kind;

    comp->parked_kind = kind;
    comp->parked_size = size;
    comp->parked_raddr = remote_address;
    comp->parked_key = mca_btl_ofi_rkey(endpoint, remote_handle);
    comp->parts_status = OPAL_SUCCESS;
    comp->emu_next = 0;
    /* one byte more than the size until it is queued: no response can
     * complete it before */
    comp->emu_left = size + 1;
    comp->emu_id = mca_btl_ofi_emu_request_add(module, comp);
    /* in flight, but out of the transmit queue's count: a context with as
     * many of these as its queue has places must still send their
     * requests (udp;ofi_rxd, 1200 gets of 128 KiB before one fence: the
     * requests waited behind the gets they were for, for ever) */
    mca_btl_ofi_add64(&context->emulated, 1);
    if (size > 0) {
        MCA_BTL_OFI_LOCK(&module->lock);
        opal_list_append(&endpoint->emu.waiting, &comp->track_item);
        MCA_BTL_OFI_UNLOCK(&module->lock);
    }

    MCA_BTL_OFI_LOCK(&context->lock); /* the counters' lock */
    ++*(put ? &context->counters.put_count : &context->counters.get_count);
    *(put ? &context->counters.put_bytes : &context->counters.get_bytes) += size;
    MCA_BTL_OFI_UNLOCK(&context->lock);

    mca_btl_ofi_rma_pump(module, endpoint);
    mca_btl_ofi_rma_account(module, comp, 1, OPAL_SUCCESS);
}

/* Answers to put pieces are held back while the batch of completions
 * being delivered goes on (mca_btl_ofi_rma_answers_send at its end): the
 * next piece of the same put from the same origin joins the held answer,
 * so the pieces of a put that arrive together are answered by one message
 * instead of one each. On udp;ofi_rxd every message is a datagram and
 * the provider's acknowledgement of it, so that is half the datagrams of
 * an emulated put. A piece is stored before its answer is held: an answer
 * never covers bytes not in place. Per thread: two threads may deliver
 * completions of one context at once. */
static __thread struct {
    mca_btl_ofi_context_t *context;
    mca_btl_ofi_endpoint_t *to; /* retained while held */
    mca_btl_ofi_rma_msg_t resp;
} mca_btl_ofi_held;
static __thread bool mca_btl_ofi_rma_held = false;

void mca_btl_ofi_rma_answers_send(void)
{
    mca_btl_ofi_endpoint_t *to = mca_btl_ofi_held.to;

    if (!mca_btl_ofi_rma_held) {
        return;
    }
    mca_btl_ofi_rma_held = false;
    mca_btl_ofi_msg_reply(mca_btl_ofi_held.context, to, &mca_btl_ofi_held.resp,
                          sizeof(mca_btl_ofi_held.resp));
    OBJ_RELEASE(to);
}

/* Answer RESP (a put's piece, stored) with the held answer, if it is the
 * piece right after those, else after sending that one. */
static void mca_btl_ofi_rma_hold(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                                 const mca_btl_ofi_rma_msg_t *resp)
{
    mca_btl_ofi_rma_msg_t *held = &mca_btl_ofi_held.resp;

    if (mca_btl_ofi_rma_held && mca_btl_ofi_held.context == context && mca_btl_ofi_held.to == to
        && held->req_id == resp->req_id && held->addr + held->len == resp->addr
        && held->pieces < MCA_BTL_OFI_EMU_WINDOW) {
        held->len += resp->len;
        held->pieces += resp->pieces;
        return;
    }
    mca_btl_ofi_rma_answers_send();
    OBJ_RETAIN(to);
    mca_btl_ofi_held.context = context;
    mca_btl_ofi_held.to = to;
    *held = *resp;
    mca_btl_ofi_rma_held = true;
}

/* A get's answer: RESP's bytes (resp->len at resp->addr, checked) in
 * messages of one piece each. What cannot be sent is answered with the
 * error, so the get ends. */
static void mca_btl_ofi_rma_send_pieces(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *to,
                                        mca_btl_ofi_rma_msg_t *resp)
{
    size_t left = resp->len, chunk = context->module->rma_chunk;
    int rc = OPAL_SUCCESS;

    resp->pieces = 1;
    while (left > 0) {
        resp->len = left < chunk ? left : chunk;
        rc = mca_btl_ofi_msg_send_copy(context, to, resp, sizeof(*resp),
                                       (const void *) (uintptr_t) resp->addr, resp->len);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
            break;
        }
        resp->addr += resp->len;
        left -= resp->len;
    }
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        resp->status = rc;
        resp->len = left;
        resp->pieces = mca_btl_ofi_rma_pieces(context->module, left);
        mca_btl_ofi_msg_reply(context, to, resp, sizeof(*resp));
    }
}

void mca_btl_ofi_rma_serve(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *req = (const mca_btl_ofi_rma_msg_t *) buf;
    mca_btl_ofi_module_t *module = context->module;
    mca_btl_ofi_endpoint_t *origin, *to;
    mca_btl_ofi_reg_t *reg;
    mca_btl_ofi_rma_msg_t resp;
    bool put;
    int32_t need;
    size_t n;

    if (len < sizeof(*req)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short put or get request");
        return;
    }
    put = MCA_BTL_OFI_MSG_PUT == req->hdr.type;
    n = put ? len - sizeof(*req) : req->len;
    origin = mca_btl_ofi_endpoint_named(module, req->hdr.origin);
    if (NULL == origin) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped a put or get request from a process we do not know");
        return;
    }
    /* the key is of the rail the origin named, which is not this one when
     * the piece came over another rail after its link failed */
    reg = mca_btl_ofi_reg_by_key(module, req->key_rail, req->key);

    memset(&resp, 0, sizeof(resp));
    resp.hdr.type = MCA_BTL_OFI_MSG_RMA_RESP;
    resp.hdr.op = req->hdr.type;
    resp.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    resp.hdr.origin = mca_btl_ofi_component.my_name;
    resp.req_id = req->req_id;
    resp.addr = req->addr; /* the origin finds its piece by it */
    resp.len = n;
    resp.status = OPAL_SUCCESS;
    resp.pieces = mca_btl_ofi_rma_pieces(module, n);
    need = put ? MCA_RCACHE_ACCESS_REMOTE_WRITE : MCA_RCACHE_ACCESS_REMOTE_READ;
    /* only inside a registration open to this access; a put of one
     * piece, a get of a window's at most */
    if (NULL == reg || !(reg->super.access_flags & (need | MCA_RCACHE_ACCESS_REMOTE_ATOMIC))
        || (put && n != req->len) || n > module->rma_chunk * (put ? 1 : MCA_BTL_OFI_EMU_WINDOW)
        || req->addr < (uint64_t) (uintptr_t) reg->super.base
        || (n > 0 && n - 1 > (uint64_t) (uintptr_t) reg->super.bound - req->addr)) {
        resp.status = OPAL_ERR_BAD_PARAM;
    }
    /* over the rail that works, if this one's link to it failed */
    to = mca_btl_ofi_route(origin, &context);
    if (OPAL_SUCCESS != resp.status) {
        mca_btl_ofi_rma_answers_send();
        mca_btl_ofi_msg_reply(context, to, &resp, sizeof(resp));
    } else if (put) {
        memcpy((void *) (uintptr_t) req->addr, req + 1, n);
        /* held only where the end of the batch sends what is held
         * (mca_btl_ofi_deliver does for modules that emulate RMA: a peer
         * may emulate where this process does not) */
        if (OPAL_LIKELY(module->rma_emulated)) {
            mca_btl_ofi_rma_hold(context, to, &resp);
        } else {
            mca_btl_ofi_msg_reply(context, to, &resp, sizeof(resp));
        }
    } else {
        mca_btl_ofi_rma_send_pieces(context, to, &resp);
    }
    OBJ_RELEASE(origin);
}

void mca_btl_ofi_rma_answer(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    const mca_btl_ofi_rma_msg_t *resp = (const mca_btl_ofi_rma_msg_t *) buf;
    mca_btl_ofi_module_t *module;
    mca_btl_ofi_completion_t *comp = NULL;
    mca_btl_ofi_endpoint_t *endpoint;
    uint64_t off = 0;
    bool data;

    if (len < sizeof(*resp)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short put or get response");
        return;
    }
    if (MCA_BTL_OFI_MSG_PUTV == resp->hdr.op) {
        mca_btl_ofi_putv_answer(context, buf, len); /* a message of gathered puts */
        return;
    }
    if (MCA_BTL_OFI_MSG_GETV == resp->hdr.op) {
        mca_btl_ofi_getv_answer(context, buf, len); /* a message of gathered gets */
        return;
    }
    data = MCA_BTL_OFI_MSG_GET == resp->hdr.op && OPAL_SUCCESS == resp->status;
    module = mca_btl_ofi_emu_request_module(context, resp->req_id); /* the one that asked */
    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_get_value_uint64(&module->emu_requests, resp->req_id, (void **) &comp);
    /* its bytes must be of the operation, not counted yet, and sent for */
    if (NULL != comp) {
        off = resp->addr - comp->parked_raddr;
        if (comp->parked_kind < MCA_BTL_OFI_RMA_PUT || comp->parked_kind > MCA_BTL_OFI_RMA_GET
            || (data && resp->len != len - sizeof(*resp)) || resp->len > comp->emu_left
            || resp->addr < comp->parked_raddr || off > comp->emu_next
            || resp->len > comp->emu_next - off || resp->pieces > MCA_BTL_OFI_EMU_WINDOW) {
            comp = NULL;
        }
    }
    if (NULL != comp) {
        /* the window: its messages are no longer in flight */
        comp->endpoint->emu.credits += (int32_t) resp->pieces;
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (NULL == comp) {
        /* a duplicate, a response to an operation already failed, or garbage */
        MCA_BTL_OFI_VERBOSE(
            MCA_BTL_OFI_VERBOSE_ERROR,
            "dropped a put or get response with unknown id %" PRIu64 " or bad range", resp->req_id);
        return;
    }
    if (OPAL_UNLIKELY(OPAL_ERR_BAD_PARAM == resp->status)) {
        MCA_BTL_OFI_SHOW_HELP("rma refused", MCA_BTL_OFI_MSG_PUT == resp->hdr.op ? "put" : "get",
                              opal_process_info.nodename,
                              OPAL_NAME_PRINT(comp->endpoint->proc->proc_name));
    }
    if (data) {
        /* no lock: these bytes keep the operation from completing */
        memcpy((char *) comp->local_address + off, resp + 1, resp->len);
    }
    endpoint = comp->endpoint; /* COMP may be given back below */
    mca_btl_ofi_rma_account(module, comp, resp->len, resp->status);
    mca_btl_ofi_rma_pump(module, endpoint);
}

/* --------------------------------------------------- emulated atomics */

/* The target's side of an atomic, shared with the local path of
 * btl_ofi_atomics.c (a target this process addresses directly). */
static inline uint64_t mca_btl_ofi_apply(mca_btl_base_atomic_op_t op, uint64_t old,
                                         uint64_t operand, bool narrow)
{
    if (narrow) {
        operand &= UINT32_MAX; /* only the low half is the 32-bit operand */
    }
    switch (op) {
    case MCA_BTL_ATOMIC_ADD:
        return old + operand;
    case MCA_BTL_ATOMIC_AND:
        return old & operand;
    case MCA_BTL_ATOMIC_OR:
        return old | operand;
    case MCA_BTL_ATOMIC_XOR:
        return old ^ operand;
    case MCA_BTL_ATOMIC_LAND:
        return (0 != old) && (0 != operand);
    case MCA_BTL_ATOMIC_LOR:
        return (0 != old) || (0 != operand);
    case MCA_BTL_ATOMIC_LXOR:
        return (0 != old) != (0 != operand);
    case MCA_BTL_ATOMIC_SWAP:
        return operand;
    default:
        return old;
    }
}

/* Apply an atomic to memory of this process; returns the old value. */
uint64_t mca_btl_ofi_atomic_apply(mca_btl_base_atomic_op_t op, uint64_t address, uint64_t operand,
                                  uint64_t compare, bool is_cswap, bool narrow)
{
    if (narrow) {
        uint32_t *target = (uint32_t *) (uintptr_t) address;
        uint32_t old = __atomic_load_n(target, __ATOMIC_ACQUIRE), want;
        if (is_cswap) {
            old = (uint32_t) compare;
            (void) __atomic_compare_exchange_n(target, &old, (uint32_t) operand, false,
                                               __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
            return old;
        }
        do {
            want = (uint32_t) mca_btl_ofi_apply(op, old, operand, true);
        } while (!__atomic_compare_exchange_n(target, &old, want, false, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE));
        return old;
    } else {
        uint64_t *target = (uint64_t *) (uintptr_t) address;
        uint64_t old = __atomic_load_n(target, __ATOMIC_ACQUIRE), want;
        if (is_cswap) {
            old = compare;
            (void) __atomic_compare_exchange_n(target, &old, operand, false, __ATOMIC_ACQ_REL,
                                               __ATOMIC_ACQUIRE);
            return old;
        }
        do {
            want = mca_btl_ofi_apply(op, old, operand, false);
        } while (!__atomic_compare_exchange_n(target, &old, want, false, __ATOMIC_ACQ_REL,
                                              __ATOMIC_ACQUIRE));
        return old;
    }
}

/*
 * Emulated atomics. Where the provider's own atomics cannot be used (its
 * fetching atomics crash in udp;ofi_rxd of libfabric 1.17, libfabric issue
 * #11814), every atomic travels as a message: the target checks the
 * address against its registrations, applies the operation with processor
 * atomics from its progress loop, and replies with the old value. All
 * atomics of the module take this path so they stay atomic with respect
 * to each other.
 */
int mca_btl_ofi_amo_request(mca_btl_ofi_module_t *module, mca_btl_base_endpoint_t *endpoint,
                            const mca_btl_ofi_amo_args_t *amo)
{
    mca_btl_ofi_context_t *context = mca_btl_ofi_context_get(module);
    mca_btl_ofi_completion_t *comp;
    mca_btl_ofi_amo_req_t req;
    int rc;

    comp = mca_btl_ofi_amo_prepare(module, context, endpoint, amo, &req);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rc = mca_btl_ofi_msg_inject(context, endpoint, &req, sizeof(req),
                                &context->counters.atomic_count);
    if (OPAL_UNLIKELY(OPAL_SUCCESS != rc)) {
        mca_btl_ofi_amo_unprepare(module, context, endpoint, comp, &req);
        return rc; /* out of resource: the caller progresses, then retries */
    }
    return OPAL_SUCCESS;
}

mca_btl_ofi_completion_t *mca_btl_ofi_amo_prepare(mca_btl_ofi_module_t *module,
                                                  mca_btl_ofi_context_t *context,
                                                  mca_btl_base_endpoint_t *endpoint,
                                                  const mca_btl_ofi_amo_args_t *amo,
                                                  mca_btl_ofi_amo_req_t *req)
{
    mca_btl_ofi_completion_t *comp;

    comp =
        mca_btl_ofi_completion_alloc(&module->super, context, endpoint, amo->result,
                                     amo->result_handle, amo->cbfunc, amo->cbcontext, amo->cbdata);
    if (OPAL_UNLIKELY(NULL == comp)) {
        return NULL;
    }
    req->hdr.type = MCA_BTL_OFI_MSG_AMO_REQ;
    req->hdr.op = (uint8_t) amo->op;
    req->hdr.flags = ((amo->flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? MCA_BTL_OFI_AMO_32BIT : 0)
                     | (amo->is_cswap ? MCA_BTL_OFI_AMO_CSWAP : 0);
    req->hdr.rail = MCA_BTL_OFI_NO_SEQ;
    req->hdr.seq = 0;
    req->hdr.origin = mca_btl_ofi_component.my_name;
    req->req_id = mca_btl_ofi_emu_request_add(module, comp);
    req->addr = amo->remote_address;
    req->key = mca_btl_ofi_rkey(endpoint, amo->remote_handle);
    req->operand = amo->operand;
    req->compare = amo->compare;
    mca_btl_ofi_inflight(context, endpoint, 1);
    return comp;
}

void mca_btl_ofi_amo_unprepare(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                               mca_btl_base_endpoint_t *endpoint, mca_btl_ofi_completion_t *comp,
                               const mca_btl_ofi_amo_req_t *req)
{
    mca_btl_ofi_inflight(context, endpoint, -1);
    MCA_BTL_OFI_LOCK(&module->lock);
    (void) opal_hash_table_remove_value_uint64(&module->emu_requests, req->req_id);
    MCA_BTL_OFI_UNLOCK(&module->lock);
    opal_free_list_return(&context->completions, &comp->super);
}

void mca_btl_ofi_amo_apply_req(mca_btl_ofi_module_t *module, const mca_btl_ofi_amo_req_t *req,
                               mca_btl_ofi_amo_resp_t *out)
{
    bool narrow = !!(req->hdr.flags & MCA_BTL_OFI_AMO_32BIT);
    size_t width = narrow ? sizeof(uint32_t) : sizeof(uint64_t);
    mca_btl_ofi_amo_resp_t resp;
    mca_btl_ofi_reg_t *reg;

    /* the key is of the rail the request was numbered on, which is not
     * this one when it was sent again after that rail's link failed
     * (MCA_BTL_OFI_NO_SEQ names no rail: this one) */
    reg = mca_btl_ofi_reg_by_key(module, req->hdr.rail, req->key);

    resp.hdr.type = MCA_BTL_OFI_MSG_AMO_RESP;
    resp.hdr.op = req->hdr.op;
    resp.hdr.flags = req->hdr.flags;
    resp.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    resp.hdr.seq = 0;
    resp.hdr.origin = mca_btl_ofi_component.my_name;
    resp.req_id = req->req_id;
    resp.result = 0;
    resp.pad = 0;
    /* only inside a registration open to remote atomics, and aligned */
    if (NULL == reg || !(reg->super.access_flags & MCA_RCACHE_ACCESS_REMOTE_ATOMIC)
        || req->addr < (uint64_t) (uintptr_t) reg->super.base
        || req->addr + width - 1 > (uint64_t) (uintptr_t) reg->super.bound
        || 0 != (req->addr & (width - 1)) || req->hdr.op > MCA_BTL_ATOMIC_LAST) {
        resp.status = OPAL_ERR_BAD_PARAM;
    } else {
        resp.status = OPAL_SUCCESS;
        resp.result = mca_btl_ofi_atomic_apply((mca_btl_base_atomic_op_t) req->hdr.op, req->addr,
                                               req->operand, req->compare,
                                               !!(req->hdr.flags & MCA_BTL_OFI_AMO_CSWAP), narrow);
    }
    *out = resp;
}

void mca_btl_ofi_amo_serve(mca_btl_ofi_context_t *context, const void *msg, size_t len)
{
    const mca_btl_ofi_amo_req_t *req = (const mca_btl_ofi_amo_req_t *) msg;
    mca_btl_ofi_endpoint_t *origin, *to;
    mca_btl_ofi_amo_resp_t resp;

    if (len < sizeof(*req)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short atomic request");
        return;
    }
    origin = mca_btl_ofi_endpoint_named(context->module, req->hdr.origin);
    if (NULL == origin) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped an atomic request from a process we do not know");
        return;
    }
    mca_btl_ofi_amo_apply_req(context->module, req, &resp);
    /* over the rail that works, if this one's link to it failed */
    to = mca_btl_ofi_route(origin, &context);
    mca_btl_ofi_msg_reply(context, to, &resp, sizeof(resp));
    OBJ_RELEASE(origin);
}

void mca_btl_ofi_amo_answer(mca_btl_ofi_context_t *context, const void *msg, size_t len)
{
    const mca_btl_ofi_amo_resp_t *resp = (const mca_btl_ofi_amo_resp_t *) msg;
    mca_btl_ofi_module_t *module;
    mca_btl_ofi_completion_t *comp = NULL;

    if (len < sizeof(*resp)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short atomic reply");
        return;
    }
    module = mca_btl_ofi_emu_request_module(context, resp->req_id); /* the one that asked */
    MCA_BTL_OFI_LOCK(&module->lock);
    if (OPAL_SUCCESS
        == opal_hash_table_get_value_uint64(&module->emu_requests, resp->req_id, (void **) &comp)) {
        (void) opal_hash_table_remove_value_uint64(&module->emu_requests, resp->req_id);
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    if (NULL == comp) {
        /* a duplicate, a reply to an atomic already failed, or garbage */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "dropped an atomic reply with unknown id %" PRIu64, resp->req_id);
        return;
    }
    if (OPAL_SUCCESS != resp->status) {
        MCA_BTL_OFI_SHOW_HELP("atomic refused", opal_process_info.nodename,
                              OPAL_NAME_PRINT(comp->endpoint->proc->proc_name));
    } else if (NULL != comp->local_address) {
        mca_btl_ofi_store_result(comp->local_address, resp->result,
                                 !!(resp->hdr.flags & MCA_BTL_OFI_AMO_32BIT));
    }
    mca_btl_ofi_completion_finish(comp, resp->status);
}
