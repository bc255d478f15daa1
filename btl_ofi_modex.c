/*
 * btl/ofi modex: what each process publishes about its modules (rails) and
 * how a peer's entry is read.
 *
 * Each module publishes one address per context (or its scalable
 * endpoint's single address), its layout, who the process is on its host
 * (for the liveness checks) and the port of its liveness listener; the
 * process publishes its modules one after the other. A peer's module pairs
 * with ours on the same subnet, else by index.
 */

#include "btl_ofi.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_modex.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "opal/mca/pmix/pmix.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

static int mca_btl_ofi_getname(struct fid *fid, uint8_t *buf, size_t *len)
{
    int rc = fi_getname(fid, buf, len);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_getname", rc);
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

/* One module's part of the modex: its addresses and who we are. */
static int mca_btl_ofi_modex_blob(mca_btl_ofi_module_t *module, mca_btl_ofi_modex_t **blob_out,
                                  size_t *size_out)
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
    mca_btl_ofi_identity(&blob->id);

    for (i = 0; i < num_addrs; ++i) {
        struct fid *fid = (NULL != module->sep) ? &module->sep->fid : &module->contexts[i].ep->fid;
        len = addr_len;
        rc = mca_btl_ofi_getname(fid, blob->addrs + (size_t) i * addr_len, &len);
        if (OPAL_SUCCESS != rc) {
            free(blob);
            return rc;
        }
    }
    /* each rail its own listener, on its own address: a probe then tests
     * the link the rail's traffic takes */
    blob->probe_port = mca_btl_ofi_probe_listen(module, blob->addrs, addr_len);
    *blob_out = blob;
    *size_out = blob_size;
    return OPAL_SUCCESS;
}

int mca_btl_ofi_modex_send(mca_btl_ofi_module_t **modules, int count)
{
    mca_btl_ofi_modex_t *blobs[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_modex_rails_t *all;
    size_t sizes[MCA_BTL_OFI_MAX_RAILS], total = sizeof(*all);
    char *at;
    int rc = OPAL_SUCCESS, made;

    for (made = 0; made < count; ++made) {
        rc = mca_btl_ofi_modex_blob(modules[made], &blobs[made], &sizes[made]);
        if (OPAL_SUCCESS != rc) {
            goto out_free_blobs;
        }
        total += MCA_BTL_OFI_MODEX_PAD(sizes[made]);
    }
    all = calloc(1, total);
    if (NULL == all) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        goto out_free_blobs;
    }
    all->layout = MCA_BTL_OFI_MODEX_RAILS_LAYOUT;
    all->count = (uint32_t) count;
    at = (char *) (all + 1);
    for (int i = 0; i < count; ++i) {
        all->sizes[i] = (uint32_t) sizes[i];
        memcpy(at, blobs[i], sizes[i]);
        at += MCA_BTL_OFI_MODEX_PAD(sizes[i]);
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &mca_btl_ofi_component.super.btl_version, all, total);
    if (OPAL_SUCCESS != rc) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "publishing addresses in the modex failed: %d", rc);
    }
    free(all);
out_free_blobs:
    while (made-- > 0) {
        free(blobs[made]);
    }
    return rc;
}

int mca_btl_ofi_modex_recv(struct opal_proc_t *proc, mca_btl_ofi_modex_rails_t **all_out,
                           size_t *size_out)
{
    mca_btl_ofi_modex_rails_t *all = NULL;
    size_t size = 0;
    int rc;

    OPAL_MODEX_RECV(rc, &mca_btl_ofi_component.super.btl_version, &proc->proc_name, (void **) &all,
                    &size);
    if (OPAL_SUCCESS != rc || NULL == all) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "no modex entry from %s (rc %d): unreachable",
                            OPAL_NAME_PRINT(proc->proc_name), rc);
        return OPAL_ERR_UNREACH;
    }
    *all_out = all;
    *size_out = size;
    return OPAL_SUCCESS;
}
