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
#include "btl_ofi_endpoint.h"
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

/* each part starts 8-byte aligned (its identity fields are 64-bit) */
#define MCA_BTL_OFI_MODEX_PAD(n) (((n) + 7) & ~(size_t) 7)

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

/* Whether a peer's rail (its first address) lies in this module's subnet. */
static bool mca_btl_ofi_rail_reaches(const mca_btl_ofi_module_t *module,
                                     const mca_btl_ofi_modex_t *blob)
{
    const uint8_t *bytes;
    int whole = module->net_bits / 8, rest = module->net_bits % 8;
    struct sockaddr sa;

    if (blob->addr_len < sizeof(struct sockaddr_in)) {
        return false;
    }
    memcpy(&sa, blob->addrs, sizeof(sa));
    if (sa.sa_family != module->net_family) {
        return false;
    }
    if (AF_INET == sa.sa_family) {
        bytes = blob->addrs + offsetof(struct sockaddr_in, sin_addr);
    } else if (AF_INET6 == sa.sa_family && blob->addr_len >= sizeof(struct sockaddr_in6)) {
        bytes = blob->addrs + offsetof(struct sockaddr_in6, sin6_addr);
    } else {
        return false;
    }
    return 0 == memcmp(bytes, module->net, (size_t) whole)
           && (0 == rest || 0 == ((bytes[whole] ^ module->net[whole]) & (0xff << (8 - rest))));
}

/* The peer's rails, checked; false when the blob is malformed. */
static bool mca_btl_ofi_rails_parse(const mca_btl_ofi_modex_rails_t *all, size_t size,
                                    const mca_btl_ofi_modex_t **blobs)
{
    const char *at = (const char *) (all + 1), *end = (const char *) all + size;

    if (size < sizeof(*all) || MCA_BTL_OFI_MODEX_RAILS_LAYOUT != all->layout || 0 == all->count
        || all->count > MCA_BTL_OFI_MAX_RAILS) {
        return false;
    }
    for (uint32_t i = 0; i < all->count; ++i) {
        const mca_btl_ofi_modex_t *blob = (const mca_btl_ofi_modex_t *) at;
        if (at > end || all->sizes[i] < sizeof(*blob) || all->sizes[i] > (size_t) (end - at)
            || MCA_BTL_OFI_MODEX_LAYOUT != blob->layout || 0 == blob->num_addrs
            || all->sizes[i] != sizeof(*blob) + (size_t) blob->num_addrs * blob->addr_len) {
            return false;
        }
        blobs[i] = blob;
        at += MCA_BTL_OFI_MODEX_PAD(all->sizes[i]);
    }
    return true;
}

/* The peer's rail this module talks to: the one on this module's subnet.
 * When no rail of ours shares a subnet with any of the peer's (routed
 * networks, or a provider without interfaces), rails pair by index. NULL:
 * this module does not reach the peer (another rail of ours does). */
static const mca_btl_ofi_modex_t *mca_btl_ofi_rail_pick(const mca_btl_ofi_module_t *module,
                                                        const mca_btl_ofi_modex_t **blobs,
                                                        uint32_t count)
{
    const mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    for (uint32_t i = 0; 0 != module->net_family && i < count; ++i) {
        if (mca_btl_ofi_rail_reaches(module, blobs[i])) {
            return blobs[i];
        }
    }
    for (int m = 0; m < c->num_modules; ++m) {
        for (uint32_t i = 0; NULL != c->modules[m] && 0 != c->modules[m]->net_family && i < count;
             ++i) {
            if (mca_btl_ofi_rail_reaches(c->modules[m], blobs[i])) {
                return NULL; /* that rail of ours pairs with it, not this one */
            }
        }
    }
    return (uint32_t) module->rail < count ? blobs[module->rail] : NULL;
}

int mca_btl_ofi_modex_peer(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                           mca_btl_ofi_modex_rails_t **all_out,
                           const mca_btl_ofi_modex_t **blob_out, int *rail_out)
{
    const mca_btl_ofi_modex_t *blob, *blobs[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_modex_rails_t *all = NULL;
    size_t size = 0;
    int rc, peer_rail = 0;

    OPAL_MODEX_RECV(rc, &mca_btl_ofi_component.super.btl_version, &proc->proc_name, (void **) &all,
                    &size);
    if (OPAL_SUCCESS != rc || NULL == all) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO, "no modex entry from %s (rc %d): unreachable",
                            OPAL_NAME_PRINT(proc->proc_name), rc);
        return OPAL_ERR_UNREACH;
    }
    if (!mca_btl_ofi_rails_parse(all, size, blobs)) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "bad modex", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        goto out_unreach;
    }
    blob = mca_btl_ofi_rail_pick(module, blobs, all->count);
    if (NULL == blob) {
        /* another rail of ours may reach it: ob1 and osc/rdma use that one */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "rail %d: %s has no rail on this rail's subnet: not used for it",
                            module->rail, OPAL_NAME_PRINT(proc->proc_name));
        goto out_unreach;
    }
    if ((0 != blob->sep) != (NULL != module->sep)) {
        opal_show_help(MCA_BTL_OFI_HELP_FILE, "sep mismatch", true, opal_process_info.nodename,
                       OPAL_NAME_PRINT(proc->proc_name));
        goto out_unreach;
    }
    for (uint32_t r = 0; r < all->count; ++r) {
        if (blobs[r] == blob) {
            peer_rail = (int) r;
        }
    }
    *rail_out = peer_rail;
    *blob_out = blob;
    *all_out = all;
    return OPAL_SUCCESS;

out_unreach:
    free(all);
    return OPAL_ERR_UNREACH;
}
