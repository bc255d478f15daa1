/*
 * coll/ofi blocks in shared memory: peers on the same node reach each
 * other's cache block with loads and stores instead of btl puts and gets.
 *
 * Why: a flag or a small payload through a btl is a put, a completion, a
 * flush and a flag put, each through the provider's queue and often the
 * target's progress (1-2 us each on shm); coll/tuned's eager sends do not
 * wait for any of that. Between processes of one node a store into a
 * mapped page does the same work in nanoseconds and needs nothing from
 * the target. osc/rdma does the same for the windows of MPI_Win_allocate.
 *
 * Each rank's block is its own POSIX shared-memory object; its name goes
 * into the directory exchange, local peers map it, and once every rank
 * has mapped what it wants the name is unlinked, so nothing is left in
 * /dev/shm if a process dies later. Whether a pair of ranks uses the
 * mapping or the btl need not agree: both reach the same memory, with the
 * same ordering (payload first, then a release store or a flushed put of
 * the flag), so a rank that could not map a peer simply keeps the btl
 * towards it.
 */

#include "coll_ofi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ompi/proc/proc.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"
#include "opal/util/show_help.h"

static bool mca_coll_ofi_shm_local(mca_coll_ofi_module_t *m, int r)
{
    ompi_proc_t *proc = ompi_comm_peer_lookup(m->comm, r);

    return r != m->rank && NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags);
}

bool mca_coll_ofi_spans_nodes(mca_coll_ofi_module_t *m)
{
    for (int r = 0; r < m->size; ++r) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(m->comm, r);

        if (r != m->rank && (NULL == proc || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            return true;
        }
    }
    return false;
}

/* Memory mappings held by this process's blocks: each served
 * communicator's own block (a shared segment, or private anonymous
 * pages) and each local peer's block mapped here. The kernel
 * allows a process vm.max_map_count mappings in all (65530 by default);
 * past it every mmap fails, malloc's too, and Open MPI was seen to crash
 * in MPI_Comm_dup with 14,500 communicators of 4 local ranks served
 * (4 mappings each) alive at once. So coll/ofi keeps to a share of them
 * (coll_ofi_max_mappings, by default half of vm.max_map_count), and a
 * communicator that would go beyond is left to the previous component. */
static int64_t mca_coll_ofi_maps_in_use;

static int64_t mca_coll_ofi_maps_limit(void)
{
    static int64_t limit;
    long kernel = 65530;
    FILE *f;

    if (0 != __atomic_load_n(&limit, __ATOMIC_RELAXED)) {
        return limit;
    }
    if (mca_coll_ofi_component.max_mappings > 0) {
        __atomic_store_n(&limit, mca_coll_ofi_component.max_mappings, __ATOMIC_RELAXED);
        return limit;
    }
    f = fopen("/proc/sys/vm/max_map_count", "r");
    if (NULL != f) {
        if (1 != fscanf(f, "%ld", &kernel) || kernel < 2) {
            kernel = 65530;
        }
        (void) fclose(f);
    }
    __atomic_store_n(&limit, (int64_t) kernel / 2, __ATOMIC_RELAXED);
    return limit;
}

bool mca_coll_ofi_maps_reserve(mca_coll_ofi_module_t *m, const char **why)
{
    static bool said = false;
    const int64_t limit = mca_coll_ofi_maps_limit();
    int need = 1;
    int64_t held;

    for (int r = 0; r < m->size && mca_coll_ofi_component.shared_memory; ++r) {
        need += mca_coll_ofi_shm_local(m, r) ? 1 : 0;
    }
    held = __atomic_add_fetch(&mca_coll_ofi_maps_in_use, need, __ATOMIC_RELAXED);
    if (OPAL_LIKELY(held <= limit)) {
        m->maps_held = need;
        return true;
    }
    (void) __atomic_sub_fetch(&mca_coll_ofi_maps_in_use, need, __ATOMIC_RELAXED);
    *why = "this process's coll/ofi blocks would hold more memory mappings than "
           "coll_ofi_max_mappings allows (free communicators no longer used, or raise it "
           "and vm.max_map_count)";
    if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED)) {
        opal_show_help(MCA_COLL_OFI_HELP_FILE, "mappings", true,
                       opal_process_info.nodename ? opal_process_info.nodename : "unknown",
                       (int) (held - need), need, (int) limit);
    }
    return false;
}

void mca_coll_ofi_maps_return(mca_coll_ofi_module_t *m)
{
    (void) __atomic_sub_fetch(&mca_coll_ofi_maps_in_use, m->maps_held, __ATOMIC_RELAXED);
    m->maps_held = 0;
}

/* The segment is sparse (its pages are backed as they are first written,
 * so a rank pays only for the slots its calls reach), and a write that
 * finds /dev/shm full kills the process with SIGBUS: ask for a block only
 * while /dev/shm has room for all of it. */
static bool mca_coll_ofi_shm_room(size_t size)
{
    struct statvfs st;

    return 0 == statvfs("/dev/shm", &st) && (uint64_t) st.f_bavail * st.f_frsize >= size;
}

/* Map a new segment of SIZE bytes for our block; leaves m->block NULL
 * (and says why at verbosity 2) when there is no local peer or the
 * segment cannot be made, and the caller allocates private memory. */
void mca_coll_ofi_shm_create(mca_coll_ofi_module_t *m, size_t size)
{
    static unsigned serial;
    bool any = false;
    void *base;
    int fd, err;

    m->shm_name[0] = '\0';
    if (!mca_coll_ofi_component.shared_memory) {
        return;
    }
    for (int r = 0; r < m->size && !any; ++r) {
        any = mca_coll_ofi_shm_local(m, r);
    }
    if (!any) {
        return;
    }
    /* unique on the node: our pid and a count of our blocks */
    (void) snprintf(m->shm_name, sizeof(m->shm_name), "/coll_ofi.%d.%u", (int) getpid(),
                    __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
    if (!mca_coll_ofi_shm_room(size)) {
        errno = ENOSPC;
        goto say_why;
    }
    fd = shm_open(m->shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        goto say_why;
    }
    if (0 != ftruncate(fd, (off_t) size)) {
        goto unlink_name;
    }
    base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (MAP_FAILED == base) {
        goto unlink_name;
    }
    (void) close(fd);
    m->block = base;
    m->block_mapped = true;
    return;

unlink_name:
    err = errno;
    (void) close(fd);
    (void) shm_unlink(m->shm_name);
    errno = err;
say_why:
    opal_output_verbose(2, mca_coll_ofi_component.output,
                        "coll:ofi: communicator %u rank %d: no shared-memory block (%s of %zu "
                        "bytes: %s; is /dev/shm full?); local peers go through the btl",
                        m->cid, m->rank, m->shm_name, size, strerror(errno));
    m->shm_name[0] = '\0';
}

/* Map the blocks of the local peers whose directory entry names one, and
 * find out whether their memory can be read with process_vm_readv;
 * returns whether both hold for every peer. */
bool mca_coll_ofi_shm_attach(mca_coll_ofi_module_t *m)
{
    int readable = 0;

    m->n_mapped = 0;
    for (int r = 0; r < m->size; ++r) {
        const char *name =
            m->block + m->off_dir + (size_t) r * m->dir_stride + MCA_COLL_OFI_DIR_NAME;
        char copy[MCA_COLL_OFI_SHM_NAME];
        uint64_t word;
        void *base;
        int fd;

        if ('\0' == name[0] || !mca_coll_ofi_shm_local(m, r)) {
            continue;
        }
        memcpy(copy, name, sizeof(copy));
        copy[sizeof(copy) - 1] = '\0';
        fd = shm_open(copy, O_RDWR, 0);
        if (fd < 0) {
            opal_output_verbose(2, mca_coll_ofi_component.output,
                                "coll:ofi: communicator %u rank %d: cannot open rank %d's block "
                                "%s (%s); it goes through the btl",
                                m->cid, m->rank, r, copy, strerror(errno));
            continue;
        }
        /* every block has the same size: the layout is agreed by the vote */
        base = mmap(NULL, m->block_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        (void) close(fd);
        if (MAP_FAILED == base) {
            opal_output_verbose(2, mca_coll_ofi_component.output,
                                "coll:ofi: communicator %u rank %d: cannot map rank %d's block "
                                "(%s); it goes through the btl",
                                m->cid, m->rank, r, strerror(errno));
            continue;
        }
        m->peer_map[r] = base;
        m->peer_pid[r] = (pid_t) mca_coll_ofi_dir_field(m, r, MCA_COLL_OFI_DIR_PID);
        ++m->n_mapped;
        /* whether its memory can be read: one word of its block */
        if (OMPI_SUCCESS
            == mca_coll_ofi_shm_read(m, r, &word, mca_coll_ofi_dir_field(m, r, 0), sizeof(word))) {
            ++readable;
        }
    }
    m->n_cma = 0; /* the probes above are not counted */
    return m->n_mapped == m->size - 1 && readable == m->n_mapped;
}

/* LEN bytes between LOCAL and RADDR in local peer PEER's memory with
 * process_vm_writev (WRITE) or process_vm_readv, until all are moved; on
 * failure *WHY says why. */
static int mca_coll_ofi_cma(mca_coll_ofi_module_t *m, int peer, void *local, uint64_t raddr,
                            size_t len, bool write, const char **why)
{
    for (size_t done = 0; done < len;) {
        struct iovec l = {.iov_base = (char *) local + done, .iov_len = len - done};
        struct iovec r = {.iov_base = (void *) (uintptr_t) (raddr + done), .iov_len = len - done};
        ssize_t n = write ? process_vm_writev(m->peer_pid[peer], &l, 1, &r, 1, 0)
                          : process_vm_readv(m->peer_pid[peer], &l, 1, &r, 1, 0);

        if (n <= 0) {
            *why = n < 0 ? strerror(errno) : "no progress";
            return OMPI_ERROR;
        }
        done += (size_t) n;
    }
    return OMPI_SUCCESS;
}

/* process_vm_readv: the reader copies straight from the peer's buffer,
 * as btl/vader's single copy does, where a btl get on libfabric's shm is
 * done by the target's progress (so waits for it to be scheduled). A
 * refusal (no CMA in the kernel, ptrace rules) turns it off for that
 * peer and the btl takes over; where every rank is local the buffers are
 * not registered with the btl, so the failure (a peer that died) is the
 * collective's error. */
int mca_coll_ofi_shm_read(mca_coll_ofi_module_t *m, int peer, void *local, uint64_t raddr,
                          size_t len)
{
    const char *why;

    if (OMPI_SUCCESS != mca_coll_ofi_cma(m, peer, local, raddr, len, false, &why)) {
        if (m->all_local) {
            /* its buffers are not registered: no other way to them */
            opal_output(0,
                        "coll:ofi: communicator %u rank %d: process_vm_readv from rank %d "
                        "failed (%s; did it die?); the collective returns an error",
                        m->cid, m->rank, peer, why);
            return OMPI_ERROR;
        }
        opal_output_verbose(2, mca_coll_ofi_component.output,
                            "coll:ofi: communicator %u rank %d: process_vm_readv from rank "
                            "%d failed (%s); its buffers are read through the btl",
                            m->cid, m->rank, peer, why);
        m->peer_pid[peer] = 0;
        return OMPI_ERR_NOT_AVAILABLE;
    }
    ++m->n_cma;
    return OMPI_SUCCESS;
}

int mca_coll_ofi_shm_write(mca_coll_ofi_module_t *m, int peer, uint64_t raddr, const void *local,
                           size_t len)
{
    const char *why;

    if (OMPI_SUCCESS != mca_coll_ofi_cma(m, peer, (void *) local, raddr, len, true, &why)) {
        /* the same permission as reading, which was probed: the peer is
         * gone or its buffer is */
        opal_output(0,
                    "coll:ofi: communicator %u rank %d: process_vm_writev to rank %d failed "
                    "(%s; did it die?); the collective returns an error",
                    m->cid, m->rank, peer, why);
        return OMPI_ERROR;
    }
    return OMPI_SUCCESS;
}

/* Remove our block's name once every local peer has mapped it. */
void mca_coll_ofi_shm_unlink(mca_coll_ofi_module_t *m)
{
    if ('\0' != m->shm_name[0]) {
        (void) shm_unlink(m->shm_name);
        m->shm_name[0] = '\0';
    }
}

/* Unmap the peers' blocks and our own. */
void mca_coll_ofi_shm_release(mca_coll_ofi_module_t *m)
{
    mca_coll_ofi_shm_unlink(m);
    if (NULL != m->peer_map) {
        for (int r = 0; r < m->size; ++r) {
            if (NULL != m->peer_map[r]) {
                (void) munmap(m->peer_map[r], m->block_size);
            }
        }
        free(m->peer_map);
        m->peer_map = NULL;
    }
    free(m->peer_pid);
    m->peer_pid = NULL;
    m->n_mapped = 0;
    if (m->block_mapped && NULL != m->block) {
        (void) munmap(m->block, m->block_size);
        m->block = NULL;
    }
    m->block_mapped = false;
}
