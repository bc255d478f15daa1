/*
 * btl/ofi completion objects (see btl_ofi_completion.h): their class, the
 * parts of a transfer split over the rails, and the verdict on an
 * operation that failed.
 */

/* first: it selects the system's extensions (dladdr) */
#include "opal_config.h"

#include <dlfcn.h>
#include <string.h>

#include "btl_ofi.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_completion.h"
#include "btl_ofi_liveness.h"

#include "opal/util/proc.h"

static void mca_btl_ofi_completion_construct(mca_btl_ofi_completion_t *comp)
{
    memset(&comp->op, 0, sizeof(comp->op));
    comp->op.kind = MCA_BTL_OFI_OP_RDMA;
    comp->cbfunc = NULL;
    OBJ_CONSTRUCT(&comp->track_item, opal_list_item_t);
    comp->tracked = false;
}

static void mca_btl_ofi_completion_destruct(mca_btl_ofi_completion_t *comp)
{
    OBJ_DESTRUCT(&comp->track_item);
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_completion_t, opal_free_list_item_t,
                   mca_btl_ofi_completion_construct, mca_btl_ofi_completion_destruct);

bool mca_btl_ofi_untrack(mca_btl_ofi_completion_t *comp)
{
    mca_btl_ofi_context_t *context = comp->context;
    bool moved;

    /* under the lock: the rail's failover may be moving it right now */
    MCA_BTL_OFI_LOCK(&context->lock);
    moved = MCA_BTL_OFI_OP_MOVED == comp->op.kind;
    if (comp->tracked) {
        opal_list_remove_item(&context->tracked, &comp->track_item);
        comp->tracked = false;
    }
    MCA_BTL_OFI_UNLOCK(&context->lock);
    if (moved) {
        /* counted as complete when it was moved */
        comp->op.kind = MCA_BTL_OFI_OP_RDMA;
        opal_free_list_return(&context->completions, &comp->super);
    }
    return moved;
}

void mca_btl_ofi_part_done(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                           void *local_address, mca_btl_base_registration_handle_t *local_handle,
                           void *context, void *cbdata, int status)
{
    mca_btl_ofi_completion_t *whole = (mca_btl_ofi_completion_t *) context;
    (void) btl;
    (void) endpoint;
    (void) local_address;
    (void) local_handle;
    (void) cbdata;

    if (OPAL_UNLIKELY(OPAL_SUCCESS != status)) {
        whole->parts_status = status;
    }
    if (0 == opal_atomic_add_fetch_32(&whole->parts_left, -1)) {
        mca_btl_ofi_context_t *owner = whole->context;

        /* the whole was counted on its context only (see
         * mca_btl_ofi_rdma_split, btl_ofi_rails.c), and never tracked */
        mca_btl_ofi_completion_run(whole, whole->parts_status);
        mca_btl_ofi_add64(&owner->outstanding, -1);
    }
}

mca_btl_base_rdma_completion_fn_t mca_btl_ofi_rdma_owner(const mca_btl_ofi_completion_t *comp)
{
    if (mca_btl_ofi_part_done == comp->cbfunc) {
        return ((const mca_btl_ofi_completion_t *) comp->cbcontext)->cbfunc;
    }
    if (mca_btl_ofi_getv_done == comp->cbfunc) {
        return mca_btl_ofi_getv_owner(comp->local_address); /* its gets' layer */
    }
    if (mca_btl_ofi_getv_lone_done == comp->cbfunc) {
        return mca_btl_ofi_getv_owner(comp->cbcontext); /* the batch of its one get */
    }
    return comp->cbfunc;
}

static bool mca_btl_ofi_owner_ignores_status(mca_btl_base_rdma_completion_fn_t cbfunc)
{
    Dl_info where;
    void *addr;

    if (NULL == cbfunc) {
        return true; /* no callback: nobody will ever see the status */
    }
    memcpy(&addr, &cbfunc, sizeof(addr));
    if (0 == dladdr(addr, &where)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "failed operation's owner: %p, unknown",
                            addr);
        return false;
    }
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "failed operation's owner: %s in %s",
                        NULL != where.dli_sname ? where.dli_sname : "?",
                        NULL != where.dli_fname ? where.dli_fname : "?");
    return (NULL != where.dli_fname && NULL != strstr(where.dli_fname, "mca_osc_rdma"))
           || (NULL != where.dli_sname
               && 0 == strncmp(where.dli_sname, "ompi_osc_rdma_", sizeof("ompi_osc_rdma_") - 1));
}

/* A put, get or atomic that failed while its peer is not known lost and
 * whose status nobody will look at (osc/rdma's, or posted without a
 * callback): the target's bytes or the origin's result would be silently
 * wrong. The job stops instead, naming the peer and the error. Other
 * owners get the status. */
void mca_btl_ofi_rdma_failed_because(mca_btl_ofi_context_t *context, void *op_context,
                                     const char *cause)
{
    int kind = ((mca_btl_ofi_op_t *) op_context)->kind;
    mca_btl_ofi_endpoint_t *endpoint = mca_btl_ofi_rma_endpoint(op_context);
    char info[512];

    if (NULL == endpoint || endpoint->lost || NULL == endpoint->proc
        || (MCA_BTL_OFI_OP_BARE != kind
            && !mca_btl_ofi_owner_ignores_status(
                mca_btl_ofi_rdma_owner(mca_btl_ofi_completion_from_ctx(op_context))))) {
        return;
    }
    snprintf(info, sizeof(info),
             "btl/ofi on %s: a one-sided operation (put, get or atomic) to peer %s on %s "
             "completed with an error (%s); the layer that posted it does not look at the status "
             "(osc/rdma 4.1 never does), so its data would be lost: the job cannot continue",
             opal_process_info.nodename, OPAL_NAME_PRINT(endpoint->proc->proc_name),
             NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?", cause);
    mca_btl_ofi_module_fatal(context->module, endpoint->proc, info);
}
