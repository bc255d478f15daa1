/*
 * btl/ofi rails: several modules (rails, one per network interface) used
 * as one.
 *
 * What a rail is and how fast (its selection among the candidates, its
 * subnet and speed: from the component's init), which of a peer's rails
 * each of ours talks to (the pairing, from add_procs), what changes in a
 * module when there are several (mca_btl_ofi_rails_join: numbered
 * messages, tracked operations, emulated atomics, split puts and gets),
 * the split of a large put or get over the rails, and failover from a
 * rail whose link to a peer failed, with the periodic peer check that
 * finds it (from progress).
 *
 * A layer above the operations' files: it calls into rdma, atomics,
 * emulate, seq, frag, endpoint, modex, completion, liveness and context,
 * and only the component, the module (add_procs) and progress call it.
 * The split is reached through the put and get entry points
 * mca_btl_ofi_rails_join installs (the single-rail path never looks at
 * it); failover moves traffic with the queues' own take-and-repost loops
 * kept here for that reason.
 */

#include "btl_ofi.h"
#include "btl_ofi_atomics.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_modex.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_seq.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

/* -------------------------------------------------- selection and speeds */

/* Why a usable candidate does not become one more rail, or NULL. Rails are
 * domains of one provider on distinct interfaces. */
const char *mca_btl_ofi_rail_refusal(mca_btl_ofi_module_t *const *taken,
                                     char (*taken_if)[IF_NAMESIZE + 1], int ntaken,
                                     const struct fi_info *info, const char *iface)
{
    if (0 != strcmp(taken[0]->info->fabric_attr->prov_name, info->fabric_attr->prov_name)) {
        return "another provider was taken (rails are domains of one provider)";
    }
    if (NULL == iface || '\0' == taken_if[0][0]) {
        return "a domain was taken already (this provider has no network interfaces to "
               "make rails of)";
    }
    for (int i = 0; i < ntaken; ++i) {
        if (0 == strcmp(taken_if[i], iface)) {
            return "its interface is a rail already (one domain per interface)";
        }
    }
    if (ntaken >= mca_btl_ofi_component.max_rails) {
        return "btl_ofi_max_rails rails are taken already";
    }
    return NULL;
}

/* The subnet of a rail's interface (address and netmask of the interface
 * address that is the domain's source address): it pairs the rail with
 * the peers' rails on the same subnet. */
void mca_btl_ofi_rail_net(mca_btl_ofi_module_t *module, const struct fi_info *info,
                          const char *iface, const struct ifaddrs *ifs)
{
    int family, ifamily = AF_UNSPEC, mfamily = AF_UNSPEC;
    const unsigned char *mine = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &family);

    module->net_family = 0;
    if (NULL == mine || NULL == iface) {
        return;
    }
    for (const struct ifaddrs *i = ifs; NULL != i; i = i->ifa_next) {
        const unsigned char *addr =
            mca_btl_ofi_sa_bytes(i->ifa_addr, sizeof(struct sockaddr_in6), &ifamily);
        const unsigned char *mask =
            mca_btl_ofi_sa_bytes(i->ifa_netmask, sizeof(struct sockaddr_in6), &mfamily);
        int len = AF_INET == family ? 4 : 16, bits = 0;

        if (NULL == addr || NULL == mask || ifamily != family || mfamily != family
            || 0 != strcmp(i->ifa_name, iface) || 0 != memcmp(addr, mine, (size_t) len)) {
            continue;
        }
        for (int b = 0; b < len; ++b) {
            module->net[b] = mine[b] & mask[b];
            bits += __builtin_popcount(mask[b]);
        }
        module->net_family = family;
        module->net_bits = bits;
        return;
    }
}

/* The speed of a rail's link in MB/s, or 0 when nobody says: the
 * provider's own report (fi_nic; none of Debian 12's providers fills it)
 * first, else the kernel's for the interface. */
static unsigned int mca_btl_ofi_link_speed(const struct fi_info *info, const char *iface,
                                           const char **from)
{
    char path[64 + IF_NAMESIZE];
    long mbit = 0;
    FILE *f;

    if (NULL != info->nic && NULL != info->nic->link_attr && info->nic->link_attr->speed > 0) {
        size_t mbytes = info->nic->link_attr->speed / 8000000; /* bit/s */

        *from = "reported by the provider";
        return (unsigned int) (mbytes > 0 ? mbytes : 1);
    }
    if (NULL == iface) {
        return 0;
    }
    /* Mbit/s; unknown or down reads -1 or fails (the loopback has none) */
    snprintf(path, sizeof(path), "/sys/class/net/%s/speed", iface);
    f = fopen(path, "r");
    if (NULL == f) {
        return 0;
    }
    if (1 != fscanf(f, "%ld", &mbit) || mbit <= 0) {
        mbit = 0;
    }
    fclose(f);
    *from = "the interface's speed";
    return (unsigned int) ((mbit + 7) / 8);
}

/* Registers btl_ofi_WHAT_IFACE, a rail's own value of btl_ofi_WHAT, with
 * `value' (holding its default) as storage; true when the user set it. */
static bool mca_btl_ofi_rail_var(const char *what, const char *iface, const char *help,
                                 unsigned int *value)
{
    char name[32 + IF_NAMESIZE];

    snprintf(name, sizeof(name), "%s_%s", what, iface);
    (void) mca_base_component_var_register(&mca_btl_ofi_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_UNSIGNED_INT, NULL, 0, 0,
                                           OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY, value);
    return !mca_btl_ofi_param_is_default(name);
}

/*
 * A rail's bandwidth (MB/s) and latency: what ob1 weighs the modules to a
 * peer by, and what the parts of a split put or get are sized by. Set
 * per interface by btl_ofi_bandwidth_IF and btl_ofi_latency_IF, as
 * btl/tcp's; their defaults are btl_ofi_bandwidth and btl_ofi_latency
 * where the user set those, else the link speed the provider or the
 * kernel reports (no provider reports a latency: the default stands).
 */
void mca_btl_ofi_rail_speed(mca_btl_ofi_module_t *module, const struct fi_info *info,
                            const char *iface)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    const char *bw_from = "btl_ofi_bandwidth", *lat_from = "btl_ofi_latency";
    unsigned int *bw = &c->rail_bandwidth[module->rail], *lat = &c->rail_latency[module->rail];
    char bw_param[32 + IF_NAMESIZE] = "btl_ofi_bandwidth";

    *bw = module->super.btl_bandwidth;
    *lat = module->super.btl_latency;
    if (mca_btl_ofi_param_is_default("bandwidth")) {
        unsigned int speed = mca_btl_ofi_link_speed(info, iface, &bw_from);

        if (speed > 0) {
            *bw = speed;
        } else {
            bw_from = "default: no link speed known";
        }
    }
    if (mca_btl_ofi_param_is_default("latency")) {
        lat_from = "default";
    }
    if (NULL != iface
        && mca_btl_ofi_rail_var("bandwidth", iface,
                                "Bandwidth (MB/s) of the rail on this interface: ob1 spreads "
                                "messages and a split put or get its parts over the rails in "
                                "proportion (default: btl_ofi_bandwidth if set, else the link "
                                "speed the provider or the kernel reports)",
                                bw)) {
        bw_from = "btl_ofi_bandwidth_IF";
        snprintf(bw_param, sizeof(bw_param), "btl_ofi_bandwidth_%s", iface);
    }
    if (NULL != iface
        && mca_btl_ofi_rail_var("latency", iface,
                                "Latency of the rail on this interface, relative: ob1 sends a "
                                "message's first fragment on the rail of least latency (default: "
                                "btl_ofi_latency)",
                                lat)) {
        lat_from = "btl_ofi_latency_IF";
    }
    if (0 == *bw) {
        /* a zero weight would divide by zero in ob1 and in the split */
        MCA_BTL_OFI_SHOW_HELP("bad param", opal_process_info.nodename, bw_param, 0,
                              "at least 1 (MB/s)", 1);
        *bw = 1;
    }
    module->super.btl_bandwidth = *bw;
    module->super.btl_latency = *lat;
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                        "rail %d (interface %s): bandwidth %u MB/s (%s), latency %u (%s)",
                        module->rail, NULL != iface ? iface : "none", *bw, bw_from, *lat, lat_from);
}

/* ---------------------------------------------------------------- pairing */

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

int mca_btl_ofi_rail_endpoint(mca_btl_ofi_module_t *module, struct opal_proc_t *proc,
                              mca_btl_ofi_endpoint_t **ep_out)
{
    const mca_btl_ofi_modex_t *blob, *blobs[MCA_BTL_OFI_MAX_RAILS];
    mca_btl_ofi_modex_rails_t *all = NULL;
    size_t size = 0;
    int rc, peer_rail = 0;

    if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags)
        && 0 == strcmp(module->info->fabric_attr->prov_name, "shm")) {
        /* shm's addresses name shared-memory files of this host */
        static bool told = false;
        if (!told) {
            told = true;
            MCA_BTL_OFI_SHOW_HELP("node-local provider", module->info->fabric_attr->prov_name,
                                  opal_process_info.nodename, OPAL_NAME_PRINT(proc->proc_name));
        }
        return OPAL_ERR_UNREACH;
    }
    rc = mca_btl_ofi_modex_recv(proc, &all, &size);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    rc = OPAL_ERR_UNREACH;
    if (!mca_btl_ofi_rails_parse(all, size, blobs)) {
        MCA_BTL_OFI_SHOW_HELP("bad modex", opal_process_info.nodename,
                              OPAL_NAME_PRINT(proc->proc_name));
        goto out_free_all;
    }
    blob = mca_btl_ofi_rail_pick(module, blobs, all->count);
    if (NULL == blob) {
        /* another rail of ours may reach it: ob1 and osc/rdma use that one */
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "rail %d: %s has no rail on this rail's subnet: not used for it",
                            module->rail, OPAL_NAME_PRINT(proc->proc_name));
        goto out_free_all;
    }
    if ((0 != blob->sep) != (NULL != module->sep)) {
        MCA_BTL_OFI_SHOW_HELP("sep mismatch", opal_process_info.nodename,
                              OPAL_NAME_PRINT(proc->proc_name));
        goto out_free_all;
    }
    for (uint32_t r = 0; r < all->count; ++r) {
        if (blobs[r] == blob) {
            peer_rail = (int) r;
        }
    }
    rc = mca_btl_ofi_endpoint_create(module, proc, blob, peer_rail, ep_out);
out_free_all:
    free(all);
    return rc;
}

static mca_btl_ofi_endpoint_t *mca_btl_ofi_endpoint_on_rail(mca_btl_ofi_endpoint_t *endpoint,
                                                            mca_btl_ofi_module_t *rail)
{
    mca_btl_ofi_endpoint_t *peer = endpoint->rail.peers[rail->rail];

    if (OPAL_LIKELY(NULL != peer)) {
        return peer;
    }
    MCA_BTL_OFI_LOCK(&rail->lock);
    if (OPAL_SUCCESS
        != opal_hash_table_get_value_uint64(
            &rail->endpoints_by_proc, (uint64_t) (uintptr_t) endpoint->proc, (void **) &peer)) {
        peer = NULL;
    }
    MCA_BTL_OFI_UNLOCK(&rail->lock);
    endpoint->rail.peers[rail->rail] = peer; /* racing threads store the same */
    return peer;
}

/* ------------------------------------------------------------------ split */

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
            mca_btl_ofi_rkey(p->ep, remote_handle), remote_handle);
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

/* Put and get with several rails: a large one is split over the rails
 * that reach the peer (after the routing every operation takes); any
 * other, or one only this rail reaches, takes the single-rail path. */
static int mca_btl_ofi_rails_rdma(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                                  int kind, void *local_address, uint64_t remote_address,
                                  mca_btl_base_registration_handle_t *local_handle,
                                  mca_btl_base_registration_handle_t *remote_handle, size_t size,
                                  int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                                  void *cbcontext, void *cbdata)
{
    if (size >= mca_btl_ofi_component.rail_split_size) {
        mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
        mca_btl_ofi_endpoint_t *peer = endpoint;
        mca_btl_ofi_context_t *context;
        int rc = mca_btl_ofi_route_op(&module, &peer, &context);

        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        rc = mca_btl_ofi_rdma_split(module, context, peer, kind, local_address, remote_address,
                                    local_handle, remote_handle, size, cbfunc, cbcontext, cbdata);
        if (OPAL_ERR_NOT_AVAILABLE != rc) {
            return rc;
        }
    }
    return (MCA_BTL_OFI_RMA_PUT == kind ? mca_btl_ofi_put : mca_btl_ofi_get)(
        btl, endpoint, local_address, remote_address, local_handle, remote_handle, size, flags,
        order, cbfunc, cbcontext, cbdata);
}

static int mca_btl_ofi_rails_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                                 void *local_address, uint64_t remote_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 mca_btl_base_registration_handle_t *remote_handle, size_t size,
                                 int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                                 void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rails_rdma(btl, endpoint, MCA_BTL_OFI_RMA_PUT, local_address, remote_address,
                                  local_handle, remote_handle, size, flags, order, cbfunc,
                                  cbcontext, cbdata);
}

static int mca_btl_ofi_rails_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint,
                                 void *local_address, uint64_t remote_address,
                                 mca_btl_base_registration_handle_t *local_handle,
                                 mca_btl_base_registration_handle_t *remote_handle, size_t size,
                                 int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                                 void *cbcontext, void *cbdata)
{
    return mca_btl_ofi_rails_rdma(btl, endpoint, MCA_BTL_OFI_RMA_GET, local_address, remote_address,
                                  local_handle, remote_handle, size, flags, order, cbfunc,
                                  cbcontext, cbdata);
}

static void mca_btl_ofi_atomics_rails(mca_btl_ofi_module_t *module)
{
    /* With several rails an atomic of the provider caught in flight on a
     * link that fails cannot be sent again (it may have been applied);
     * ours, numbered messages, can (btl_ofi_seq.c). So they are taken
     * unless the user chose (btl_ofi_emulate_atomics 0 or 1), no receive
     * buffers are posted (one-sided only), or the progress thread already
     * runs without the room it keeps for them. They are applied by the
     * target's progress: no change where the provider's atomics waited for
     * it anyway (manual data progress: ofi_rxm applies them in the
     * target's progress loop); with an auto-progress provider (sockets) a
     * target computing outside MPI now delays them. */
    if (module->amo_emulated || 0 <= mca_btl_ofi_component.emulate_atomics || !module->messaging
        || module->progress_running) {
        return;
    }
    module->amo_emulated = true;
    mca_btl_ofi_atomics_query(module);
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                        "rail %d: atomics carried as messages (several rails: one in flight on "
                        "a link that fails is sent again on another), atomic flags 0x%x",
                        module->rail, module->super.btl_atomic_flags);
}

void mca_btl_ofi_rails_join(mca_btl_ofi_module_t *module)
{
    /* a rail whose link fails passes its puts and gets in flight to
     * another (mca_btl_ofi_rail_failover): each keeps its completion
     * object, and every message has a completion, so that what the
     * failed link holds is known */
    module->track = true;
    module->bare_limit = 0;
    module->putv_max = 0; /* a gathered message has no completion to send again */
    module->getv_max = 0;
    module->super.btl_sendi = NULL;
    mca_btl_ofi_atomics_rails(module);
    /* large puts and gets are split over the rails */
    module->super.btl_put = mca_btl_ofi_rails_put;
    module->super.btl_get = mca_btl_ofi_rails_get;
}

/* --------------------------------------------------------------- failover */

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

/* Send every put and get of FROM (an endpoint of MODULE) still in flight
 * or parked again on TO, the same peer's endpoint on TO_MODULE; returns
 * how many. */
static int mca_btl_ofi_rdma_move(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *from,
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
            mca_btl_ofi_inflight(context, to, 1);
            MCA_BTL_OFI_LOCK(&context->lock);
            rc = mca_btl_ofi_rma_start(context, comp, old->parked_kind, old->parked_size,
                                       old->parked_raddr, mca_btl_ofi_rkey(to, &old->remote_copy),
                                       &old->remote_copy);
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

/* Take off CONTEXT (locked) what waits or flies there for FROM: queued
 * fragments onto QUEUED, replies onto REPLIES, and each numbered message
 * in flight made an orphan onto ORPHANS with its copy onto COPIES. False
 * when a copy could not be made (that message stays in flight). */
static bool mca_btl_ofi_frags_take(mca_btl_ofi_context_t *context, mca_btl_ofi_endpoint_t *from,
                                   opal_list_t *queued, opal_list_t *replies, opal_list_t *orphans,
                                   opal_list_t *copies)
{
    opal_list_item_t *item, *next;
    bool all = true;

    OPAL_LIST_FOREACH_SAFE (item, next, &context->sendq, opal_list_item_t) {
        if (((mca_btl_ofi_frag_t *) item)->endpoint == from) {
            opal_list_remove_item(&context->sendq, item);
            mca_btl_ofi_add64(&context->nqueued, -1);
            opal_list_append(queued, item);
        }
    }
    OPAL_LIST_FOREACH_SAFE (item, next, &context->pending, opal_list_item_t) {
        if (((mca_btl_ofi_pending_t *) item)->endpoint == from) {
            opal_list_remove_item(&context->pending, item);
            opal_list_append(replies, item);
        }
    }
    OPAL_LIST_FOREACH_SAFE (item, next, &context->sent, opal_list_item_t) {
        mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item, *copy;

        if (frag->endpoint != from) {
            continue;
        }
        /* an acknowledgement or a notice is not sent again: a later one
         * says the same */
        copy = NULL;
        if (mca_btl_ofi_msg_numbered(frag->hdr->type)) {
            copy = mca_btl_ofi_frag_copy(frag);
            if (NULL == copy) {
                all = false;
                continue;
            }
        }
        opal_list_remove_item(&context->sent, item);
        /* the provider's completion, if it ever comes, and the pml's free
         * (a fragment it did not give us) each let go of it */
        frag->orphan_refs = (frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) ? 1 : 2;
        frag->state = MCA_BTL_OFI_FRAG_ORPHAN;
        opal_list_append(orphans, item);
        if (NULL != copy) {
            opal_list_append(copies, &copy->base.super.super);
        }
    }
    return all;
}

/* FROM's link (MODULE's rail) failed: post on TO (TO_MODULE's endpoint
 * for the same peer) every message for FROM that may not have arrived:
 * copies of the numbered ones in flight or not yet acknowledged, which
 * keep their numbers, then the fragments and replies still queued.
 * Returns how many were sent again (the numbered ones), -1 when one could
 * not be copied (out of memory). */
static int mca_btl_ofi_frags_move(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *from,
                                  mca_btl_ofi_module_t *to_module, mca_btl_ofi_endpoint_t *to)
{
    opal_list_t queued, replies, orphans, copies;
    opal_list_item_t *item;
    bool all = true;
    int again;

    OBJ_CONSTRUCT(&queued, opal_list_t);
    OBJ_CONSTRUCT(&replies, opal_list_t);
    OBJ_CONSTRUCT(&orphans, opal_list_t);
    OBJ_CONSTRUCT(&copies, opal_list_t);
    for (int i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;

        MCA_BTL_OFI_LOCK(&context->lock);
        all = mca_btl_ofi_frags_take(context, from, &queued, &replies, &orphans, &copies) && all;
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
    /* complete but not acknowledged: they may be lost with the link */
    MCA_BTL_OFI_LOCK(&from->seq.lock);
    opal_list_join(&copies, opal_list_get_end(&copies), &from->seq.unacked);
    MCA_BTL_OFI_UNLOCK(&from->seq.lock);
    again = (int) opal_list_get_size(&copies);

    /* an orphan's copy carries it now: the pml hears it was sent */
    while (NULL != (item = opal_list_remove_first(&orphans))) {
        mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item;
        uint32_t flags = frag->base.des_flags;

        mca_btl_ofi_frag_inflight(frag->context, from, frag, -1);
        if ((flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) && !module->closing) {
            frag->base.des_cbfunc(&frag->home->super, from, &frag->base, OPAL_SUCCESS);
        }
    }
    while (NULL != (item = opal_list_remove_first(&copies))) {
        mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item;

        mca_btl_ofi_frag_resend(frag);
    }
    while (NULL != (item = opal_list_remove_first(&queued))) {
        mca_btl_ofi_frag_t *frag = (mca_btl_ofi_frag_t *) item;

        frag->endpoint = to;
        frag->context = mca_btl_ofi_context_get(to_module);
        (void) mca_btl_ofi_frag_start(to_module, frag->context, frag);
    }
    while (NULL != (item = opal_list_remove_first(&replies))) {
        mca_btl_ofi_pending_t *pending = (mca_btl_ofi_pending_t *) item;

        mca_btl_ofi_msg_reply(mca_btl_ofi_context_get(to_module), to, pending->msg.bytes,
                              pending->len);
        OBJ_RELEASE(pending->endpoint);
        OBJ_RELEASE(pending);
    }
    OBJ_DESTRUCT(&queued);
    OBJ_DESTRUCT(&replies);
    OBJ_DESTRUCT(&orphans);
    OBJ_DESTRUCT(&copies);
    return all ? again : -1;
}

/*
 * Rail failover. A peer whose host does not answer on one rail may still
 * answer on another: then only this rail's link is cut (a cable, a switch
 * port). Its puts and gets in flight on the cut link are sent again on
 * the rail that answers (they write or read the same bytes twice at
 * most, which an access epoch allows), and every later operation for the
 * peer takes that rail (its endpoint's detour). Messages (of the pml and
 * of emulated atomics) are numbered per link with several rails: those
 * that may not have arrived are sent again with their numbers, and the
 * receiver takes each once (btl_ofi_seq.c). An atomic of the provider in
 * flight on the cut link cannot be sent again: it may have been applied,
 * and twice would be wrong; with one in flight the peer is lost, as
 * before. The peer is told over the rail that answers, so that its own
 * traffic to us leaves the cut link before it stalls there.
 */

/* Leave ENDPOINT's rail (MODULE) for PEER, the same process's endpoint on
 * RAIL (or for the detour taken before). True when nothing is lost: what
 * was in flight could be moved; AGAIN (if not NULL) then says what was
 * sent again. */
static bool mca_btl_ofi_rail_failover(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint, mca_btl_ofi_module_t *rail,
                                      mca_btl_ofi_endpoint_t *peer, char *again, size_t len)
{
    int msgs, rdma;

    module->link_failed = true;
    mca_btl_ofi_seq_ack_again(module);
    if (NULL == endpoint->rail.detour) {
        endpoint->rail.detour_module = rail;
        opal_atomic_wmb();
        endpoint->rail.detour = peer;
    }
    rdma = mca_btl_ofi_rdma_move(module, endpoint, endpoint->rail.detour_module,
                                 endpoint->rail.detour);
    msgs = mca_btl_ofi_frags_move(module, endpoint, endpoint->rail.detour_module,
                                  endpoint->rail.detour);
    if (msgs < 0) {
        return false;
    }
    if (NULL != again) {
        snprintf(again, len, "%d message%s and %d put%s or get%s in flight or unacknowledged", msgs,
                 1 == msgs ? "" : "s", rdma, 1 == rdma ? "" : "s", 1 == rdma ? "" : "s");
    }
    /* what remains counted is an atomic posted on the cut link: emulated,
     * its request or reply is sent again; the provider's cannot be known
     * applied or not */
    return module->amo_emulated || endpoint->posted == endpoint->completed;
}

/* Tell the peer at PEER (on RAIL, which works) that its rail PEER_RAIL's
 * link to our rail OUR_RAIL is cut. */
static void mca_btl_ofi_rail_cut_tell(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint)
{
    mca_btl_ofi_module_t *rail = endpoint->rail.detour_module;
    mca_btl_ofi_rail_cut_t msg;

    if (endpoint->rail.told || !rail->messaging) {
        return; /* told before; or the peer finds out itself, when its traffic stalls */
    }
    endpoint->rail.told = true;
    memset(&msg, 0, sizeof(msg));
    msg.hdr.type = MCA_BTL_OFI_MSG_RAIL_CUT;
    msg.hdr.origin = mca_btl_ofi_component.my_name;
    msg.hdr.rail = MCA_BTL_OFI_NO_SEQ;
    msg.rail = (uint32_t) endpoint->rail.peer_rail;
    msg.from_rail = (uint32_t) module->rail;
    mca_btl_ofi_msg_reply(mca_btl_ofi_context_get(rail), endpoint->rail.detour, &msg, sizeof(msg));
}

/* The peer ENDPOINT of MODULE did not answer a probe: when another rail of
 * ours reaches it, fail over to that rail (true: the peer is not lost).
 * Otherwise WHY (LEN bytes) says what was seen. */
static bool mca_btl_ofi_rail_cut(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                                 char *why, size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    char here[INET6_ADDRSTRLEN], there[INET6_ADDRSTRLEN], again[128];

    if (NULL != endpoint->rail.detour) {
        /* failed over before: only what was queued on this rail then can
         * still stand still here */
        if (mca_btl_ofi_rail_failover(module, endpoint, NULL, NULL, NULL, 0)) {
            return true;
        }
        snprintf(why, len,
                 "the link of rail %d to it failed earlier (its traffic took rail %d since), and "
                 "an atomic posted on it before that is stuck there",
                 module->rail, endpoint->rail.detour_module->rail);
        return false;
    }
    for (int r = 0; r < c->num_modules; ++r) {
        mca_btl_ofi_module_t *rail = c->modules[r];
        mca_btl_ofi_endpoint_t *peer;

        if (NULL == rail || rail == module) {
            continue;
        }
        peer = mca_btl_ofi_endpoint_on_rail(endpoint, rail);
        if (NULL == peer || peer->lost || peer->dead || NULL != peer->rail.detour
            || 0 == peer->live.host.ss_family
            || 0 != mca_btl_ofi_probe_now(&peer->live.host, MCA_BTL_OFI_SUSPECT_WAIT_MS)) {
            continue;
        }
        mca_btl_ofi_host_name(&endpoint->live.host, here, sizeof(here));
        mca_btl_ofi_host_name(&peer->live.host, there, sizeof(there));
        if (!mca_btl_ofi_rail_failover(module, endpoint, rail, peer, again, sizeof(again))) {
            snprintf(why, len,
                     "its address %s on rail %d does not answer while %s on rail %d does: the "
                     "link of rail %d is cut or down, and an atomic to the peer was in flight on "
                     "it (btl/ofi cannot know whether the provider applied it, so it cannot send "
                     "it again on another rail)",
                     here, module->rail, there, rail->rail, module->rail);
            return false;
        }
        opal_output(0,
                    "btl/ofi on %s: peer %s on %s: its address %s on rail %d does not answer "
                    "while %s on rail %d does: the link of rail %d is cut or down; traffic to "
                    "this peer takes rail %d from now on (sent again on it: %s)",
                    opal_process_info.nodename, OPAL_NAME_PRINT(endpoint->proc->proc_name),
                    NULL != endpoint->proc->proc_hostname ? endpoint->proc->proc_hostname : "?",
                    here, module->rail, there, rail->rail, module->rail, rail->rail, again);
        mca_btl_ofi_rail_cut_tell(module, endpoint);
        return true;
    }
    return false;
}

void mca_btl_ofi_rail_cut_heard(mca_btl_ofi_context_t *context, const void *buf, size_t len)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_ofi_module_t *module = context->module, *cut;
    mca_btl_ofi_endpoint_t *live = NULL, *endpoint = NULL;
    mca_btl_ofi_rail_cut_t msg;
    char why[MCA_BTL_OFI_WHY_LEN], again[128];

    if (len < sizeof(msg)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a short rail notice");
        return;
    }
    memcpy(&msg, buf, sizeof(msg));
    if (msg.rail >= (uint32_t) c->num_modules || NULL == (cut = c->modules[msg.rail])
        || cut == module) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "dropped a rail notice for rail %u",
                            (unsigned) msg.rail);
        return;
    }
    live = mca_btl_ofi_endpoint_named(module, msg.hdr.origin);
    if (NULL == live) {
        return; /* a peer we no longer know (its procs were deleted) */
    }
    endpoint = mca_btl_ofi_endpoint_named(cut, msg.hdr.origin);
    if (NULL != endpoint && !endpoint->lost) {
        why[0] = '\0';
        if (NULL != endpoint->rail.detour) {
            /* found by us too: only the count below is new */
        } else if (mca_btl_ofi_rail_failover(cut, endpoint, module, live, again, sizeof(again))) {
            opal_output(0,
                        "btl/ofi on %s: peer %s on %s finds the link between its rail %u and "
                        "our rail %d cut or down; traffic to this peer takes rail %d from now on "
                        "(sent again on it: %s)",
                        opal_process_info.nodename, OPAL_NAME_PRINT(live->proc->proc_name),
                        NULL != live->proc->proc_hostname ? live->proc->proc_hostname : "?",
                        (unsigned) msg.from_rail, cut->rail, module->rail, again);
            mca_btl_ofi_rail_cut_tell(cut, endpoint);
        } else {
            snprintf(why, sizeof(why),
                     "it finds the link between its rail %u and our rail %d cut or down, and an "
                     "atomic of ours to it was in flight on that link (btl/ofi cannot know "
                     "whether the provider applied it, so it cannot send it again on another "
                     "rail)",
                     (unsigned) msg.from_rail, cut->rail);
        }
        if ('\0' != why[0]) {
            endpoint->dead = true;
            mca_btl_ofi_endpoint_lost(cut, endpoint, why);
        }
    }
    if (NULL != endpoint) {
        OBJ_RELEASE(endpoint);
    }
    OBJ_RELEASE(live);
}

/* The periodic look at the peers (from the progress callback), and what
 * follows from it: a peer whose host does not answer on this rail while
 * it does on another has its link cut (the rail failover above); any
 * other lost peer is named and the job ends; a same-host peer found gone
 * is named if work of ours waits on it. With several rails, what peers
 * sent while traffic paused is acknowledged now, not 32 messages later:
 * they keep copies until then. */
void mca_btl_ofi_peers_check(mca_btl_ofi_module_t *module)
{
    mca_btl_ofi_verdicts_t v;

    if (!mca_btl_ofi_peers_scan(module, &v)) {
        return;
    }
    for (int i = 0; i < v.nlost; ++i) {
        mca_btl_ofi_endpoint_t *peer = v.lost[i];

        if (ECONNREFUSED != v.errs[i] && !peer->lost
            && mca_btl_ofi_rail_cut(module, peer, v.why[i], sizeof(v.why[i]))) {
            continue;
        }
        peer->dead = true;
        mca_btl_ofi_endpoint_lost(module, peer, v.why[i]);
    }
    if (NULL != v.dead && mca_btl_ofi_owed(module, v.dead)) {
        (void) mca_btl_ofi_endpoint_check(module, v.dead);
    }
    mca_btl_ofi_verdicts_free(&v);
    if (module->track) {
        mca_btl_ofi_seq_ack_due(module);
    }
}
