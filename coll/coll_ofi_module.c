/*
 * coll/ofi module: enable (saving the functions we stand in front of)
 * and destruct (the cache goes with the communicator).
 */

#include "coll_ofi.h"

#include "opal/util/output.h"

static int mca_coll_ofi_module_enable(mca_coll_base_module_t *module,
                                      struct ompi_communicator_t *comm);

static void mca_coll_ofi_module_construct(mca_coll_ofi_module_t *m)
{
    m->prev_allgather = NULL;
    m->prev_allgather_module = NULL;
    m->prev_allreduce = NULL;
    m->prev_allreduce_module = NULL;
    m->prev_bcast = NULL;
    m->prev_bcast_module = NULL;
    m->prev_reduce = NULL;
    m->prev_reduce_module = NULL;
    m->prev_barrier = NULL;
    m->prev_barrier_module = NULL;
    m->comm = NULL;
    m->state = MCA_COLL_OFI_UNDECIDED;
    m->rank = -1;
    m->size = 0;
    m->cid = 0;
    m->instance = 0;
    m->btl = NULL;
    m->endpoints = NULL;
    m->block = NULL;
    m->block_mapped = false;
    m->shm_name[0] = '\0';
    m->peer_map = NULL;
    m->peer_pid = NULL;
    m->n_mapped = 0;
    m->maps_held = 0;
    m->zc_min = SIZE_MAX;
    m->zc_reduce_min = SIZE_MAX;
    m->pair_min = SIZE_MAX;
    m->split_min = SIZE_MAX;
    m->all_local = false;
    m->am = false;
    m->am_max = 0;
    m->am_met = NULL;
    m->n_cma = 0;
    m->n_grouped = 0;
    m->n_flat = m->n_shared_barrier = m->n_told = m->n_count_read = 0;
    m->block_size = 0;
    m->handle = NULL;
    m->data = NULL;
    m->data_size = 0;
    m->step = 0;
    m->ring_calls = 0;
    m->ring_seen = NULL;
    m->flat_calls = 0;
    m->flat_seen = NULL;
    m->flat_max = 0;
    m->reduce_calls = 0;
    m->reduce_seen = NULL;
    m->gather_root_last = NULL;
    m->gather_told = NULL;
    m->barrier_calls = 0;
    m->leader = NULL;
    m->small_size = 0;
    m->small_calls = 0;
    m->pending = 0;
    m->op_status = OMPI_SUCCESS;
    m->n_bcast = m->n_reduce = m->n_allreduce = m->n_barrier = m->n_fallback = 0;
    m->n_zcopy = m->n_zcopy_reduce = 0;
    m->zc_in = m->zc_acc = NULL;
    m->zc_in_size = m->zc_acc_size = 0;
    m->zc_in_handle = NULL;

    m->super.coll_module_enable = mca_coll_ofi_module_enable;
    m->super.coll_bcast = mca_coll_ofi_bcast;
    m->super.coll_reduce = mca_coll_ofi_reduce;
    m->super.coll_allreduce = mca_coll_ofi_allreduce;
    m->super.coll_barrier = mca_coll_ofi_barrier;
}

static void mca_coll_ofi_module_destruct(mca_coll_ofi_module_t *m)
{
    if (MCA_COLL_OFI_SERVING == m->state) {
        opal_output_verbose(0 == m->rank ? 1 : 2, mca_coll_ofi_component.output,
                            "coll:ofi: communicator %u rank %d: served %" PRIu64 " bcast, %" PRIu64
                            " reduce, %" PRIu64 " allreduce, %" PRIu64 " barrier; %" PRIu64
                            " calls passed to the previous component; %" PRIu64
                            " broadcasts without copies, %" PRIu64 " reductions without copies; "
                            "%" PRIu64 " reads straight from local peers' buffers; %" PRIu64
                            " small reductions gathered for the node group; %" PRIu64
                            " flat broadcasts, %" PRIu64 " barriers by the shared counter; %" PRIu64
                            " done counts told, %" PRIu64 " read",
                            m->cid, m->rank, m->n_bcast, m->n_reduce, m->n_allreduce, m->n_barrier,
                            m->n_fallback, m->n_zcopy, m->n_zcopy_reduce, m->n_cma, m->n_grouped,
                            m->n_flat, m->n_shared_barrier, m->n_told, m->n_count_read);
    }
    mca_coll_ofi_cache_release(m);

    if (NULL != m->prev_allgather_module) {
        OBJ_RELEASE(m->prev_allgather_module);
    }
    if (NULL != m->prev_allreduce_module) {
        OBJ_RELEASE(m->prev_allreduce_module);
    }
    if (NULL != m->prev_bcast_module) {
        OBJ_RELEASE(m->prev_bcast_module);
    }
    if (NULL != m->prev_reduce_module) {
        OBJ_RELEASE(m->prev_reduce_module);
    }
    if (NULL != m->prev_barrier_module) {
        OBJ_RELEASE(m->prev_barrier_module);
    }
}

OBJ_CLASS_INSTANCE(mca_coll_ofi_module_t, mca_coll_base_module_t, mca_coll_ofi_module_construct,
                   mca_coll_ofi_module_destruct);

/* Keep FN/MODULE of the communicator's current table in our module, with a
 * reference, so our functions can pass calls on to them for the
 * communicator's whole life. */
#define MCA_COLL_OFI_SAVE(m, comm, name)                                                           \
    do {                                                                                           \
        (m)->prev_##name = (comm)->c_coll->coll_##name;                                            \
        (m)->prev_##name##_module = (comm)->c_coll->coll_##name##_module;                          \
        if (NULL != (m)->prev_##name##_module) {                                                   \
            OBJ_RETAIN((m)->prev_##name##_module);                                                 \
        }                                                                                          \
    } while (0)

static int mca_coll_ofi_module_enable(mca_coll_base_module_t *module,
                                      struct ompi_communicator_t *comm)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;

    MCA_COLL_OFI_SAVE(m, comm, allgather);
    MCA_COLL_OFI_SAVE(m, comm, allreduce);
    MCA_COLL_OFI_SAVE(m, comm, bcast);
    MCA_COLL_OFI_SAVE(m, comm, reduce);
    MCA_COLL_OFI_SAVE(m, comm, barrier);

    /* Every fallback and the set-up exchange need a lower component for
     * each of these; without one (coll_ofi_priority below every other
     * component's, or those excluded) there is nothing to stand on. */
    if (NULL == m->prev_allgather || NULL == m->prev_allreduce || NULL == m->prev_bcast
        || NULL == m->prev_reduce || NULL == m->prev_barrier) {
        opal_output(0,
                    "coll:ofi: communicator %u: no lower-priority coll component provides "
                    "allgather, allreduce, bcast, reduce and barrier; coll/ofi needs one "
                    "(give coll_ofi_priority a value above e.g. coll_tuned_priority, and do "
                    "not exclude the basic or tuned components)",
                    ompi_comm_get_cid(comm));
        return OMPI_ERR_NOT_SUPPORTED;
    }

    m->comm = comm;
    m->rank = ompi_comm_rank(comm);
    m->size = ompi_comm_size(comm);
    m->cid = ompi_comm_get_cid(comm);
    return OMPI_SUCCESS;
}
