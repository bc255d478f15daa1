/*
 * btl/ofi module: opening the fabric resources of the chosen provider,
 * peers (add/del procs), memory registration through the rcache, flush and
 * finalize.
 */

#include <dlfcn.h>

#include "btl_ofi.h"
#include "btl_ofi_atomics.h"
#include "btl_ofi_context.h"
#include "btl_ofi_progress.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_rdma.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_putv.h"

#include <sys/random.h>
#include <time.h>

#include "opal/class/opal_bitmap.h"
#include "opal/util/alfg.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

static void mca_btl_ofi_reg_construct(mca_btl_ofi_reg_t *reg)
{
    memset(reg->mr, 0, sizeof(reg->mr));
    reg->module = NULL;
    reg->desc = NULL;
    memset(&reg->handle, 0, sizeof(reg->handle));
}

OBJ_CLASS_INSTANCE(mca_btl_ofi_reg_t, mca_rcache_base_registration_t, mca_btl_ofi_reg_construct,
                   NULL);

static inline size_t mca_btl_ofi_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

static inline size_t mca_btl_ofi_max(size_t a, size_t b)
{
    return a > b ? a : b;
}

/* ------------------------------------------------------------------ peers */

static inline uint64_t mca_btl_ofi_name_key(const opal_process_name_t *name)
{
    uint64_t key;
    memcpy(&key, name, sizeof(key));
    return key;
}

/* With btl_ofi_mode 0 this module carries no pml sends. If pml/ob1 runs
 * and no other BTL but self can send, ob1 4.1 dereferences an empty send
 * list on its first message and crashes. Say so instead, and reach no
 * peer, so that Open MPI stops with its "unable to reach" message. */
static bool mca_btl_ofi_ob1_stranded(mca_btl_ofi_module_t *module)
{
    const mca_base_component_t *pml;
    mca_btl_base_selected_module_t *sm;

    if (module->super.btl_flags & MCA_BTL_FLAGS_SEND) {
        return false;
    }
    /* the pml lives in libmpi, above this layer: look it up by name */
    pml = (const mca_base_component_t *) dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component");
    if (NULL == pml || 0 != strcmp(pml->mca_component_name, "ob1")) {
        return false;
    }
    OPAL_LIST_FOREACH (sm, &mca_btl_base_modules_initialized, mca_btl_base_selected_module_t) {
        const char *name = sm->btl_component->btl_version.mca_component_name;
        if ((sm->btl_module->btl_flags & MCA_BTL_FLAGS_SEND) && 0 != strcmp(name, "self")
            && &module->super != sm->btl_module) {
            return false;
        }
    }
    return true;
}

static int mca_btl_ofi_add_procs(mca_btl_base_module_t *btl, size_t nprocs,
                                 struct opal_proc_t **procs, mca_btl_base_endpoint_t **peers,
                                 opal_bitmap_t *reachable)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    int rc = OPAL_SUCCESS;
    static bool stranded_told = false;

    if (OPAL_UNLIKELY(mca_btl_ofi_ob1_stranded(module))) {
        if (!stranded_told) {
            stranded_told = true;
            MCA_BTL_OFI_SHOW_HELP("ob1 stranded", mca_btl_ofi_component.mode,
                                  opal_process_info.nodename);
        }
        return OPAL_SUCCESS; /* nobody reachable */
    }

    MCA_BTL_OFI_LOCK(&module->lock);
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_ofi_endpoint_t *endpoint = NULL;
        uint64_t key = (uint64_t) (uintptr_t) procs[i];

        if (OPAL_SUCCESS
            != opal_hash_table_get_value_uint64(&module->endpoints_by_proc, key,
                                                (void **) &endpoint)) {
            rc = mca_btl_ofi_rail_endpoint(module, procs[i], &endpoint);
            if (OPAL_ERR_UNREACH == rc) {
                rc = OPAL_SUCCESS;
                continue;
            }
            if (OPAL_SUCCESS != rc) {
                break;
            }
            opal_list_append(&module->endpoints, &endpoint->super);
            opal_hash_table_set_value_uint64(&module->endpoints_by_proc, key, endpoint);
            opal_hash_table_set_value_uint64(&module->endpoints_by_name,
                                             mca_btl_ofi_name_key(&procs[i]->proc_name), endpoint);
        }
        peers[i] = endpoint;
        if (NULL != reachable) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    return rc;
}

static int mca_btl_ofi_del_procs(mca_btl_base_module_t *btl, size_t nprocs,
                                 struct opal_proc_t **procs, mca_btl_base_endpoint_t **peers)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;

    MCA_BTL_OFI_LOCK(&module->lock);
    for (size_t i = 0; i < nprocs; ++i) {
        mca_btl_ofi_endpoint_t *endpoint = NULL;
        uint64_t key = (uint64_t) (uintptr_t) procs[i];

        if (OPAL_SUCCESS
            == opal_hash_table_get_value_uint64(&module->endpoints_by_proc, key,
                                                (void **) &endpoint)) {
            opal_hash_table_remove_value_uint64(&module->endpoints_by_proc, key);
            opal_hash_table_remove_value_uint64(&module->endpoints_by_name,
                                                mca_btl_ofi_name_key(&procs[i]->proc_name));
            /* not released yet: a send the provider refused for now (in
             * a context's queue) or one in flight still names it, and is
             * posted or completed later, at the latest by finalize's
             * drain (which read the freed addresses: a crash at
             * MPI_Finalize across hosts with coll/ofi's messages queued) */
            opal_list_remove_item(&module->endpoints, &endpoint->super);
            opal_list_append(&module->retired, &endpoint->super);
        }
        if (NULL != peers) {
            peers[i] = NULL;
        }
    }
    MCA_BTL_OFI_UNLOCK(&module->lock);
    return OPAL_SUCCESS;
}

/* ----------------------------------------------------------- registration */

/* Keys we request (providers without FI_MR_PROV_KEY) are random, never
 * derived from addresses, so a peer cannot guess one from a pointer. */
static uint64_t mca_btl_ofi_random_key(const mca_btl_ofi_module_t *module)
{
    uint64_t key = 0;
    if (sizeof(key) != getrandom(&key, sizeof(key), 0)) {
        key = ((uint64_t) opal_random() << 32) ^ (uint64_t) opal_random();
    }
    return key & module->key_mask;
}

/* Register [base, base+size) in one rail's domain with the given rights. */
static int mca_btl_ofi_mr_reg(mca_btl_ofi_module_t *module, void *base, size_t size,
                              uint64_t access, struct fid_mr **mr)
{
    int rc = -FI_ENOKEY;

    /* a requested key may collide with one in use: draw another */
    for (int attempt = 0; attempt < 8 && -FI_ENOKEY == rc; ++attempt) {
        uint64_t want = module->prov_key ? 0 : mca_btl_ofi_random_key(module);
        rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_MR_REG)
                 ? -FI_EIO
                 : fi_mr_reg(module->domain, base, size, access, 0, want, 0, mr, NULL);
    }
    if (0 != rc) {
        MCA_BTL_OFI_SHOW_HELP("registration failed", opal_process_info.nodename, base, size, rc,
                              fi_strerror(-rc));
        *mr = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_mr_close(mca_btl_ofi_module_t *module, mca_btl_ofi_reg_t *reg);

/* Open the provider registration behind reg for exactly [base, base+size)
 * with the rights in reg->super.access_flags: in this module's domain, and
 * for regions peers may reach in every rail's (a transfer split over the
 * rails reaches the region through each); each key findable by its rail
 * for emulated atomics. */
static int mca_btl_ofi_mr_open(mca_btl_ofi_module_t *module, mca_btl_ofi_reg_t *reg, void *base,
                               size_t size, bool every_rail)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    uint64_t access = FI_READ | FI_WRITE;

    if (reg->super.access_flags & MCA_RCACHE_ACCESS_REMOTE_READ) {
        access |= FI_REMOTE_READ;
    }
    if (reg->super.access_flags & MCA_RCACHE_ACCESS_REMOTE_WRITE) {
        access |= FI_REMOTE_WRITE;
    }
    if (reg->super.access_flags & MCA_RCACHE_ACCESS_REMOTE_ATOMIC) {
        access |= FI_REMOTE_READ | FI_REMOTE_WRITE;
    }
    memset(reg->mr, 0, sizeof(reg->mr));
    memset(&reg->handle, 0, sizeof(reg->handle));
    reg->module = module;
    reg->handle.base = (uint64_t) (uintptr_t) base;
    for (int r = 0; r < MCA_BTL_OFI_MAX_RAILS; ++r) {
        mca_btl_ofi_module_t *rail = r == module->rail                    ? module
                                     : (every_rail && r < c->num_modules) ? c->modules[r]
                                                                          : NULL;
        if (NULL == rail) {
            continue;
        }
        if (OPAL_SUCCESS != mca_btl_ofi_mr_reg(rail, base, size, access, &reg->mr[r])) {
            (void) mca_btl_ofi_mr_close(module, reg);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        *mca_btl_ofi_handle_key(&reg->handle, r) = fi_mr_key(reg->mr[r]);
        MCA_BTL_OFI_LOCK(&rail->lock);
        opal_hash_table_set_value_uint64(&rail->regs_by_key,
                                         *mca_btl_ofi_handle_key(&reg->handle, r), reg);
        MCA_BTL_OFI_UNLOCK(&rail->lock);
    }
    reg->desc = fi_mr_desc(reg->mr[module->rail]);
    return OPAL_SUCCESS;
}

/* Close it: from here on a peer's access with an old key fails. */
static int mca_btl_ofi_mr_close(mca_btl_ofi_module_t *module, mca_btl_ofi_reg_t *reg)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    int rc, ret = OPAL_SUCCESS;

    for (int r = 0; r < MCA_BTL_OFI_MAX_RAILS; ++r) {
        mca_btl_ofi_module_t *rail = r == module->rail    ? module
                                     : r < c->num_modules ? c->modules[r]
                                                          : NULL;
        if (NULL == reg->mr[r]) {
            continue;
        }
        if (NULL != rail) {
            MCA_BTL_OFI_LOCK(&rail->lock);
            opal_hash_table_remove_value_uint64(&rail->regs_by_key,
                                                *mca_btl_ofi_handle_key(&reg->handle, r));
            MCA_BTL_OFI_UNLOCK(&rail->lock);
        }
        rc = mca_btl_ofi_close_fid(&reg->mr[r]->fid, "memory region");
        reg->mr[r] = NULL;
        if (OPAL_SUCCESS != rc) {
            ret = rc;
        }
    }
    return ret;
}

static int mca_btl_ofi_rcache_register(void *reg_data, void *base, size_t size,
                                       mca_rcache_base_registration_t *rreg)
{
    /* local access only: this rail's domain */
    return mca_btl_ofi_mr_open((mca_btl_ofi_module_t *) reg_data, (mca_btl_ofi_reg_t *) rreg, base,
                               size, false);
}

static int mca_btl_ofi_rcache_deregister(void *reg_data, mca_rcache_base_registration_t *rreg)
{
    return mca_btl_ofi_mr_close((mca_btl_ofi_module_t *) reg_data, (mca_btl_ofi_reg_t *) rreg);
}

/*
 * Registrations a peer may reach (any remote right) bypass the registration
 * cache: the cache rounds to whole pages, hands a read-write registration
 * back to a read-only request, and keeps registrations open after they are
 * deregistered (mpi_leave_pinned), so a peer holding an old key could still
 * read or write memory the process has freed. Ours cover exactly the range
 * and rights asked for and are closed by btl_deregister_mem. Registrations
 * for local access only expose nothing and stay cached.
 */
static mca_btl_base_registration_handle_t *
mca_btl_ofi_register_mem(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint, void *base,
                         size_t size, uint32_t flags)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    int32_t access = (int32_t) (flags & MCA_BTL_REG_FLAG_ACCESS_ANY);
    mca_rcache_base_registration_t *rreg = NULL;
    mca_btl_ofi_reg_t *reg;
    int rc;
    (void) endpoint;

    if (0
        == (access
            & (MCA_RCACHE_ACCESS_REMOTE_READ | MCA_RCACHE_ACCESS_REMOTE_WRITE
               | MCA_RCACHE_ACCESS_REMOTE_ATOMIC))) {
        rc = module->rcache->rcache_register(module->rcache, base, size, 0, access, &rreg);
        if (OPAL_UNLIKELY(OPAL_SUCCESS != rc || NULL == rreg)) {
            return NULL;
        }
        return &((mca_btl_ofi_reg_t *) rreg)->handle;
    }

    reg = (mca_btl_ofi_reg_t *) opal_free_list_get(&module->exposed_regs);
    if (OPAL_UNLIKELY(NULL == reg)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "out of memory for a registration");
        return NULL;
    }
    reg->super.rcache = NULL;
    reg->super.base = (unsigned char *) base;
    reg->super.bound = (unsigned char *) base + (size > 0 ? size - 1 : 0);
    reg->super.access_flags = access;
    reg->super.ref_count = 1;
    if (OPAL_SUCCESS != mca_btl_ofi_mr_open(module, reg, base, size, true)) {
        opal_free_list_return(&module->exposed_regs, &reg->super.super);
        return NULL;
    }
    return &reg->handle;
}

static int mca_btl_ofi_deregister_mem(mca_btl_base_module_t *btl,
                                      mca_btl_base_registration_handle_t *handle)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;
    mca_btl_ofi_reg_t *reg = mca_btl_ofi_reg_from_handle(handle);
    int rc;

    if (NULL != reg->super.rcache) {
        return module->rcache->rcache_deregister(module->rcache, &reg->super);
    }
    rc = mca_btl_ofi_mr_close(module, reg);
    opal_free_list_return(&module->exposed_regs, &reg->super.super);
    return rc;
}

static int mca_btl_ofi_register_error(mca_btl_base_module_t *btl,
                                      mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_ofi_module_t *) btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------- flush / close */

/* Everything in flight or queued: what closing waits for. */
static int64_t mca_btl_ofi_outstanding(const mca_btl_ofi_module_t *module)
{
    int64_t total = 0;
    for (int i = 0; i < module->num_contexts; ++i) {
        /* fragments still waiting to be posted count too */
        total += mca_btl_ofi_tx_busy(module->contexts + i) + module->contexts[i].nqueued;
    }
    return total;
}

/* Puts, gets and atomics in flight (queued ones included): what a flush
 * waits for. */
static int64_t mca_btl_ofi_rma_outstanding(const mca_btl_ofi_module_t *module)
{
    int64_t total = 0;

    if (OPAL_LIKELY(1 == module->num_contexts)) {
        return module->contexts->outstanding;
    }
    for (int i = 0; i < module->num_contexts; ++i) {
        total += module->contexts[i].outstanding;
    }
    return total;
}

/* Every operation completes with FI_DELIVERY_COMPLETE semantics (reads and
 * fetching atomics return data from the target, emulated atomics complete
 * on the target's reply), so once no put, get or atomic is outstanding
 * every earlier one is visible at its target. Messages are not waited
 * for: the btl flush covers RDMA operations only.
 *
 * How it waits matters as much as what it waits for. osc/rdma calls the
 * btl flush in a loop instead of opal_progress(), so a flush that only
 * polled our completion queue would be the one wait in the process that
 * never gives the processor away: with mpi_yield_when_idle (the runtime
 * sets it on an oversubscribed node, users set it where ranks share
 * cores) the peer that must answer, or the kernel's network work, only
 * ran at the next scheduler tick. Measured across two simulated hosts
 * whose ranks share a core: every put + flush took 4,000 us (one tick),
 * against 15 us for an ob1 ping over the same link. So a pass that finds
 * nothing of ours completes goes through opal_progress(), as every other
 * wait in Open MPI does: it yields when the whole process is idle (and
 * only then), and drives the other transports and the pml, whose traffic
 * may be what the peer waits for before it can answer us. A pass that
 * found completions loops at once: on a fast provider the wait never
 * leaves this function. */
static inline void mca_btl_ofi_flush_wait(int found)
{
    if (0 == found) {
        opal_progress();
    }
}

int mca_btl_ofi_flush(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *endpoint)
{
    mca_btl_ofi_context_t *only = mca_btl_ofi_component.only_context;
    (void) endpoint;

    mca_btl_ofi_add64(&mca_btl_ofi_context_get((mca_btl_ofi_module_t *) btl)->counters.flush_count,
                      1);
    /* gathered puts and gets first: what follows waits for their answers */
    mca_btl_ofi_putv_send_all();
    mca_btl_ofi_getv_send_all();

    /* At least one pass even with nothing of ours in flight: osc/rdma
     * calls this on every MPI_Win_flush, also when all it did completed
     * in this process (accumulates and gets on its own window, done with
     * the CPU), and it is then the only call into the btl. With manual
     * progress a message posted earlier (a barrier's release, say) leaves
     * only when the provider is driven, so a rank spinning on such calls
     * would hold its peers forever (MPICH's linked_list_bench on sockets
     * did: its ranks waited in a barrier rank 0 had left). */
    if (OPAL_LIKELY(NULL != only)) {
        /* one module with one context: it alone holds what we wait for.
         * The peers are looked at every MCA_BTL_OFI_CHECK_CALLS passes, as the progress
         * callback does: a flush waiting on a lost peer must learn of it */
        uint32_t pass = 1;

        do {
            if (OPAL_UNLIKELY(0 == pass % MCA_BTL_OFI_CHECK_CALLS)) {
                mca_btl_ofi_flush_wait(mca_btl_ofi_progress_all(true));
            } else {
                mca_btl_ofi_flush_wait(mca_btl_ofi_context_progress(only));
            }
            ++pass;
        } while (only->outstanding > 0);
        return OPAL_SUCCESS;
    }
    /* every rail is progressed: parts of a transfer split over the rails
     * complete on theirs, and the whole only then. Every rail's
     * operations are waited for, not only BTL's: those of a peer whose
     * link on this rail failed take another rail (a detour). opal_progress
     * alone: it calls our progress callback (every rail) and yields only
     * when nothing anywhere progressed */
    opal_progress();
    for (int r = 0; r < mca_btl_ofi_component.num_modules; ++r) {
        mca_btl_ofi_module_t *rail = mca_btl_ofi_component.modules[r];

        while (NULL != rail && mca_btl_ofi_rma_outstanding(rail) > 0) {
            opal_progress();
        }
    }
    return OPAL_SUCCESS;
}

/* The module's contexts, with their receive buffers posted once every
 * context is enabled (where the module sends messages) ... */
static int mca_btl_ofi_module_contexts(mca_btl_ofi_module_t *module, int count, bool use_sep)
{
    int rc = mca_btl_ofi_contexts_create(module, count, use_sep);

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    for (int i = 0; i < count; ++i) {
        rc = opal_free_list_init(&module->contexts[i].completions, sizeof(mca_btl_ofi_completion_t),
                                 opal_cache_line_size, OBJ_CLASS(mca_btl_ofi_completion_t), 0, 0,
                                 128, -1, 128, NULL, 0, NULL, NULL, NULL);
        if (OPAL_SUCCESS != rc) {
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "cannot allocate completion objects");
            goto err_close_contexts;
        }
    }
    for (int i = 0; module->messaging && i < count; ++i) {
        rc = mca_btl_ofi_msg_init(module->contexts + i);
        if (OPAL_SUCCESS != rc) {
            goto err_close_contexts;
        }
    }
    return OPAL_SUCCESS;

err_close_contexts:
    mca_btl_ofi_contexts_close(module);
    for (int i = 0; i < count; ++i) {
        mca_btl_ofi_msg_fini(module->contexts + i);
    }
    mca_btl_ofi_contexts_free(module);
    return OPAL_ERROR;
}

/* ... and closed in the same order backwards: the buffers are given back
 * only once no endpoint can write into them. */
static void mca_btl_ofi_module_contexts_destroy(mca_btl_ofi_module_t *module)
{
    if (NULL == module->contexts) {
        return;
    }
    mca_btl_ofi_contexts_close(module);
    for (int i = 0; i < module->num_contexts; ++i) {
        mca_btl_ofi_msg_fini(module->contexts + i);
    }
    mca_btl_ofi_contexts_free(module);
}

static void mca_btl_ofi_module_release(mca_btl_ofi_module_t *module)
{
    opal_list_item_t *item;

    mca_btl_ofi_progress_thread_stop(module);
    while (NULL != (item = opal_list_remove_first(&module->endpoints))) {
        OBJ_RELEASE(item);
    }
    while (NULL != (item = opal_list_remove_first(&module->retired))) {
        OBJ_RELEASE(item);
    }
    mca_btl_ofi_module_contexts_destroy(module);
    OBJ_DESTRUCT(&module->frags);
    OBJ_CONSTRUCT(&module->frags, opal_free_list_t);
    OBJ_DESTRUCT(&module->getv_batches);
    OBJ_CONSTRUCT(&module->getv_batches, opal_free_list_t);
    OBJ_DESTRUCT(&module->exposed_regs);
    OBJ_CONSTRUCT(&module->exposed_regs, opal_free_list_t);
    if (NULL != module->rcache) {
        mca_rcache_base_module_destroy(module->rcache);
        module->rcache = NULL;
    }
    if (NULL != module->av) {
        (void) mca_btl_ofi_close_fid(&module->av->fid, "address vector");
        module->av = NULL;
    }
    if (NULL != module->domain) {
        (void) mca_btl_ofi_close_fid(&module->domain->fid, "domain");
        module->domain = NULL;
    }
    if (NULL != module->fabric) {
        (void) mca_btl_ofi_close_fid(&module->fabric->fid, "fabric");
        module->fabric = NULL;
    }
    if (NULL != module->info) {
        fi_freeinfo(module->info);
        module->info = NULL;
    }
}

/* Seconds finalize waits for operations still in flight: long enough for
 * any live peer, short enough that a dead one cannot hang the exit. */
#define MCA_BTL_OFI_DRAIN_SECONDS 10

static double mca_btl_ofi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

/* Whether ENDPOINT's peer still has work of ours queued or in flight:
 * posted and not completed (puts, gets, atomics and messages, parked ones
 * included; acknowledgements too, which the drain waits for: udp;ofi_rxd
 * never completed one to a peer that had finalized, and finalize waited
 * its whole 10 s, counting it for no peer), or a message waiting in a
 * context's queue, not yet posted. The contexts' locks are taken. */
static bool mca_btl_ofi_endpoint_owed(mca_btl_ofi_module_t *module,
                                      mca_btl_ofi_endpoint_t *endpoint)
{
    bool owed = endpoint->posted != endpoint->completed || 0 != endpoint->acks_open;

    for (int i = 0; i < module->num_contexts && !owed; ++i) {
        mca_btl_ofi_context_t *context = module->contexts + i;
        mca_btl_ofi_frag_t *frag;

        MCA_BTL_OFI_LOCK(&context->lock);
        OPAL_LIST_FOREACH (frag, &context->sendq, mca_btl_ofi_frag_t) {
            if (frag->endpoint == endpoint) {
                owed = true;
                break;
            }
        }
        MCA_BTL_OFI_UNLOCK(&context->lock);
    }
    return owed;
}

/* Whether what finalize still waits for is owed to peers that left
 * (mca_btl_ofi_endpoint_left: they will never take it): true when some
 * peers are owed work and none of them is still there. A peer leaves
 * MPI_Finalize at its own pace once every rank entered it; a message to it
 * that the provider held back meanwhile (tcp;ofi_rxm connecting to a peer
 * that had not accepted yet, and then retrying its connection for ever)
 * was waited for the whole MCA_BTL_OFI_DRAIN_SECONDS. *PEERS: how many. */
static bool mca_btl_ofi_drain_owed_to_gone(mca_btl_ofi_module_t *module, int *peers)
{
    opal_list_t *lists[2] = {&module->endpoints, &module->retired};
    mca_btl_ofi_endpoint_t *endpoint;
    int owed = 0;

    /* the lists do not change here: add_procs and del_procs are done */
    for (int l = 0; l < 2; ++l) {
        OPAL_LIST_FOREACH (endpoint, lists[l], mca_btl_ofi_endpoint_t) {
            if (!mca_btl_ofi_endpoint_owed(module, endpoint)) {
                continue;
            }
            if (!mca_btl_ofi_endpoint_left(module, endpoint)) {
                return false;
            }
            owed++;
        }
    }
    *peers = owed;
    return owed > 0;
}

/* At verbose INFO, when finalize gave up waiting: what each context
 * still counts, and each peer owed work with what is known of it, so
 * that the cause of a wait the drain could not cut short shows. */
static void mca_btl_ofi_drain_report(mca_btl_ofi_module_t *module)
{
    opal_list_t *lists[2] = {&module->endpoints, &module->retired};
    mca_btl_ofi_endpoint_t *endpoint;

    if (mca_btl_ofi_component.verbose < MCA_BTL_OFI_VERBOSE_INFO) {
        return;
    }
    for (int i = 0; i < module->num_contexts; ++i) {
        const mca_btl_ofi_context_t *context = module->contexts + i;
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "rail %d context %d at the drain's end: %lld operation(s), %lld "
                            "message(s) in flight (%lld carried as messages), %lld queued",
                            module->rail, i, (long long) context->outstanding,
                            (long long) context->sends_outstanding, (long long) context->emulated,
                            (long long) context->nqueued);
    }
    for (int l = 0; l < 2; ++l) {
        OPAL_LIST_FOREACH (endpoint, lists[l], mca_btl_ofi_endpoint_t) {
            if (!mca_btl_ofi_endpoint_owed(module, endpoint)) {
                continue;
            }
            MCA_BTL_OFI_VERBOSE(
                MCA_BTL_OFI_VERBOSE_INFO,
                "rail %d: peer %s%s owed: %lld posted, %lld completed, %lld "
                "acknowledgement(s) in flight; lost %d dead %d "
                "finalized %d, same host %d, liveness address %s",
                module->rail,
                NULL != endpoint->proc ? OPAL_NAME_PRINT(endpoint->proc->proc_name) : "?",
                l ? " (retired)" : "", (long long) endpoint->posted,
                (long long) endpoint->completed, (long long) endpoint->acks_open, endpoint->lost,
                endpoint->dead, endpoint->live.finalized, endpoint->live.checkable,
                0 != endpoint->live.host.ss_family ? "known" : "none");
        }
    }
}

/* Seconds between two looks at the peers finalize still waits for (each
 * may probe their hosts). */
#define MCA_BTL_OFI_DRAIN_LOOK_SECONDS 0.05

/* Drain what is in flight so no completion names freed memory; stop when
 * all of it is owed to peers that left MPI_Finalize (nothing lost that
 * anyone waits for), or give up (and say so) after
 * MCA_BTL_OFI_DRAIN_SECONDS. */
static void mca_btl_ofi_drain(mca_btl_ofi_module_t *module)
{
    double now = mca_btl_ofi_now(), deadline = now + MCA_BTL_OFI_DRAIN_SECONDS;
    double look = now + MCA_BTL_OFI_DRAIN_LOOK_SECONDS;
    int peers;

    while (mca_btl_ofi_outstanding(module) > 0) {
        (void) mca_btl_ofi_component_progress(); /* every rail: see flush */
        now = mca_btl_ofi_now();
        if (now > look) {
            if (mca_btl_ofi_drain_owed_to_gone(module, &peers)) {
                MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                                    "rail %d: finalize leaves %lld operation(s) to %d peer(s) that "
                                    "already left MPI_Finalize",
                                    module->rail, (long long) mca_btl_ofi_outstanding(module),
                                    peers);
                return;
            }
            look = mca_btl_ofi_now() + MCA_BTL_OFI_DRAIN_LOOK_SECONDS;
        }
        if (now > deadline) {
            mca_btl_ofi_drain_report(module);
            MCA_BTL_OFI_SHOW_HELP("drain timeout", opal_process_info.nodename,
                                  (long long) mca_btl_ofi_outstanding(module),
                                  MCA_BTL_OFI_DRAIN_SECONDS);
            return;
        }
    }
}

/* ------------------------------------------------------------------ life
 * A module's whole life is here: alloc (its tables), init (the provider's
 * objects, or everything undone), release (the provider's objects), free
 * (the tables), and finalize, which drains and does the last two. */

mca_btl_ofi_module_t *mca_btl_ofi_module_alloc(void)
{
    mca_btl_ofi_module_t *module = malloc(sizeof(*module));
    if (NULL == module) {
        return NULL;
    }
    memcpy(module, &mca_btl_ofi_module_template, sizeof(*module));
    OBJ_CONSTRUCT(&module->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&module->endpoints, opal_list_t);
    OBJ_CONSTRUCT(&module->retired, opal_list_t);
    OBJ_CONSTRUCT(&module->frags, opal_free_list_t);
    OBJ_CONSTRUCT(&module->getv_batches, opal_free_list_t);
    OBJ_CONSTRUCT(&module->exposed_regs, opal_free_list_t);
    OBJ_CONSTRUCT(&module->endpoints_by_proc, opal_hash_table_t);
    OBJ_CONSTRUCT(&module->endpoints_by_name, opal_hash_table_t);
    OBJ_CONSTRUCT(&module->regs_by_key, opal_hash_table_t);
    OBJ_CONSTRUCT(&module->emu_requests, opal_hash_table_t);
    OBJ_CONSTRUCT(&module->emu_failed, opal_list_t);
    OBJ_CONSTRUCT(&module->seq_in, opal_hash_table_t);
    if (OPAL_SUCCESS != opal_hash_table_init(&module->endpoints_by_proc, 256)
        || OPAL_SUCCESS != opal_hash_table_init(&module->seq_in, 256)
        || OPAL_SUCCESS != opal_hash_table_init(&module->endpoints_by_name, 256)
        || OPAL_SUCCESS != opal_hash_table_init(&module->regs_by_key, 256)
        || OPAL_SUCCESS != opal_hash_table_init(&module->emu_requests, 256)) {
        mca_btl_ofi_module_free(module);
        return NULL;
    }
    return module;
}

void mca_btl_ofi_module_free(mca_btl_ofi_module_t *module)
{
    uint64_t name;
    void *state, *node = NULL;

    if (OPAL_SUCCESS
        == opal_hash_table_get_first_key_uint64(&module->seq_in, &name, &state, &node)) {
        do {
            free(state);
        } while (
            OPAL_SUCCESS
            == opal_hash_table_get_next_key_uint64(&module->seq_in, &name, &state, node, &node));
    }
    OBJ_DESTRUCT(&module->seq_in);
    OBJ_DESTRUCT(&module->emu_requests);
    OBJ_DESTRUCT(&module->emu_failed);
    OBJ_DESTRUCT(&module->regs_by_key);
    OBJ_DESTRUCT(&module->endpoints_by_name);
    OBJ_DESTRUCT(&module->endpoints_by_proc);
    OBJ_DESTRUCT(&module->exposed_regs);
    OBJ_DESTRUCT(&module->frags);
    OBJ_DESTRUCT(&module->getv_batches);
    OBJ_DESTRUCT(&module->endpoints);
    OBJ_DESTRUCT(&module->retired);
    OBJ_DESTRUCT(&module->lock);
    free(module);
}

int mca_btl_ofi_finalize(mca_btl_base_module_t *btl)
{
    mca_btl_ofi_module_t *module = (mca_btl_ofi_module_t *) btl;

    if (mca_btl_ofi_component.only_context == module->contexts) {
        mca_btl_ofi_component.only_context = NULL; /* progress takes the long way */
    }
    if (NULL != module->contexts) {
        module->closing = true;
        mca_btl_ofi_drain(module);
    }
    mca_btl_ofi_probes_fini(module);
    if (OPAL_UNLIKELY(module->link_failed)
        && (mca_btl_ofi_provider_quirks(module->info->fabric_attr->prov_name)
            & MCA_BTL_OFI_QUIRK_CLOSE_FAILED)) {
        /* its objects, and the memory the provider may still use, are left
         * for the exit to reclaim */
        mca_btl_ofi_progress_thread_stop(module);
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "rail %d: left open at exit: a link of it failed, and %s crashes "
                            "closing an endpoint that still holds messages for it",
                            module->rail, module->info->fabric_attr->prov_name);
        for (int i = 0; i < mca_btl_ofi_component.num_modules; ++i) {
            if (mca_btl_ofi_component.modules[i] == module) {
                mca_btl_ofi_component.modules[i] = NULL;
            }
        }
        return OPAL_SUCCESS;
    }
    mca_btl_ofi_module_release(module);
    /* the other rails may still be progressed: only this slot empties */
    for (int i = 0; i < mca_btl_ofi_component.num_modules; ++i) {
        if (mca_btl_ofi_component.modules[i] == module) {
            mca_btl_ofi_component.modules[i] = NULL;
        }
    }
    mca_btl_ofi_module_free(module);
    return OPAL_SUCCESS;
}

/* ------------------------------------------------------------------ init */

/*
 * Two-sided limits that suit each provider, chosen from latency and
 * bandwidth sweeps of bench/p2p_bench (the figures are in README,
 * "Two-sided traffic"):
 *   shm       an eager send beats ob1's rendezvous (RTS, btl get, FIN)
 *             up to 32 KiB and loses above: eager and send fragments of
 *             32 KiB, 8 KiB in the rendezvous's first fragment.
 *   tcp;ofi_rxm  rxm sends a message up to its eager limit in one go
 *             from the caller's buffer (FI_OFI_RXM_EAGER_LIMIT, which
 *             btl_ofi_provenv.c sets to our largest message: no bounce
 *             buffer of that size): eager and send fragments of 64 KiB.
 *             Across hosts ob1's rendezvous at 16-32 KiB took 2-3x the
 *             time of one send (16 KiB when rxm's own eager buffers
 *             capped it at that, 2026-12-03).
 *   sockets, udp;ofi_rxd  one send beats ob1's rendezvous round trips at
 *             every size up to 64 KiB: eager and send fragments of 64 KiB.
 * Any other provider keeps the template's 8 KiB eager limit and 32 KiB
 * fragments. A value the user set (MCA parameter, environment, file) is
 * never replaced.
 */
static const struct {
    const char *prov;
    size_t eager_limit;
    size_t rndv_eager_limit;
    size_t max_send_size;
} mca_btl_ofi_limits[] = {
    {"shm", 32768, 8192, 32768},
    {"tcp;ofi_rxm", MCA_BTL_OFI_RXM_MAX_SEND, 8192, MCA_BTL_OFI_RXM_MAX_SEND},
    {"sockets", MCA_BTL_OFI_STREAM_PIECE, 8192, MCA_BTL_OFI_STREAM_PIECE},
    {"udp;ofi_rxd", 65536, 8192, 65536},
};

/*
 * udp;ofi_rxd in libfabric 1.17: fetching and compare atomics crash in
 * fi_cq_read once answered (libfabric issue #11814), and a flood of
 * fi_inject messages (over about a thousand unacknowledged) is lost for
 * good, hanging the receiver; fi_send of the same messages works. With
 * FI_MULTI_RECV buffers, a flood of unexpected 20 KiB messages from 3
 * senders completes with "Truncation error" (or is silently lost) although
 * every buffer keeps FI_OPT_MIN_MULTI_RECV bytes free; single-message
 * buffers carry the same flood.
 *
 * shm in libfabric 1.17: posting a multi-receive buffer takes an entry
 * from the same pool of rx_attr->size entries that unexpected messages
 * hold, before it looks at those messages (a single-message buffer looks
 * first and takes none). Two ranks streaming small messages (coll/tuned's
 * MPI_Bcast of 8-512 bytes, back to back, through ob1) left 1024 messages
 * unexpected while the receiver's buffers were being posted again: every
 * posting then failed with FI_ENOMEM, nothing could match them, and both
 * ranks waited forever (3 runs of 8 hung here). One buffer per message:
 * 0 of 10 hung, and ob1's latency, bandwidth and message rate over shm
 * did not drop.
 *
 * sockets in libfabric 1.17, between two processes of one node (loopback:
 * 64 KiB segments, a 128 KiB receive buffer by default): a receiver that
 * fell behind (busy, descheduled, late to MPI) lets a sender's bytes pile
 * up in its socket, which Linux merges into one large buffer. The
 * provider reads message by message and waits, peeking, until a whole
 * message header has arrived; when the bytes that arrived end inside a
 * header, what it has read leaves that large buffer still held for the
 * header's first bytes, so Linux sees the socket nearly full and
 * advertises no window (less room than one segment), the sender cannot
 * send the header's rest, and the connection stops for good. Seen in
 * tests/twosided late on sockets, 4 ranks, about 1 run in 30 (ss: 23 bytes
 * unread holding 305 KB of the receive buffer, 911 KB waiting at the
 * sender, zero window for minutes). Across hosts (1500-byte segments) the
 * window reopens. So to every peer of this node at most
 * btl_ofi_stream_budget bytes of our messages are in flight, each at most
 * MCA_BTL_OFI_STREAM_PIECE (mca_btl_ofi_stream_room). Puts and gets are
 * not held: their bytes flow while the process that waits for them drives
 * the provider (a budget on them cut ob1's 16 MiB transfers to 158 MB/s);
 * a process that stops driving it with a large one in flight remains
 * exposed, not seen in any test.
 *
 * ofi_rxm in libfabric 1.17: closing an endpoint whose connection still
 * holds messages (a link that failed while they were in flight; btl/ofi
 * sent copies over another rail) flushes the connection, and the
 * provider's handling of a canceled message it posted itself reads its
 * NULL context: a segfault in fi_close (seen in 1 of 7 rail-cut runs).
 */
uint32_t mca_btl_ofi_provider_quirks(const char *prov_name)
{
    if (NULL != strstr(prov_name, "ofi_rxd")) {
        return MCA_BTL_OFI_QUIRK_FETCH_ATOMICS | MCA_BTL_OFI_QUIRK_INJECT
               | MCA_BTL_OFI_QUIRK_MULTI_RECV | MCA_BTL_OFI_QUIRK_ONE_SEGMENT
               | MCA_BTL_OFI_QUIRK_RMA | MCA_BTL_OFI_QUIRK_CPU_ATOMICS;
    }
    if (NULL != strstr(prov_name, "ofi_rxm")) {
        return MCA_BTL_OFI_QUIRK_CLOSE_FAILED | MCA_BTL_OFI_QUIRK_CPU_ATOMICS;
    }
    if (0 == strcmp(prov_name, "shm")) {
        return MCA_BTL_OFI_QUIRK_MULTI_RECV | MCA_BTL_OFI_QUIRK_CPU_ATOMICS;
    }
    if (0 == strcmp(prov_name, "sockets")) {
        return MCA_BTL_OFI_QUIRK_INJECT_QUEUED | MCA_BTL_OFI_QUIRK_CPU_ATOMICS
               | MCA_BTL_OFI_QUIRK_SEND_ACKED | MCA_BTL_OFI_QUIRK_STREAM_STALL;
    }
    return 0;
}

static void mca_btl_ofi_provider_limits(mca_btl_ofi_module_t *module, const char *prov)
{
    for (size_t i = 0; i < sizeof(mca_btl_ofi_limits) / sizeof(mca_btl_ofi_limits[0]); ++i) {
        if (0 != strcmp(prov, mca_btl_ofi_limits[i].prov)) {
            continue;
        }
        if (mca_btl_ofi_param_is_default("max_send_size")) {
            module->super.btl_max_send_size = mca_btl_ofi_limits[i].max_send_size;
        }
        if (mca_btl_ofi_param_is_default("eager_limit")) {
            module->super.btl_eager_limit = mca_btl_ofi_limits[i].eager_limit;
        }
        if (mca_btl_ofi_param_is_default("rndv_eager_limit")) {
            module->super.btl_rndv_eager_limit = mca_btl_ofi_limits[i].rndv_eager_limit;
        }
        /* what the user did set still bounds what we chose */
        if (module->super.btl_eager_limit > module->super.btl_max_send_size) {
            module->super.btl_eager_limit = module->super.btl_max_send_size;
        }
        if (module->super.btl_rndv_eager_limit > module->super.btl_eager_limit) {
            module->super.btl_rndv_eager_limit = module->super.btl_eager_limit;
        }
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "%s: eager limit %zu, rendezvous eager limit %zu, max send size %zu",
                            prov, module->super.btl_eager_limit, module->super.btl_rndv_eager_limit,
                            module->super.btl_max_send_size);
        return;
    }
}

/* The provider's largest single-datagram message (its inject size), where
 * a message of several datagrams can be lost: ob1 sends more in pieces of
 * this size, or by RDMA. */
static void mca_btl_ofi_one_datagram(mca_btl_ofi_module_t *module, const struct fi_info *info)
{
    size_t one = info->tx_attr->inject_size - sizeof(mca_btl_ofi_msg_hdr_t);

    if (module->super.btl_max_send_size > one && !mca_btl_ofi_param_is_default("max_send_size")) {
        MCA_BTL_OFI_SHOW_HELP("one datagram", opal_process_info.nodename,
                              info->fabric_attr->prov_name, module->super.btl_max_send_size, one);
    }
    if (module->super.btl_max_send_size > one) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "%s: messages of one datagram only, max send size %zu "
                            "(was %zu): larger ones can be lost by the provider",
                            info->fabric_attr->prov_name, one, module->super.btl_max_send_size);
        module->super.btl_max_send_size = one;
    }
    module->super.btl_eager_limit = mca_btl_ofi_min(module->super.btl_eager_limit, one);
    module->super.btl_rndv_eager_limit =
        mca_btl_ofi_min(module->super.btl_rndv_eager_limit, module->super.btl_eager_limit);
}

/* Which paths the module takes on this provider (RMA and atomics of the
 * provider or as messages, two-sided traffic) and the message sizes that
 * follow; true when it carries the pml's messages. */
static bool mca_btl_ofi_module_paths(mca_btl_ofi_module_t *module, const struct fi_info *info,
                                     uint32_t quirks)
{
    mca_btl_ofi_component_t *component = &mca_btl_ofi_component;
    bool two_sided, gather;

    module->virt_addr = !!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
    module->prov_key = !!(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
    /* a provider that wants FI_CONTEXT keeps state in each operation's
     * context until it completes: then every put needs its own */
    module->bare_limit = (info->mode & (FI_CONTEXT | FI_CONTEXT2)) ? 0 : SIZE_MAX;
    module->key_mask = (info->domain_attr->mr_key_size >= sizeof(uint64_t))
                           ? UINT64_MAX
                           : ((UINT64_C(1) << (8 * info->domain_attr->mr_key_size)) - 1);

    /* atomics as messages where the provider's own cannot be trusted */
    module->amo_emulated =
        1 == component->emulate_atomics
        || (0 > component->emulate_atomics && (quirks & MCA_BTL_OFI_QUIRK_FETCH_ATOMICS));
    /* puts and gets too, where the provider's RMA loses data */
    module->rma_emulated = 1 == component->emulate_rma
                           || (0 > component->emulate_rma && (quirks & MCA_BTL_OFI_QUIRK_RMA));
    two_sided = MCA_BTL_OFI_MODE_ONE_SIDED != component->mode && (info->caps & FI_MSG);
    /* large puts announce their arrival to the target (remote completion
     * data), where the provider can: see btl_ofi_put_notify_size. Not
     * where a remote completion would take a posted receive buffer
     * (FI_RX_CQ_DATA) */
    module->put_notify = (0 == component->put_notify_size || 0 == info->domain_attr->cq_data_size
                          || (info->mode & FI_RX_CQ_DATA) || module->rma_emulated)
                             ? SIZE_MAX
                             : component->put_notify_size;
    module->messaging = module->amo_emulated || module->rma_emulated || two_sided;
    module->msg_size = sizeof(mca_btl_ofi_amo_req_t);
    if (module->rma_emulated) {
        /* one datagram where the provider cannot be trusted with more */
        size_t whole = (quirks & MCA_BTL_OFI_QUIRK_ONE_SEGMENT) ? info->tx_attr->inject_size
                                                                : MCA_BTL_OFI_RMA_MSG_SIZE;
        whole = mca_btl_ofi_min(whole, info->ep_attr->max_msg_size);
        if (whole < sizeof(mca_btl_ofi_rma_msg_t) + 64) {
            whole = sizeof(mca_btl_ofi_rma_msg_t) + 64;
        }
        module->rma_chunk = whole - sizeof(mca_btl_ofi_rma_msg_t);
        module->msg_size = mca_btl_ofi_max(module->msg_size, whole);
        /* every put needs its completion object: it ends on the replies */
        module->bare_limit = 0;
    }
    if (two_sided) {
        mca_btl_ofi_provider_limits(module, info->fabric_attr->prov_name);
        module->super.btl_max_send_size =
            mca_btl_ofi_min(module->super.btl_max_send_size,
                            info->ep_attr->max_msg_size - sizeof(mca_btl_ofi_msg_hdr_t));
        if ((quirks & MCA_BTL_OFI_QUIRK_ONE_SEGMENT)
            && info->tx_attr->inject_size > sizeof(mca_btl_ofi_msg_hdr_t) + 64) {
            mca_btl_ofi_one_datagram(module, info);
        }
        if (module->msg_size < sizeof(mca_btl_ofi_msg_hdr_t) + module->super.btl_max_send_size) {
            module->msg_size = sizeof(mca_btl_ofi_msg_hdr_t) + module->super.btl_max_send_size;
        }
    }
    /* Small puts to one peer in one message (btl_ofi_putv.c): a provider's
     * RMA takes one exchange per put however small, while a message of
     * many pieces costs about one (tcp;ofi_rxm: 1024 puts of 8 bytes 10 ms
     * one by one). Where this process receives messages anyway and the
     * puts are not already messages. Not with btl_ofi_progress_thread:
     * that thread answers messages only where atomics or RMA are
     * emulated, so a target computing outside MPI would hold the
     * gathered puts until it came back. On shm too since 2026-12-01:
     * its writes are one kernel copy each, about a microsecond, but a
     * vector of 256 doubles + flush still took 628 us one piece at a time
     * and 11 us gathered (2 ranks, mpi_yield_when_idle; the 8 ms answers
     * once seen there under it no longer show). Small gets likewise
     * (btl_ofi_getv.c), in the same places: a batch's request and its
     * answer each fit one message */
    gather = module->messaging && !module->rma_emulated && !component->progress_thread
             && module->msg_size >= 4096;
    module->putv_max =
        gather ? mca_btl_ofi_min(component->put_gather_size, module->msg_size / 4) : 0;
    module->getv_max =
        gather ? mca_btl_ofi_min(component->get_gather_size, module->msg_size / 4) : 0;
    if (module->getv_max > 0
        && OPAL_SUCCESS
               != opal_free_list_init(&module->getv_batches, sizeof(mca_btl_ofi_getv_batch_t),
                                      opal_cache_line_size, OBJ_CLASS(opal_free_list_item_t), 0, 0,
                                      0, -1, 4, NULL, 0, NULL, NULL, NULL)) {
        module->getv_max = 0; /* gets go as the provider's reads */
    }
    module->tx_limit = info->tx_attr->size > 0 ? (int64_t) info->tx_attr->size : INT64_MAX;
    module->multi_recv_size = 0;
    if ((info->caps & FI_MULTI_RECV) && component->multi_recv_size > 0
        && !(quirks & MCA_BTL_OFI_QUIRK_MULTI_RECV)) {
        /* room for at least two largest messages, so a buffer is never
         * released after a single one */
        module->multi_recv_size =
            mca_btl_ofi_max((size_t) component->multi_recv_size, 2 * module->msg_size);
    }
    /* Where the provider only queues what it is given until it is driven
     * (sockets with manual progress), a message must leave while its
     * sender is still in our code: Open MPI's own MPI_Comm_spawn
     * broadcasts, then waits in PMIx_Connect without driving anything, and
     * the spawn hung with the broadcast's messages still queued
     * (tests/twosided spawn). So nothing is injected there (MPI_Send returns
     * once the provider reports the message written to its socket, as
     * btl/tcp's once the kernel has it; 8 B ping-pong 7.5 -> 9.6 us), and
     * the provider is driven once after each message posted
     * (mca_btl_ofi_kick), so that one nobody waits for (coll/ofi's,
     * ob1's acknowledgements) leaves at once too (spawncoll). Driving it
     * after injections instead hung tests/twosided stream: injections are
     * not bounded by our transmit queue, and both ends' engines filled
     * with sends and stopped reading. */
    module->kick = (quirks & MCA_BTL_OFI_QUIRK_INJECT_QUEUED)
                   && FI_PROGRESS_MANUAL == info->domain_attr->data_progress;
    /* 0: every message goes by fi_send from a descriptor */
    module->inject_size =
        ((quirks & MCA_BTL_OFI_QUIRK_INJECT) || module->kick) ? 0 : info->tx_attr->inject_size;
    return two_sided;
}

/* How many contexts, and whether they are a scalable endpoint's (where
 * the provider has one) or plain endpoints sharing the domain and
 * address vector; never more than the provider allows. */
static int mca_btl_ofi_context_count(const struct fi_info *info, bool *use_sep)
{
    mca_btl_ofi_component_t *component = &mca_btl_ofi_component;
    bool sep = !component->disable_sep && info->domain_attr->max_ep_tx_ctx > 1
               && info->domain_attr->max_ep_rx_ctx > 1;
    size_t max_ctx =
        sep ? mca_btl_ofi_min(info->domain_attr->max_ep_tx_ctx, info->domain_attr->max_ep_rx_ctx)
            : mca_btl_ofi_min(info->domain_attr->ep_cnt, info->domain_attr->cq_cnt);
    int count = component->num_contexts_per_module;

    max_ctx = mca_btl_ofi_min(max_ctx, (size_t) MCA_BTL_OFI_MAX_CONTEXTS);
    if ((size_t) count > max_ctx) {
        MCA_BTL_OFI_SHOW_HELP("too many contexts", opal_process_info.nodename, count,
                              info->fabric_attr->prov_name, (int) max_ctx,
                              sep ? "scalable endpoint contexts" : "endpoints", (int) max_ctx);
        count = (int) max_ctx;
        /* the MPI_T cvar then tells what is in use */
        component->num_contexts_per_module = count;
    }
    *use_sep = sep;
    return count;
}

/* The BTL entry points and flags of the paths taken. */
static void mca_btl_ofi_module_entry_points(mca_btl_ofi_module_t *module, bool two_sided)
{
    if (!two_sided) {
        module->super.btl_flags &= ~MCA_BTL_FLAGS_SEND;
    } else {
        module->super.btl_alloc = mca_btl_ofi_alloc;
        module->super.btl_free = mca_btl_ofi_free;
        module->super.btl_prepare_src = mca_btl_ofi_prepare_src;
        module->super.btl_send = mca_btl_ofi_send;
        module->super.btl_sendi = mca_btl_ofi_sendi;
    }
    if (MCA_BTL_OFI_MODE_TWO_SIDED == mca_btl_ofi_component.mode) {
        module->super.btl_flags &= ~(MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS
                                     | MCA_BTL_FLAGS_ATOMIC_FOPS | MCA_BTL_FLAGS_RDMA_FLUSH);
    }
}

/* The registration cache (local buffers) and the registrations exposed
 * to peers. */
static int mca_btl_ofi_module_regs(mca_btl_ofi_module_t *module)
{
    mca_rcache_base_resources_t resources;
    int rc;

    resources.cache_name = "btl_ofi";
    resources.reg_data = module;
    resources.sizeof_reg = sizeof(mca_btl_ofi_reg_t);
    resources.register_mem = mca_btl_ofi_rcache_register;
    resources.deregister_mem = mca_btl_ofi_rcache_deregister;
    module->rcache = mca_rcache_base_module_create("grdma", module, &resources);
    if (NULL == module->rcache) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "cannot create the grdma registration cache");
        return OPAL_ERROR;
    }
    rc = opal_free_list_init(&module->exposed_regs, sizeof(mca_btl_ofi_reg_t), opal_cache_line_size,
                             OBJ_CLASS(mca_btl_ofi_reg_t), 0, opal_cache_line_size, 16, -1, 16,
                             NULL, 0, NULL, NULL, NULL);
    if (OPAL_SUCCESS != rc) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "cannot create the registration free list");
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

static void mca_btl_ofi_module_describe(const mca_btl_ofi_module_t *module,
                                        const struct fi_info *info, int count, bool use_sep)
{
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                        "provider %s domain %s: %d context(s) on %s, %s progress, mr_mode %s%s, "
                        "key size %zu, atomic flags 0x%x%s%s%s, messages injected up to %zu bytes",
                        info->fabric_attr->prov_name, info->domain_attr->name, count,
                        use_sep ? "a scalable endpoint" : "plain endpoints",
                        FI_PROGRESS_MANUAL == info->domain_attr->data_progress ? "manual" : "auto",
                        module->virt_addr ? "virtual addresses" : "offsets",
                        module->prov_key ? " with provider keys" : " with requested keys",
                        info->domain_attr->mr_key_size, module->super.btl_atomic_flags,
                        module->amo_emulated ? " (emulated by the target)" : "",
                        (module->super.btl_atomic_flags & MCA_BTL_ATOMIC_SUPPORTS_GLOB)
                            ? " (atomic with processor atomics: btl_ofi_global_atomics)"
                            : "",
                        module->rma_emulated ? ", puts and gets as messages" : "",
                        module->inject_size);
    if (module->rma_emulated) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "provider %s: puts and gets carried as messages of %zu data bytes "
                            "(btl_ofi_emulate_rma)",
                            info->fabric_attr->prov_name, module->rma_chunk);
    }
}

/* Open MODULE's fabric and domain for INFO and check the atomics osc/rdma
 * needs: OPAL_ERR_NOT_SUPPORTED (said at verbose level 1) when the
 * candidate cannot serve, OPAL_ERROR (reported) when a call failed. */
static int mca_btl_ofi_module_domain(mca_btl_ofi_module_t *module, struct fi_info *info)
{
    int rc;

    if ((module->amo_emulated || module->rma_emulated) && !(info->caps & FI_MSG)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "provider %s domain %s: refused, emulated %s need FI_MSG",
                            info->fabric_attr->prov_name, info->domain_attr->name,
                            module->rma_emulated ? "puts and gets" : "atomics");
        return OPAL_ERR_NOT_SUPPORTED;
    }
    rc = fi_fabric(info->fabric_attr, &module->fabric, NULL);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_fabric", rc);
        return OPAL_ERROR;
    }
    rc = fi_domain(module->fabric, info, &module->domain, NULL);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_domain", rc);
        return OPAL_ERROR;
    }
    mca_btl_ofi_atomics_query(module);
    if (!(module->super.btl_atomic_flags & MCA_BTL_ATOMIC_SUPPORTS_ADD)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "provider %s domain %s: refused, fi_query_atomic reports no "
                            "fetching 64-bit add (osc/rdma needs it)",
                            info->fabric_attr->prov_name, info->domain_attr->name);
        return OPAL_ERR_NOT_SUPPORTED;
    }
    return OPAL_SUCCESS;
}

/* MODULE's transfer limits: what the provider allows, never more than the
 * user asked; and the size of the registration handle peers receive. */
static void mca_btl_ofi_module_limits(mca_btl_ofi_module_t *module, const struct fi_info *info)
{
    module->super.btl_put_limit =
        mca_btl_ofi_min(module->super.btl_put_limit, info->ep_attr->max_msg_size);
    module->super.btl_get_limit =
        mca_btl_ofi_min(module->super.btl_get_limit, info->ep_attr->max_msg_size);
    /* every process ships the same size: the key, the base and the keys of
     * rails 1 to btl_ofi_max_rails - 1 */
    module->super.btl_registration_handle_size =
        offsetof(mca_btl_base_registration_handle_t, rail_keys)
        + (size_t) (mca_btl_ofi_component.max_rails - 1) * sizeof(uint64_t);
}

/* Open what the module needs on the given provider. On failure everything
 * opened is closed again and the reason reported; OPAL_ERR_NOT_SUPPORTED
 * means the provider works but lacks something we need (already said). */
int mca_btl_ofi_module_init(mca_btl_ofi_module_t *module, struct fi_info *info)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    uint32_t quirks = mca_btl_ofi_provider_quirks(info->fabric_attr->prov_name);
    bool use_sep, two_sided;
    int count, rc;

    module->info = info;
    two_sided = mca_btl_ofi_module_paths(module, info, quirks);
    rc = mca_btl_ofi_module_domain(module, info);
    if (OPAL_SUCCESS != rc) {
        goto err_release_quiet; /* said, or refused quietly */
    }

    count = mca_btl_ofi_context_count(info, &use_sep);
    if (use_sep) {
        av_attr.rx_ctx_bits = MCA_BTL_OFI_RX_CTX_BITS;
    }
    rc = fi_av_open(module->domain, &av_attr, &module->av, NULL);
    if (0 != rc) {
        MCA_BTL_OFI_REPORT("fi_av_open", rc);
        goto err_release;
    }

    if (module->messaging) {
        /* descriptors for pml sends and for messages that cannot be injected */
        rc = mca_btl_ofi_frags_init(module);
        if (OPAL_SUCCESS != rc) {
            goto err_release;
        }
    }
    mca_btl_ofi_module_entry_points(module, two_sided);

    rc = mca_btl_ofi_module_contexts(module, count, use_sep);
    if (OPAL_SUCCESS != rc) {
        goto err_release;
    }
    rc = mca_btl_ofi_module_regs(module);
    if (OPAL_SUCCESS != rc) {
        goto err_release;
    }

    mca_btl_ofi_module_limits(module, info);
    /* the modex is published by the component once every rail is open */
    if (mca_btl_ofi_component.progress_thread) {
        rc = mca_btl_ofi_progress_thread_start(module);
        if (OPAL_SUCCESS != rc) {
            goto err_release;
        }
    }
    mca_btl_ofi_module_describe(module, info, count, use_sep);
    return OPAL_SUCCESS;

err_release:
    rc = OPAL_ERROR;
err_release_quiet:
    module->info = NULL; /* the caller still owns info */
    mca_btl_ofi_module_release(module);
    return rc;
}

mca_btl_ofi_module_t mca_btl_ofi_module_template = {
    .super =
        {
            .btl_component = &mca_btl_ofi_component.super,
            .btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT,
            .btl_latency = 10,
            .btl_bandwidth = 10000,
            /* send is dropped at init where two-sided traffic is off */
            .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_RDMA | MCA_BTL_FLAGS_ATOMIC_OPS
                         | MCA_BTL_FLAGS_ATOMIC_FOPS | MCA_BTL_FLAGS_RDMA_FLUSH,
            /* what this component can carry; narrowed at init to what the
             * provider confirms */
            .btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND
                                | MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR
                                | MCA_BTL_ATOMIC_SUPPORTS_LAND | MCA_BTL_ATOMIC_SUPPORTS_LOR
                                | MCA_BTL_ATOMIC_SUPPORTS_LXOR | MCA_BTL_ATOMIC_SUPPORTS_SWAP
                                | MCA_BTL_ATOMIC_SUPPORTS_CSWAP | MCA_BTL_ATOMIC_SUPPORTS_32BIT,
            /* two-sided limits (btl_ofi_mode 1 and 2): messages up to the eager
             * limit go in one send; larger ones use ob1's rendezvous over our
             * put/get, or its copy pipeline in max_send_size pieces */
            .btl_eager_limit = 8 * 1024,
            .btl_rndv_eager_limit = 8 * 1024,
            .btl_max_send_size = 32 * 1024,
            .btl_rdma_pipeline_send_length = 32 * 1024,
            .btl_rdma_pipeline_frag_size = 4 * 1024 * 1024,
            .btl_min_rdma_pipeline_size = 256 * 1024,
            .btl_put_limit = SIZE_MAX,
            .btl_get_limit = SIZE_MAX,
            .btl_put_alignment = 0,
            .btl_get_alignment = 0,
            /* local buffers need no registration, so tell osc/rdma never to
             * stage or register them */
            .btl_put_local_registration_threshold = SIZE_MAX,
            .btl_get_local_registration_threshold = SIZE_MAX,
            .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),

            .btl_add_procs = mca_btl_ofi_add_procs,
            .btl_del_procs = mca_btl_ofi_del_procs,
            .btl_finalize = mca_btl_ofi_finalize,
            .btl_put = mca_btl_ofi_put,
            .btl_get = mca_btl_ofi_get,
            .btl_atomic_op = mca_btl_ofi_aop,
            .btl_atomic_fop = mca_btl_ofi_afop,
            .btl_atomic_cswap = mca_btl_ofi_acswap,
            .btl_register_mem = mca_btl_ofi_register_mem,
            .btl_deregister_mem = mca_btl_ofi_deregister_mem,
            .btl_register_error = mca_btl_ofi_register_error,
            .btl_flush = mca_btl_ofi_flush,
        },
};
