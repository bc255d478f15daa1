/*
 * btl/ofi discovery: the candidates libfabric offers (fi_getinfo, once
 * plain and once with FI_DELIVERY_COMPLETE), the selection lists
 * (btl_ofi_provider_include/exclude, btl_ofi_if_include/exclude, by name
 * or CIDR), why each candidate is refused, and a module opened on each one
 * taken (one per rail). btl_ofi_component.c calls it from init.
 */

#include "btl_ofi.h"
#include "btl_ofi_discovery.h"
#include "btl_ofi_rails.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "opal/util/argv.h"
#include "opal/util/proc.h"

static bool mca_btl_ofi_in_list(char **list, const char *name)
{
    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (0 == strcmp(list[i], name)) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ interfaces */

/* An entry of btl_ofi_if_include/exclude as an address and prefix length
 * ("10.1.0.0/16", "fd00::/64", or one address); false when it is not an
 * address, i.e. it names an interface. */
static bool mca_btl_ofi_cidr_parse(const char *spec, int *family, unsigned char *net, int *bits,
                                   bool *valid)
{
    char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
    long len;

    *valid = true;
    if (strlen(spec) >= sizeof(buf)) {
        return false;
    }
    strcpy(buf, spec);
    slash = strchr(buf, '/');
    if (NULL != slash) {
        *slash = '\0';
    }
    if (1 == inet_pton(AF_INET, buf, net)) {
        *family = AF_INET;
    } else if (1 == inet_pton(AF_INET6, buf, net)) {
        *family = AF_INET6;
    } else {
        /* "eth0" names an interface; "eth0/24" or "10.1/16" is nothing */
        *valid = (NULL == slash);
        return !*valid;
    }
    *bits = AF_INET == *family ? 32 : 128;
    if (NULL != slash) {
        len = strtol(slash + 1, &end, 10);
        if ('\0' == slash[1] || '\0' != *end || len < 0 || len > *bits) {
            *valid = false;
            return true;
        }
        *bits = (int) len;
    }
    return true;
}

/* Whether the first `bits' bits of two addresses agree. */
static bool mca_btl_ofi_prefix_equal(const unsigned char *a, const unsigned char *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;

    if (0 != memcmp(a, b, (size_t) whole)) {
        return false;
    }
    return 0 == rest || 0 == ((a[whole] ^ b[whole]) & (0xff << (8 - rest)));
}

/* The interface a candidate domain sends from (the one holding its source
 * address), or NULL for providers without one (shm). */
static const char *mca_btl_ofi_iface_of(const struct fi_info *info, const struct ifaddrs *ifs)
{
    int family, ifamily;
    const unsigned char *mine = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &family);

    if (NULL == mine) {
        return NULL;
    }
    for (const struct ifaddrs *i = ifs; NULL != i; i = i->ifa_next) {
        /* getifaddrs gives each address in the full size of its family */
        const unsigned char *theirs =
            mca_btl_ofi_sa_bytes(i->ifa_addr, sizeof(struct sockaddr_in6), &ifamily);
        if (NULL != theirs && ifamily == family
            && mca_btl_ofi_prefix_equal(mine, theirs, AF_INET == family ? 32 : 128)) {
            return i->ifa_name;
        }
    }
    /* tcp, sockets and udp name their domains after the interface */
    return info->domain_attr->name;
}

/* Whether a candidate on interface `iface' matches an entry of a list. */
static bool mca_btl_ofi_if_matches(char **list, const char *iface, const struct fi_info *info)
{
    unsigned char net[16];
    int family, afamily = AF_UNSPEC, bits;
    bool valid;
    const unsigned char *addr = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &afamily);

    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (!mca_btl_ofi_cidr_parse(list[i], &family, net, &bits, &valid)) {
            if (0 == strcmp(list[i], iface)) {
                return true;
            }
        } else if (valid && NULL != addr && family == afamily
                   && mca_btl_ofi_prefix_equal(addr, net, bits)) {
            return true;
        }
    }
    return false;
}

/* Says once per entry of an interface list what is wrong with it: a
 * malformed subnet, or an interface this host does not have (a list
 * shared by hosts may name another host's interface: a warning). */
static void mca_btl_ofi_if_list_check(const char *param, char **list, const struct ifaddrs *ifs)
{
    unsigned char net[16];
    int family, bits;
    bool valid, found;

    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (mca_btl_ofi_cidr_parse(list[i], &family, net, &bits, &valid)) {
            if (!valid) {
                MCA_BTL_OFI_SHOW_HELP(
                    "bad interface", opal_process_info.nodename, param, list[i],
                    "it is not a subnet in CIDR notation (address/prefix length)");
            }
            continue;
        }
        found = false;
        for (const struct ifaddrs *j = ifs; NULL != j && !found; j = j->ifa_next) {
            found = 0 == strcmp(j->ifa_name, list[i]);
        }
        if (!found) {
            MCA_BTL_OFI_SHOW_HELP("bad interface", opal_process_info.nodename, param, list[i],
                                  "this host has no interface of that name");
        }
    }
}

/* The kind of source address a candidate domain has: peers on other hosts
 * cannot use a loopback or an IPv6 link-local one (no interface scope
 * travels in the address). */
enum {
    MCA_BTL_OFI_ADDR_OTHER,
    MCA_BTL_OFI_ADDR_GLOBAL,
    MCA_BTL_OFI_ADDR_LOOPBACK,
    MCA_BTL_OFI_ADDR_LINKLOCAL
};

static int mca_btl_ofi_addr_kind(const struct fi_info *info)
{
    const struct sockaddr *sa = (const struct sockaddr *) info->src_addr;

    if (NULL == sa || info->src_addrlen < sizeof(sa->sa_family)) {
        return MCA_BTL_OFI_ADDR_OTHER;
    }
    if (AF_INET == sa->sa_family && info->src_addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
        return 127 == (ntohl(in->sin_addr.s_addr) >> 24) ? MCA_BTL_OFI_ADDR_LOOPBACK
                                                         : MCA_BTL_OFI_ADDR_GLOBAL;
    }
    if (AF_INET6 == sa->sa_family && info->src_addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
            return MCA_BTL_OFI_ADDR_LOOPBACK;
        }
        return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ? MCA_BTL_OFI_ADDR_LINKLOCAL
                                                      : MCA_BTL_OFI_ADDR_GLOBAL;
    }
    return MCA_BTL_OFI_ADDR_OTHER;
}


/* Why btl_ofi_if_include/exclude leave a candidate out, or NULL; `named':
 * the include list names it. */
static const char *mca_btl_ofi_if_refusal(const struct fi_info *info, const char *iface,
                                          const mca_btl_ofi_lists_t *lists, bool *named)
{
    *named = false;
    if (NULL == iface) {
        return NULL; /* no network interface (shm): the lists do not apply */
    }
    if (NULL != lists->if_include) {
        if (!mca_btl_ofi_if_matches(lists->if_include, iface, info)) {
            return "interface not in btl_ofi_if_include";
        }
        *named = true;
    }
    if (mca_btl_ofi_if_matches(lists->if_exclude, iface, info)) {
        return "interface listed in btl_ofi_if_exclude";
    }
    return NULL;
}

/* Whether the provider of `info' also offers a domain, allowed by the
 * interface lists, with an address that other hosts can reach. */
static bool mca_btl_ofi_has_global_twin(const struct fi_info *all, const struct fi_info *info,
                                        const mca_btl_ofi_lists_t *lists)
{
    bool named;

    for (; NULL != all; all = all->next) {
        if (0 == strcmp(all->fabric_attr->prov_name, info->fabric_attr->prov_name)
            && MCA_BTL_OFI_ADDR_GLOBAL == mca_btl_ofi_addr_kind(all)
            && NULL
                   == mca_btl_ofi_if_refusal(all, mca_btl_ofi_iface_of(all, lists->ifs), lists,
                                             &named)) {
            return true;
        }
    }
    return false;
}

/* "eth1 10.77.1.1" for the verbose lines: domain names repeat across
 * address families. */
static void mca_btl_ofi_where(const struct fi_info *info, const char *iface, char *buf, size_t size)
{
    char addr[INET6_ADDRSTRLEN] = "?";
    int family;
    const unsigned char *bytes = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &family);

    if (NULL != bytes) {
        (void) inet_ntop(family, bytes, addr, sizeof(addr));
    }
    snprintf(buf, size, "%s (interface %s, %s)", info->domain_attr->name, iface, addr);
}

static const char *mca_btl_ofi_refusal(const struct fi_info *all, const struct fi_info *info,
                                       const char *iface, const mca_btl_ofi_lists_t *lists)
{
    const char *prov = info->fabric_attr->prov_name;
    char **include = lists->prov_include, **exclude = lists->prov_exclude;
    int kind = mca_btl_ofi_addr_kind(info);
    const char *why;
    bool named;

    if (NULL != include && !mca_btl_ofi_in_list(include, prov)) {
        return "not in btl_ofi_provider_include";
    }
    if (NULL == include && mca_btl_ofi_in_list(exclude, prov)) {
        return "listed in btl_ofi_provider_exclude";
    }
    if (info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_RMA_EVENT)) {
        return "needs local or per-endpoint memory registration (FI_MR_LOCAL/FI_MR_ENDPOINT)";
    }
    why = mca_btl_ofi_if_refusal(info, iface, lists, &named);
    if (NULL != why) {
        return why;
    }
    if (MCA_BTL_OFI_ADDR_LINKLOCAL == kind) {
        return "IPv6 link-local address (peers on other hosts cannot use it)";
    }
    if (MCA_BTL_OFI_ADDR_LOOPBACK == kind && !named
        && mca_btl_ofi_has_global_twin(all, info, lists)) {
        return "loopback, and the provider offers another interface (peers on other hosts "
               "cannot reach a loopback address; name it in btl_ofi_if_include to use it)";
    }
    return NULL;
}

/* Whether two candidates are one provider domain on one address. */
static bool mca_btl_ofi_same_domain(const struct fi_info *a, const struct fi_info *b)
{
    return 0 == strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name)
           && 0 == strcmp(a->domain_attr->name, b->domain_attr->name)
           && a->src_addrlen == b->src_addrlen
           && (0 == a->src_addrlen || 0 == memcmp(a->src_addr, b->src_addr, a->src_addrlen));
}

/* Whether INFO's domain and address came earlier in ALL: libfabric lists
 * one domain several times (ofi_rxm once per variant of the core
 * provider's attributes). What decides a candidate (lists, address,
 * rails, its twin with FI_DELIVERY_COMPLETE) is the domain and address,
 * so the first listing's verdict holds for the rest: they are neither
 * looked at again nor printed again. */
static bool mca_btl_ofi_listed_before(const struct fi_info *all, const struct fi_info *info)
{
    for (; all != info; all = all->next) {
        if (mca_btl_ofi_same_domain(all, info)) {
            return true;
        }
    }
    return false;
}

static const struct fi_info *mca_btl_ofi_find_twin(const struct fi_info *list,
                                                   const struct fi_info *info)
{
    for (; NULL != list; list = list->next) {
        if (0 == strcmp(list->fabric_attr->prov_name, info->fabric_attr->prov_name)
            && 0 == strcmp(list->fabric_attr->name, info->fabric_attr->name)
            && 0 == strcmp(list->domain_attr->name, info->domain_attr->name)) {
            return list;
        }
    }
    return NULL;
}

static struct fi_info *mca_btl_ofi_hints(bool delivery_complete)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    struct fi_info *hints = fi_allocinfo();

    if (NULL == hints) {
        return NULL;
    }
    hints->caps = FI_RMA | FI_ATOMIC;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = c->locking ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
    if (MCA_BTL_OFI_PROGRESS_DEFAULT != c->progress_mode) {
        hints->domain_attr->data_progress = (enum fi_progress) c->progress_mode;
    }
    if (delivery_complete) {
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    }
    return hints;
}

/* The same provider and domain with more capabilities and the given data
 * progress, or NULL. */
static struct fi_info *mca_btl_ofi_refine(const struct fi_info *info, uint64_t caps,
                                          enum fi_progress progress)
{
    struct fi_info *hints = fi_dupinfo(info), *found = NULL;

    if (NULL == hints) {
        return NULL;
    }
    hints->caps |= caps;
    hints->domain_attr->data_progress = progress;
    if (0 != fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, &found)) {
        found = NULL;
    } else if (NULL != found->next) {
        /* the first match is the one we asked for; drop the rest */
        fi_freeinfo(found->next);
        found->next = NULL;
    }
    fi_freeinfo(hints);
    return found;
}

/* The candidate as we will open it: with the extra capabilities, and
 * manual data progress unless the user asked otherwise. */
static struct fi_info *mca_btl_ofi_pick(const struct fi_info *twin, uint64_t extra)
{
    struct fi_info *mine = NULL;

    if (MCA_BTL_OFI_PROGRESS_DEFAULT == mca_btl_ofi_component.progress_mode
        && FI_PROGRESS_MANUAL != twin->domain_attr->data_progress) {
        mine = mca_btl_ofi_refine(twin, extra, FI_PROGRESS_MANUAL);
    }
    if (NULL == mine) {
        mine = mca_btl_ofi_refine(twin, extra, twin->domain_attr->data_progress);
    }
    return mine;
}

/* The selection lists, split once, and this host's interfaces; false
 * (said) when the interface lists contradict each other. */
bool mca_btl_ofi_lists_open(mca_btl_ofi_lists_t *lists)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    if (NULL != c->if_include && NULL != c->if_exclude) {
        /* as btl/tcp: which one the user meant cannot be guessed */
        MCA_BTL_OFI_SHOW_HELP("if include and exclude", opal_process_info.nodename, c->if_include,
                              c->if_exclude);
        return false;
    }
    lists->prov_include = opal_argv_split(c->provider_include, ',');
    lists->prov_exclude = opal_argv_split(c->provider_exclude, ',');
    lists->if_include = opal_argv_split(c->if_include, ',');
    lists->if_exclude = opal_argv_split(c->if_exclude, ',');
    if (0 != getifaddrs(&lists->ifs)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "getifaddrs failed (%s): interfaces are known by domain name only",
                            strerror(errno));
        lists->ifs = NULL;
    }
    mca_btl_ofi_if_list_check("btl_ofi_if_include", lists->if_include, lists->ifs);
    mca_btl_ofi_if_list_check("btl_ofi_if_exclude", lists->if_exclude, lists->ifs);
    return true;
}

void mca_btl_ofi_lists_close(mca_btl_ofi_lists_t *lists)
{
    opal_argv_free(lists->prov_include);
    opal_argv_free(lists->prov_exclude);
    opal_argv_free(lists->if_include);
    opal_argv_free(lists->if_exclude);
    if (NULL != lists->ifs) {
        freeifaddrs(lists->ifs);
    }
}

/* Every candidate (ALL), and the same asked with FI_DELIVERY_COMPLETE
 * (WITH_DC): a candidate without a twin there cannot promise remote
 * completion. Either may be NULL. */
void mca_btl_ofi_candidates(struct fi_info **all, struct fi_info **with_dc)
{
    struct fi_info *hints;
    int rc;

    *all = *with_dc = NULL;
    hints = mca_btl_ofi_hints(false);
    if (NULL == hints) {
        return;
    }
    rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_GETINFO)
             ? -FI_EIO
             : fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, all);
    fi_freeinfo(hints);
    if (0 != rc) {
        /* no match at all is -FI_ENODATA, reported as "no provider" */
        if (-FI_ENODATA != rc) {
            MCA_BTL_OFI_REPORT("fi_getinfo", rc);
        }
        *all = NULL;
        return;
    }
    hints = mca_btl_ofi_hints(true);
    if (NULL == hints) {
        return;
    }
    rc = fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, with_dc);
    fi_freeinfo(hints);
    if (0 != rc) {
        *with_dc = NULL;
    }
}

/* The candidate TWIN (of provider PROV, domain DOM) asked for the
 * capabilities our paths need on it: messages for two-sided traffic and
 * emulated atomics and RMA, multi-receive buffers where it has them; NULL
 * (said) when it lacks what we need. */
static struct fi_info *mca_btl_ofi_candidate_caps(const struct fi_info *twin, const char *prov,
                                                  const char *dom)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    uint32_t quirks = mca_btl_ofi_provider_quirks(prov);
    bool msg = MCA_BTL_OFI_MODE_ONE_SIDED != c->mode || 1 == c->emulate_atomics
               || 1 == c->emulate_rma
               || (0 > c->emulate_atomics && (quirks & MCA_BTL_OFI_QUIRK_FETCH_ATOMICS))
               || (0 > c->emulate_rma && (quirks & MCA_BTL_OFI_QUIRK_RMA));
    uint64_t extra = msg ? FI_MSG : 0;
    struct fi_info *mine = NULL;

    if (msg && c->multi_recv_size > 0) {
        /* pack messages into few big buffers where the provider can */
        mine = mca_btl_ofi_pick(twin, extra | FI_MULTI_RECV);
    }
    if (NULL == mine) {
        mine = mca_btl_ofi_pick(twin, extra);
    }
    if (NULL == mine && MCA_BTL_OFI_MODE_FULL == c->mode) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "candidate %s domain %s: no FI_MSG, one-sided traffic only", prov, dom);
        mine = mca_btl_ofi_pick(twin, 0);
    }
    if (NULL == mine) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "candidate %s domain %s: refused, no FI_MSG for messages", prov, dom);
    }
    return mine;
}

/* Go through the candidates in libfabric's order and open a module (a
 * rail) on each one the lists and the rails taken so far allow, saying
 * for each why it was refused or that it was taken. Returns how many were
 * taken (into TAKEN, their interfaces into TAKEN_IF); SEEN: every provider
 * met, for the message when none is. */
int mca_btl_ofi_take_candidates(struct fi_info *all, struct fi_info *with_dc,
                                mca_btl_ofi_lists_t *lists, mca_btl_ofi_module_t **taken,
                                char (*taken_if)[IF_NAMESIZE + 1], char ***seen)
{
    int ntaken = 0, rc;

    for (struct fi_info *info = all; NULL != info; info = info->next) {
        const char *prov = info->fabric_attr->prov_name;
        const char *dom = info->domain_attr->name;
        const char *iface, *why;
        const struct fi_info *twin = NULL;
        char where[INET6_ADDRSTRLEN + IF_NAMESIZE + 8] = "";
        mca_btl_ofi_module_t *module;
        struct fi_info *mine;

        if (mca_btl_ofi_listed_before(all, info)) {
            continue;
        }
        iface = mca_btl_ofi_iface_of(info, lists->ifs);
        why = mca_btl_ofi_refusal(all, info, iface, lists);
        if (!mca_btl_ofi_in_list(*seen, prov)) {
            opal_argv_append_nosize(seen, prov);
        }
        if (NULL != iface) {
            mca_btl_ofi_where(info, iface, where, sizeof(where));
            dom = where;
        }
        if (NULL == why && ntaken > 0) {
            why = mca_btl_ofi_rail_refusal(taken, taken_if, ntaken, info, iface);
        }
        if (NULL == why && NULL == (twin = mca_btl_ofi_find_twin(with_dc, info))) {
            why = "no FI_DELIVERY_COMPLETE, so a flush could not promise remote completion";
        }
        if (NULL != why) {
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "candidate %s domain %s: refused, %s",
                                prov, dom, why);
            continue;
        }
        mine = mca_btl_ofi_candidate_caps(twin, prov, dom);
        if (NULL == mine) {
            continue;
        }
        module = mca_btl_ofi_module_alloc();
        if (NULL == module) {
            fi_freeinfo(mine);
            break;
        }
        module->rail = ntaken;
        mca_btl_ofi_rail_net(module, info, iface, lists->ifs);
        rc = mca_btl_ofi_module_init(module, mine);
        if (OPAL_SUCCESS != rc) {
            fi_freeinfo(mine);
            mca_btl_ofi_module_free(module);
            if (OPAL_ERR_NOT_SUPPORTED != rc) {
                MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                    "candidate %s domain %s: refused, opening it failed", prov,
                                    dom);
            }
            continue;
        }
        snprintf(taken_if[ntaken], sizeof(taken_if[ntaken]), "%s", NULL != iface ? iface : "");
        taken[ntaken++] = module;
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "candidate %s domain %s: taken (rail %d)",
                            prov, dom, ntaken - 1);
        mca_btl_ofi_rail_speed(module, info, iface);
    }
    return ntaken;
}
