/*
 * coll/ofi component: MCA parameters, open/close and comm_query.
 */

#include "coll_ofi.h"

#include <stddef.h>
#include <string.h>

#include "ompi/mca/pml/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal_params.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

#ifndef MCA_COLL_OFI_HELP_DIR
#error "MCA_COLL_OFI_HELP_DIR must name the directory help-coll-ofi.txt is installed in"
#endif

/* Upper bound on coll_ofi_cache_pages: 64 Ki pages is 256 MiB per rank
 * per communicator, far past where a bigger cache buys anything. */
#define MCA_COLL_OFI_MAX_PAGES 65536

static int mca_coll_ofi_register(void);
static int mca_coll_ofi_open(void);
static int mca_coll_ofi_close(void);
static int mca_coll_ofi_init_query(bool enable_progress_threads, bool enable_mpi_threads);

mca_coll_ofi_component_t mca_coll_ofi_component = {
    .super =
        {
            .collm_version =
                {
                    MCA_COLL_BASE_VERSION_2_0_0,
                    .mca_component_name = "ofi",
                    MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
                    .mca_open_component = mca_coll_ofi_open,
                    .mca_close_component = mca_coll_ofi_close,
                    .mca_register_component_params = mca_coll_ofi_register,
                },
            .collm_data = {MCA_BASE_METADATA_PARAM_NONE},
            .collm_init_query = mca_coll_ofi_init_query,
            .collm_comm_query = mca_coll_ofi_comm_query,
        },
    .priority = 0,
    .verbose = 0,
    .fanout = 2,
    .cache_pages = 32,
    .output = -1,
};

static int mca_coll_ofi_reg(const char *name, const char *help, mca_base_var_type_t type,
                            void *storage, int level)
{
    return mca_base_component_var_register(&mca_coll_ofi_component.super.collm_version, name, help,
                                           type, NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

static int mca_coll_ofi_reg_int(const char *name, const char *help, int *storage, int level)
{
    return mca_coll_ofi_reg(name, help, MCA_BASE_VAR_TYPE_INT, storage, level);
}

/* MPI_T performance variables, bound to a communicator: how many calls
 * coll/ofi served on it (0 on a communicator it does not serve).  The
 * context is the offset of the counter in the module. */
static int mca_coll_ofi_pvar_get(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    /* Open MPI hands over the communicator itself (MPI_T's obj_handle
     * dereferenced) */
    struct ompi_communicator_t *comm = (struct ompi_communicator_t *) obj;
    unsigned long long *out = (unsigned long long *) value;
    mca_coll_ofi_module_t *m;

    *out = 0;
    if (NULL == comm || NULL == comm->c_coll) {
        return OMPI_SUCCESS;
    }
    /* ours only if our barrier is the communicator's (we take all four) */
    if (mca_coll_ofi_barrier != comm->c_coll->coll_barrier) {
        return OMPI_SUCCESS;
    }
    m = (mca_coll_ofi_module_t *) comm->c_coll->coll_barrier_module;
    *out = *(uint64_t *) ((char *) m + (size_t) (uintptr_t) pvar->ctx);
    return OMPI_SUCCESS;
}

static void mca_coll_ofi_reg_pvar(const char *name, const char *help, size_t offset)
{
    (void) mca_base_component_pvar_register(
        &mca_coll_ofi_component.super.collm_version, name, help, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_MPI_COMM, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        mca_coll_ofi_pvar_get, NULL, NULL, (void *) (uintptr_t) offset);
}

static int mca_coll_ofi_register(void)
{
    mca_coll_ofi_component_t *c = &mca_coll_ofi_component;

    /* out-of-tree installs keep our help file beside Open MPI's, not in it */
    (void) opal_show_help_add_dir(MCA_COLL_OFI_HELP_DIR);

    c->priority = 0;
    (void) mca_coll_ofi_reg_int("priority",
                                "Priority of the ofi coll component (0, the default, leaves "
                                "it unused; raise it above the other coll components, e.g. "
                                "90, to run bcast, reduce, allreduce and barrier over RDMA)",
                                &c->priority, OPAL_INFO_LVL_6);
    c->verbose = 0;
    (void) mca_coll_ofi_reg_int("verbose",
                                "Verbosity of the ofi coll component: 0 silent, 1 one line "
                                "per communicator served and the counts of served calls when "
                                "it goes away, 2 and up the reasons for every fallback",
                                &c->verbose, OPAL_INFO_LVL_9);
    c->fanout = 2;
    (void) mca_coll_ofi_reg_int("fanout",
                                "Number of children of each rank in the broadcast tree "
                                "(at least 1; default 2)",
                                &c->fanout, OPAL_INFO_LVL_6);
    c->cache_pages = 32;
    (void) mca_coll_ofi_reg_int("cache_pages",
                                "Pages (4 KiB each) of registered data cache per rank and "
                                "communicator that collective payload moves through; larger "
                                "messages go through it in chunks.  0 uses one bounce page of "
                                "the reserved area instead (default 32)",
                                &c->cache_pages, OPAL_INFO_LVL_6);
    c->zc_min = 8 * 1024;
    (void) mca_coll_ofi_reg(
        "zcopy_size",
        "Broadcasts of at least this many bytes (above the small slots: 1 KiB, 8 KiB on a "
        "communicator that spans nodes) go without copies: every rank "
        "registers its buffer and gets the bytes straight from its parent's, instead of "
        "through the data caches (fewer round trips and no copies: faster from 2 KiB up in "
        "bench/coll.sh); so do reductions of this size that the caches would take in more "
        "than one chunk (a parent gets its children's partial results where they are "
        "computed), and allreduces of this size on two ranks (one exchange). Raised where the "
        "caches were measured faster: broadcasts from 64 KiB at least where flags go to other "
        "nodes as messages (coll_ofi_messages); where every rank of more than two maps every "
        "peer (coll_ofi_shared_memory, one node) broadcasts are flat at every size instead "
        "(the root copies into its block once, every rank copies out of it), and instead of "
        "through a tree reductions are split between the ranks (each reads its part of the "
        "others' buffers): on two ranks above 32 KiB, allreduces from 256 KiB (1 MiB on two "
        "ranks). 0: never. Must be the same on every rank (default 8 KiB)",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->zc_min, OPAL_INFO_LVL_6);
    c->zc_chunk = 1024 * 1024;
    (void) mca_coll_ofi_reg(
        "zcopy_chunk",
        "Bytes a rank gets from its parent (broadcast) or child (reduction) at a time without "
        "copies (at least 4096): a rank passes each piece on as soon as it has it. Smaller "
        "pieces overlap the tree's levels more, each costs a round of flags (1 MiB was "
        "fastest on 2 cores with 4 and 8 ranks). Must be the same on every rank (default "
        "1 MiB)",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->zc_chunk, OPAL_INFO_LVL_6);

    c->shared_memory = 1;
    (void) mca_coll_ofi_reg_int(
        "shared_memory",
        "1 (default): a rank's cache block is a shared-memory segment, and peers on the same "
        "node map it and read and write it with loads and stores (as osc/rdma maps the windows "
        "of MPI_Win_allocate), so a flag or a small message to a local peer is one store "
        "instead of a btl put, flush and flag put; peers on other nodes, and the buffers of "
        "collectives without copies, still go through the btl. 0: every peer through the btl",
        &c->shared_memory, OPAL_INFO_LVL_6);

    c->messages = 1;
    (void) mca_coll_ofi_reg_int(
        "messages",
        "1 (default): flags, and payloads up to the btl's eager limit, to peers that are not "
        "mapped (other nodes) go as btl active messages, the payload and its flag in one "
        "message, instead of a put, its completion, a flush and a flag put; 0: puts only. "
        "Used only if every rank can",
        &c->messages, OPAL_INFO_LVL_6);

    c->max_mappings = 0;
    (void) mca_coll_ofi_reg_int(
        "max_mappings",
        "Most memory mappings the blocks of the communicators coll/ofi serves may hold in one "
        "process (a communicator holds one for its own block and one per peer on the same "
        "node; the kernel allows vm.max_map_count in all, and past it every allocation "
        "fails). A communicator that would go beyond is served by the previous coll "
        "component (said once per process). 0 (default): half of vm.max_map_count",
        &c->max_mappings, OPAL_INFO_LVL_6);

    mca_coll_ofi_reg_pvar("served_bcast", "MPI_Bcast calls coll/ofi served on the communicator",
                          offsetof(mca_coll_ofi_module_t, n_bcast));
    mca_coll_ofi_reg_pvar("served_reduce", "MPI_Reduce calls coll/ofi served on the communicator",
                          offsetof(mca_coll_ofi_module_t, n_reduce));
    mca_coll_ofi_reg_pvar("served_allreduce",
                          "MPI_Allreduce calls coll/ofi served on the communicator",
                          offsetof(mca_coll_ofi_module_t, n_allreduce));
    mca_coll_ofi_reg_pvar("served_barrier", "MPI_Barrier calls coll/ofi served on the communicator",
                          offsetof(mca_coll_ofi_module_t, n_barrier));
    mca_coll_ofi_reg_pvar("passed_on",
                          "Calls coll/ofi passed to the previous coll component on the "
                          "communicator (not served: no RDMA path, or a datatype it does not "
                          "reduce)",
                          offsetof(mca_coll_ofi_module_t, n_fallback));
    mca_coll_ofi_reg_pvar("zcopy_bcast",
                          "Broadcasts (MPI_Bcast, or the second half of an allreduce) coll/ofi "
                          "moved without copies on the communicator (coll_ofi_zcopy_size)",
                          offsetof(mca_coll_ofi_module_t, n_zcopy));
    mca_coll_ofi_reg_pvar("zcopy_reduce",
                          "Reductions (MPI_Reduce, the first half of an allreduce, or a "
                          "two-rank allreduce's exchange) coll/ofi read without copies on the "
                          "communicator (coll_ofi_zcopy_size)",
                          offsetof(mca_coll_ofi_module_t, n_zcopy_reduce));
    return OMPI_SUCCESS;
}

static int mca_coll_ofi_open(void)
{
    mca_coll_ofi_component_t *c = &mca_coll_ofi_component;

    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    return OMPI_SUCCESS;
}

/* Bad values are corrected once per process, at the first communicator
 * (so only when the component is in use): every rank reads the same
 * parameters, so every rank corrects them the same way.  The help message
 * goes through mpirun, whose forwarding of help messages (Open MPI 4.1.4)
 * drops one now and then ("ORTE_ERROR_LOG: Data unpack would read past
 * end of buffer ... show_help.c"), so the correction is also written to
 * the component's verbose stream. */
static void mca_coll_ofi_check_params(void)
{
    static bool checked = false;
    mca_coll_ofi_component_t *c = &mca_coll_ofi_component;
    const char *host = opal_process_info.nodename ? opal_process_info.nodename : "unknown";

    if (checked) {
        return;
    }
    checked = true;
    if (c->fanout < 1) {
        opal_show_help(MCA_COLL_OFI_HELP_FILE, "bad param", true, host, "coll_ofi_fanout",
                       c->fanout, "1 or more", 2);
        opal_output_verbose(1, c->output,
                            "coll:ofi: coll_ofi_fanout %d is out of range "
                            "(1 or more); using 2",
                            c->fanout);
        c->fanout = 2;
    }
    if (c->cache_pages < 0 || c->cache_pages > MCA_COLL_OFI_MAX_PAGES) {
        opal_show_help(MCA_COLL_OFI_HELP_FILE, "bad param", true, host, "coll_ofi_cache_pages",
                       c->cache_pages, "0 to 65536", 32);
        opal_output_verbose(1, c->output,
                            "coll:ofi: coll_ofi_cache_pages %d is out of range "
                            "(0 to 65536); using 32",
                            c->cache_pages);
        c->cache_pages = 32;
    }
    if (c->max_mappings < 0) {
        opal_show_help(MCA_COLL_OFI_HELP_FILE, "bad param", true, host, "coll_ofi_max_mappings",
                       c->max_mappings, "0 (half of vm.max_map_count) or more", 0);
        c->max_mappings = 0;
    }
    if (0 == c->zc_min) {
        c->zc_min = SIZE_MAX; /* never */
    }
    if (c->zc_chunk < MCA_COLL_OFI_PAGE_SIZE) {
        opal_show_help(MCA_COLL_OFI_HELP_FILE, "bad param", true, host, "coll_ofi_zcopy_chunk",
                       (int) c->zc_chunk, "4096 or more", 1048576);
        c->zc_chunk = 1024 * 1024;
    }
}

static int mca_coll_ofi_close(void)
{
    mca_coll_ofi_am_fini();
    if (mca_coll_ofi_component.output >= 0) {
        opal_output_close(mca_coll_ofi_component.output);
        mca_coll_ofi_component.output = -1;
    }
    return OMPI_SUCCESS;
}

static int mca_coll_ofi_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    return OMPI_SUCCESS;
}

/*
 * Whether to offer a module is decided from facts every rank of the
 * communicator sees the same way (the parameters, the pml, the kind of
 * communicator): the ranks cannot talk yet, and a communicator that some
 * ranks serve and others do not would deadlock at its first collective.
 * Whether the BTLs really reach every peer is agreed on later, at the
 * first collective, through the previous component.
 */
mca_coll_base_module_t *mca_coll_ofi_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_ofi_module_t *m;
    const char *pml = mca_pml_base_selected_component.pmlm_version.mca_component_name;

    if (mca_coll_ofi_component.priority <= 0) {
        return NULL;
    }
    mca_coll_ofi_check_params();
    if (OMPI_COMM_IS_INTER(comm) || ompi_comm_size(comm) < 2) {
        return NULL;
    }
    /* the BML endpoints we reach peers through exist only under ob1 */
    if (0 != strcmp(pml, "ob1")) {
        opal_output_verbose(2, mca_coll_ofi_component.output,
                            "coll:ofi: not serving communicator %u: pml is %s, not ob1 "
                            "(add --mca pml ob1)",
                            ompi_comm_get_cid(comm), pml);
        return NULL;
    }

    m = OBJ_NEW(mca_coll_ofi_module_t);
    if (NULL == m) {
        return NULL;
    }
    *priority = mca_coll_ofi_component.priority;
    return &m->super;
}
