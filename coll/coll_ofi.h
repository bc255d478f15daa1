/*
 * coll/ofi: MPI collectives as one-sided RDMA through the BTL 3.1
 * interface (put, get, fetching atomics, flush), for intra-communicators
 * whose every rank reaches every peer through one RDMA-capable BTL.
 * Peers on the same node map each other's block and use loads and stores
 * (coll_ofi_shm.c); flags and small payloads to the others go as btl
 * active messages (coll_ofi_am.c). The files: component (parameters),
 * module (enable, served-call counts), cache (set-up, layout, the
 * primitives below), shm, am, bcast, reduce (and allreduce), barrier.
 *
 * Every rank of a served communicator owns one registered block:
 *
 *   reserved  header (fetch result, probe target), then four arrays
 *             of one 64-bit slot per rank: ready[], credit[] (written by
 *             peers), src[] (local sources of the slot writes) and
 *             rdone[] (small reductions each root has finished, as it
 *             told us: mca_coll_ofi_gather_done), then
 *             one bounce page used as the data cache when
 *             coll_ofi_cache_pages is 0, then (up to 16 ranks) two sets
 *             of one small_bytes slot per rank for small allreduces and
 *             gather_sets sets of one flagged slot per rank for small
 *             reductions, then the ring of small broadcasts (on one
 *             node 1 KiB allreduce and ring slots and gather slots of
 *             128 KiB / ranks, 8 sets: 1.1 MiB on 4 ranks, and the big
 *             flat ring, 4 slots of 128 KiB; spanning nodes up to 8
 *             KiB, 16 sets: 720 KiB on 4 ranks, no big ring; see
 *             MCA_COLL_OFI_SMALL_BYTES, GATHER_SPAN, FLAT_SLOTS). Pages
 *             are touched only as far as a call's size reaches;
 *   directory every rank's block address and registration handle;
 *   zc        one entry of the same form per rank: the registered user
 *             buffer of a large broadcast's parent, written by that parent;
 *   data      coll_ofi_cache_pages pages that payload moves through.
 *
 * The layout is the same on every rank, so a peer's slot is its block
 * address (from the directory) plus the same offset as ours.
 *
 * Slots hold step numbers.  Every served call advances the module's step
 * counter by the number of chunks it moves, identically on every rank
 * (the MPI rules make message sizes agree), and steps never go back, so a
 * slot that reads at least s says "that peer got to step s with me"; a
 * value left by an earlier call is always smaller and cannot satisfy a
 * later wait.
 */

#ifndef MCA_COLL_OFI_H
#define MCA_COLL_OFI_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/op/op.h"
#include "opal/mca/btl/btl.h"

BEGIN_C_DECLS

#define MCA_COLL_OFI_HELP_FILE "help-coll-ofi.txt"
#define MCA_COLL_OFI_PAGE_SIZE 4096

/* Allreduce of at most small_bytes on at most SMALL_RANKS ranks goes
 * through per-rank slots of the reserved area in one exchange (every rank
 * puts its contribution to every other rank) instead of reduce + bcast.
 * small_bytes (the payload of one slot of the small allreduce, and across
 * nodes of the gather sets) and ring_bytes (of one ring slot) are
 * SMALL_BYTES on one node (small_bytes SMALL_BYTES_MAX on two ranks of one
 * node). On a communicator that spans nodes, where a step through the
 * data cache costs a network round trip (a credit) and a slot's payload
 * crosses in one message, ring_bytes is SMALL_BYTES_MAX and small_bytes
 * SMALL_SPAN / ranks, a power of two from SMALL_BYTES to SMALL_BYTES_MAX
 * (mca_coll_ofi_slots). */
#define MCA_COLL_OFI_SMALL_BYTES 1024
#define MCA_COLL_OFI_SMALL_BYTES_MAX 8192
#define MCA_COLL_OFI_SMALL_SPAN (32 * 1024)

/* Microseconds a wait for a peer's flag lasts before the peer is probed
 * (and between probes): a dead peer is named by the btl within about
 * this much more than the btl's own check (mca_coll_ofi_wait). */
#define MCA_COLL_OFI_PROBE_USEC 1000000
#define MCA_COLL_OFI_SMALL_RANKS 16

/* Broadcasts of at most ring_bytes travel through a ring of RING_SLOTS
 * slots in every rank's reserved area (coll_ofi_bcast.c): a parent writes
 * call c into its children's slot c % RING_SLOTS as soon as they have
 * emptied the slot's previous call, without a per-call credit, so a root
 * runs up to RING_SLOTS calls ahead of its slowest child. */
#define MCA_COLL_OFI_RING_SLOTS 16

/* On one node, where every rank maps every block, broadcasts larger than
 * ring_bytes go flat as well, up to m->flat_max (mca_coll_ofi_zc_policy),
 * through a second ring of FLAT_SLOTS slots of FLAT_BYTES: the root copies
 * each chunk once into its own slot, every other rank copies it out
 * (coll_ofi_bcast.c). */
#define MCA_COLL_OFI_FLAT_SLOTS 4
#define MCA_COLL_OFI_FLAT_BYTES (128 * 1024)
/* one slot: its flag (the call number + 1 once the data is there), padded
 * to a cache line, then ring_bytes of data (m->ring_stride in all; a
 * gather slot the same with gather_bytes, m->gather_stride) */
#define MCA_COLL_OFI_RING_HEAD 64

/* Reductions of at most gather_bytes on at most SMALL_RANKS ranks gather
 * every contribution at the root (coll_ofi_reduce.c): call c uses set
 * c % gather_sets of one slot per rank (a flag head, then gather_bytes)
 * in the root's reserved area, so a rank that is not the root puts its
 * contribution and returns, up to gather_sets calls ahead of the root:
 * GATHER_SETS on one node, twice that on a communicator that spans
 * nodes (below). gather_bytes is small_bytes on a communicator that
 * spans nodes, and GATHER_SPAN / ranks on one node, a power of two from
 * SMALL_BYTES to GATHER_BYTES_MAX (mca_coll_ofi_slots). */
#define MCA_COLL_OFI_GATHER_SPAN (128 * 1024)
#define MCA_COLL_OFI_GATHER_BYTES_MAX (32 * 1024)
/* A directory entry (and a zc entry): block or buffer address, data
 * size, the process id, the module's instance (coll_ofi_am.c), the name
 * of the block's shared-memory segment (coll_ofi_shm.c; empty when there
 * is none; pid, instance and name unused in zc entries), then the btl's
 * registration handle. */
#define MCA_COLL_OFI_SHM_NAME 32
#define MCA_COLL_OFI_DIR_PID (2 * sizeof(uint64_t))
#define MCA_COLL_OFI_DIR_INST (3 * sizeof(uint64_t))
#define MCA_COLL_OFI_DIR_NAME (4 * sizeof(uint64_t))
#define MCA_COLL_OFI_DIR_HANDLE (MCA_COLL_OFI_DIR_NAME + MCA_COLL_OFI_SHM_NAME)

/* with messages to peers that are not mapped, broadcasts go without
 * copies from this size only (coll_ofi_cache.c) */
#define MCA_COLL_OFI_AM_ZC_MIN (64 * 1024)

/* every rank local: commutative reductions on two ranks are split between
 * them from PAIR_MIN, in effect above the gather slots' 32 KiB, which are
 * faster up to there (coll_ofi_reduce.c: vader 1 MiB 236 -> 107-128 us;
 * read by the root alone it was 0.53x-0.76x of coll/tuned from 32 KiB),
 * commutative allreduces from SPLIT_MIN, on two ranks from 4 x SPLIT_MIN.
 * vader, 4 and 8 ranks (2 cores): 512 KiB 290-317 us against 353-476
 * through reduce + broadcast on 4 ranks, 634-672 against 920-1070 on 8;
 * 1 MiB 580-620 against 700-960, 1,200 against 1,760-1,850; as fast at
 * 128 KiB, slower at 64 KiB (150 against 110 on 8). On two ranks the
 * pair's exchange (each combines the whole) was faster up to 512 KiB:
 * 15-17 against 19-22 us at 128 KiB, 75-83 against 87-105 at 512 KiB,
 * but 228-252 against 164-182 at 1 MiB. */
#define MCA_COLL_OFI_PAIR_MIN (16 * 1024)
#define MCA_COLL_OFI_SPLIT_MIN (256 * 1024)

#define MCA_COLL_OFI_GATHER_SETS 8
/* With messages, a root tells its contributors that it finished a call it
 * was root of only when gather_sets / 2 calls or more have
 * passed since it last told them (mca_coll_ofi_gather_done): a root of
 * back-to-back reductions sends one such message per gather_sets / 2
 * calls and its contributors stay up to gather_sets / 2 calls ahead.
 * Across two simulated hosts x 2 ranks, MPI_Reduce of 8-32 B took 9-10
 * us with 8 sets (a message per 4 calls) and 6-7 with 16. */
typedef struct mca_coll_ofi_component_t {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    int fanout;
    int cache_pages;
    size_t zc_min;     /* broadcasts from this size go without copies (see coll_ofi_bcast.c) */
    size_t zc_chunk;   /* in pieces of this size */
    int shared_memory; /* map the blocks of peers on this node (coll_ofi_cache.c) */
    int messages;      /* flags and small payloads to other nodes as messages (coll_ofi_am.c) */
    int max_mappings;  /* most memory mappings our blocks may hold (coll_ofi_shm.c); 0: auto */
    int output;
} mca_coll_ofi_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_ofi_component_t mca_coll_ofi_component;

/* What the module does with its communicator: decided once, at the first
 * collective, identically on every rank. */
enum {
    MCA_COLL_OFI_UNDECIDED = 0,
    /* inside the set-up exchange: the previous component's allreduce or
     * allgather may be built on the communicator's other collectives (coll
     * basic's allreduce calls its bcast and reduce), which are ours; they
     * are passed down while this lasts, on every rank alike */
    MCA_COLL_OFI_SETTING_UP,
    MCA_COLL_OFI_SERVING,
    MCA_COLL_OFI_FALLBACK
};

/* The start of the reserved area. */
typedef struct mca_coll_ofi_header_t {
    uint64_t probe;       /* where a waiting rank's probe gets land (mca_coll_ofi_wait) */
    uint64_t ring_done;   /* ring broadcasts whose slot this rank has emptied (peers read it) */
    uint64_t ring_peek;   /* where the get of a child's ring_done lands */
    uint64_t reduce_done; /* small reductions this rank has finished (peers read it) */
    uint64_t reduce_peek; /* where the get of a root's reduce_done lands */
    /* all local, rank 0's only: ranks that arrived at a barrier, in all,
     * and the last barrier everyone has arrived at (coll_ofi_barrier.c) */
    uint64_t arrived;
    uint64_t released;
    uint64_t flat_done; /* chunks of the big flat ring this rank has emptied (peers read it) */
    uint64_t flat_peek; /* where the get of a peer's flat_done lands */
    uint64_t pad[6];
} mca_coll_ofi_header_t;

typedef struct mca_coll_ofi_module_t {
    mca_coll_base_module_t super;

    /* the functions in place before ours, kept (with a reference on their
     * module) for the cases we do not serve and for the set-up exchange */
    mca_coll_base_module_allgather_fn_t prev_allgather;
    mca_coll_base_module_t *prev_allgather_module;
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_reduce_fn_t prev_reduce;
    mca_coll_base_module_t *prev_reduce_module;
    mca_coll_base_module_barrier_fn_t prev_barrier;
    mca_coll_base_module_t *prev_barrier_module;

    struct ompi_communicator_t *comm;
    int state;
    int rank;
    int size;
    uint32_t cid;
    /* this process's number for this module, different from any earlier
     * module's: a message for a communicator freed since (whose id a new
     * one may have taken) is told from one for this one (coll_ofi_am.c) */
    uint32_t instance;

    /* the one BTL that reaches every peer, and its endpoint per rank
     * (NULL for ourselves: our own block is reached with memcpy) */
    mca_btl_base_module_t *btl;
    struct mca_btl_base_endpoint_t **endpoints;

    /* the registered block and its layout (offsets from block) */
    char *block;
    bool block_mapped; /* block is a mapping of ours (shared or anonymous): munmap, not free */
    char shm_name[MCA_COLL_OFI_SHM_NAME]; /* its name until local peers mapped it */
    char **peer_map; /* per rank: its block mapped here, NULL: through the btl */
    int maps_held;   /* memory mappings reserved for the blocks (mca_coll_ofi_maps_reserve) */
    int n_mapped;    /* local peers mapped */
    /* per rank: its process id where it is mapped and its memory can be
     * read with process_vm_readv (coll_ofi_shm.c), else 0 */
    pid_t *peer_pid;
    /* broadcasts (reductions) from this size go without copies:
     * coll_ofi_zcopy_size; at least 64 KiB for broadcasts with messages
     * to peers that are not mapped; where every rank of more than two is
     * local never for reductions, and broadcasts are flat (flat_max), as
     * measured (coll_ofi_cache.c) */
    size_t zc_min, zc_reduce_min;
    /* all local: reductions on two ranks and allreduces split between the
     * ranks from these sizes (SIZE_MAX: never; mca_coll_ofi_zc_policy) */
    size_t pair_min, split_min;
    /* every rank maps every peer and reads their memory with
     * process_vm_readv: buffers of collectives without copies are not
     * registered with the btl (coll_ofi_cache.c) */
    bool all_local;
    /* flags, and payloads of up to am_max bytes, to peers that are not
     * mapped go as btl active messages (coll_ofi_am.c) */
    bool am;
    size_t am_max;
    /* per rank: a message to it has completed (through the btl), so its
     * connection is up and the next ones leave when posted (coll_ofi_am.c) */
    bool *am_met;
    size_t block_size;
    mca_btl_base_registration_handle_t *handle;
    size_t off_ready, off_credit, off_src, off_rdone, off_bounce, off_small, off_gather, off_ring,
        off_dir, off_zc, off_data;
    size_t small_size;    /* bytes of the small-allreduce slots, 0 if none */
    size_t small_bytes;   /* payload of a small-allreduce slot (see SMALL_BYTES) */
    size_t gather_bytes;  /* payload of a gather slot (see GATHER_SPAN) */
    size_t gather_stride; /* a gather slot: RING_HEAD + gather_bytes */
    size_t ring_bytes;    /* payload of a ring slot */
    size_t ring_stride;   /* a ring slot: RING_HEAD + ring_bytes */
    size_t off_flat;      /* the big flat ring (see FLAT_SLOTS) */
    size_t flat_bytes;    /* payload of one of its slots; 0 where there is none */
    size_t flat_stride;   /* RING_HEAD + flat_bytes */
    size_t flat_max;      /* all local: broadcasts up to this size are flat */
    uint64_t gather_sets; /* see GATHER_SETS */
    uint64_t small_calls; /* small allreduces done; equal on every rank */
    size_t dir_stride;
    char *data;
    size_t data_size;

    uint64_t step;          /* last step used; equal on every rank */
    uint64_t ring_calls;    /* ring broadcasts begun; equal on every rank */
    uint64_t barrier_calls; /* barriers begun; equal on every rank */
    uint64_t *ring_seen;    /* per peer: its ring_done when last read */
    uint64_t flat_calls;    /* chunks of the big flat ring begun; equal on every rank */
    uint64_t *flat_seen;    /* per peer: its flat_done when last read */
    uint64_t reduce_calls;  /* small reductions begun; equal on every rank */
    uint64_t *reduce_seen;  /* per peer: its reduce_done when last read */
    /* per peer: 1 + the last small reduction it was root of, and the
     * count it last told its contributors (with messages:
     * mca_coll_ofi_gather_room, mca_coll_ofi_gather_done; the same on
     * every rank) */
    uint64_t *gather_root_last;
    uint64_t *gather_told;
    /* per rank: the lowest rank of its node group (ranks that map each
     * other's blocks), which gathers the group's part of small
     * commutative reductions rooted on another node; NULL where that
     * does not apply (one group, no shared memory, more than SMALL_RANKS
     * ranks). The same on every rank. */
    int *leader;

    /* RDMA operations issued and not yet completed; first failure seen */
    volatile int32_t pending;
    volatile int op_status;

    /* served-call counters, reported at destruct */
    uint64_t n_bcast, n_reduce, n_allreduce, n_barrier, n_fallback;
    uint64_t n_zcopy;          /* broadcasts (MPI_Bcast or an allreduce's) moved without copies */
    uint64_t n_zcopy_reduce;   /* reductions (MPI_Reduce or an allreduce's) read without copies */
    uint64_t n_cma;            /* pieces read with process_vm_readv (coll_ofi_shm.c) */
    uint64_t n_grouped;        /* small reductions whose node group's part we gathered */
    uint64_t n_flat;           /* small broadcasts all local, one copy out of the root's slot */
    uint64_t n_shared_barrier; /* barriers by the processor-atomic counter (all local) */
    uint64_t n_told;           /* as a root of small reductions, done counts sent to the others */
    uint64_t n_count_read;     /* as a contributor, a root's done count read (none was told) */

    /* scratch of reductions without copies (coll_ofi_reduce.c), kept from
     * one call to the next: where a child's piece lands (registered), and
     * the partial result of a rank that is neither root nor leaf */
    char *zc_in;
    size_t zc_in_size;
    mca_btl_base_registration_handle_t *zc_in_handle;
    char *zc_acc;
    size_t zc_acc_size;
} mca_coll_ofi_module_t;

OBJ_CLASS_DECLARATION(mca_coll_ofi_module_t);

/* component / module */
mca_coll_base_module_t *mca_coll_ofi_comm_query(struct ompi_communicator_t *comm, int *priority);

/* blocks in shared memory for peers on this node (coll_ofi_shm.c) */
/* Whether a peer of the communicator is on another node. */
bool mca_coll_ofi_spans_nodes(mca_coll_ofi_module_t *m);
/* Reserve the memory mappings the communicator's blocks will take (ours
 * and one per local peer); false, with *WHY, when the process would hold
 * more than coll_ofi_max_mappings. Given back by mca_coll_ofi_maps_return. */
bool mca_coll_ofi_maps_reserve(mca_coll_ofi_module_t *m, const char **why);
void mca_coll_ofi_maps_return(mca_coll_ofi_module_t *m);
void mca_coll_ofi_shm_create(mca_coll_ofi_module_t *m, size_t size);
bool mca_coll_ofi_shm_attach(mca_coll_ofi_module_t *m);
void mca_coll_ofi_shm_unlink(mca_coll_ofi_module_t *m);
void mca_coll_ofi_shm_release(mca_coll_ofi_module_t *m);
/* Read LEN bytes at RADDR of mapped PEER's memory (any of it, not only its
 * block) into LOCAL with one copy of our own; OMPI_ERR_NOT_AVAILABLE when
 * the kernel refuses and the btl can take over, OMPI_ERROR (said) when it
 * cannot (all_local). */
/* Write LEN bytes at LOCAL to RADDR in local peer PEER with
 * process_vm_writev (every rank local only: m->all_local). */
int mca_coll_ofi_shm_write(mca_coll_ofi_module_t *m, int peer, uint64_t raddr, const void *local,
                           size_t len);
int mca_coll_ofi_shm_read(mca_coll_ofi_module_t *m, int peer, void *local, uint64_t raddr,
                          size_t len);

/* active messages to peers on other nodes (coll_ofi_am.c) */
void mca_coll_ofi_am_attach(mca_coll_ofi_module_t *m);
void mca_coll_ofi_am_detach(mca_coll_ofi_module_t *m);
void mca_coll_ofi_am_fini(void);
/* LEN bytes of DATA to DATA_OFF of PEER's block, then VALUE into its flag
 * at FLAG_OFF (kept if larger), in one message. HINT: PEER may be out of
 * MPI and nothing of this call waits for it (a root's count told):
 * never waited for, even as the first message to PEER */
int mca_coll_ofi_am_send(mca_coll_ofi_module_t *m, int peer, const void *data, size_t data_off,
                         size_t len, size_t flag_off, uint64_t value, bool hint);

/* cache: set-up, teardown and the RDMA primitives */
int mca_coll_ofi_cache_ready(mca_coll_ofi_module_t *m);
void mca_coll_ofi_cache_release(mca_coll_ofi_module_t *m);
uint64_t *mca_coll_ofi_slot(mca_coll_ofi_module_t *m, size_t area_off, int index);
/* The 64-bit field at FIELD (0: block address, MCA_COLL_OFI_DIR_PID,
 * MCA_COLL_OFI_DIR_INST) of RANK's directory entry. */
uint64_t mca_coll_ofi_dir_field(const mca_coll_ofi_module_t *m, int rank, size_t field);

/* Whether a btl's answer RC means "progress, then try again" (BTL 3.1:
 * out of resources for now). Our btl also answers so for a peer it found
 * dead, whom the next progress pass names: the job ends there, with the
 * rank named, instead of failing the collective first. */
static inline bool mca_coll_ofi_try_again(int rc)
{
    return OPAL_ERR_OUT_OF_RESOURCE == rc || OPAL_ERR_TEMP_OUT_OF_RESOURCE == rc;
}
int mca_coll_ofi_put(mca_coll_ofi_module_t *m, int peer, void *local, size_t remote_off,
                     size_t size);
int mca_coll_ofi_get(mca_coll_ofi_module_t *m, int peer, void *local, size_t remote_off,
                     size_t size);
/* Wait until PEER announced step S (ready slot), then get LEN bytes at
 * OFF of the buffer its zc entry names into LOCAL (registered as LHANDLE,
 * or NULL) and complete the get. */
int mca_coll_ofi_zc_get(mca_coll_ofi_module_t *m, int peer, uint64_t s, char *local,
                        mca_btl_base_registration_handle_t *lhandle, size_t off, size_t len);
/* Register a buffer outside the block with the module's btl for FLAGS
 * (MCA_BTL_REG_FLAG_*; *HANDLE NULL where the btl needs none); says why
 * it could not. */
int mca_coll_ofi_user_register(mca_coll_ofi_module_t *m, void *buf, size_t bytes, uint32_t flags,
                               mca_btl_base_registration_handle_t **handle);
void mca_coll_ofi_user_deregister(mca_coll_ofi_module_t *m,
                                  mca_btl_base_registration_handle_t *handle);
/* Write where BUF (BYTES, registered as HANDLE) is into our zc entry and
 * put it into PEER's (not flushed). */
int mca_coll_ofi_zc_publish(mca_coll_ofi_module_t *m, int peer, const void *buf, size_t bytes,
                            mca_btl_base_registration_handle_t *handle);
/* The end of a collective without copies that used STEPS steps: on error
 * wait for what is in flight; deregister HANDLE; advance the step. */
int mca_coll_ofi_zc_end(mca_coll_ofi_module_t *m, int rc,
                        mca_btl_base_registration_handle_t *handle, uint64_t steps);
/* The module's scratch for a reduction without copies: a landing zone of
 * SIZE bytes (registered) or a partial-result buffer of SIZE bytes; NULL
 * when out of memory or registrations (said). */
char *mca_coll_ofi_zc_landing(mca_coll_ofi_module_t *m, size_t size);
char *mca_coll_ofi_zc_partial(mca_coll_ofi_module_t *m, size_t size);
int mca_coll_ofi_complete(mca_coll_ofi_module_t *m);
/* End a collective without waiting for its own flag puts; report an
 * earlier failure. */
int mca_coll_ofi_leave(mca_coll_ofi_module_t *m);
int mca_coll_ofi_flush(mca_coll_ofi_module_t *m, int peer);
/* A payload and the flag that announces it, in two calls so that several
 * peers' transfers overlap: post sends LEN bytes of LOCAL (in our block)
 * to DATA_OFF of PEER's block where they go on their own (a mapped peer:
 * stored now; a peer on another node beyond a message: put), post_signal
 * with the same arguments makes them visible and writes VALUE at
 * FLAG_OFF (a message with the payload, or a flush and the flag). */
int mca_coll_ofi_post(mca_coll_ofi_module_t *m, int peer, void *local, size_t data_off, size_t len);
int mca_coll_ofi_post_signal(mca_coll_ofi_module_t *m, int peer, void *local, size_t data_off,
                             size_t len, size_t flag_off, uint64_t value);
int mca_coll_ofi_signal(mca_coll_ofi_module_t *m, int peer, size_t area_off, uint64_t value);
/* Write VALUE at REMOTE_OFF of PEER's block (as mca_coll_ofi_signal). */
int mca_coll_ofi_signal_at(mca_coll_ofi_module_t *m, int peer, size_t remote_off, uint64_t value);
/* Return once PEER has emptied its big flat ring slot of chunk C - FLAT_SLOTS. */
int mca_coll_ofi_flat_room(mca_coll_ofi_module_t *m, int peer, uint64_t c);
/* Return once PEER has emptied its ring slot of call C - RING_SLOTS. */
int mca_coll_ofi_ring_room(mca_coll_ofi_module_t *m, int peer, uint64_t c);
/* Return once PEER has finished small reduction C - gather_sets. */
int mca_coll_ofi_gather_room(mca_coll_ofi_module_t *m, int peer, uint64_t c);
/* Every rank after small reduction DONE - 1 rooted at ROOT. With
 * messages, the root tells every other rank, into its rdone slot for the
 * root, when gather_sets / 2 calls or more have passed since it last did, so
 * that mca_coll_ofi_gather_room waits for that instead of reading the
 * root's count across the network; every rank keeps track of what each
 * root told. */
int mca_coll_ofi_gather_done(mca_coll_ofi_module_t *m, int root, uint64_t done);
/* Wait until our slot INDEX of AREA_OFF holds at least VALUE, written by
 * rank WRITER (-1: any rank may be the last to write it); OMPI_ERROR when
 * the writer is found lost meanwhile. */
int mca_coll_ofi_wait(mca_coll_ofi_module_t *m, size_t area_off, int index, uint64_t value,
                      int writer);
/* The same for a word anywhere in our address space (a mapped peer's
 * block). */
int mca_coll_ofi_wait_word(mca_coll_ofi_module_t *m, const uint64_t *slot, uint64_t value,
                           int writer);

/* collectives */
int mca_coll_ofi_bcast(void *buff, int count, struct ompi_datatype_t *datatype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module);
int mca_coll_ofi_bcast_bytes(mca_coll_ofi_module_t *m, char *buf, size_t bytes, int root);
int mca_coll_ofi_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module);
int mca_coll_ofi_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_ofi_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_OFI_H */
