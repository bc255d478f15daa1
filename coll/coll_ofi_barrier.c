/*
 * coll/ofi barrier: a dissemination barrier in the reserved area. In
 * round k (distance d = 2^k, while d < n) every rank writes the barrier's
 * step into its slot of the ready area of rank (r + d) % n, then waits
 * until its own slot of rank (r - d) % n holds that step. After the last
 * round every rank has heard, directly or through others, from every
 * rank, so none leaves before all have arrived.
 *
 * ceil(log2 n) one-way flag writes on every rank's path, all ranks
 * writing at once, instead of the n - 1 fetch-and-adds on rank 0 and its
 * n - 1 releases of a central counter (the seed's design): at np 2 one
 * write each way instead of an atomic round trip plus a release.
 *
 * The writers of one rank's slots in one barrier are all different
 * (r - 2^k mod n is distinct for 2^k < n), and steps only grow, so a slot
 * left by an earlier collective never satisfies this one, and a writer
 * already in a later collective has passed this one.
 */

#include "coll_ofi.h"

/*
 * All local (every rank maps every block): a counter in rank 0's header
 * that every rank adds 1 to with an atomic of the processor, and a word
 * the last to arrive at barrier b sets to b, which the others wait for.
 * Every rank must be scheduled twice (to arrive, to see the release)
 * instead of once per dissemination round with its partner: on 8 ranks
 * over 2 cores the rounds were 3 waits for a given peer each.
 */
static int mca_coll_ofi_barrier_shared(mca_coll_ofi_module_t *m)
{
    mca_coll_ofi_header_t *h0 =
        (mca_coll_ofi_header_t *) (0 == m->rank ? m->block : m->peer_map[0]);
    const uint64_t b = ++m->barrier_calls;

    m->n_shared_barrier++;
    if (__atomic_add_fetch(&h0->arrived, 1, __ATOMIC_ACQ_REL) == b * (uint64_t) m->size) {
        __atomic_store_n(&h0->released, b, __ATOMIC_RELEASE);
        return mca_coll_ofi_leave(m);
    }
    /* the last to arrive is the one to name if it never comes */
    int rc = mca_coll_ofi_wait_word(m, &h0->released, b, -1);
    return (OMPI_SUCCESS == rc) ? mca_coll_ofi_leave(m) : rc;
}

/*
 * Across node groups (m->leader, see coll_ofi_cache.c) the barrier is the
 * same in two levels: a member writes the step into its slot at its
 * leader and waits for the leader's; a leader waits for its members, runs
 * the dissemination among the leaders only, then writes its members'
 * slots. Between nodes ceil(log2 groups) rounds of one message per
 * leader instead of ceil(log2 n) rounds of one per rank (two hosts x 2
 * ranks: 2 messages a barrier instead of 4). Every slot still has one
 * writer per barrier.
 */
static int mca_coll_ofi_barrier_grouped(mca_coll_ofi_module_t *m, uint64_t s)
{
    const int me = m->rank, lead = m->leader[me];
    int rc, nl = 0, mine = 0;

    if (lead != me) {
        rc = mca_coll_ofi_signal(m, lead, m->off_ready, s);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_wait(m, m->off_ready, lead, s, lead);
        }
        return (OMPI_SUCCESS == rc) ? mca_coll_ofi_leave(m) : rc;
    }
    for (int p = 0; p < m->size; ++p) {
        if (m->leader[p] == p) {
            mine = (p == me) ? nl : mine;
            ++nl;
        } else if (m->leader[p] == me) {
            rc = mca_coll_ofi_wait(m, m->off_ready, p, s, p);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    for (int d = 1; d < nl; d <<= 1) {
        int to = -1, from = -1;

        /* the leaders (i + d) % nl and (i - d) % nl of the leaders' list */
        for (int p = 0, i = 0; p < m->size; ++p) {
            if (m->leader[p] != p) {
                continue;
            }
            to = (i == (mine + d) % nl) ? p : to;
            from = (i == (mine - d + nl) % nl) ? p : from;
            ++i;
        }
        rc = mca_coll_ofi_signal(m, to, m->off_ready, s);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_wait(m, m->off_ready, from, s, from);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    for (int p = 0; p < m->size; ++p) {
        if (p != me && m->leader[p] == me) {
            rc = mca_coll_ofi_signal(m, p, m->off_ready, s);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    return mca_coll_ofi_leave(m);
}

int mca_coll_ofi_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;
    const int n = m->size;
    uint64_t s;
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
    if (m->all_local) {
        return mca_coll_ofi_barrier_shared(m);
    }
    if (NULL != m->leader) {
        return mca_coll_ofi_barrier_grouped(m, s);
    }

    for (int d = 1; d < n; d <<= 1) {
        const int to = (m->rank + d) % n, from = (m->rank - d + n) % n;

        rc = mca_coll_ofi_signal(m, to, m->off_ready, s);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        rc = mca_coll_ofi_wait(m, m->off_ready, from, s, from);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return mca_coll_ofi_leave(m);
}
