/*
 * btl/ofi endpoints and address exchange.
 *
 * Each process publishes one address per context (or the scalable
 * endpoint's single address) through the modex; a peer's endpoint maps
 * every local context to the peer address that context should use, so any
 * context can reach any peer.
 */

#include "btl_ofi.h"
#include "btl_ofi_endpoint.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"

static void mca_btl_ofi_endpoint_construct(mca_btl_ofi_endpoint_t *endpoint)
{
    endpoint->proc = NULL;
    endpoint->addrs = NULL;
    endpoint->num_addrs = 0;
    endpoint->lost = false;
}

static void mca_btl_ofi_endpoint_destruct(mca_btl_ofi_endpoint_t *endpoint)
{
    free(endpoint->addrs);
    endpoint->addrs = NULL;
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_endpoint_t, opal_list_item_t, mca_btl_ofi_endpoint_construct,
                   mca_btl_ofi_endpoint_destruct);

static int mca_btl_ofi_getname(struct fid *fid, uint8_t *buf, size_t *len)
{
    int rc = fi_getname(fid, buf, len);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_getname", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int mca_btl_ofi_modex_send(mca_btl_ofi_module_t *module)
{
    int num_addrs = (NULL != module->sep) ? 1 : module->num_contexts;
    mca_btl_ofi_modex_t *blob;
    size_t addr_len = 0, blob_size, len;
    uint8_t probe[1];
    int rc, i;

    /* ask every endpoint for its address size (-FI_ETOOSMALL reports it):
     * some providers' names are strings whose length grows with the
     * endpoint's index (shm), so the stride is the longest one and shorter
     * names are zero-padded */
    for (i = 0; i < num_addrs; ++i) {
        struct fid *fid = (NULL != module->sep) ? &module->sep->fid : &module->contexts[i].ep->fid;
        len = 0;
        rc = fi_getname(fid, probe, &len);
        if (0 != rc && -FI_ETOOSMALL != rc) {
            MCA_BTL_OFI_REPORT("fi_getname", rc);
            return OPAL_ERROR;
        }
        if (len > addr_len) {
            addr_len = len;
        }
    }

    blob_size = sizeof(*blob) + (size_t) num_addrs * addr_len;
    blob = calloc(1, blob_size);
    if (NULL == blob) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    blob->layout = MCA_BTL_OFI_MODEX_LAYOUT;
    blob->num_contexts = (uint16_t) module->num_contexts;
    blob->num_addrs = (uint16_t) num_addrs;
    blob->addr_len = (uint32_t) addr_len;
    blob->sep = (NULL != module->sep);

    for (i = 0; i < num_addrs; ++i) {
        struct fid *fid = (NULL != module->sep) ? &module->sep->fid : &module->contexts[i].ep->fid;
        len = addr_len;
        rc = mca_btl_ofi_getname(fid, blob->addrs + (size_t) i * addr_len, &len);
        if (OPAL_SUCCESS != rc) {
            goto out_free_blob;
        }
    }

    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_ofi_component.super.btl_version, blob,
                    blob_size);
    if (OPAL_SUCCESS != rc) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "publishing addresses in the modex failed: %d",
                            rc);
    }

out_free_blob:
    free(blob);
    return rc;
}

int mca_btl_ofi_endpoint_create(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                                mca_btl_ofi_endpoint_t **ep_out)
{
    mca_btl_ofi_modex_t *blob = NULL;
    mca_btl_ofi_endpoint_t *endpoint;
    fi_addr_t *peer = NULL;
    size_t size = 0;
    int rc, i, inserted;

    OPAL_MODEX_RECV(rc, &mca_btl_ofi_component.super.btl_version, &proc->proc_name,
                    (void **) &blob, &size);
    if (OPAL_SUCCESS != rc || NULL == blob) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "no modex entry from %s (rc %d): unreachable",
                            OPAL_NAME_PRINT(proc->proc_name), rc);
        return OPAL_ERR_UNREACH;
    }
    if (size < sizeof(*blob) || MCA_BTL_OFI_MODEX_LAYOUT != blob->layout || 0 == blob->num_addrs
        || size != sizeof(*blob) + (size_t) blob->num_addrs * blob->addr_len) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "bad modex", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        rc = OPAL_ERR_UNREACH;
        goto out_free_blob;
    }
    if ((0 != blob->sep) != (NULL != module->sep)) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "sep mismatch", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        rc = OPAL_ERR_UNREACH;
        goto out_free_blob;
    }

    peer = calloc(blob->num_addrs, sizeof(*peer));
    if (NULL == peer) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_blob;
    }
    endpoint = OBJ_NEW(mca_btl_ofi_endpoint_t);
    if (NULL == endpoint) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_peer;
    }
    endpoint->addrs = calloc(module->num_contexts, sizeof(fi_addr_t));
    if (NULL == endpoint->addrs) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_release_endpoint;
    }

    /* one address at a time: the blob's stride is the longest name, and
     * providers with string names walk a multi-address insert by string
     * length, not by our stride */
    for (i = 0; i < blob->num_addrs; ++i) {
        inserted = fi_av_insert(module->av, blob->addrs + (size_t) i * blob->addr_len, 1,
                                &peer[i], 0, NULL);
        if (1 != inserted) {
            MCA_BTL_OFI_REPORT("fi_av_insert", inserted < 0 ? inserted : -FI_EADDRNOTAVAIL);
            rc = OPAL_ERR_UNREACH;
            goto out_release_endpoint;
        }
    }

    /* spread local contexts over the peer's contexts */
    for (i = 0; i < module->num_contexts; ++i) {
        if (blob->sep) {
            int target = i % (int) blob->num_contexts;
            endpoint->addrs[i] = fi_rx_addr(peer[0], target, MCA_BTL_OFI_RX_CTX_BITS);
        } else {
            endpoint->addrs[i] = peer[i % blob->num_addrs];
        }
    }
    endpoint->num_addrs = module->num_contexts;
    endpoint->proc = proc;
    *ep_out = endpoint;
    rc = OPAL_SUCCESS;
    goto out_free_peer;

out_release_endpoint:
    OBJ_RELEASE(endpoint);
out_free_peer:
    free(peer);
out_free_blob:
    free(blob);
    return rc;
}
