/*
 * coll/ofi barrier, in the reserved area: every other rank announces its
 * arrival with a fetch-and-add on rank 0's barrier counter; rank 0 waits
 * until the counter holds every arrival of every barrier so far, then
 * releases each rank by writing the barrier's step into its ready slot.
 *
 * The counter only grows, and a rank can add for the next barrier only
 * after rank 0 released it from this one, so rank 0's count is exact.
 */

#include "coll_ofi.h"

#include <stddef.h>

int mca_coll_ofi_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;
    uint64_t s, nb;
    int rc;

    rc = mca_coll_ofi_cache_ready(m);
    if (rc < 0) {
        return rc;
    }
    if (0 == rc) {
        m->n_fallback++;
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    m->n_barrier++;
    s = ++m->step;
    nb = ++m->barriers;

    if (0 == m->rank) {
        rc = mca_coll_ofi_wait(m, offsetof(mca_coll_ofi_header_t, barrier_count), 0,
                               nb * (uint64_t) (m->size - 1), -1);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        for (int r = 1; r < m->size; ++r) {
            rc = mca_coll_ofi_signal(m, r, m->off_ready, s);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
        return mca_coll_ofi_complete(m);
    }

    rc = mca_coll_ofi_fetch_add(m, 0, offsetof(mca_coll_ofi_header_t, barrier_count), 1);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return mca_coll_ofi_wait(m, m->off_ready, 0, s, 0);
}
