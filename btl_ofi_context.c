/*
 * btl/ofi contexts: transmit/receive paths, their completion queues and
 * locks, and the thread-to-context binding. Reading the queues (progress,
 * completion errors, the progress thread) is btl_ofi_progress.c's.
 *
 * With a scalable endpoint each context is one transmit and one receive
 * context of it; otherwise each context is a plain endpoint sharing the
 * module's domain and address vector (its address is published through
 * the modex, see btl_ofi_modex.c).
 */

#include "opal_config.h"

#include <stdlib.h>
#include <string.h>

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_context.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_answers.h"
#include "btl_ofi_shmname.h"

/* The context index of the calling thread, -1 until its first operation.
 * Every module (rail) has as many contexts, so one index per thread
 * serves them all. initial-exec: see mca_btl_ofi_component_progress. */
static __thread int mca_btl_ofi_thread_context __attribute__((tls_model("initial-exec"))) = -1;

mca_btl_ofi_context_t *mca_btl_ofi_context_select(mca_btl_ofi_module_t *module)
{
    if (OPAL_UNLIKELY(mca_btl_ofi_thread_context < 0)) {
        int32_t ticket = opal_atomic_fetch_add_32(&module->next_context, 1);
        mca_btl_ofi_thread_context = (int) ((uint32_t) ticket % (uint32_t) module->num_contexts);
    }
    return module->contexts + mca_btl_ofi_thread_context;
}

/* Attributes with every capability stated, so a transmit or receive
 * context never inherits more (or less) than what the module needs. */
static void mca_btl_ofi_context_attrs(const struct fi_info *info, struct fi_tx_attr *tx,
                                      struct fi_rx_attr *rx)
{
    *tx = *info->tx_attr;
    tx->caps = info->tx_attr->caps & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_MSG | FI_SEND);
    *rx = *info->rx_attr;
    rx->caps = info->rx_attr->caps
               & (FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MSG | FI_RECV
                  | FI_MULTI_RECV);
}

/* shm endpoints get our own names (btl_ofi_shmname.c says why). */
static int mca_btl_ofi_context_name(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context)
{
    char name[96];
    int rc;

    if (0 != strcmp(module->info->fabric_attr->prov_name, "shm")
        || FI_ADDR_STR != module->info->addr_format) {
        return OPAL_SUCCESS;
    }
    if (OPAL_SUCCESS != mca_btl_ofi_shm_name(name, sizeof(name), context->index)) {
        return OPAL_ERROR;
    }
    rc = fi_setname(&context->ep->fid, name, strlen(name) + 1);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_setname", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* CONTEXT as transmit and receive context INDEX of the module's scalable
 * endpoint, bound to its completion queue. */
static int mca_btl_ofi_context_sep(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                                   int index)
{
    struct fi_tx_attr tx_attr;
    struct fi_rx_attr rx_attr;
    int rc;

    mca_btl_ofi_context_attrs(module->info, &tx_attr, &rx_attr);
    rc = fi_tx_context(module->sep, index, &tx_attr, &context->tx, context);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_tx_context", rc);
        return OPAL_ERROR;
    }
    rc = fi_ep_bind(context->tx, &context->cq->fid, FI_TRANSMIT);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_ep_bind(tx, cq)", rc);
        return OPAL_ERROR;
    }
    rc = fi_rx_context(module->sep, index, &rx_attr, &context->rx, context);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_rx_context", rc);
        return OPAL_ERROR;
    }
    rc = fi_ep_bind(context->rx, &context->cq->fid, FI_RECV);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_ep_bind(rx, cq)", rc);
        return OPAL_ERROR;
    }
    rc = fi_enable(context->tx);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_enable(tx)", rc);
        return OPAL_ERROR;
    }
    rc = fi_enable(context->rx);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_enable(rx)", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* CONTEXT as a plain endpoint of the module's domain, bound to its
 * address vector and completion queue. */
static int mca_btl_ofi_context_ep(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context)
{
    int rc;

    rc = fi_endpoint(module->domain, module->info, &context->ep, context);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_endpoint", rc);
        return OPAL_ERROR;
    }
    rc = fi_ep_bind(context->ep, &module->av->fid, 0);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_ep_bind(ep, av)", rc);
        return OPAL_ERROR;
    }
    rc = fi_ep_bind(context->ep, &context->cq->fid, FI_TRANSMIT | FI_RECV);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_ep_bind(ep, cq)", rc);
        return OPAL_ERROR;
    }
    rc = mca_btl_ofi_context_name(module, context);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = fi_enable(context->ep);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_enable(ep)", rc);
        return OPAL_ERROR;
    }
    context->tx = context->rx = context->ep;
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_context_open(mca_btl_ofi_module_t *module, mca_btl_ofi_context_t *context,
                                    int index)
{
    struct fi_cq_attr cq_attr = {
        /* DATA: a message received into a multi-receive buffer is found
         * through the entry's buf */
        .format = FI_CQ_FORMAT_DATA,
        .wait_obj = FI_WAIT_NONE,
        .size = module->info->tx_attr->size + module->info->rx_attr->size,
    };
    int rc;

    context->index = index;
    rc = fi_cq_open(module->domain, &cq_attr, &context->cq, context);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_cq_open", rc);
        return OPAL_ERROR;
    }

    return NULL != module->sep ? mca_btl_ofi_context_sep(module, context, index)
                               : mca_btl_ofi_context_ep(module, context);
}

int mca_btl_ofi_close_fid(struct fid *fid, const char *what)
{
    int rc = fi_close(fid);
    if (OPAL_UNLIKELY(0 != rc)) {
        /* nothing to undo and nothing the user can do: the object (and
         * what it holds) stays with the provider until the process ends */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "fi_close(%s) failed: %s", what,
                            fi_strerror(-rc));
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_contexts_create(mca_btl_ofi_module_t *module, int count, bool use_sep)
{
    int rc, i;

    module->contexts = calloc(count, sizeof(*module->contexts));
    if (NULL == module->contexts) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (i = 0; i < count; ++i) {
        OBJ_CONSTRUCT(&module->contexts[i].lock, opal_mutex_t);
        OBJ_CONSTRUCT(&module->contexts[i].putv.lock, opal_mutex_t);
        OBJ_CONSTRUCT(&module->contexts[i].getv.lock, opal_mutex_t);
        OBJ_CONSTRUCT(&module->contexts[i].completions, opal_free_list_t);
        OBJ_CONSTRUCT(&module->contexts[i].pending, opal_list_t);
        OBJ_CONSTRUCT(&module->contexts[i].sendq, opal_list_t);
        OBJ_CONSTRUCT(&module->contexts[i].rdmaq, opal_list_t);
        OBJ_CONSTRUCT(&module->contexts[i].tracked, opal_list_t);
        OBJ_CONSTRUCT(&module->contexts[i].sent, opal_list_t);
        module->contexts[i].module = module;
        module->contexts[i].put_notify = module->put_notify;
    }
    module->num_contexts = count;

    if (use_sep) {
        module->info->ep_attr->tx_ctx_cnt = count;
        module->info->ep_attr->rx_ctx_cnt = count;
        rc = fi_scalable_ep(module->domain, module->info, &module->sep, NULL);
        if (0 != rc) {
            MCA_BTL_OFI_REPORT("fi_scalable_ep", rc);
            goto err_destroy_contexts;
        }
        rc = fi_scalable_ep_bind(module->sep, &module->av->fid, 0);
        if (0 != rc) {
            MCA_BTL_OFI_REPORT("fi_scalable_ep_bind(av)", rc);
            goto err_destroy_contexts;
        }
    }

    for (i = 0; i < count; ++i) {
        rc = mca_btl_ofi_context_open(module, module->contexts + i, i);
        if (OPAL_SUCCESS != rc) {
            goto err_destroy_contexts;
        }
    }

    if (use_sep) {
        rc = fi_enable(module->sep);
        if (0 != rc) {
            MCA_BTL_OFI_REPORT("fi_enable(sep)", rc);
            goto err_destroy_contexts;
        }
    }

    return OPAL_SUCCESS;

err_destroy_contexts:
    mca_btl_ofi_contexts_close(module);
    mca_btl_ofi_contexts_free(module);
    return OPAL_ERROR;
}

/* Close in dependency order: endpoints (which stop the provider's use of
 * the queues), then the scalable endpoint, then the completion queues. */
void mca_btl_ofi_contexts_close(mca_btl_ofi_module_t *module)
{
    int i;

    if (NULL == module->contexts) {
        return;
    }
    for (i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;
        if (NULL != context->ep) {
            (void) mca_btl_ofi_close_fid(&context->ep->fid, "endpoint");
        } else {
            if (NULL != context->tx) {
                (void) mca_btl_ofi_close_fid(&context->tx->fid, "tx context");
            }
            if (NULL != context->rx) {
                (void) mca_btl_ofi_close_fid(&context->rx->fid, "rx context");
            }
        }
        context->ep = context->tx = context->rx = NULL;
    }
    if (NULL != module->sep) {
        (void) mca_btl_ofi_close_fid(&module->sep->fid, "scalable endpoint");
        module->sep = NULL;
    }
    for (i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;
        if (NULL != context->cq) {
            (void) mca_btl_ofi_close_fid(&context->cq->fid, "completion queue");
            context->cq = NULL;
        }
    }
}

void mca_btl_ofi_contexts_free(mca_btl_ofi_module_t *module)
{
    if (NULL == module->contexts) {
        return;
    }
    for (int i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;

        mca_btl_ofi_putv_fini(context);
        mca_btl_ofi_answers_fini(context);
        free(context->deferred);
        context->deferred = NULL;
        context->deferred_count = 0;
        OBJ_DESTRUCT(&context->pending);
        while (NULL != opal_list_remove_first(&context->rdmaq)) {
        }
        OBJ_DESTRUCT(&context->rdmaq);
        while (NULL != opal_list_remove_first(&context->tracked)) {
        }
        OBJ_DESTRUCT(&context->tracked);
        while (NULL != opal_list_remove_first(&context->sent)) {
        }
        OBJ_DESTRUCT(&context->sent);
        OBJ_DESTRUCT(&context->sendq);
        OBJ_DESTRUCT(&context->completions);
        OBJ_DESTRUCT(&context->putv.lock);
        /* a batch never asked for goes with the module's list */
        context->getv.batch = NULL;
        OBJ_DESTRUCT(&context->getv.lock);
        OBJ_DESTRUCT(&context->lock);
    }
    free(module->contexts);
    module->contexts = NULL;
    module->num_contexts = 0;
}
