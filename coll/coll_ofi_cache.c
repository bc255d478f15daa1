/*
 * coll/ofi per-communicator cache: the choice of BTL, the one registered
 * block, its one-time exchange, and the RDMA primitives the collectives
 * are written in.
 */

#include "coll_ofi.h"

#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/sys/atomic.h"
#include "opal/util/output.h"

#define MCA_COLL_OFI_ALIGN(x, a) (((x) + (a) -1) / (a) * (a))

/* What a BTL must offer for us to use it towards a peer: what osc/rdma
 * asks of one (put, get, fetching add), so that coll/ofi runs over the
 * BTLs one-sided MPI runs over. The collectives themselves use put and
 * get only. */
#define MCA_COLL_OFI_BTL_FLAGS (MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET | MCA_BTL_FLAGS_ATOMIC_FOPS)

/* Pick, for every peer, an RDMA BTL with put, get and fetching add.
 * One registration must serve every peer, so all peers must be reached
 * through the same BTL module; *why names the first reason it fails. */
static int mca_coll_ofi_pick_btl(mca_coll_ofi_module_t *m, const char **why)
{
    for (int r = 0; r < m->size; ++r) {
        mca_bml_base_endpoint_t *bml_ep;
        mca_bml_base_btl_t *chosen = NULL;
        size_t n;

        if (r == m->rank) {
            continue;
        }
        bml_ep = mca_bml_base_get_endpoint(ompi_comm_peer_lookup(m->comm, r));
        if (NULL == bml_ep) {
            *why = "a peer has no BML endpoint";
            return OMPI_ERR_UNREACH;
        }
        n = mca_bml_base_btl_array_get_size(&bml_ep->btl_rdma);
        for (size_t i = 0; i < n && NULL == chosen; ++i) {
            mca_bml_base_btl_t *b = mca_bml_base_btl_array_get_index(&bml_ep->btl_rdma, i);
            mca_btl_base_module_t *btl = b->btl;

            if ((btl->btl_flags & MCA_COLL_OFI_BTL_FLAGS) != MCA_COLL_OFI_BTL_FLAGS
                || !(btl->btl_atomic_flags & MCA_BTL_ATOMIC_SUPPORTS_ADD) || NULL == btl->btl_put
                || NULL == btl->btl_get || NULL == btl->btl_atomic_fop ||
                /* chunks and flags come in any size and at 8-byte alignment */
                btl->btl_put_alignment > 1 || btl->btl_get_alignment > 1) {
                continue;
            }
            /* stay on the module already chosen for earlier peers */
            if (NULL != m->btl && btl != m->btl) {
                continue;
            }
            chosen = b;
        }
        if (NULL == chosen) {
            *why = (NULL == m->btl)
                       ? "a peer is reached by no BTL with put, get and fetching atomics"
                       : "peers are reached through different BTL modules";
            return OMPI_ERR_UNREACH;
        }
        m->btl = chosen->btl;
        m->endpoints[r] = chosen->btl_endpoint;
    }
    return OMPI_SUCCESS;
}

/* The sizes of the small slots and the number of gather sets (see
 * MCA_COLL_OFI_SMALL_BYTES and MCA_COLL_OFI_GATHER_SETS): the same on every
 * rank, as a communicator that spans nodes has a peer on another node
 * from every rank's view (the vote checks it all the same). */
static void mca_coll_ofi_slots(mca_coll_ofi_module_t *m)
{
    size_t b = MCA_COLL_OFI_SMALL_BYTES_MAX;

    if (mca_coll_ofi_spans_nodes(m)) {
        while (b > MCA_COLL_OFI_SMALL_BYTES && b * (size_t) m->size > MCA_COLL_OFI_SMALL_SPAN) {
            b /= 2;
        }
        m->small_bytes = b;
        m->gather_bytes = b;
        m->ring_bytes = MCA_COLL_OFI_SMALL_BYTES_MAX;
        m->gather_sets = 2 * MCA_COLL_OFI_GATHER_SETS;
        m->flat_bytes = 0;
    } else {
        b = MCA_COLL_OFI_GATHER_BYTES_MAX;
        while (b > MCA_COLL_OFI_SMALL_BYTES && b * (size_t) m->size > MCA_COLL_OFI_GATHER_SPAN) {
            b /= 2;
        }
        /* two ranks exchange up to 8 KiB (vader 2 KiB 2.0 -> 1.0 us, 8
         * KiB 3.2 -> 2.4 against a gather and a flat broadcast); on 4
         * ranks no faster, on 8 slower (4 KiB 14.7 against 20.3) */
        m->small_bytes = (2 == m->size) ? MCA_COLL_OFI_SMALL_BYTES_MAX : MCA_COLL_OFI_SMALL_BYTES;
        m->gather_bytes = b;
        m->ring_bytes = MCA_COLL_OFI_SMALL_BYTES;
        m->gather_sets = MCA_COLL_OFI_GATHER_SETS;
        m->flat_bytes = MCA_COLL_OFI_FLAT_BYTES;
    }
    m->gather_stride = MCA_COLL_OFI_RING_HEAD + m->gather_bytes;
    m->ring_stride = MCA_COLL_OFI_RING_HEAD + m->ring_bytes;
    m->flat_stride = MCA_COLL_OFI_RING_HEAD + m->flat_bytes;
}

/* Allocate and register this rank's block (see coll_ofi.h for the layout). */
static int mca_coll_ofi_block_create(mca_coll_ofi_module_t *m, const char **why)
{
    size_t n = (size_t) m->size;
    size_t hsize = (NULL != m->btl->btl_register_mem) ? m->btl->btl_registration_handle_size : 0;
    size_t off;

    m->off_ready = sizeof(mca_coll_ofi_header_t);
    m->off_credit = m->off_ready + n * sizeof(uint64_t);
    m->off_src = m->off_credit + n * sizeof(uint64_t);
    m->off_rdone = m->off_src + n * sizeof(uint64_t);
    m->off_bounce = MCA_COLL_OFI_ALIGN(m->off_rdone + n * sizeof(uint64_t), 64);
    m->off_small = m->off_bounce + MCA_COLL_OFI_PAGE_SIZE;
    mca_coll_ofi_slots(m);
    m->small_size = (m->size <= MCA_COLL_OFI_SMALL_RANKS) ? 2 * n * m->small_bytes : 0;
    m->off_gather = MCA_COLL_OFI_ALIGN(m->off_small + m->small_size, 64);
    m->off_ring = m->off_gather + ((0 < m->small_size) ? m->gather_sets * n * m->gather_stride : 0);
    m->off_flat = m->off_ring + MCA_COLL_OFI_RING_SLOTS * m->ring_stride;
    m->off_dir = m->off_flat + ((0 < m->flat_bytes) ? MCA_COLL_OFI_FLAT_SLOTS * m->flat_stride : 0);
    /* per rank: block address, data size, registration handle */
    m->dir_stride = MCA_COLL_OFI_DIR_HANDLE + MCA_COLL_OFI_ALIGN(hsize, 8);
    /* then one entry of the same form per rank: where a large broadcast's
     * parent (that rank) registered its buffer (coll_ofi_bcast.c) */
    m->off_zc = m->off_dir + n * m->dir_stride;
    off = MCA_COLL_OFI_ALIGN(m->off_zc + n * m->dir_stride, MCA_COLL_OFI_PAGE_SIZE);
    m->off_data = off;
    m->data_size = (size_t) mca_coll_ofi_component.cache_pages * MCA_COLL_OFI_PAGE_SIZE;
    m->block_size = off + m->data_size;

    m->ring_seen = calloc(n, sizeof(*m->ring_seen));
    m->flat_seen = calloc(n, sizeof(*m->flat_seen));
    m->reduce_seen = calloc(n, sizeof(*m->reduce_seen));
    m->gather_root_last = calloc(n, sizeof(*m->gather_root_last));
    m->gather_told = calloc(n, sizeof(*m->gather_told));
    m->peer_map = calloc(n, sizeof(*m->peer_map));
    m->peer_pid = calloc(n, sizeof(*m->peer_pid));
    if (NULL == m->ring_seen || NULL == m->flat_seen || NULL == m->reduce_seen
        || NULL == m->gather_root_last || NULL == m->gather_told || NULL == m->peer_map
        || NULL == m->peer_pid) {
        *why = "out of memory for the cache";
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    {
        static uint32_t instances;
        m->instance = __atomic_add_fetch(&instances, 1, __ATOMIC_RELAXED);
    }
    if (!mca_coll_ofi_maps_reserve(m, why)) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    /* shared memory where a peer is on this node, else private (a new
     * segment is zeroed already) */
    mca_coll_ofi_shm_create(m, m->block_size);
    if (NULL == m->block) {
        /* private: anonymous pages, zeroed by the kernel and backed only
         * as calls reach them, as a shared block's (zeroing a heap block
         * touched all of its reserved area: 1.1 MiB per communicator and
         * rank on 2 ranks, 48 KiB shared) */
        void *base =
            mmap(NULL, m->block_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (MAP_FAILED == base) {
            *why = "out of memory for the cache (mmap failed)";
            return OMPI_ERR_OUT_OF_RESOURCE;
        }
        m->block = base;
        m->block_mapped = true;
    }

    if (0 == m->data_size) {
        /* coll_ofi_cache_pages 0: payload moves through the bounce page */
        m->data = m->block + m->off_bounce;
        m->data_size = MCA_COLL_OFI_PAGE_SIZE;
    } else {
        m->data = m->block + m->off_data;
    }

    if (NULL != m->btl->btl_register_mem) {
        m->handle = m->btl->btl_register_mem(m->btl, MCA_BTL_ENDPOINT_ANY, m->block, m->block_size,
                                             MCA_BTL_REG_FLAG_ACCESS_ANY);
        if (NULL == m->handle) {
            *why = "the BTL could not register the cache";
            goto free_block;
        }
    }
    return OMPI_SUCCESS;

free_block:
    mca_coll_ofi_shm_release(m); /* our block */
    return OMPI_ERR_OUT_OF_RESOURCE;
}

void mca_coll_ofi_cache_release(mca_coll_ofi_module_t *m)
{
    /* a broadcast's flag puts may still be in flight (coll_ofi_bcast.c):
     * their source and their callback's module are about to go */
    if (NULL != m->block) {
        (void) mca_coll_ofi_complete(m);
    }
    if (NULL != m->handle) {
        (void) m->btl->btl_deregister_mem(m->btl, m->handle);
        m->handle = NULL;
    }
    mca_coll_ofi_am_detach(m);
    mca_coll_ofi_user_deregister(m, m->zc_in_handle);
    m->zc_in_handle = NULL;
    free(m->zc_in);
    m->zc_in = NULL;
    m->zc_in_size = 0;
    free(m->zc_acc);
    m->zc_acc = NULL;
    m->zc_acc_size = 0;
    mca_coll_ofi_shm_release(m); /* the peers' mappings, our block */
    mca_coll_ofi_maps_return(m);
    free(m->ring_seen);
    m->ring_seen = NULL;
    free(m->flat_seen);
    m->flat_seen = NULL;
    free(m->reduce_seen);
    m->reduce_seen = NULL;
    free(m->gather_root_last);
    m->gather_root_last = NULL;
    free(m->gather_told);
    m->gather_told = NULL;
    free(m->leader);
    m->leader = NULL;
    free(m->endpoints);
    m->endpoints = NULL;
}

/* A number from a BTL component name, equal on every rank for equal
 * names, for the vote below (which can only compare integers). */
static int mca_coll_ofi_name_hash(const char *name)
{
    uint32_t h = 5381;
    for (; *name; ++name) {
        h = h * 33 + (unsigned char) *name;
    }
    return (int) (h & 0x3fffffff);
}

/* Every rank's vote on serving the communicator, through the previous
 * component's allreduce: {usable, handle size, -handle size, pages,
 * -pages, btl, -btl}. A MIN makes the first 0 if any rank cannot serve and
 * shows whether every rank has the same handle size and cache size (the
 * layout must match) and chose the same BTL component (handles are only
 * understood by the BTL that made them). *AGREED is set only on success. */
static int mca_coll_ofi_vote(mca_coll_ofi_module_t *m, bool usable, bool *agreed)
{
    /* then {messages possible, their largest payload}: used only if every
     * rank can receive them (coll_ofi_am.c), up to the smallest size */
    int agree[11] = {usable ? 1 : 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    int rc;

    if (usable) {
        int hsize = (NULL != m->handle) ? (int) m->btl->btl_registration_handle_size : 0;
        agree[1] = hsize;
        agree[2] = -hsize;
        agree[3] = mca_coll_ofi_component.cache_pages;
        agree[4] = -mca_coll_ofi_component.cache_pages;
        agree[5] = mca_coll_ofi_name_hash(m->btl->btl_component->btl_version.mca_component_name);
        agree[6] = -agree[5];
        agree[7] = m->am ? 1 : 0;
        agree[8] = (m->am_max > INT32_MAX) ? INT32_MAX : (int) m->am_max;
        /* and the size of the small slots (the layout again) */
        agree[9] = (int) m->small_bytes;
        agree[10] = -agree[9];
    }
    rc = m->prev_allreduce(MPI_IN_PLACE, agree, 11, MPI_INT, MPI_MIN, m->comm,
                           m->prev_allreduce_module);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (1 != agree[7]) {
        mca_coll_ofi_am_detach(m);
    }
    m->am_max = (size_t) agree[8];
    if (0 == agree[0] || agree[1] != -agree[2] || agree[3] != -agree[4] || agree[5] != -agree[6]
        || agree[9] != -agree[10]) {
        /* a rank that could not serve has said why already */
        opal_output_verbose(usable ? (0 == m->rank ? 1 : 2) : 100, mca_coll_ofi_component.output,
                            "coll:ofi: not serving communicator %u (rank %d): %s", m->cid, m->rank,
                            0 == agree[0] ? "a rank cannot reach its peers over RDMA"
                                          : "ranks differ in BTL, handle size, "
                                            "coll_ofi_cache_pages or in whether the "
                                            "communicator spans nodes");
        *agreed = false;
    } else {
        *agreed = true;
    }
    return OMPI_SUCCESS;
}

/* Fill the directory: every rank's block address, data size and
 * registration handle, through the previous component's allgather. */
static int mca_coll_ofi_dir_exchange(mca_coll_ofi_module_t *m)
{
    uint64_t base = (uint64_t) (uintptr_t) m->block;
    uint64_t dsize = m->data_size;
    char *send = calloc(1, m->dir_stride);
    int rc;

    if (NULL == send) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    memcpy(send, &base, sizeof(base));
    memcpy(send + sizeof(base), &dsize, sizeof(dsize));
    {
        const uint64_t pid = (uint64_t) getpid(), inst = m->instance;
        memcpy(send + MCA_COLL_OFI_DIR_PID, &pid, sizeof(pid));
        memcpy(send + MCA_COLL_OFI_DIR_INST, &inst, sizeof(inst));
    }
    memcpy(send + MCA_COLL_OFI_DIR_NAME, m->shm_name, MCA_COLL_OFI_SHM_NAME);
    if (NULL != m->handle) {
        memcpy(send + MCA_COLL_OFI_DIR_HANDLE, m->handle, m->btl->btl_registration_handle_size);
    }
    rc = m->prev_allgather(send, (int) m->dir_stride, MPI_BYTE, m->block + m->off_dir,
                           (int) m->dir_stride, MPI_BYTE, m->comm, m->prev_allgather_module);
    free(send);
    return rc;
}

/* Node groups from every rank's mapped peers (MASK[r], bit q: r maps q):
 * a rank joins the group of the lowest rank that leads a group and that
 * it maps and that maps it, or leads its own. The same on every rank, as
 * the masks are. Kept only if some group has more than one rank and there
 * is more than one group: then a small commutative reduction crosses
 * between nodes once per group instead of once per rank. */
static void mca_coll_ofi_node_groups(mca_coll_ofi_module_t *m, int *leader, const int *mask)
{
    const int n = m->size;
    int groups = 0;
    bool shared = false;

    for (int r = 0; r < n; ++r) {
        leader[r] = r;
        for (int q = 0; q < r; ++q) {
            if (leader[q] == q && (mask[r] >> q & 1) && (mask[q] >> r & 1)) {
                leader[r] = q;
                shared = true;
                break;
            }
        }
        groups += (leader[r] == r);
    }
    if (shared && groups > 1) {
        m->leader = leader;
    } else {
        free(leader);
    }
}

/* Map the blocks of local peers that made theirs shared, then (once every
 * rank has: one allreduce through the previous component, called by every
 * rank alike as the directory is the same everywhere) remove the names.
 * The allreduce also tells whether every rank mapped all its peers and can
 * read their memory with process_vm_readv ("all local"). Then buffers of
 * collectives without copies are not registered with the btl (children
 * read them themselves), and on more than two ranks reductions go
 * through the caches at every size (or are split) and broadcasts are flat
 * (mca_coll_ofi_zc_policy). Measured on 2 cores, all local, caches
 * against without copies (medians of 3, bench/coll_bench, shm and vader
 * alike): reduce 1 MiB 370 against 580 us on 4 ranks, 1,040 against
 * 1,400 on 8. On two ranks (no tree, the handshake of a transfer without
 * copies is one flag each way) without copies stays faster: bcast 32 KiB
 * 3.0 against 6.1 us, 1 MiB 82 against 124, reduce 128 KiB 14 against 17. */
static int mca_coll_ofi_map_peers(mca_coll_ofi_module_t *m)
{
    /* {all local, room for node groups, then (up to SMALL_RANKS ranks)
     * each rank's set of mapped peers as a bit mask at its index, INT_MAX
     * elsewhere}, by MPI_MIN */
    int vote[2 + MCA_COLL_OFI_SMALL_RANKS];
    const int nvote = 2 + ((m->size <= MCA_COLL_OFI_SMALL_RANKS) ? m->size : 0);
    int *leader = NULL;
    bool named = false;
    int rc;

    for (int r = 0; r < m->size && !named; ++r) {
        named = '\0' != m->block[m->off_dir + (size_t) r * m->dir_stride + MCA_COLL_OFI_DIR_NAME];
    }
    if (!named) {
        return OMPI_SUCCESS;
    }
    vote[0] = mca_coll_ofi_shm_attach(m) ? 1 : 0;
    if (nvote > 2) {
        leader = malloc((size_t) m->size * sizeof(*leader));
    }
    vote[1] = (NULL != leader) ? 1 : 0;
    for (int r = 0; r + 2 < nvote; ++r) {
        vote[2 + r] = INT_MAX;
    }
    if (nvote > 2) {
        vote[2 + m->rank] = 0;
        for (int r = 0; r < m->size; ++r) {
            if (NULL != m->peer_map[r]) {
                vote[2 + m->rank] |= 1 << r;
            }
        }
    }
    rc = m->prev_allreduce(MPI_IN_PLACE, vote, nvote, MPI_INT, MPI_MIN, m->comm,
                           m->prev_allreduce_module);
    mca_coll_ofi_shm_unlink(m);
    m->all_local = (OMPI_SUCCESS == rc && 1 == vote[0]);
    if (OMPI_SUCCESS == rc && 1 == vote[1] && !m->all_local) {
        mca_coll_ofi_node_groups(m, leader, vote + 2);
    } else {
        free(leader);
    }
    return rc;
}

/* From which size broadcasts and reductions go without copies, the same
 * on every rank (m->am and m->all_local are agreed): coll_ofi_zcopy_size,
 * raised where measured faster (see mca_coll_ofi_map_peers for all
 * local). With messages to peers that are not mapped, a chunk of the
 * caches costs no round trip but its credit, so broadcasts without
 * copies (a published entry, flushed, then a get) only from 64 KiB:
 * across two simulated hosts x 2 ranks (tcp;ofi_rxm) bcast 8 KiB 27 us
 * through the caches against 80-90 without copies, allreduce 8 KiB 80
 * against 131; even at 64 KiB, from 128 KiB without copies faster
 * (110-120 against 140 us, 256 KiB 134-150 against 276). */
static size_t mca_coll_ofi_max(size_t a, size_t b)
{
    return (a > b) ? a : b;
}

static void mca_coll_ofi_zc_policy(mca_coll_ofi_module_t *m)
{
    const size_t want = mca_coll_ofi_component.zc_min;
    size_t floor = 0;

    /* all local, split between the ranks (see MCA_COLL_OFI_PAIR_MIN) */
    m->pair_min =
        (m->all_local && 2 == m->size) ? mca_coll_ofi_max(want, MCA_COLL_OFI_PAIR_MIN) : SIZE_MAX;
    m->split_min = m->all_local
                       ? mca_coll_ofi_max(want, (2 == m->size ? 4 : 1) * MCA_COLL_OFI_SPLIT_MIN)
                       : SIZE_MAX;
    m->zc_reduce_min = want;
    if (m->all_local && m->size > 2) {
        /* reductions through the caches or split (mca_coll_ofi_map_peers);
         * broadcasts flat (below) */
        m->zc_reduce_min = SIZE_MAX;
    } else if (!m->all_local && m->am) {
        floor = MCA_COLL_OFI_AM_ZC_MIN;
    }
    m->zc_min = mca_coll_ofi_max(want, floor);
    /* all local, broadcasts flat (one copy by the root, one by each
     * reader): on more than two ranks at every size, on two up to
     * coll_ofi_zcopy_size, from where a reader's one copy out of the
     * root's buffer was faster (vader 128 KiB 7.5 against 8.9 us flat,
     * 1 MiB 69 against 77-83) */
    if (!m->all_local || 0 == m->flat_bytes) {
        m->flat_max = 0;
    } else if (m->size > 2) {
        m->flat_max = SIZE_MAX;
    } else {
        m->flat_max = mca_coll_ofi_max(m->ring_bytes, m->zc_min - 1);
    }
}

/*
 * First collective on the communicator: every rank picks its BTL and
 * registers its block, then one allreduce (through the previous
 * component) decides for all whether the communicator is served, and one
 * allgather fills the directory.  Returns 1 when served, 0 when the
 * previous functions are to be used (for good), or an error.
 */
static int mca_coll_ofi_cache_setup(mca_coll_ofi_module_t *m)
{
    const char *why = NULL;
    bool agreed = false;
    int rc;

    m->state = MCA_COLL_OFI_SETTING_UP;

    /* a local failure must still take part in the vote: the other ranks
     * are already in it */
    m->endpoints = calloc((size_t) m->size, sizeof(*m->endpoints));
    if (NULL == m->endpoints) {
        why = "out of memory for the endpoint table";
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    } else {
        rc = mca_coll_ofi_pick_btl(m, &why);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_block_create(m, &why);
    }
    if (OMPI_SUCCESS == rc) {
        /* ready for peers' messages before any of them can send one */
        mca_coll_ofi_am_attach(m);
    }
    if (NULL != why) {
        opal_output_verbose(1, mca_coll_ofi_component.output,
                            "coll:ofi: not serving communicator %u (rank %d): %s", m->cid, m->rank,
                            why);
    }
    rc = mca_coll_ofi_vote(m, OMPI_SUCCESS == rc, &agreed);
    if (OMPI_SUCCESS != rc) {
        goto release_cache;
    }
    if (!agreed) {
        mca_coll_ofi_cache_release(m);
        m->state = MCA_COLL_OFI_FALLBACK;
        return 0;
    }
    rc = mca_coll_ofi_dir_exchange(m);
    if (OMPI_SUCCESS != rc) {
        goto release_cache;
    }
    rc = mca_coll_ofi_map_peers(m);
    if (OMPI_SUCCESS != rc) {
        goto release_cache;
    }
    mca_coll_ofi_zc_policy(m);

    m->state = MCA_COLL_OFI_SERVING;
    /* one line per communicator (every rank decided the same); each
     * rank's own at verbosity 2 */
    opal_output_verbose(0 == m->rank ? 1 : 2, mca_coll_ofi_component.output,
                        "coll:ofi: serving communicator %u with %d ranks over btl %s "
                        "(rank %d, %zu-byte data cache, fanout %d, %d peers through shared "
                        "memory, messages of up to %zu bytes to the others)",
                        m->cid, m->size, m->btl->btl_component->btl_version.mca_component_name,
                        m->rank, m->data_size, mca_coll_ofi_component.fanout, m->n_mapped,
                        m->am ? m->am_max : 0);
    return 1;

release_cache:
    /* the exchange itself failed: the ranks may no longer agree, so this
     * call reports the error and the communicator is not served */
    mca_coll_ofi_cache_release(m);
    m->state = MCA_COLL_OFI_FALLBACK;
    return rc;
}

int mca_coll_ofi_cache_ready(mca_coll_ofi_module_t *m)
{
    if (MCA_COLL_OFI_SERVING == m->state) {
        return 1;
    }
    if (MCA_COLL_OFI_FALLBACK == m->state || MCA_COLL_OFI_SETTING_UP == m->state) {
        return 0;
    }
    return mca_coll_ofi_cache_setup(m);
}

uint64_t *mca_coll_ofi_slot(mca_coll_ofi_module_t *m, size_t area_off, int index)
{
    return (uint64_t *) (m->block + area_off) + index;
}

uint64_t mca_coll_ofi_dir_field(const mca_coll_ofi_module_t *m, int rank, size_t field)
{
    uint64_t v;
    memcpy(&v, m->block + m->off_dir + (size_t) rank * m->dir_stride + field, sizeof(v));
    return v;
}

static uint64_t mca_coll_ofi_remote_base(mca_coll_ofi_module_t *m, int peer)
{
    return mca_coll_ofi_dir_field(m, peer, 0);
}

static mca_btl_base_registration_handle_t *mca_coll_ofi_remote_handle(mca_coll_ofi_module_t *m,
                                                                      int peer)
{
    if (NULL == m->handle) {
        return NULL;
    }
    return (mca_btl_base_registration_handle_t *) (m->block + m->off_dir
                                                   + (size_t) peer * m->dir_stride
                                                   + MCA_COLL_OFI_DIR_HANDLE);
}

static void mca_coll_ofi_rdma_done(struct mca_btl_base_module_t *btl,
                                   struct mca_btl_base_endpoint_t *endpoint, void *local_address,
                                   struct mca_btl_base_registration_handle_t *local_handle,
                                   void *context, void *cbdata, int status)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) context;
    (void) btl;
    (void) endpoint;
    (void) local_address;
    (void) local_handle;
    (void) cbdata;

    if (OPAL_SUCCESS != status) {
        m->op_status = status;
    }
    (void) __atomic_sub_fetch(&m->pending, 1, __ATOMIC_RELEASE);
}

/* Issue one RDMA operation through ISSUE (an expression of the BTL call),
 * retrying while the BTL is out of resources, and keep m->pending right
 * whether it completes later (callback), at once (1) or not at all. */
#define MCA_COLL_OFI_ISSUE(m, rc, ISSUE)                                                           \
    do {                                                                                           \
        (void) __atomic_add_fetch(&(m)->pending, 1, __ATOMIC_RELAXED);                             \
        for (;;) {                                                                                 \
            (rc) = (ISSUE);                                                                        \
            if (!mca_coll_ofi_try_again(rc)) {                                                     \
                break;                                                                             \
            }                                                                                      \
            opal_progress();                                                                       \
        }                                                                                          \
        if (OPAL_SUCCESS != (rc)) {                                                                \
            (void) __atomic_sub_fetch(&(m)->pending, 1, __ATOMIC_RELEASE);                         \
            (rc) = (1 == (rc)) ? OMPI_SUCCESS : (rc);                                              \
        }                                                                                          \
    } while (0)

static size_t mca_coll_ofi_limit(size_t limit)
{
    /* 0 would mean "no operation at all"; treat it as no limit */
    return (0 == limit) ? SIZE_MAX : limit;
}

/* SIZE bytes between LOCAL (registered as LHANDLE) and RADDR of PEER
 * (registered as RHANDLE), by put or get, in pieces of the btl's limit */
static int mca_coll_ofi_move(mca_coll_ofi_module_t *m, int peer, void *local,
                             mca_btl_base_registration_handle_t *lhandle, uint64_t raddr,
                             mca_btl_base_registration_handle_t *rhandle, size_t size, bool put)
{
    mca_btl_base_module_t *btl = m->btl;
    /* put and get have the same signature in BTL 3.1 */
    mca_btl_base_module_get_fn_t move = put ? btl->btl_put : btl->btl_get;
    size_t limit = mca_coll_ofi_limit(put ? btl->btl_put_limit : btl->btl_get_limit);
    int rc = OMPI_SUCCESS;

    for (size_t done = 0; done < size && OMPI_SUCCESS == rc;) {
        size_t len = (size - done < limit) ? size - done : limit;
        MCA_COLL_OFI_ISSUE(m, rc,
                           move(btl, m->endpoints[peer], (char *) local + done, raddr + done,
                                lhandle, rhandle, len, 0, MCA_BTL_NO_ORDER, mca_coll_ofi_rdma_done,
                                m, NULL));
        done += len;
    }
    return rc;
}

/* SIZE bytes between LOCAL and REMOTE of a peer's block mapped here,
 * done when this returns. An aligned word (a flag, a counter, a zc entry's
 * first field) is one atomic access, so a reader never sees half of it;
 * ordering against the flag that follows is the signal's release store. */
static void mca_coll_ofi_direct(char *remote, void *local, size_t size, bool put)
{
    if (sizeof(uint64_t) == size && 0 == ((uintptr_t) remote & (sizeof(uint64_t) - 1))) {
        uint64_t v;
        if (put) {
            memcpy(&v, local, sizeof(v));
            __atomic_store_n((uint64_t *) remote, v, __ATOMIC_RELEASE);
        } else {
            v = __atomic_load_n((uint64_t *) remote, __ATOMIC_ACQUIRE);
            memcpy(local, &v, sizeof(v));
        }
    } else if (put) {
        memcpy(remote, local, size);
    } else {
        memcpy(local, remote, size);
    }
}

/* SIZE bytes between LOCAL (in our block, or anywhere for a peer whose
 * block is mapped here) and REMOTE_OFF of PEER's block */
static int mca_coll_ofi_rdma(mca_coll_ofi_module_t *m, int peer, void *local, size_t remote_off,
                             size_t size, bool put)
{
    if (NULL != m->peer_map[peer]) {
        mca_coll_ofi_direct(m->peer_map[peer] + remote_off, local, size, put);
        return OMPI_SUCCESS;
    }
    return mca_coll_ofi_move(m, peer, local, m->handle,
                             mca_coll_ofi_remote_base(m, peer) + remote_off,
                             mca_coll_ofi_remote_handle(m, peer), size, put);
}

int mca_coll_ofi_zc_get(mca_coll_ofi_module_t *m, int peer, uint64_t s, char *local,
                        mca_btl_base_registration_handle_t *lhandle, size_t off, size_t len)
{
    const char *entry = m->block + m->off_zc + (size_t) peer * m->dir_stride;
    mca_btl_base_registration_handle_t *rhandle =
        (NULL != m->btl->btl_register_mem)
            ? (mca_btl_base_registration_handle_t *) (entry + MCA_COLL_OFI_DIR_HANDLE)
            : NULL;
    uint64_t raddr;
    int rc = mca_coll_ofi_wait(m, m->off_ready, peer, s, peer);

    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    memcpy(&raddr, entry, sizeof(raddr));
    /* a peer on this node: one copy of ours, nothing asked of it */
    if (0 != m->peer_pid[peer]) {
        rc = mca_coll_ofi_shm_read(m, peer, local, raddr + off, len);
        if (OMPI_SUCCESS == rc || m->all_local) {
            /* all local: the buffer was not registered, the btl cannot
             * read it either */
            return rc;
        }
    }
    rc = mca_coll_ofi_move(m, peer, local, lhandle, raddr + off, rhandle, len, false);
    return (OMPI_SUCCESS == rc) ? mca_coll_ofi_complete(m) : rc;
}

int mca_coll_ofi_user_register(mca_coll_ofi_module_t *m, void *buf, size_t bytes, uint32_t flags,
                               mca_btl_base_registration_handle_t **handle)
{
    mca_btl_base_registration_handle_t *h;

    /* every reader uses process_vm_readv (mca_coll_ofi_zc_get) */
    if (NULL == m->btl->btl_register_mem || m->all_local) {
        *handle = NULL;
        return OMPI_SUCCESS;
    }
    h = m->btl->btl_register_mem(m->btl, MCA_BTL_ENDPOINT_ANY, buf, bytes, flags);
    if (NULL == h) {
        opal_output(0,
                    "coll:ofi: communicator %u rank %d: btl %s could not register %zu bytes "
                    "for a collective without copies (out of registrations or memory?); the "
                    "collective returns an error. coll_ofi_zcopy_size 0 keeps collectives in "
                    "the registered caches, coll_ofi_priority 0 leaves them to the previous "
                    "component",
                    m->cid, m->rank, m->btl->btl_component->btl_version.mca_component_name, bytes);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    *handle = h;
    return OMPI_SUCCESS;
}

void mca_coll_ofi_user_deregister(mca_coll_ofi_module_t *m,
                                  mca_btl_base_registration_handle_t *handle)
{
    if (NULL != handle) {
        (void) m->btl->btl_deregister_mem(m->btl, handle);
    }
}

int mca_coll_ofi_zc_publish(mca_coll_ofi_module_t *m, int peer, const void *buf, size_t bytes,
                            mca_btl_base_registration_handle_t *handle)
{
    char *mine = m->block + m->off_zc + (size_t) m->rank * m->dir_stride;
    const uint64_t addr = (uint64_t) (uintptr_t) buf, size = bytes;

    memcpy(mine, &addr, sizeof(addr));
    memcpy(mine + sizeof(addr), &size, sizeof(size));
    if (NULL != handle) {
        memcpy(mine + MCA_COLL_OFI_DIR_HANDLE, handle, m->btl->btl_registration_handle_size);
    }
    return mca_coll_ofi_put(m, peer, mine, (size_t) (mine - m->block), m->dir_stride);
}

int mca_coll_ofi_zc_end(mca_coll_ofi_module_t *m, int rc,
                        mca_btl_base_registration_handle_t *handle, uint64_t steps)
{
    if (OMPI_SUCCESS != rc) {
        /* nothing of ours may still read or write the buffer */
        (void) mca_coll_ofi_complete(m);
    }
    mca_coll_ofi_user_deregister(m, handle);
    /* the same count on every rank, even on error */
    m->step += steps;
    return rc;
}

/* *BUF grown to SIZE bytes (its contents not kept), *HAVE its size. */
static char *mca_coll_ofi_scratch(mca_coll_ofi_module_t *m, char **buf, size_t *have, size_t size)
{
    if (*have >= size) {
        return *buf;
    }
    free(*buf);
    *have = 0;
    *buf = malloc(size);
    if (NULL == *buf) {
        opal_output(0,
                    "coll:ofi: communicator %u rank %d: out of memory for %zu bytes of "
                    "reduction scratch; the collective returns an error",
                    m->cid, m->rank, size);
        return NULL;
    }
    *have = size;
    return *buf;
}

char *mca_coll_ofi_zc_landing(mca_coll_ofi_module_t *m, size_t size)
{
    if (m->zc_in_size >= size) {
        return m->zc_in;
    }
    /* a new zone: the old one's registration goes with it; ours is only
     * written by our own gets */
    mca_coll_ofi_user_deregister(m, m->zc_in_handle);
    m->zc_in_handle = NULL;
    if (NULL == mca_coll_ofi_scratch(m, &m->zc_in, &m->zc_in_size, size)) {
        return NULL;
    }
    if (OMPI_SUCCESS
        != mca_coll_ofi_user_register(m, m->zc_in, size, MCA_BTL_REG_FLAG_LOCAL_WRITE,
                                      &m->zc_in_handle)) {
        m->zc_in_size = 0; /* registered next time */
        return NULL;
    }
    return m->zc_in;
}

char *mca_coll_ofi_zc_partial(mca_coll_ofi_module_t *m, size_t size)
{
    return mca_coll_ofi_scratch(m, &m->zc_acc, &m->zc_acc_size, size);
}

int mca_coll_ofi_put(mca_coll_ofi_module_t *m, int peer, void *local, size_t remote_off,
                     size_t size)
{
    return mca_coll_ofi_rdma(m, peer, local, remote_off, size, true);
}

int mca_coll_ofi_get(mca_coll_ofi_module_t *m, int peer, void *local, size_t remote_off,
                     size_t size)
{
    return mca_coll_ofi_rdma(m, peer, local, remote_off, size, false);
}

/* Wait for every operation issued so far; report the first failure. */
int mca_coll_ofi_complete(mca_coll_ofi_module_t *m)
{
    int rc;

    while (__atomic_load_n(&m->pending, __ATOMIC_ACQUIRE) > 0) {
        opal_progress();
    }
    rc = m->op_status;
    if (OMPI_SUCCESS != rc) {
        m->op_status = OMPI_SUCCESS;
        opal_output(0,
                    "coll:ofi: communicator %u rank %d: an RDMA operation through btl %s "
                    "failed (%d); the collective returns an error",
                    m->cid, m->rank, m->btl->btl_component->btl_version.mca_component_name, rc);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* The end of a collective that leaves its own flag puts in flight: their
 * readers wait for them, we need not (the next signal completes them
 * before it reuses their source word, the module's release completes the
 * rest). Only a failure seen meanwhile makes us wait, to report it. */
int mca_coll_ofi_leave(mca_coll_ofi_module_t *m)
{
    return OPAL_LIKELY(OMPI_SUCCESS == m->op_status) ? OMPI_SUCCESS : mca_coll_ofi_complete(m);
}

/* Make everything put to PEER so far visible there. */
int mca_coll_ofi_flush(mca_coll_ofi_module_t *m, int peer)
{
    int rc = mca_coll_ofi_complete(m);

    /* stores into a mapped block are there already; the flag's release
     * store orders them */
    if (OMPI_SUCCESS == rc && NULL != m->btl->btl_flush && NULL == m->peer_map[peer]) {
        rc = m->btl->btl_flush(m->btl, m->endpoints[peer]);
        if (OPAL_SUCCESS != rc) {
            opal_output(0,
                        "coll:ofi: communicator %u rank %d: btl_flush towards rank %d "
                        "failed (%d)",
                        m->cid, m->rank, peer, rc);
            return OMPI_ERROR;
        }
    }
    return rc;
}

/* Write VALUE into our slot in PEER's area AREA_OFF (slot index = our
 * rank).  Callers complete and flush their payload puts first.  The
 * write is left in flight (the caller goes on to wait for something
 * else, which gives it time to land); it is completed before the next
 * signal, which may reuse its source slot, and before the collective
 * returns (mca_coll_ofi_complete). */
int mca_coll_ofi_signal(mca_coll_ofi_module_t *m, int peer, size_t area_off, uint64_t value)
{
    return mca_coll_ofi_signal_at(m, peer, area_off + (size_t) m->rank * sizeof(uint64_t), value);
}

int mca_coll_ofi_signal_at(mca_coll_ofi_module_t *m, int peer, size_t remote_off, uint64_t value)
{
    uint64_t *src = mca_coll_ofi_slot(m, m->off_src, peer);
    int rc;

    if (NULL != m->peer_map[peer]) {
        /* payload stores (ours, or memcpy into our block) before the flag */
        __atomic_store_n((uint64_t *) (m->peer_map[peer] + remote_off), value, __ATOMIC_RELEASE);
        return OMPI_SUCCESS;
    }
    if (m->am) {
        /* every flag to this peer by message (coll_ofi_am.c) */
        return mca_coll_ofi_am_send(m, peer, NULL, 0, 0, remote_off, value, false);
    }
    if (__atomic_load_n(&m->pending, __ATOMIC_ACQUIRE) > 0) {
        rc = mca_coll_ofi_complete(m);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    /* local payload (filled with memcpy) must be visible before a peer
     * that sees the flag reads it */
    opal_atomic_wmb();
    *src = value;
    return mca_coll_ofi_put(m, peer, src, remote_off, sizeof(uint64_t));
}

int mca_coll_ofi_post(mca_coll_ofi_module_t *m, int peer, void *local, size_t data_off, size_t len)
{
    if (NULL == m->peer_map[peer] && m->am && len <= m->am_max) {
        return OMPI_SUCCESS; /* goes with its flag */
    }
    return mca_coll_ofi_put(m, peer, local, data_off, len);
}

int mca_coll_ofi_post_signal(mca_coll_ofi_module_t *m, int peer, void *local, size_t data_off,
                             size_t len, size_t flag_off, uint64_t value)
{
    int rc;

    if (NULL == m->peer_map[peer] && m->am && len <= m->am_max) {
        return mca_coll_ofi_am_send(m, peer, local, data_off, len, flag_off, value, false);
    }
    rc = mca_coll_ofi_flush(m, peer);
    return (OMPI_SUCCESS == rc) ? mca_coll_ofi_signal_at(m, peer, flag_off, value) : rc;
}

/* Return once PEER's counter at FIELD of its header (calls it has
 * finished) says it is done with call C - NSLOTS, whose slot call C
 * reuses. The counter is read with a get only when SEEN[PEER], its value
 * last read, does not already say so: once in about NSLOTS calls while
 * PEER keeps up. The get is also work owed by PEER, so a dead peer is
 * named by the btl's lost-peer check like any other wait. */
static int mca_coll_ofi_room(mca_coll_ofi_module_t *m, int peer, uint64_t c, uint64_t nslots,
                             size_t field, uint64_t *peek, uint64_t *seen)
{
    int rc;

    for (bool asked = false; seen[peer] + nslots <= c; asked = true) {
        if (asked) {
            /* PEER is behind: let it (and everything else) run before
             * asking again. A btl whose get completes at once (vader's
             * single copy) never enters opal_progress in the completion
             * wait, and this loop alone would then keep a core from an
             * oversubscribed PEER until the scheduler's next tick. */
            opal_progress();
        }
        rc = mca_coll_ofi_get(m, peer, peek, field, sizeof(*peek));
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_complete(m);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        seen[peer] = __atomic_load_n(peek, __ATOMIC_ACQUIRE);
    }
    return OMPI_SUCCESS;
}

/* Whether root ROOT tells its contributors that it finished call DONE - 1:
 * decided by the root (mca_coll_ofi_gather_done) and by each contributor
 * (mca_coll_ofi_gather_room) from the same sequence of calls, so both
 * know which counts will arrive. */
static bool mca_coll_ofi_gather_tells(mca_coll_ofi_module_t *m, int root, uint64_t done)
{
    if (done < m->gather_told[root] + m->gather_sets / 2) {
        return false;
    }
    m->gather_told[root] = done;
    return true;
}

int mca_coll_ofi_gather_done(mca_coll_ofi_module_t *m, int root, uint64_t done)
{
    int rc = OMPI_SUCCESS;

    /* every rank follows the rule for every call, so that each knows what
     * every root has told; the root tells everyone (a rank that is not
     * its direct contributor now may be in a later call) */
    if (!m->am || !mca_coll_ofi_gather_tells(m, root, done) || root != m->rank) {
        return OMPI_SUCCESS;
    }
    m->n_told++;
    for (int p = 0; p < m->size && OMPI_SUCCESS == rc; ++p) {
        if (p == m->rank) {
            continue;
        }
        /* by message a hint: the rank may have left MPI (mca_coll_ofi_am_send) */
        rc = (NULL == m->peer_map[p]) ? mca_coll_ofi_am_send(
                 m, p, NULL, 0, 0, m->off_rdone + (size_t) m->rank * sizeof(uint64_t), done, true)
                                      : mca_coll_ofi_signal(m, p, m->off_rdone, done);
    }
    return rc;
}

int mca_coll_ofi_ring_room(mca_coll_ofi_module_t *m, int peer, uint64_t c)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;

    return mca_coll_ofi_room(m, peer, c, MCA_COLL_OFI_RING_SLOTS,
                             offsetof(mca_coll_ofi_header_t, ring_done), &h->ring_peek,
                             m->ring_seen);
}

int mca_coll_ofi_flat_room(mca_coll_ofi_module_t *m, int peer, uint64_t c)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;

    return mca_coll_ofi_room(m, peer, c, MCA_COLL_OFI_FLAT_SLOTS,
                             offsetof(mca_coll_ofi_header_t, flat_done), &h->flat_peek,
                             m->flat_seen);
}

int mca_coll_ofi_gather_room(mca_coll_ofi_module_t *m, int peer, uint64_t c)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;

    if (m->am && NULL == m->peer_map[peer]) {
        /* The root tells us when it finished a call it was root of
         * (mca_coll_ofi_gather_done), at most every gather_sets / 2 calls:
         * no round trip. Its set for call c was last used by its latest
         * root call up to c - gather_sets: that one, or (if it was root
         * since) c - gather_sets itself, whichever is earlier, is what it
         * must have finished. The count it told last (or will tell, for
         * calls before this one) usually says so; if not, we read its
         * count, as without messages. */
        const uint64_t last = m->gather_root_last[peer];
        const uint64_t bound = (c + 1 > m->gather_sets) ? c + 1 - m->gather_sets : 0;
        const uint64_t need = (last < bound) ? last : bound;
        const bool told = need <= m->gather_told[peer];

        m->gather_root_last[peer] = c + 1;
        if (0 == need || m->reduce_seen[peer] >= need) {
            return OMPI_SUCCESS;
        }
        if (told) {
            return mca_coll_ofi_wait(m, m->off_rdone, peer, need, peer);
        }
        /* read its count until it reaches need (one slot: seen >= need) */
        m->n_count_read++;
        return mca_coll_ofi_room(m, peer, need, 1, offsetof(mca_coll_ofi_header_t, reduce_done),
                                 &h->reduce_peek, m->reduce_seen);
    }
    /* a mapped root's count is read where it is, at no cost */
    return mca_coll_ofi_room(m, peer, c, m->gather_sets,
                             offsetof(mca_coll_ofi_header_t, reduce_done), &h->reduce_peek,
                             m->reduce_seen);
}

/* Microseconds of the monotonic clock. (Open MPI's own timer,
 * opal_timer_base_get_usec, needs a header its Debian devel package does
 * not install.) */
static uint64_t mca_coll_ofi_usec(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

/* Probe the writer a wait depends on (every rank but ours when WRITER is
 * -1) with an 8-byte get of its block's header: work of ours owed by that
 * peer, which the btl's lost-peer check looks at. A flag is written by
 * its peer's put, so a waiting rank has nothing in flight to it, and a
 * peer that died before writing it would otherwise leave the wait
 * spinning with nothing to name it. The get's result is not used. */
static int mca_coll_ofi_probe(mca_coll_ofi_module_t *m, int writer)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;
    const int first = writer >= 0 ? writer : 0, last = writer >= 0 ? writer : m->size - 1;
    int rc = OMPI_SUCCESS;

    for (int p = first; p <= last; ++p) {
        if (p == m->rank) {
            continue;
        }
        /* through the btl even towards a mapped peer: only the btl can
         * tell that a peer is gone */
        rc = mca_coll_ofi_move(m, p, &h->probe, m->handle,
                               mca_coll_ofi_remote_base(m, p)
                                   + offsetof(mca_coll_ofi_header_t, probe),
                               mca_coll_ofi_remote_handle(m, p), sizeof(h->probe), false);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_complete(m);
        }
        if (OMPI_SUCCESS != rc) {
            opal_output(0,
                        "coll:ofi: communicator %u rank %d: rank %d, which this collective "
                        "waits for, cannot be reached (%d); the collective returns an error",
                        m->cid, m->rank, p, rc);
            break;
        }
    }
    return rc;
}

int mca_coll_ofi_wait(mca_coll_ofi_module_t *m, size_t area_off, int index, uint64_t value,
                      int writer)
{
    return mca_coll_ofi_wait_word(m, mca_coll_ofi_slot(m, area_off, index), value, writer);
}

int mca_coll_ofi_wait_word(mca_coll_ofi_module_t *m, const uint64_t *slot, uint64_t value,
                           int writer)
{
    uint64_t next = 0;
    unsigned spins = 0;

    while (__atomic_load_n(slot, __ATOMIC_ACQUIRE) < value) {
        opal_progress();
        /* the clock read once in a while: most waits end in microseconds */
        if (OPAL_UNLIKELY(0 == (++spins & 1023))) {
            uint64_t now = mca_coll_ofi_usec();
            if (0 == next) {
                next = now + MCA_COLL_OFI_PROBE_USEC;
            } else if (now >= next) {
                int rc = mca_coll_ofi_probe(m, writer);
                if (OMPI_SUCCESS != rc) {
                    return rc;
                }
                next = mca_coll_ofi_usec() + MCA_COLL_OFI_PROBE_USEC;
            }
        }
    }
    return OMPI_SUCCESS;
}
