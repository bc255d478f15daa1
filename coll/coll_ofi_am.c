/*
 * coll/ofi flags and small payloads to peers on other nodes as btl active
 * messages: one send carries the data and the flag that announces it.
 *
 * Why: through RDMA a step to a peer that is not mapped is a put, its
 * completion (a network round trip), a flush and a flag put. A message
 * crosses once, nobody waits for it, and the receiver's progress writes
 * the data and then the flag into its own block, in that order. The
 * block's layout and the flags' meaning are the same as through RDMA.
 *
 * Every flag towards such a peer goes this way (mca_coll_ofi_signal_at),
 * not only those with data: a flag word written by two paths could see a
 * late put of an older step land after a message of a newer one. Between
 * messages themselves the receiver keeps the largest value (flags hold
 * step numbers that only grow), so the btl may deliver them in any order.
 * Payload that does not fit a message goes by put, completed and flushed
 * before its flag's message, as before.
 */

#include "coll_ofi.h"

#include <pthread.h>
#include <string.h>

#include "ompi/mca/bml/base/base.h"
#include "ompi/mca/bml/bml.h"
#include "opal/class/opal_pointer_array.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

/* one tag of the range left to users of the btls */
#define MCA_COLL_OFI_AM_TAG (MCA_BTL_TAG_USR + 7)

typedef struct {
    uint32_t cid;      /* communicator: which module's block */
    uint32_t instance; /* and which module of it (the receiver's number) */
    uint32_t len;      /* payload bytes after this header */
    uint32_t pad;
    uint64_t data_off; /* where the payload goes in the block */
    uint64_t flag_off; /* the flag word, in the block */
    uint64_t value;    /* the flag's new value (kept if larger) */
} mca_coll_ofi_am_hdr_t;

/* modules by communicator id, for the receive callback */
static opal_pointer_array_t mca_coll_ofi_am_modules;
static pthread_mutex_t mca_coll_ofi_am_lock = PTHREAD_MUTEX_INITIALIZER;
static int mca_coll_ofi_am_state; /* 0 not tried, 1 registered, -1 failed */

static void mca_coll_ofi_am_recv(mca_btl_base_module_t *btl, mca_btl_base_tag_t tag,
                                 mca_btl_base_descriptor_t *des, void *cbdata)
{
    const mca_btl_base_segment_t *seg = des->des_segments;
    mca_coll_ofi_am_hdr_t hdr;
    mca_coll_ofi_module_t *m;
    uint64_t *flag, cur;
    (void) btl;
    (void) tag;
    (void) cbdata;

    if (OPAL_UNLIKELY(seg->seg_len < sizeof(hdr))) {
        return;
    }
    memcpy(&hdr, seg->seg_addr.pval, sizeof(hdr));
    m = (mca_coll_ofi_module_t *) opal_pointer_array_get_item(&mca_coll_ofi_am_modules,
                                                              (int) hdr.cid);
    if (OPAL_UNLIKELY(NULL == m || NULL == m->block || hdr.instance != m->instance
                      || seg->seg_len < sizeof(hdr) + hdr.len
                      || hdr.data_off + hdr.len > m->block_size
                      || hdr.flag_off + sizeof(uint64_t) > m->block_size)) {
        /* a root's last word on a communicator freed since (the only
         * message nobody waits for: mca_coll_ofi_gather_done) */
        opal_output_verbose(2, mca_coll_ofi_component.output,
                            "coll:ofi: dropped a message for communicator %u (freed, not served "
                            "here, or out of its block)",
                            hdr.cid);
        return;
    }
    if (hdr.len > 0) {
        memcpy(m->block + hdr.data_off, (const char *) seg->seg_addr.pval + sizeof(hdr), hdr.len);
    }
    flag = (uint64_t *) (m->block + hdr.flag_off);
    cur = __atomic_load_n(flag, __ATOMIC_RELAXED);
    while (cur < hdr.value
           && !__atomic_compare_exchange_n(flag, &cur, hdr.value, false, __ATOMIC_RELEASE,
                                           __ATOMIC_RELAXED)) {
    }
}

/* the btl calls back once a message left; it owns the descriptor */
static void mca_coll_ofi_am_sent(mca_btl_base_module_t *btl,
                                 struct mca_btl_base_endpoint_t *endpoint,
                                 mca_btl_base_descriptor_t *des, int status)
{
    (void) btl;
    (void) endpoint;
    (void) des;
    (void) status;
}

/* the first message to a peer: its sender waits for this */
static void mca_coll_ofi_am_first_sent(mca_btl_base_module_t *btl,
                                       struct mca_btl_base_endpoint_t *endpoint,
                                       mca_btl_base_descriptor_t *des, int status)
{
    (void) btl;
    (void) endpoint;
    (void) status; /* a failure is the btl's to report (the peer named) */
    __atomic_store_n((int *) des->des_cbdata, 1, __ATOMIC_RELEASE);
}

/* Register the tag once per process; whether messages can be used. */
static bool mca_coll_ofi_am_register(void)
{
    pthread_mutex_lock(&mca_coll_ofi_am_lock);
    if (0 == mca_coll_ofi_am_state) {
        OBJ_CONSTRUCT(&mca_coll_ofi_am_modules, opal_pointer_array_t);
        if (OPAL_SUCCESS != opal_pointer_array_init(&mca_coll_ofi_am_modules, 16, INT32_MAX, 16)
            || NULL == mca_bml.bml_register
            || OMPI_SUCCESS
                   != mca_bml.bml_register(MCA_COLL_OFI_AM_TAG, mca_coll_ofi_am_recv, NULL)) {
            opal_output_verbose(1, mca_coll_ofi_component.output,
                                "coll:ofi: could not register btl tag %d: flags to other "
                                "nodes go by put",
                                MCA_COLL_OFI_AM_TAG);
            mca_coll_ofi_am_state = -1;
        } else {
            mca_coll_ofi_am_state = 1;
        }
    }
    pthread_mutex_unlock(&mca_coll_ofi_am_lock);
    return 1 == mca_coll_ofi_am_state;
}

void mca_coll_ofi_am_attach(mca_coll_ofi_module_t *m)
{
    mca_btl_base_module_t *btl = m->btl;
    const size_t hdr = sizeof(mca_coll_ofi_am_hdr_t);

    m->am_max = 0;
    m->am = false;
    if (!mca_coll_ofi_component.messages || NULL == btl->btl_alloc || NULL == btl->btl_send
        || NULL == btl->btl_free || !(btl->btl_flags & MCA_BTL_FLAGS_SEND)
        || btl->btl_eager_limit < hdr + sizeof(uint64_t) || !mca_coll_ofi_am_register()) {
        return;
    }
    m->am_met = calloc((size_t) m->size, sizeof(*m->am_met));
    if (NULL == m->am_met
        || OPAL_SUCCESS != opal_pointer_array_set_item(&mca_coll_ofi_am_modules, (int) m->cid, m)) {
        free(m->am_met);
        m->am_met = NULL;
        return;
    }
    m->am = true;
    m->am_max = btl->btl_eager_limit - hdr;
}

void mca_coll_ofi_am_detach(mca_coll_ofi_module_t *m)
{
    if (m->am) {
        (void) opal_pointer_array_set_item(&mca_coll_ofi_am_modules, (int) m->cid, NULL);
        m->am = false;
    }
    free(m->am_met);
    m->am_met = NULL;
}

void mca_coll_ofi_am_fini(void)
{
    if (1 == mca_coll_ofi_am_state) {
        /* no communicator of ours is left, so nothing can be in flight;
         * the bml may be gone already at component close, and the tag
         * must not call into an unloaded component: cleared in place */
        mca_btl_base_active_message_trigger[MCA_COLL_OFI_AM_TAG].cbfunc = NULL;
        mca_btl_base_active_message_trigger[MCA_COLL_OFI_AM_TAG].cbdata = NULL;
        OBJ_DESTRUCT(&mca_coll_ofi_am_modules);
        mca_coll_ofi_am_state = 0;
    }
}

int mca_coll_ofi_am_send(mca_coll_ofi_module_t *m, int peer, const void *data, size_t data_off,
                         size_t len, size_t flag_off, uint64_t value, bool hint)
{
    mca_btl_base_module_t *btl = m->btl;
    mca_coll_ofi_am_hdr_t hdr = {.cid = m->cid,
                                 .pad = 0,
                                 .len = (uint32_t) len,
                                 .data_off = data_off,
                                 .flag_off = flag_off,
                                 .value = value};
    mca_btl_base_descriptor_t *des;
    /* The first message to PEER waits for its completion. Our messages
     * are not waited for, and one the provider refuses for the moment
     * stays queued in the btl until this process drives it again; the
     * first to a peer is refused while the provider sets the connection
     * up, which takes both sides' progress (shm, ofi_rxm, ofi_rxd). A
     * caller that left MPI after the collective (Open MPI's
     * MPI_Comm_spawn: a broadcast, then PMIx_Connect) held its peers
     * there forever (tests/coll colldetached without shared memory: the
     * first broadcast from rank 1 of 4, every provider). The peer is in
     * this collective, so it progresses; once met, later messages go
     * when posted. Not a hint: its peer may have left MPI and wait for
     * us outside it; a hint left queued is posted by our next progress,
     * at the latest in the next collective, the first that waits for it. */
    const bool first = !hint && !m->am_met[peer];
    volatile int sent = 0;
    int rc;

    /* the receiver's number for its module, from the directory */
    hdr.instance = (uint32_t) mca_coll_ofi_dir_field(m, peer, MCA_COLL_OFI_DIR_INST);
    /* out of descriptors: they come back as earlier messages leave */
    while (
        NULL
        == (des = btl->btl_alloc(btl, m->endpoints[peer], MCA_BTL_NO_ORDER, sizeof(hdr) + len,
                                 MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP))) {
        opal_progress();
    }
    memcpy(des->des_segments[0].seg_addr.pval, &hdr, sizeof(hdr));
    if (len > 0) {
        memcpy((char *) des->des_segments[0].seg_addr.pval + sizeof(hdr), data, len);
    }
    des->des_segments[0].seg_len = sizeof(hdr) + len;
    des->des_cbfunc = first ? mca_coll_ofi_am_first_sent : mca_coll_ofi_am_sent;
    des->des_cbdata = first ? (void *) &sent : NULL;
    if (first) {
        des->des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    }
    /* as for RDMA (MCA_COLL_OFI_ISSUE): failing the collective on such an
     * answer ended a job with MPI_ERR_OTHER before the dead rank was named
     * (faults death coll, tcp;ofi_rxm, once in a CI run). The descriptor
     * stays ours until a send takes it. */
    while (mca_coll_ofi_try_again(
        rc = btl->btl_send(btl, m->endpoints[peer], des, MCA_COLL_OFI_AM_TAG))) {
        opal_progress();
    }
    if (OPAL_UNLIKELY(rc < 0 && OPAL_ERR_RESOURCE_BUSY != rc)) {
        btl->btl_free(btl, des);
        opal_output(0,
                    "coll:ofi: communicator %u rank %d: a message to rank %d through btl %s "
                    "failed (%d); the collective returns an error",
                    m->cid, m->rank, peer, btl->btl_component->btl_version.mca_component_name, rc);
        return OMPI_ERROR;
    }
    if (first) {
        /* 1: sent at once, and no callback comes */
        while (1 != rc && !__atomic_load_n(&sent, __ATOMIC_ACQUIRE)) {
            opal_progress();
        }
        m->am_met[peer] = true;
    }
    return OMPI_SUCCESS;
}
