/*
 * coll/ofi reduce and allreduce.
 *
 * Contributions are pulled: each rank builds its partial result for a
 * chunk in the first half of its data cache ("out"), and tells its parent
 * (ready = s); the parent reads it with btl_get into the second half of
 * its own cache ("in"), tells the child its out may be reused
 * (credit = s), and combines.
 *
 * Commutative ops use a binary tree rooted at the root.  Non-commutative
 * ops must be applied in rank order, so they run down a chain from the
 * last rank to rank 0 (rank i computes r_i op (r_i+1 op ... op r_n-1)),
 * and rank 0 hands the result to the root if that is someone else.
 *
 * Reductions of at most gather_bytes on at most SMALL_RANKS ranks are
 * gathered at the root instead (mca_coll_ofi_reduce_small), and
 * allreduces of at most small_bytes are one all-to-all exchange
 * (mca_coll_ofi_allreduce_small).
 * A larger allreduce is a reduce to rank 0 followed by a broadcast from
 * it.
 */

#include "coll_ofi.h"

#include <stdlib.h>
#include <string.h>

#include "opal/util/output.h"

/* This rank's place in the reduction: whom it is read by, whom it reads
 * and combines (in order after its own contribution), and, for the root
 * of a non-commutative reduction other than rank 0, whom it reads the
 * finished result from. */
typedef struct mca_coll_ofi_roles_t {
    int parent;
    int children[2];
    int nchildren;
    int result_from;
} mca_coll_ofi_roles_t;

static void mca_coll_ofi_reduce_roles(const mca_coll_ofi_module_t *m, int root, bool commute,
                                      mca_coll_ofi_roles_t *roles)
{
    const int n = m->size;
    const int me = m->rank;

    roles->nchildren = 0;
    roles->result_from = -1;
    if (commute) {
        const int vr = (me - root + n) % n;
        roles->parent = (0 == vr) ? -1 : ((vr - 1) / 2 + root) % n;
        for (int c = 2 * vr + 1; c <= 2 * vr + 2 && c < n; ++c) {
            roles->children[roles->nchildren++] = (c + root) % n;
        }
        return;
    }
    if (me + 1 < n) {
        roles->children[roles->nchildren++] = me + 1;
    }
    if (me > 0) {
        roles->parent = me - 1;
    } else {
        roles->parent = (0 == root) ? -1 : root;
    }
    if (me == root && 0 != root) {
        roles->result_from = 0;
    }
}

/* Read PEER's out for step S into our in, and free its out again. */
static int mca_coll_ofi_pull(mca_coll_ofi_module_t *m, int peer, uint64_t s, char *in, size_t len)
{
    int rc;

    rc = mca_coll_ofi_wait(m, m->off_ready, peer, s, peer);
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_get(m, peer, in, (size_t) (m->data - m->block), len);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_complete(m);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_signal(m, peer, m->off_credit, s);
    }
    return rc;
}

/* Reduce COUNT elements of DTYPE (contiguous, lower bound 0) from OWN on
 * every rank into RESULT on ROOT. */
static int mca_coll_ofi_reduce_run(mca_coll_ofi_module_t *m, const char *own, char *result,
                                   size_t count, struct ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, int root, size_t esize)
{
    const bool commute = ompi_op_is_commute(op);
    const size_t half = m->data_size / 2;
    const size_t per_chunk = half / esize;
    const size_t nchunks = (count + per_chunk - 1) / per_chunk;
    const uint64_t base = m->step + 1;
    char *out = m->data;
    char *in = m->data + half;
    mca_coll_ofi_roles_t roles;
    int rc = OMPI_SUCCESS;

    mca_coll_ofi_reduce_roles(m, root, commute, &roles);

    for (size_t k = 0; k < nchunks; ++k) {
        const uint64_t s = base + k;
        const size_t first = k * per_chunk;
        const size_t cnt = (count - first < per_chunk) ? count - first : per_chunk;
        const size_t len = cnt * esize;

        /* out still holds the previous chunk until our reader is done */
        if (roles.parent >= 0 && k > 0) {
            rc = mca_coll_ofi_wait(m, m->off_credit, roles.parent, s - 1, roles.parent);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
        }
        memcpy(out, own + first * esize, len);

        for (int i = 0; i < roles.nchildren; ++i) {
            rc = mca_coll_ofi_pull(m, roles.children[i], s, in, len);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
            if (commute) {
                ompi_op_reduce(op, in, out, cnt, dtype);
            } else {
                /* in = out op in: our contribution comes first */
                ompi_op_reduce(op, out, in, cnt, dtype);
                memcpy(out, in, len);
            }
        }

        if (roles.parent >= 0) {
            rc = mca_coll_ofi_signal(m, roles.parent, m->off_ready, s);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
        } else {
            memcpy(result + first * esize, out, len);
        }

        if (roles.result_from >= 0) {
            rc = mca_coll_ofi_pull(m, roles.result_from, s, in, len);
            if (OMPI_SUCCESS != rc) {
                goto advance_step;
            }
            memcpy(result + first * esize, in, len);
        }
    }

    /* leave only when the last chunk has been read from our out: the
     * next collective may write into this cache */
    if (roles.parent >= 0) {
        rc = mca_coll_ofi_wait(m, m->off_credit, roles.parent, base + nchunks - 1, roles.parent);
        if (OMPI_SUCCESS != rc) {
            goto advance_step;
        }
    }
    rc = mca_coll_ofi_complete(m);

advance_step:
    m->step += nchunks;
    return rc;
}

/* A piece of PEER's partial result (see mca_coll_ofi_zc_get) into the
 * landing zone IN. */
static int mca_coll_ofi_zc_piece(mca_coll_ofi_module_t *m, int peer, uint64_t s, char *in,
                                 size_t off, size_t len)
{
    return mca_coll_ofi_zc_get(m, peer, s, in, m->zc_in_handle, off, len);
}

/* Read a piece of CNT elements of CHILD's partial result (at OFF of it,
 * announced with step S) into the landing zone IN and combine it into
 * ACC: ACC = IN op ACC, or (commutative) IN op FROM, where FROM, if not
 * NULL, is our own contribution and ACC not yet written; for a
 * non-commutative op ours comes first (ACC = FROM-or-ACC op IN). From a
 * child on this node (read with process_vm_readv) it goes in parts of
 * ZC_PART bytes, each combined while it is still in the cache: reading a
 * whole 1 MiB piece first, then combining, made a reduction of 1 MiB on
 * two ranks 1.6x slower than coll/tuned over vader. */
#define MCA_COLL_OFI_ZC_PART (64 * 1024)

static int mca_coll_ofi_zc_combine(mca_coll_ofi_module_t *m, int child, uint64_t s, char *in,
                                   char *acc, const char *from, size_t cnt, size_t esize,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op, size_t off,
                                   bool commute)
{
    const size_t per = (0 != m->peer_pid[child] && MCA_COLL_OFI_ZC_PART >= esize)
                           ? MCA_COLL_OFI_ZC_PART / esize
                           : cnt;

    for (size_t done = 0; done < cnt;) {
        const size_t n = (cnt - done < per) ? cnt - done : per;
        const size_t b = done * esize;
        int rc = mca_coll_ofi_zc_piece(m, child, s, in, off + b, n * esize);

        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (commute) {
            if (NULL != from) {
                ompi_3buff_op_reduce(op, in, (void *) (from + b), acc + b, (int) n, dtype);
            } else {
                ompi_op_reduce(op, in, acc + b, n, dtype);
            }
        } else {
            /* in = ours op in: our contribution comes first */
            ompi_op_reduce(op, (void *) (NULL != from ? from + b : acc + b), in, n, dtype);
            memcpy(acc + b, in, n * esize);
        }
        done += n;
    }
    return OMPI_SUCCESS;
}

/*
 * A reduction from coll_ofi_zcopy_size on, without copies through the
 * caches: each rank's partial result stays where it is computed (a
 * leaf's own contribution is its send buffer; the root, and every rank of
 * an allreduce, computes into the receive buffer; other ranks into the
 * module's partial buffer), registered for the call. A rank with a reader
 * (its parent, or for rank 0 of a non-commutative reduction the root)
 * writes where that partial result is into the reader's zc entry of it,
 * and announces each piece of coll_ofi_zcopy_chunk bytes once it is
 * final (ready slot, step base + k); the reader gets the piece straight
 * from it into its landing zone and combines. A reader tells each rank it
 * read that it is done (credit slot, step base + K), and a rank returns
 * only then: until then its partial result is read. Steps used: base ..
 * base + K on every rank.
 */
static int mca_coll_ofi_reduce_zc(mca_coll_ofi_module_t *m, const char *own, char *result,
                                  size_t count, struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  int root, size_t esize, bool all)
{
    const bool commute = ompi_op_is_commute(op);
    const size_t per_chunk =
        (mca_coll_ofi_component.zc_chunk >= esize) ? mca_coll_ofi_component.zc_chunk / esize : 1;
    const size_t nchunks = (count + per_chunk - 1) / per_chunk;
    const uint64_t base = m->step + 1;
    const uint64_t done = base + nchunks;
    const size_t bytes = count * esize;
    mca_coll_ofi_roles_t roles;
    int readers[3], nread = 0;
    const char *part; /* our partial result, read by our parent */
    char *acc = NULL, *in = NULL;
    mca_btl_base_registration_handle_t *handle = NULL;
    int rc = OMPI_SUCCESS;

    mca_coll_ofi_reduce_roles(m, root, commute, &roles);
    for (int i = 0; i < roles.nchildren; ++i) {
        readers[nread++] = roles.children[i];
    }
    if (roles.result_from >= 0) {
        readers[nread++] = roles.result_from;
    }
    if (nread > 0) {
        in = mca_coll_ofi_zc_landing(m, per_chunk * esize);
        if (NULL == in) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto deregister;
        }
    }
    if (roles.nchildren > 0) {
        /* where our partial result is computed */
        acc = (roles.parent < 0 || all) ? result : mca_coll_ofi_zc_partial(m, bytes);
        if (NULL == acc) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            goto deregister;
        }
    }
    part = (NULL != acc) ? acc : own;
    if (roles.parent >= 0) {
        rc = mca_coll_ofi_user_register(m, (void *) part, bytes, MCA_BTL_REG_FLAG_REMOTE_READ,
                                        &handle);
        if (OMPI_SUCCESS != rc) {
            goto deregister;
        }
        /* on its way while we combine our first piece; flushed before
         * its announcement */
        rc = mca_coll_ofi_zc_publish(m, roles.parent, part, bytes, handle);
        if (OMPI_SUCCESS != rc) {
            goto deregister;
        }
    }

    for (size_t k = 0; k < nchunks; ++k) {
        const size_t first = k * per_chunk;
        const size_t cnt = (count - first < per_chunk) ? count - first : per_chunk;
        const size_t off = first * esize, len = cnt * esize;

        for (int i = 0; i < roles.nchildren; ++i) {
            rc = mca_coll_ofi_zc_combine(m, roles.children[i], base + k, in, acc + off,
                                         (0 == i && acc != own) ? own + off : NULL, cnt, esize,
                                         dtype, op, off, commute);
            if (OMPI_SUCCESS != rc) {
                goto deregister;
            }
        }
        if (roles.parent >= 0) {
            if (0 == k) {
                rc = mca_coll_ofi_flush(m, roles.parent);
            }
            if (OMPI_SUCCESS == rc) {
                rc = mca_coll_ofi_signal(m, roles.parent, m->off_ready, base + k);
            }
            if (OMPI_SUCCESS != rc) {
                goto deregister;
            }
        }
        if (roles.result_from >= 0) {
            /* the finished piece, which needed ours (after announcing it) */
            rc = mca_coll_ofi_zc_piece(m, roles.result_from, base + k, in, off, len);
            if (OMPI_SUCCESS != rc) {
                goto deregister;
            }
            memcpy(result + off, in, len);
        }
    }
    if (roles.parent < 0 && roles.nchildren == 0 && result != own) {
        memcpy(result, own, bytes); /* alone */
    }
    /* the ranks we read are free to go; we wait until our reader is done */
    for (int i = 0; i < nread && OMPI_SUCCESS == rc; ++i) {
        rc = mca_coll_ofi_signal(m, readers[i], m->off_credit, done);
    }
    if (OMPI_SUCCESS == rc && roles.parent >= 0) {
        rc = mca_coll_ofi_wait(m, m->off_credit, roles.parent, done, roles.parent);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_leave(m);
    }

deregister:
    return mca_coll_ofi_zc_end(m, rc, handle, nchunks + 1);
}

/*
 * An allreduce of two ranks from coll_ofi_zcopy_size on: each rank
 * registers its contribution where it is, writes where it is into the
 * other's zc entry and announces it (ready slot, step base), gets the
 * other's contribution whole into its landing zone, says it is done
 * reading (credit slot, step base + 1), and combines once the other has
 * said so too (with MPI_IN_PLACE its contribution is the buffer the
 * result goes to). One exchange instead of a reduction and a broadcast.
 * Rank 0's contribution comes first, for non-commutative ops. Steps
 * used: base and base + 1.
 */
static int mca_coll_ofi_allreduce_pair(mca_coll_ofi_module_t *m, const char *own, char *result,
                                       size_t count, struct ompi_datatype_t *dtype,
                                       struct ompi_op_t *op, size_t esize)
{
    const int peer = 1 - m->rank;
    const size_t bytes = count * esize;
    const uint64_t base = m->step + 1;
    mca_btl_base_registration_handle_t *handle = NULL;
    char *land;
    int rc;

    land = mca_coll_ofi_zc_landing(m, bytes);
    rc = (NULL == land) ? OMPI_ERR_OUT_OF_RESOURCE
                        : mca_coll_ofi_user_register(m, (void *) own, bytes,
                                                     MCA_BTL_REG_FLAG_REMOTE_READ, &handle);
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_zc_publish(m, peer, own, bytes, handle);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_flush(m, peer);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_signal(m, peer, m->off_ready, base);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_zc_piece(m, peer, base, land, 0, bytes);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_signal(m, peer, m->off_credit, base + 1);
    }
    if (OMPI_SUCCESS == rc) {
        /* the peer has read our contribution: result may now be written */
        rc = mca_coll_ofi_wait(m, m->off_credit, peer, base + 1, peer);
    }
    if (OMPI_SUCCESS == rc) {
        if (0 == m->rank) {
            /* land = ours op theirs */
            ompi_op_reduce(op, (void *) own, land, (int) count, dtype);
            memcpy(result, land, bytes);
        } else {
            /* result = theirs op ours */
            if (result != own) {
                memcpy(result, own, bytes);
            }
            ompi_op_reduce(op, land, result, (int) count, dtype);
        }
        rc = mca_coll_ofi_leave(m);
    }
    return mca_coll_ofi_zc_end(m, rc, handle, 2);
}

/* Read CNT elements from element FIRST of local peer PEER's buffer at
 * RADDR, PER at a time through LAND, and combine each part into RESULT
 * there while it is still in the cache: RESULT = part op OWN where OWN is
 * not NULL (our contribution, not yet in RESULT), else part op RESULT.
 * Commutative ops only. */
static int mca_coll_ofi_read_combine(mca_coll_ofi_module_t *m, int peer, uint64_t raddr, char *land,
                                     size_t per, const char *own, char *result, size_t first,
                                     size_t cnt, size_t esize, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op)
{
    for (size_t done = 0; done < cnt;) {
        const size_t n = (cnt - done < per) ? cnt - done : per;
        const size_t b = (first + done) * esize;
        int rc = mca_coll_ofi_shm_read(m, peer, land, raddr + b, n * esize);

        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        if (NULL != own) {
            ompi_3buff_op_reduce(op, land, (void *) (own + b), result + b, (int) n, dtype);
        } else {
            ompi_op_reduce(op, land, result + b, n, dtype);
        }
        done += n;
    }
    return OMPI_SUCCESS;
}

/*
 * A commutative reduction on two ranks of one node (all local), from
 * m->pair_min (mca_coll_ofi_zc_policy): each rank computes half of the
 * result, both at once. Each publishes where its contribution is (the
 * root also where the result goes, in its zc entry's third word) and
 * announces it (ready slot, step base). The root reads the leaf's first
 * half in parts and combines it into the result; the leaf reads the
 * root's second half in parts, combines it with its own and writes it
 * into the root's result with process_vm_writev. Each tells the other
 * once it no longer reads or writes the other's memory (credit slot,
 * step base + 1) and returns once told. The whole reduction on the
 * root's core alone (reading, then combining) was 0.53x-0.76x of
 * coll/tuned over vader from 32 KiB, whose pipeline has the sender copy
 * while the receiver combines.
 */
static int mca_coll_ofi_reduce_pair(mca_coll_ofi_module_t *m, const char *own, char *result,
                                    size_t count, struct ompi_datatype_t *dtype,
                                    struct ompi_op_t *op, int root, size_t esize)
{
    const int peer = 1 - m->rank;
    const uint64_t base = m->step + 1;
    const size_t half = count / 2;
    const size_t first = (m->rank == root) ? 0 : half;
    const size_t cnt = (m->rank == root) ? half : count - half;
    const size_t per = MCA_COLL_OFI_ZC_PART / esize ? MCA_COLL_OFI_ZC_PART / esize : 1;
    const char *entry = m->block + m->off_zc + (size_t) peer * m->dir_stride;
    char *mine = m->block + m->off_zc + (size_t) m->rank * m->dir_stride;
    const uint64_t res = (uint64_t) (uintptr_t) result;
    char *land = mca_coll_ofi_zc_landing(m, per * esize);
    uint64_t raddr, rres;
    int rc;

    if (NULL == land) {
        return mca_coll_ofi_zc_end(m, OMPI_ERR_OUT_OF_RESOURCE, NULL, 2);
    }
    memcpy(mine + MCA_COLL_OFI_DIR_PID, &res, sizeof(res));
    rc = mca_coll_ofi_zc_publish(m, peer, own, count * esize, NULL);
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_signal(m, peer, m->off_ready, base);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_wait(m, m->off_ready, peer, base, peer);
    }
    memcpy(&raddr, entry, sizeof(raddr));
    memcpy(&rres, entry + MCA_COLL_OFI_DIR_PID, sizeof(rres));
    if (OMPI_SUCCESS == rc && m->rank == root) {
        rc = mca_coll_ofi_read_combine(m, peer, raddr, land, per, (result != own) ? own : NULL,
                                       result, first, cnt, esize, dtype, op);
    }
    /* the leaf: combined in the landing zone, then written to the root */
    for (size_t done = 0; done < cnt && OMPI_SUCCESS == rc && m->rank != root; done += per) {
        const size_t n = (cnt - done < per) ? cnt - done : per;
        const size_t b = (first + done) * esize;

        rc = mca_coll_ofi_shm_read(m, peer, land, raddr + b, n * esize);
        if (OMPI_SUCCESS == rc) {
            ompi_op_reduce(op, (void *) (own + b), land, n, dtype);
            rc = mca_coll_ofi_shm_write(m, peer, rres + b, land, n * esize);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_signal(m, peer, m->off_credit, base + 1);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_wait(m, m->off_credit, peer, base + 1, peer);
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_leave(m);
    }
    return mca_coll_ofi_zc_end(m, rc, NULL, 2);
}

/*
 * A commutative allreduce, all ranks of one node (all local), from
 * m->split_min (mca_coll_ofi_zc_policy): rank r owns part r of the
 * vector (count / n elements, the last the rest). Every rank publishes
 * where its contribution and its result are (zc entry) and announces it
 * (ready, step base); computes its own part of the result, reading that
 * part of every other contribution with process_vm_readv, and announces
 * it (ready, base + 1); then reads every other rank's part of the result
 * into its own once that is announced; tells everyone it is done with
 * their memory (credit, base + 2) and returns once everyone has. Every
 * part is computed once, so all ranks get the same bits; every core
 * works at once, where a reduction and a broadcast through a tree left
 * most of them waiting.
 */
static int mca_coll_ofi_allreduce_split(mca_coll_ofi_module_t *m, const char *own, char *result,
                                        size_t count, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, size_t esize)
{
    const int n = m->size, me = m->rank;
    const uint64_t base = m->step + 1;
    const size_t share = count / (size_t) n;
    const size_t per = MCA_COLL_OFI_ZC_PART / esize ? MCA_COLL_OFI_ZC_PART / esize : 1;
    char *mine = m->block + m->off_zc + (size_t) me * m->dir_stride;
    const uint64_t res = (uint64_t) (uintptr_t) result;
    char *land = mca_coll_ofi_zc_landing(m, per * esize);
    const size_t lo = (size_t) me * share, cnt = (me == n - 1) ? count - lo : share;
    int rc = (NULL == land) ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;

    if (OMPI_SUCCESS == rc) {
        memcpy(mine + MCA_COLL_OFI_DIR_PID, &res, sizeof(res));
    }
    for (int p = 0; p < n && OMPI_SUCCESS == rc; ++p) {
        if (p != me) {
            rc = mca_coll_ofi_zc_publish(m, p, own, count * esize, NULL);
            if (OMPI_SUCCESS == rc) {
                rc = mca_coll_ofi_signal(m, p, m->off_ready, base);
            }
        }
    }
    /* our part: ours op every other contribution's same part */
    for (int i = 1; i < n && OMPI_SUCCESS == rc; ++i) {
        const int p = (me + i) % n;
        uint64_t raddr;

        rc = mca_coll_ofi_wait(m, m->off_ready, p, base, p);
        if (OMPI_SUCCESS == rc) {
            memcpy(&raddr, m->block + m->off_zc + (size_t) p * m->dir_stride, sizeof(raddr));
            rc = mca_coll_ofi_read_combine(m, p, raddr, land, per,
                                           (1 == i && result != own) ? own : NULL, result, lo, cnt,
                                           esize, dtype, op);
        }
    }
    for (int p = 0; p < n && OMPI_SUCCESS == rc; ++p) {
        if (p != me) {
            rc = mca_coll_ofi_signal(m, p, m->off_ready, base + 1);
        }
    }
    /* every other part, from the rank that computed it */
    for (int i = 1; i < n && OMPI_SUCCESS == rc; ++i) {
        const int p = (me + i) % n;
        const size_t plo = (size_t) p * share, pcnt = (p == n - 1) ? count - plo : share;
        uint64_t rres;

        rc = mca_coll_ofi_wait(m, m->off_ready, p, base + 1, p);
        if (OMPI_SUCCESS == rc) {
            memcpy(&rres, m->block + m->off_zc + (size_t) p * m->dir_stride + MCA_COLL_OFI_DIR_PID,
                   sizeof(rres));
            rc =
                mca_coll_ofi_shm_read(m, p, result + plo * esize, rres + plo * esize, pcnt * esize);
        }
    }
    for (int p = 0; p < n && OMPI_SUCCESS == rc; ++p) {
        if (p != me) {
            rc = mca_coll_ofi_signal(m, p, m->off_credit, base + 2);
        }
    }
    for (int p = 0; p < n && OMPI_SUCCESS == rc; ++p) {
        if (p != me) {
            rc = mca_coll_ofi_wait(m, m->off_credit, p, base + 2, p);
        }
    }
    if (OMPI_SUCCESS == rc) {
        rc = mca_coll_ofi_leave(m);
    }
    return mca_coll_ofi_zc_end(m, rc, NULL, 3);
}

/* Whether a reduction of BYTES is gathered at the root
 * (mca_coll_ofi_reduce_small; the same answer on every rank). */
static bool mca_coll_ofi_gathered(const mca_coll_ofi_module_t *m, size_t bytes)
{
    return m->small_size > 0 && bytes <= m->gather_bytes;
}

/* Whether a reduction of BYTES goes without copies: from
 * coll_ofi_zcopy_size, once the caches would take it in more than one
 * chunk (in one chunk they were faster: 16-64 KiB on 4 ranks over shm,
 * 24-48 us against 38-56). The same answer on every rank. */
static bool mca_coll_ofi_reduce_zc_fits(const mca_coll_ofi_module_t *m, size_t bytes)
{
    return bytes >= m->zc_reduce_min && bytes > m->data_size / 2;
}

/* Whether we can reduce COUNT of DTYPE in place in our cache: its elements
 * must lie end to end from the buffer address (the same answer on every
 * rank, since MPI requires the same datatype, count and op everywhere).
 * Sets *esize. */
static bool mca_coll_ofi_reducible(mca_coll_ofi_module_t *m, int count,
                                   struct ompi_datatype_t *dtype, size_t *esize)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    size_t size;

    ompi_datatype_type_size(dtype, &size);
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (0 == size || (ptrdiff_t) size != extent || 0 != lb || 0 != true_lb
        || !ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        opal_output_verbose(2, mca_coll_ofi_component.output,
                            "coll:ofi: communicator %u: reduction on a datatype with gaps or "
                            "a lower bound passed to the previous component",
                            m->cid);
        return false;
    }
    if (size > m->data_size / 2) {
        opal_output_verbose(2, mca_coll_ofi_component.output,
                            "coll:ofi: communicator %u: one element (%zu bytes) is larger than "
                            "half the data cache; passed to the previous component "
                            "(raise coll_ofi_cache_pages)",
                            m->cid, size);
        return false;
    }
    *esize = size;
    return true;
}

/* Whether rank P hands its part of a small reduction rooted at ROOT to
 * the root itself: always unless the reduction is grouped (commutative,
 * with node groups) and P is a member, not the leader, of a group the
 * root is not in. */
static inline bool mca_coll_ofi_gather_direct(const mca_coll_ofi_module_t *m, bool grouped, int p,
                                              int root)
{
    return !grouped || m->leader[p] == p || m->leader[p] == m->leader[root];
}

/*
 * Small reduction: every rank but the root puts its contribution into its
 * own slot of the root's gather set for this call, completes and flushes
 * it, writes the slot's flag (call + 1) and returns; the root waits for
 * the flags and combines in rank order, c0 op (c1 op (... op c_last)),
 * which is right for non-commutative ops too. Call c uses set
 * c % gather_sets at its root; a contributor first makes sure the root has
 * finished call c - gather_sets (mca_coll_ofi_gather_room: usually known
 * without asking), so it never overwrites a slot the root has not read.
 * Our own slot of the set (nobody else writes it) stages our contribution
 * where it must be in our block: the source of a put or a message, a
 * leader's combined part, the root's own with MPI_IN_PLACE; towards a
 * mapped root it goes straight from the caller's buffer. As in the ring
 * broadcast, the flag put is left in flight.
 */
static int mca_coll_ofi_reduce_small(mca_coll_ofi_module_t *m, const char *own, char *result,
                                     size_t count, struct ompi_datatype_t *dtype,
                                     struct ompi_op_t *op, int root, size_t bytes)
{
    mca_coll_ofi_header_t *h = (mca_coll_ofi_header_t *) m->block;
    const uint64_t c = m->reduce_calls++;
    const size_t set =
        m->off_gather + (size_t) (c % m->gather_sets) * (size_t) m->size * m->gather_stride;
    const size_t mine = set + (size_t) m->rank * m->gather_stride;
    char *staged = m->block + mine + MCA_COLL_OFI_RING_HEAD;
    /* across nodes a commutative reduction crosses once per node group:
     * its leader gathers the group's part first (through shared memory)
     * and hands it on as its own; the order of a non-commutative op
     * needs every part at the root */
    const bool grouped = NULL != m->leader && ompi_op_is_commute(op);
    int rc = OMPI_SUCCESS;

    if (m->rank != root) {
        const int to =
            mca_coll_ofi_gather_direct(m, grouped, m->rank, root) ? root : m->leader[m->rank];
        const bool gathers = grouped && m->leader[m->rank] == m->rank && m->leader[root] != m->rank;
        const char *part = own;

        /* into a mapped peer's slot straight from the caller's buffer;
         * a put or a message reads our registered block, and a leader
         * combines its members' parts into its own first */
        if (gathers || NULL == m->peer_map[to]) {
            memcpy(staged, own, bytes);
            part = staged;
        }
        if (gathers) {
            /* a leader: its members' parts arrive in its own set */
            ++m->n_grouped;
            for (int p = 0; p < m->size && OMPI_SUCCESS == rc; ++p) {
                if (p != m->rank && m->leader[p] == m->rank) {
                    rc = mca_coll_ofi_wait(m, set + (size_t) p * m->gather_stride, 0, c + 1, p);
                    if (OMPI_SUCCESS == rc) {
                        ompi_op_reduce(op,
                                       m->block + set + (size_t) p * m->gather_stride
                                           + MCA_COLL_OFI_RING_HEAD,
                                       staged, count, dtype);
                    }
                }
            }
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_gather_room(m, to, c);
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_post(m, to, (void *) part, mine + MCA_COLL_OFI_RING_HEAD, bytes);
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_post_signal(m, to, (void *) part, mine + MCA_COLL_OFI_RING_HEAD,
                                          bytes, mine, c + 1);
        }
    } else {
        /* with MPI_IN_PLACE own is result: keep it before result is built */
        const char *ours = own;
        const char *last = NULL;
        bool combined = false;

        if (own == result) {
            memcpy(staged, own, bytes);
            ours = staged;
        }
        for (int p = m->size - 1; p >= 0 && OMPI_SUCCESS == rc; --p) {
            const char *from = (p == root) ? ours
                                           : m->block + set + (size_t) p * m->gather_stride
                                                 + MCA_COLL_OFI_RING_HEAD;

            if (p != root) {
                if (!mca_coll_ofi_gather_direct(m, grouped, p, root)) {
                    continue; /* in its leader's part */
                }
                rc = mca_coll_ofi_wait(m, set + (size_t) p * m->gather_stride, 0, c + 1, p);
                if (OMPI_SUCCESS != rc) {
                    break;
                }
            }
            /* the first two parts straight into the result (from op last),
             * no copy of either first */
            if (NULL == last) {
                last = from;
            } else if (!combined) {
                ompi_3buff_op_reduce(op, (void *) last, (void *) from, result, (int) count, dtype);
                combined = true;
            } else {
                ompi_op_reduce(op, (void *) from, result, count, dtype);
            }
        }
        if (OMPI_SUCCESS == rc && !combined) {
            memcpy(result, last, bytes);
        }
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    __atomic_store_n(&h->reduce_done, c + 1, __ATOMIC_RELEASE);
    rc = mca_coll_ofi_gather_done(m, root, c + 1);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return mca_coll_ofi_leave(m);
}

int mca_coll_ofi_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;
    const char *own;
    size_t esize;
    int rc;

    rc = mca_coll_ofi_cache_ready(m);
    if (rc < 0) {
        return rc;
    }
    if (0 == rc || !mca_coll_ofi_reducible(m, count, dtype, &esize)) {
        m->n_fallback++;
        return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm, m->prev_reduce_module);
    }
    m->n_reduce++;
    if (0 == count) {
        return OMPI_SUCCESS;
    }
    own = (MPI_IN_PLACE == sbuf) ? (const char *) rbuf : (const char *) sbuf;
    if (mca_coll_ofi_gathered(m, (size_t) count * esize)) {
        return mca_coll_ofi_reduce_small(m, own, (char *) rbuf, (size_t) count, dtype, op, root,
                                         (size_t) count * esize);
    }
    if ((size_t) count * esize >= m->pair_min && ompi_op_is_commute(op)) {
        m->n_zcopy_reduce++;
        return mca_coll_ofi_reduce_pair(m, own, (char *) rbuf, (size_t) count, dtype, op, root,
                                        esize);
    }
    if (mca_coll_ofi_reduce_zc_fits(m, (size_t) count * esize)) {
        m->n_zcopy_reduce++;
        return mca_coll_ofi_reduce_zc(m, own, (char *) rbuf, (size_t) count, dtype, op, root, esize,
                                      false);
    }
    return mca_coll_ofi_reduce_run(m, own, (char *) rbuf, (size_t) count, dtype, op, root, esize);
}

/*
 * Small commutative allreduce across node groups (m->leader): a member
 * puts its contribution into its slot at its leader and waits for the
 * result, which the leader puts into the leader's slot at the member. A
 * leader combines its members' parts with its own, exchanges that with
 * every other leader, and combines the leaders' parts in leader order,
 * so every rank gets the same bits. Between nodes one exchange per group
 * instead of one per rank. The two sets' argument above holds as well: a
 * rank that finished call a-1 depends on every rank having started it.
 */
static int mca_coll_ofi_allreduce_grouped(mca_coll_ofi_module_t *m, char *result, size_t count,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          size_t bytes, uint64_t s, size_t slot0, size_t mine)
{
    const int me = m->rank, lead = m->leader[me];
    char *part = m->block + mine;
    bool first = true;
    int rc;

    if (lead != me) {
        rc = mca_coll_ofi_post(m, lead, part, mine, bytes);
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_post_signal(m, lead, part, mine, bytes,
                                          m->off_ready + (size_t) me * sizeof(uint64_t), s);
        }
        if (OMPI_SUCCESS == rc) {
            rc = mca_coll_ofi_wait(m, m->off_ready, lead, s, lead);
        }
        if (OMPI_SUCCESS == rc) {
            memcpy(result, m->block + slot0 + (size_t) lead * m->small_bytes, bytes);
            rc = mca_coll_ofi_leave(m);
        }
        return rc;
    }
    ++m->n_grouped;
    for (int p = 0; p < m->size; ++p) {
        if (p != me && m->leader[p] == me) {
            rc = mca_coll_ofi_wait(m, m->off_ready, p, s, p);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
            ompi_op_reduce(op, m->block + slot0 + (size_t) p * m->small_bytes, part, count, dtype);
        }
    }
    for (int p = 0; p < m->size; ++p) {
        if (p != me && m->leader[p] == p) {
            rc = mca_coll_ofi_post(m, p, part, mine, bytes);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    for (int p = 0; p < m->size; ++p) {
        if (p != me && m->leader[p] == p) {
            rc = mca_coll_ofi_post_signal(m, p, part, mine, bytes,
                                          m->off_ready + (size_t) me * sizeof(uint64_t), s);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    for (int p = m->size - 1; p >= 0; --p) {
        if (m->leader[p] != p) {
            continue;
        }
        if (p != me) {
            rc = mca_coll_ofi_wait(m, m->off_ready, p, s, p);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
        if (first) {
            memcpy(result, m->block + slot0 + (size_t) p * m->small_bytes, bytes);
            first = false;
        } else {
            ompi_op_reduce(op, m->block + slot0 + (size_t) p * m->small_bytes, result, count,
                           dtype);
        }
    }
    /* our own slot now holds what the members get: the result */
    memcpy(part, result, bytes);
    for (int p = 0; p < m->size; ++p) {
        if (p != me && m->leader[p] == me) {
            rc = mca_coll_ofi_post(m, p, part, mine, bytes);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
            rc = mca_coll_ofi_post_signal(m, p, part, mine, bytes,
                                          m->off_ready + (size_t) me * sizeof(uint64_t), s);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    return mca_coll_ofi_leave(m);
}

/*
 * Small allreduce: every rank puts its contribution into its own slot at
 * every other rank, then every rank combines all of them in rank order
 * (so non-commutative ops come out right too).  One exchange instead of
 * a reduce and a broadcast.
 *
 * The slots alternate between two sets by call parity.  A rank that
 * writes set (a+1)%2 for call a+1 has seen every rank's call-a
 * contribution, which each rank sends only once it has finished reading
 * call a-1 from that same set; so no credit is needed.  The slots are
 * used by nothing else, so other collectives in between cannot collide.
 */
static int mca_coll_ofi_allreduce_small(mca_coll_ofi_module_t *m, const char *own, char *result,
                                        size_t count, struct ompi_datatype_t *dtype,
                                        struct ompi_op_t *op, size_t bytes)
{
    const uint64_t s = ++m->step;
    const size_t set = (size_t) (m->small_calls++ % 2) * (size_t) m->size;
    const size_t slot0 = m->off_small + set * m->small_bytes;
    const size_t mine = slot0 + (size_t) m->rank * m->small_bytes;
    const int last = m->size - 1;
    int rc;

    memcpy(m->block + mine, own, bytes);
    if (NULL != m->leader && ompi_op_is_commute(op)) {
        return mca_coll_ofi_allreduce_grouped(m, result, count, dtype, op, bytes, s, slot0, mine);
    }
    for (int p = 0; p < m->size; ++p) {
        if (p != m->rank) {
            rc = mca_coll_ofi_post(m, p, m->block + mine, mine, bytes);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }
    for (int p = 0; p < m->size; ++p) {
        if (p != m->rank) {
            rc = mca_coll_ofi_post_signal(m, p, m->block + mine, mine, bytes,
                                          m->off_ready + (size_t) m->rank * sizeof(uint64_t), s);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }

    /* result = c0 op (c1 op (... op c_last)), built from the right */
    if (last != m->rank) {
        rc = mca_coll_ofi_wait(m, m->off_ready, last, s, last);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    memcpy(result, m->block + slot0 + (size_t) last * m->small_bytes, bytes);
    for (int p = last - 1; p >= 0; --p) {
        if (p != m->rank) {
            rc = mca_coll_ofi_wait(m, m->off_ready, p, s, p);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
        ompi_op_reduce(op, m->block + slot0 + (size_t) p * m->small_bytes, result, count, dtype);
    }
    return mca_coll_ofi_leave(m);
}

int mca_coll_ofi_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_ofi_module_t *m = (mca_coll_ofi_module_t *) module;
    const char *own;
    size_t esize;
    int rc;

    rc = mca_coll_ofi_cache_ready(m);
    if (rc < 0) {
        return rc;
    }
    if (0 == rc || !mca_coll_ofi_reducible(m, count, dtype, &esize)) {
        m->n_fallback++;
        return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm, m->prev_allreduce_module);
    }
    m->n_allreduce++;
    if (0 == count) {
        return OMPI_SUCCESS;
    }
    /* with MPI_IN_PLACE every rank's contribution is in rbuf; it is read
     * chunk by chunk before the broadcast overwrites rbuf */
    own = (MPI_IN_PLACE == sbuf) ? (const char *) rbuf : (const char *) sbuf;
    if (m->small_size > 0 && (size_t) count * esize <= m->small_bytes) {
        return mca_coll_ofi_allreduce_small(m, own, (char *) rbuf, (size_t) count, dtype, op,
                                            (size_t) count * esize);
    }
    if ((size_t) count * esize >= m->split_min && ompi_op_is_commute(op)
        && (size_t) count >= (size_t) m->size) {
        m->n_zcopy_reduce++;
        return mca_coll_ofi_allreduce_split(m, own, (char *) rbuf, (size_t) count, dtype, op,
                                            esize);
    }
    if (2 == m->size && (size_t) count * esize >= mca_coll_ofi_component.zc_min) {
        m->n_zcopy_reduce++;
        return mca_coll_ofi_allreduce_pair(m, own, (char *) rbuf, (size_t) count, dtype, op, esize);
    }
    if (mca_coll_ofi_gathered(m, (size_t) count * esize)) {
        rc = mca_coll_ofi_reduce_small(m, own, (char *) rbuf, (size_t) count, dtype, op, 0,
                                       (size_t) count * esize);
    } else if (mca_coll_ofi_reduce_zc_fits(m, (size_t) count * esize)) {
        m->n_zcopy_reduce++;
        rc = mca_coll_ofi_reduce_zc(m, own, (char *) rbuf, (size_t) count, dtype, op, 0, esize,
                                    true);
    } else {
        rc = mca_coll_ofi_reduce_run(m, own, (char *) rbuf, (size_t) count, dtype, op, 0, esize);
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    return mca_coll_ofi_bcast_bytes(m, (char *) rbuf, (size_t) count * esize, 0);
}
