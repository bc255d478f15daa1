/*
 * coll/ofi broadcast: an n-way fan-out tree (n = coll_ofi_fanout) rooted
 * at the root; all local, flat (mca_coll_ofi_bcast_flat) up to
 * m->flat_max. Up to 1 KiB through the ring (below); from
 * coll_ofi_zcopy_size on without copies (mca_coll_ofi_bcast_zc: children
 * get from their parent's registered buffer); in between, payload pushed
 * with btl_put from each rank's data cache into its children's, chunk by
 * chunk, as follows.
 *
 * The data cache is split in two halves and chunk k travels through half
 * k % 2, so a parent can push chunk k+1 while its child still forwards
 * chunk k.  Per chunk (step s), a rank that is not the root tells its
 * parent which steps it may write (credit = s, or s+1 when there is a
 * next chunk: both halves are free at that point, since everything of
 * chunk k-1 was forwarded and completed), then waits for the data
 * (ready = s); every rank with children waits for each child's credit,
 * puts the chunk, waits for the puts to complete and be flushed, and only
 * then writes the child's ready flag, so a child that sees the flag sees
 * the data.  A parent can be at most one chunk ahead: chunk k+2 needs
 * credit s+2, granted only once chunk k is done.
 */

#include "coll_ofi.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

/* This rank's place in the fan-out tree rooted at ROOT: its parent (-1
 * at the root) and its children, relative ranks fanout*vr+1 ..
 * fanout*vr+nchildren, the absolute one of child i being
 * (first + i + root) % n. */
typedef struct {
    int parent;
    long first;
    int nchildren;
} mca_coll_ofi_tree_t;

static mca_coll_ofi_tree_t mca_coll_ofi_tree(const mca_coll_ofi_module_t *m, int root)
{
    const int n = m->size;
    const int fanout = mca_coll_ofi_component.fanout;
    const int vr = (m->rank - root + n) % n;
    mca_coll_ofi_tree_t t;

    t.parent = (0 == vr) ? -1 : ((vr - 1) / fanout + root) % n;
    t.first = (long) fanout * vr + 1;
    t.nchildren = (t.first >= n) ? 0 : (int) ((n - t.first < fanout) ? n - t.first : fanout);
    return t;
}

/*
 * All local (every rank maps every block): no tree. At most ring_bytes go
 * through the ring, more through the big flat ring (FLAT_SLOTS), chunk by
 * chunk. For each, the root waits until every rank has emptied the slot's
 * previous use (its ring_done or flat_done, read where it is), copies the
 * bytes into its own slot and writes the slot's flag; every other rank
 * waits for that flag in the root's block, copies the bytes out of it and
 * counts the slot emptied. One copy by the root and one by each reader
 * instead of log2(n) levels that each copy again, and the root runs ahead
 * as far as the ring's slots allow.
 */
static int mca_coll_ofi_bcast_flat(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;
    const bool big = bytes > m->ring_bytes;
    const size_t area = big ? m->off_flat : m->off_ring;
    const size_t stride = big ? m->flat_stride : m->ring_stride;
    const size_t most = big ? m->flat_bytes : m->ring_bytes;
    const uint64_t nslots = big ? MCA_COLL_OFI_FLAT_SLOTS : MCA_COLL_OFI_RING_SLOTS;
    uint64_t *calls = big ? &m->flat_calls : &m->ring_calls;
    uint64_t *done = big ? &h->flat_done : &h->ring_done;
    const uint64_t first = *calls;
    int rc = OMPI_SUCCESS;

    /* every rank numbers the same chunks, even when this call fails */
    *calls += (bytes + most - 1) / most;
    m->n_flat++;
    for (size_t off = 0; off < bytes && OMPI_SUCCESS == rc; off += most) {
        const size_t len = (bytes - off < most) ? bytes - off : most;
        const uint64_t c = first + off / most;
        const size_t slot_off = area + (c % nslots) * stride;

        if (m->rank == root) {
            for (int p = 0; p < m->size && OMPI_SUCCESS == rc; ++p) {
                if (p != root) {
                    rc = big ? mca_coll_ofi_flat_room(m, p, c) : mca_coll_ofi_ring_room(m, p, c);
                }
            }
            if (OMPI_SUCCESS != rc) {
                break;
            }
            memcpy(m->block + slot_off + MCA_COLL_OFI_RING_HEAD, buf + off, len);
            __atomic_store_n((uint64_t *) (m->block + slot_off), c + 1, __ATOMIC_RELEASE);
        } else {
            const char *slot = m->peer_map[root] + slot_off;

            rc = mca_coll_ofi_wait_word(m, (const uint64_t *) slot, c + 1, root);
            if (OMPI_SUCCESS != rc) {
                break;
            }
            memcpy(buf + off, slot + MCA_COLL_OFI_RING_HEAD, len);
        }
        __atomic_store_n(done, c + 1, __ATOMIC_RELEASE);
    }
    return (OMPI_SUCCESS == rc) ? mca_coll_ofi_leave(m) : rc;
}

/*
 * A broadcast of at most ring_bytes, through the ring (coll_ofi.h): call
 * c uses slot c % RING_SLOTS on every rank. A rank with a parent waits
 * for the slot's flag to say c; every rank with children puts the slot's
 * bytes into each child's same slot once that child has emptied the
 * slot's previous call (mca_coll_ofi_ring_room: usually known without
 * asking), completes and flushes the puts, then writes the child's flag.
 * Only then does it copy the bytes out and count the slot emptied, so
 * the slot it forwarded from is not overwritten under its own puts. No
 * rank waits for its children to arrive, nor for its flags to land: a
 * root returns as soon as its children have the bytes, and may be up to
 * RING_SLOTS calls ahead.
 */
static int mca_coll_ofi_bcast_ring(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root)
{
    const mca_coll_ofi_tree_t t = mca_coll_ofi_tree(m, root);
    const uint64_t c = m->ring_calls++;
    const size_t slot_off = m->off_ring + (c % MCA_COLL_OFI_RING_SLOTS) * m->ring_stride;
    char *data = m->block + slot_off + MCA_COLL_OFI_RING_HEAD;
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;
    int rc;

    if (t.parent >= 0) {
        rc = mca_coll_ofi_wait(m, slot_off, 0, c + 1, t.parent);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    } else {
        memcpy(data, buf, bytes);
    }
    for (int i = 0; i < t.nchildren; ++i) {
        const int child = (int) ((t.first + i + root) % m->size);
        rc = mca_coll_ofi_ring_room(m, child, c);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_post(m, child, data, slot_off + MCA_COLL_OFI_RING_HEAD, bytes);
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    for (int i = 0; i < t.nchildren; ++i) {
        const int child = (int) ((t.first + i + root) % m->size);
        rc = mca_coll_ofi_post_signal(m, child, data, slot_off + MCA_COLL_OFI_RING_HEAD, bytes,
                                      slot_off, c + 1);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    rc = mca_coll_ofi_leave(m); /* the flag puts stay in flight */
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (t.parent >= 0) {
        memcpy(buf, data, bytes);
    }
    __atomic_store_n(&h->ring_done, c + 1, __ATOMIC_RELEASE);
    return OMPI_SUCCESS;
}

/*
 * A broadcast larger than the data cache, without copies: every rank
 * registers its buffer, and a rank with a parent gets the bytes straight
 * from its parent's buffer, ZC_CHUNK at a time. A parent first writes
 * where its buffer is (address and registration handle, into its own
 * entry of each child's zc area), then announces chunks through the
 * child's ready slot: the root all of them at once (step base + K - 1),
 * others each chunk k (step base + k) once their own get of it completed,
 * so the tree's levels overlap. A rank that has all its bytes tells its
 * parent (credit slot, step base + K), and a parent returns only once
 * each child has: until then they read its buffer. Steps used: base ..
 * base + K on every rank.
 *
 * Against the chunked path through the caches (two copies, a put, a
 * flush and two flags per chunk and level), on one host over shm: 1 MiB
 * on 4 ranks 170-180 us instead of 550-1050, on 8 ranks 470 instead of
 * 2,800; from 2 KiB up it is never slower (bench/coll.sh, README).
 */
static int mca_coll_ofi_bcast_zc(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root)
{
    const mca_coll_ofi_tree_t t = mca_coll_ofi_tree(m, root);
    const size_t chunk = mca_coll_ofi_component.zc_chunk;
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    const uint64_t base = m->step + 1;
    const uint64_t done = base + nchunks;
    mca_btl_base_registration_handle_t *handle = NULL;
    int rc;

    /* read by our children, written by our own gets */
    rc = mca_coll_ofi_user_register(
        m, buf, bytes, MCA_BTL_REG_FLAG_REMOTE_READ | MCA_BTL_REG_FLAG_LOCAL_WRITE, &handle);
    if (OMPI_SUCCESS != rc) {
        goto deregister;
    }
    for (int i = 0; i < t.nchildren; ++i) {
        /* our entry, from our own block, to each child's (flushed
         * before our first announcement) */
        rc = mca_coll_ofi_zc_publish(m, (int) ((t.first + i + root) % m->size), buf, bytes, handle);
        if (OMPI_SUCCESS != rc) {
            goto deregister;
        }
    }
    for (int i = 0; i < t.nchildren; ++i) {
        /* our entry visible at each child; the root announces everything */
        const int child = (int) ((t.first + i + root) % m->size);
        rc = mca_coll_ofi_flush(m, child);
        if (OMPI_SUCCESS == rc && t.parent < 0) {
            rc = mca_coll_ofi_signal(m, child, m->off_ready, done - 1);
        }
        if (OMPI_SUCCESS != rc) {
            goto deregister;
        }
    }
    for (size_t k = 0; t.parent >= 0 && k < nchunks; ++k) {
        const size_t off = k * chunk;
        const size_t len = (bytes - off < chunk) ? bytes - off : chunk;

        /* the parent's entry was written before its first announcement */
        rc = mca_coll_ofi_zc_get(m, t.parent, base + k, buf + off, handle, off, len);
        for (int i = 0; OMPI_SUCCESS == rc && i < t.nchildren; ++i) {
            rc = mca_coll_ofi_signal(m, (int) ((t.first + i + root) % m->size), m->off_ready,
                                     base + k);
        }
        if (OMPI_SUCCESS != rc) {
            goto deregister;
        }
    }
    if (t.parent >= 0) {
        rc = mca_coll_ofi_signal(m, t.parent, m->off_credit, done);
    }
    for (int i = 0; OMPI_SUCCESS == rc && i < t.nchildren; ++i) {
        const int child = (int) ((t.first + i + root) % m->size);
        rc = mca_coll_ofi_wait(m, m->off_credit, child, done, child);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_leave(m); /* the flag puts stay in flight */
    }

deregister:
    return mca_coll_ofi_zc_end(m, rc, handle, nchunks + 1);
}

/* Through the caches, down the tree, chunk by chunk (see the top). */
static int mca_coll_ofi_bcast_tree(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root)
{
    const int n = m->size;
    const mca_coll_ofi_tree_t t = mca_coll_ofi_tree(m, root);
    const int parent = t.parent;
    const size_t chunk = m->data_size / 2;
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    const uint64_t base = m->step + 1;
    const long first = t.first;
    const int nchildren = t.nchildren;
    int rc = OMPI_SUCCESS;

    for (size_t k = 0; k < nchunks; ++k) {
        const uint64_t s = base + k;
        const size_t off = k * chunk;
        const size_t len = (bytes - off < chunk) ? bytes - off : chunk;
        char *half = m->data + (k % 2) * chunk;
        const size_t remote_half = (size_t) (half - m->block);

        if (parent >= 0) {
            rc = mca_coll_ofi_signal(m, parent, m->off_credit, (k + 1 < nchunks) ? s + 1 : s);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
            rc = mca_coll_ofi_wait(m, m->off_ready, parent, s, parent);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
            memcpy(buf + off, half, len);
        } else {
            memcpy(half, buf + off, len);
        }

        for (int i = 0; i < nchildren; ++i) {
            const int child = (int) ((first + i + root) % n);
            rc = mca_coll_ofi_wait(m, m->off_credit, child, s, child);
            if (OMPI_SUCCESS == rc) {
                rc = mca_coll_ofi_post(m, child, half, remote_half, len);
            }
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
        }
        for (int i = 0; i < nchildren; ++i) {
            const int child = (int) ((first + i + root) % n);
            rc = mca_coll_ofi_post_signal(m, child, half, remote_half, len,
                                          m->off_ready + (size_t) m->rank * sizeof(uint64_t), s);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
        }
    }

    rc = mca_coll_ofi_complete(m);

advance_step:
    /* every rank advances by the same count, even on error, so that the
     * numbering stays in step with the peers that did not fail */
    m->step += nchunks;
    return rc;
}

int mca_coll_ofi_bcast_bytes(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root)
{
    if (bytes <= m->flat_max) {
        return mca_coll_ofi_bcast_flat(m, buf, bytes, root);
    }
    if (bytes <= m->ring_bytes) {
        return mca_coll_ofi_bcast_ring(m, buf, bytes, root);
    }
    if (bytes >= m->zc_min) {
        m->n_zcopy++;
        return mca_coll_ofi_bcast_zc(m, buf, bytes, root);
    }
    return mca_coll_ofi_bcast_tree(m, buf, bytes, root);
}

/* Pack (root) or unpack (others) a non-contiguous buffer through a
 * contiguous one, so every rank moves the same bytes whatever its
 * datatype's layout (the MPI rules only make the type signatures agree,
 * so whether to serve cannot depend on the layout). */
static int mca_coll_ofi_bcast_packed(mca_coll_ofi_module_t *m, void *buff, int count,
                                     struct ompi_datatype_t *dtype, size_t bytes, int root)
{
    opal_convertor_t conv;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max = bytes;
    char *tmp;
    int rc;

    tmp = malloc(bytes);
    if (NULL == tmp) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    iov.iov_base = tmp;
    iov.iov_len = bytes;

    if (m->rank == root) {
        rc = opal_convertor_copy_and_prepare_for_send(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buff, 0, &conv);
        if (OPAL_SUCCESS != rc || opal_convertor_pack(&conv, &iov, &iov_count, &max) < 0) {
            rc = OMPI_ERROR;
            goto destruct_conv;
        }
        rc = mca_coll_ofi_bcast_bytes(m, tmp, bytes, root);
    } else {
        rc = mca_coll_ofi_bcast_bytes(m, tmp, bytes, root);
        if (OMPI_SUCCESS != rc) {
            goto destruct_conv;
        }
        rc = opal_convertor_copy_and_prepare_for_recv(ompi_mpi_local_convertor, &dtype->super,
                                                      (size_t) count, buff, 0, &conv);
        if (OPAL_SUCCESS != rc || opal_convertor_unpack(&conv, &iov, &iov_count, &max) < 0) {
            rc = OMPI_ERROR;
        }
    }

destruct_conv:
    OBJ_DESTRUCT(&conv);
    free(tmp);
    return rc;
}

int mca_coll_ofi_bcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;
    size_t tsize, bytes;
    ptrdiff_t true_lb, true_extent;
    int rc;

    rc = mca_coll_ofi_cache_ready(m);
    if (rc < 0) {
        return rc;
    }
    if (0 == rc) {
        m->n_fallback++;
        return m->prev_bcast(buff, count, datatype, root, comm, m->prev_bcast_module);
    }

    ompi_datatype_type_size(datatype, &tsize);
    bytes = tsize * (size_t) count;
    m->n_bcast++;
    if (0 == bytes) {
        return OMPI_SUCCESS;
    }
    if (ompi_datatype_is_contiguous_memory_layout(datatype, count)) {
        ompi_datatype_get_true_extent(datatype, &true_lb, &true_extent);
        return mca_coll_ofi_bcast_bytes(m, (char *) buff + true_lb, bytes, root);
    }
    return mca_coll_ofi_bcast_packed(m, buff, count, datatype, bytes, root);
}
