/*
 * btl/ofi component: MCA parameters and performance variables, provider
 * selection, module creation and the progress callback.
 */

/* this file defines the exported component (see btl_ofi_types.h) */
#define MCA_BTL_OFI_COMPONENT_DEFINITION
#include "btl_ofi.h"
#include "btl_ofi_atomics.h"
#include "btl_ofi_getv.h"
#include "btl_ofi_putv.h"
#include "btl_ofi_endpoint.h"
#include "btl_ofi_liveness.h"
#include "btl_ofi_context.h"
#include "btl_ofi_modex.h"
#include "btl_ofi_progress.h"
#include "btl_ofi_provenv.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_seq.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <limits.h>
#include <dlfcn.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/argv.h"
#include "opal/util/proc.h"

static int mca_btl_ofi_component_register(void);
static int mca_btl_ofi_component_open(void);
static int mca_btl_ofi_component_close(void);
static mca_btl_base_module_t **mca_btl_ofi_component_init(int *num_btl_modules,
                                                          bool enable_progress_threads,
                                                          bool enable_mpi_threads);

/* What the selected provider is called, readable as the MPI_T control
 * variable btl_ofi_selected_provider (the variable system owns the string). */
static char *mca_btl_ofi_selected_provider = NULL;

mca_btl_ofi_component_t mca_btl_ofi_component = {
    .super =
        {
            .btl_version =
                {
                    MCA_BTL_BASE_VERSION_3_1_0,
                    .mca_component_name = "ofi",
                    MCA_BASE_MAKE_VERSION(component, MCA_BTL_OFI_VERSION_MAJOR,
                                          MCA_BTL_OFI_VERSION_MINOR, MCA_BTL_OFI_VERSION_RELEASE),
                    .mca_open_component = mca_btl_ofi_component_open,
                    .mca_close_component = mca_btl_ofi_component_close,
                    .mca_register_component_params = mca_btl_ofi_component_register,
                },
            .btl_data =
                {
                    .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
                },
            .btl_init = mca_btl_ofi_component_init,
            .btl_progress = mca_btl_ofi_component_progress,
        },
    .output = -1,
};
extern mca_btl_ofi_component_t mca_btl_ofi_component_hidden
    __attribute__((alias("mca_btl_ofi_component"))) __opal_attribute_visibility__("hidden");
#define mca_btl_ofi_component mca_btl_ofi_component_hidden

/* ------------------------------------------------------------- parameters */

/* "default" is ours: manual data progress where the provider offers it.
 * We poll from opal_progress anyway, and a provider's own progress thread
 * competing with that poll costs orders of magnitude on a loaded node
 * (README, "Data progress", has the measurement). */
#define MCA_BTL_OFI_PROGRESS_DEFAULT (-1)

static const mca_base_var_enum_value_t mca_btl_ofi_progress_values[] = {
    {MCA_BTL_OFI_PROGRESS_DEFAULT, "default"},
    {FI_PROGRESS_UNSPEC, "unspec"},
    {FI_PROGRESS_AUTO, "auto"},
    {FI_PROGRESS_MANUAL, "manual"},
    {0, NULL},
};

static const mca_base_var_enum_value_t mca_btl_ofi_mode_values[] = {
    {MCA_BTL_OFI_MODE_ONE_SIDED, "one-sided"},
    {MCA_BTL_OFI_MODE_TWO_SIDED, "two-sided"},
    {MCA_BTL_OFI_MODE_FULL, "both"},
    {0, NULL},
};

static int mca_btl_ofi_reg_int(const char *name, const char *help, int *storage, int level,
                               mca_base_var_enum_t *values)
{
    return mca_base_component_var_register(&mca_btl_ofi_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_INT, values, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int mca_btl_ofi_reg_string(const char *name, const char *help, char **storage, int level,
                                  int flags, mca_base_var_scope_t scope)
{
    return mca_base_component_var_register(&mca_btl_ofi_component.super.btl_version, name, help,
                                           MCA_BASE_VAR_TYPE_STRING, NULL, 0, flags, level, scope,
                                           storage);
}

/* MPI_T counters: each is the sum over the module's contexts of one field
 * of mca_btl_ofi_counters_t, whose offset is the pvar's context. */
static int mca_btl_ofi_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    size_t offset = (size_t) (uintptr_t) pvar->ctx;
    unsigned long long total = 0;
    (void) obj;

    for (int m = 0; m < mca_btl_ofi_component.num_modules; ++m) {
        mca_btl_ofi_module_t *module = mca_btl_ofi_component.modules[m];
        if (NULL == module || NULL == module->contexts) {
            continue;
        }
        for (int i = 0; i < module->num_contexts; ++i) {
            const mca_btl_ofi_counters_t *counters = &module->contexts[i].counters;
            const mca_btl_ofi_counters_t *gathered = &module->contexts[i].putv.counters;
            const mca_btl_ofi_counters_t *asked = &module->contexts[i].getv.counters;
            total += *(const uint64_t *) ((const char *) counters + offset);
            total += *(const uint64_t *) ((const char *) gathered + offset);
            total += *(const uint64_t *) ((const char *) asked + offset);
            if (offsetof(mca_btl_ofi_counters_t, atomic_count) == offset) {
                total += (uint64_t) counters->atomic_local_count;
            }
        }
    }
    *(unsigned long long *) value = total;
    return OPAL_SUCCESS;
}

static void mca_btl_ofi_reg_counter(const char *name, const char *help, size_t offset)
{
    (void) mca_base_component_pvar_register(
        &mca_btl_ofi_component.super.btl_version, name, help, OPAL_INFO_LVL_4,
        MCA_BASE_PVAR_CLASS_COUNTER, MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
        MCA_BASE_VAR_BIND_NO_OBJECT, MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
        mca_btl_ofi_pvar_read, NULL, NULL, (void *) (uintptr_t) offset);
}

/* ----------------------------------------------------- fault injection */
#if MCA_BTL_OFI_FAULT_INJECTION

static const char *const mca_btl_ofi_fault_names[MCA_BTL_OFI_FAULT_MAX] = {
    "getinfo", "mr_reg", "write", "read", "atomic", "send", "cq", "rmacq", "remote", "repost"};
static int64_t mca_btl_ofi_fault_at[MCA_BTL_OFI_FAULT_MAX];
static volatile int64_t mca_btl_ofi_fault_calls[MCA_BTL_OFI_FAULT_MAX];
bool mca_btl_ofi_fault_armed = false;

bool mca_btl_ofi_fault_hit(int call)
{
    if (0 == mca_btl_ofi_fault_at[call]) {
        return false;
    }
    int64_t n = opal_atomic_add_fetch_64(&mca_btl_ofi_fault_calls[call], 1);
    if (MCA_BTL_OFI_FAULT_REPOST == call && n > mca_btl_ofi_fault_at[call]
        && n <= mca_btl_ofi_fault_at[call] + MCA_BTL_OFI_FAULT_REPOST_RUN) {
        return true; /* the rest of a run of full receive queues, said once */
    }
    if (n != mca_btl_ofi_fault_at[call]) {
        return false;
    }
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "injecting a failure into %s call %lld",
                        mca_btl_ofi_fault_names[call], (long long) mca_btl_ofi_fault_at[call]);
    return true;
}

/* Parse btl_ofi_inject_fault; a malformed item is named and ignored. */
static void mca_btl_ofi_fault_parse(const char *spec)
{
    char **items;

    memset(mca_btl_ofi_fault_at, 0, sizeof(mca_btl_ofi_fault_at));
    memset((void *) mca_btl_ofi_fault_calls, 0, sizeof(mca_btl_ofi_fault_calls));
    mca_btl_ofi_fault_armed = false;
    if (NULL == spec || '\0' == spec[0]) {
        return;
    }
    items = opal_argv_split(spec, ',');
    for (int i = 0; NULL != items && NULL != items[i]; ++i) {
        char *at = strchr(items[i], '@'), *end = NULL;
        long long n = 0;
        int call = -1;

        if (NULL != at) {
            *at = '\0';
            n = strtoll(at + 1, &end, 10);
            for (int k = 0; k < MCA_BTL_OFI_FAULT_MAX; ++k) {
                if (0 == strcmp(items[i], mca_btl_ofi_fault_names[k])) {
                    call = k;
                }
            }
        }
        if (call < 0 || NULL == end || '\0' != *end || n < 1) {
            MCA_BTL_OFI_SHOW_HELP("bad fault", opal_process_info.nodename, spec);
            continue;
        }
        mca_btl_ofi_fault_at[call] = n;
        mca_btl_ofi_fault_armed = true;
    }
    opal_argv_free(items);
}
#endif /* MCA_BTL_OFI_FAULT_INJECTION */

/* Which providers and interfaces (rails) may be used. */
static void mca_btl_ofi_register_choice(mca_btl_ofi_component_t *c)
{
    c->provider_include = NULL;
    (void) mca_btl_ofi_reg_string(
        "provider_include",
        "Comma-separated list of libfabric providers to consider, by full name as fi_info "
        "prints it (e.g. \"shm\", \"sockets\", \"tcp;ofi_rxm\", \"udp;ofi_rxd\"). The first "
        "listed provider offering FI_EP_RDM with FI_RMA and FI_ATOMIC is used. Takes precedence "
        "over btl_ofi_provider_exclude. Default: every provider, in libfabric's order",
        &c->provider_include, OPAL_INFO_LVL_4, 0, MCA_BASE_VAR_SCOPE_READONLY);

    c->provider_exclude = NULL;
    (void) mca_btl_ofi_reg_string(
        "provider_exclude",
        "Comma-separated list of libfabric providers never to use (full names as fi_info "
        "prints them). Ignored when btl_ofi_provider_include is set",
        &c->provider_exclude, OPAL_INFO_LVL_4, 0, MCA_BASE_VAR_SCOPE_READONLY);

    c->if_include = NULL;
    (void) mca_btl_ofi_reg_string(
        "if_include",
        "Comma-separated list of network interfaces (\"eth1\") or subnets in CIDR notation "
        "(\"10.1.0.0/16\", \"fd00::/64\") whose provider domains may be used, as "
        "btl_tcp_if_include. Mutually exclusive with btl_ofi_if_exclude. Providers without a "
        "network interface (shm) are not affected. Default: every interface, the loopback only "
        "when the provider offers no other",
        &c->if_include, OPAL_INFO_LVL_4, 0, MCA_BASE_VAR_SCOPE_READONLY);

    c->if_exclude = NULL;
    (void) mca_btl_ofi_reg_string(
        "if_exclude",
        "Comma-separated list of network interfaces or CIDR subnets whose provider domains "
        "are never used, as btl_tcp_if_exclude. Mutually exclusive with btl_ofi_if_include",
        &c->if_exclude, OPAL_INFO_LVL_4, 0, MCA_BASE_VAR_SCOPE_READONLY);

    c->max_rails = MCA_BTL_OFI_MAX_RAILS;
    (void) mca_btl_ofi_reg_int(
        "max_rails",
        "Most provider domains, one per network interface, used at once (rails): each is a "
        "btl module, so that ob1 spreads messages and RDMA over them. 1 uses the first "
        "allowed interface only (from 1 to 8, default 8)",
        &c->max_rails, OPAL_INFO_LVL_4, NULL);

    c->rail_split_size = 256 * 1024;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "rail_split_size",
        "Puts and gets of at least this many bytes are split over every rail that reaches "
        "the peer, in proportion to the rails' bandwidths (osc/rdma drives one module; ob1 "
        "spreads its own transfers too). 0: never split. Default 256 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->rail_split_size);
}

/* The receive buffers a module posts for messages. */
static void mca_btl_ofi_register_receives(mca_btl_ofi_component_t *c)
{
    c->rd_num = 8;
    (void) mca_btl_ofi_reg_int("rd_num",
                               "Receive buffers posted per context for messages (two-sided "
                               "traffic, emulated atomics): FI_MULTI_RECV buffers of "
                               "btl_ofi_multi_recv_size bytes where offered and sound (not shm, "
                               "udp;ofi_rxd), else one message each",
                               &c->rd_num, OPAL_INFO_LVL_5, NULL);

    c->multi_recv_size = 256 * 1024;
    (void) mca_btl_ofi_reg_int(
        "multi_recv_size",
        "Bytes of each receive buffer where the provider offers FI_MULTI_RECV (not used on shm "
        "and udp;ofi_rxd, which mishandle it): messages are "
        "packed into it back to back, so many small unexpected messages fit. At least twice "
        "btl_ofi_max_send_size plus a header (raised to that); 0 posts one buffer per message "
        "instead",
        &c->multi_recv_size, OPAL_INFO_LVL_5, NULL);
}

/* What a module opens: its traffic, contexts, progress (receive buffers:
 * mca_btl_ofi_register_receives). */
static void mca_btl_ofi_register_resources(mca_btl_ofi_component_t *c)
{
    mca_base_var_enum_t *progress_enum = NULL, *mode_enum = NULL;

    c->mode = MCA_BTL_OFI_MODE_FULL;
    (void) mca_base_var_enum_create("btl_ofi_mode", mca_btl_ofi_mode_values, &mode_enum);
    (void) mca_btl_ofi_reg_int("mode",
                               "Traffic this BTL carries: 0 (one-sided) RDMA and atomics for "
                               "osc/rdma and pml rendezvous; 1 (two-sided) pml send/receive "
                               "only; 2 (both, default) both where the provider offers FI_MSG, "
                               "else one-sided",
                               &c->mode, OPAL_INFO_LVL_5, mode_enum);
    OBJ_RELEASE(mode_enum);

    c->num_contexts_per_module = 1;
    (void) mca_btl_ofi_reg_int(
        "num_contexts_per_module",
        "Number of communication contexts (scalable-endpoint contexts, or plain endpoints where "
        "the provider has no scalable endpoints). Threads are spread over them; each has its "
        "own completion queue and lock. Clamped to what the provider allows",
        &c->num_contexts_per_module, OPAL_INFO_LVL_5, NULL);

    c->disable_sep = false;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "disable_sep",
        "Never use a scalable endpoint: contexts become plain endpoints sharing the domain",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->disable_sep);

    c->progress_threshold = 64;
    (void) mca_btl_ofi_reg_int(
        "progress_threshold",
        "Operations in flight on a context above which posting a new one also lets the "
        "provider move data (providers with manual progress; completions are still taken by "
        "progress only)",
        &c->progress_threshold, OPAL_INFO_LVL_5, NULL);

    c->num_cq_read = 64;
    (void) mca_btl_ofi_reg_int("num_cq_read",
                               "Largest number of completions read from one completion queue "
                               "per progress call (1 to 128)",
                               &c->num_cq_read, OPAL_INFO_LVL_5, NULL);

    mca_btl_ofi_register_receives(c);

    c->progress_mode = MCA_BTL_OFI_PROGRESS_DEFAULT;
    (void) mca_base_var_enum_create("btl_ofi_progress_mode", mca_btl_ofi_progress_values,
                                    &progress_enum);
    (void) mca_btl_ofi_reg_int("progress_mode",
                               "Data progress model asked of the provider: default (manual "
                               "where the provider offers it, else what it has), unspec (let "
                               "the provider choose), auto, or manual",
                               &c->progress_mode, OPAL_INFO_LVL_5, progress_enum);
    OBJ_RELEASE(progress_enum);

    c->progress_thread = false;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "progress_thread",
        "Start a background thread that drives the provider's data progress when it is manual "
        "(shm, tcp;ofi_rxm, udp;ofi_rxd), so that one-sided operations aimed at this process "
        "complete while it computes outside MPI. Costs a little CPU (see "
        "btl_ofi_progress_thread_interval) and turns the component's locks on",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
        &c->progress_thread);

    c->put_notify_size = 16 * 1024;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "put_notify_size",
        "Puts of at least this many bytes carry remote completion data (fi_writedata), so "
        "that their arrival counts as an event of the target's progress: with "
        "mpi_yield_when_idle, Open MPI's progress loop then keeps the core while large puts "
        "stream in instead of giving it away after every pass (puts of 64 KiB and more were "
        "up to 1.5x faster with both ranks on one core). 0: never. Ignored where the provider "
        "has no remote completion data, and for puts carried as messages. Default 16 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->put_notify_size);

    /* 16 KiB (a quarter of a message at most: 4 KiB on tcp;ofi_rxm, 16
     * KiB on sockets): across two hosts a window of 2 KiB puts went at
     * 266 MB/s one exchange each on tcp;ofi_rxm and 56 MB/s on sockets,
     * 867 and 885 MB/s gathered (bench/results/gather-2026-12-01); a put
     * alone is still the provider's own */
    c->put_gather_size = 16384;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "put_gather_size",
        "Puts without completion callback (osc/rdma's, finished by a flush) of at most this "
        "many bytes to one peer are gathered and sent as one message, which the target's "
        "progress stores piece by piece: a derived datatype of many small pieces (a column of "
        "a matrix, a strided ARMCI put) then costs a few messages instead of one exchange per "
        "piece. Only where this process sends messages anyway and puts are not already carried "
        "as messages (not udp;ofi_rxd), not with btl_ofi_progress_thread, with one rail; "
        "at most a quarter of the provider's message size (4 KiB on tcp;ofi_rxm). 0: never. "
        "Default 16 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->put_gather_size);

    c->get_gather_size = 16384; /* as puts: 2 KiB gets 246 -> 793 MB/s on tcp;ofi_rxm */
    (void) mca_base_component_var_register(
        &c->super.btl_version, "get_gather_size",
        "Gets of at most this many bytes from one peer are gathered and asked for in one "
        "message, which the target answers with all their bytes: a derived datatype of many "
        "small pieces (a column of a matrix, a strided ARMCI get) then costs a few messages "
        "instead of one exchange per piece; a get alone still goes as the provider's read. "
        "Where puts are gathered (btl_ofi_put_gather_size says where), with the same cap. 0: never. "
        "Default 16 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->get_gather_size);

    c->progress_thread_interval = 200;
    (void) mca_btl_ofi_reg_int("progress_thread_interval",
                               "Microseconds the progress thread sleeps between two passes over "
                               "the completion queues (1 to 1000000): lower reacts faster, "
                               "higher costs less CPU",
                               &c->progress_thread_interval, OPAL_INFO_LVL_5, NULL);
}

/* How lost peers are found. */
static void mca_btl_ofi_register_liveness(mca_btl_ofi_component_t *c)
{
    c->peer_check_interval = 1000;
    (void) mca_btl_ofi_reg_int(
        "peer_check_interval",
        "Milliseconds between checks that the peers on this host still exist; a peer found "
        "gone (killed, crashed) is reported to the upper layer, which ends the job naming it, "
        "and operations to it fail at once (stalled peers on other hosts are looked at every "
        "100 ms, or this often if less). 0 or less: never check, never probe",
        &c->peer_check_interval, OPAL_INFO_LVL_5, NULL);

    c->peer_probe_after = 0.5;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "peer_probe_after",
        "Seconds (fractions allowed) a peer on another host may leave our operations to it "
        "uncompleted before its host is probed (a TCP connection attempt to a port of the "
        "peer's: a live kernel answers at once, even while the peer computes outside MPI; "
        "while it keeps answering, the wait before the next probe doubles, up to 8 s or this "
        "value); a host that does not answer within btl_ofi_peer_probe_timeout is reported "
        "lost (host down, link cut). 0 or less: never probe (e.g. where a firewall drops such "
        "probes)",
        MCA_BASE_VAR_TYPE_DOUBLE, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->peer_probe_after);
    c->peer_probe_timeout = 3;
    (void) mca_btl_ofi_reg_int("peer_probe_timeout",
                               "Seconds a probe of a peer's host may go unanswered (see "
                               "btl_ofi_peer_probe_after) before the host is reported lost",
                               &c->peer_probe_timeout, OPAL_INFO_LVL_5, NULL);
}

/* Which operations travel as messages. */
static void mca_btl_ofi_register_paths(mca_btl_ofi_component_t *c)
{
    c->emulate_atomics = -1;
    (void) mca_btl_ofi_reg_int(
        "emulate_atomics",
        "Carry atomics as messages applied by the target's progress loop instead of the "
        "provider's atomics: -1 where the provider's are known broken (udp;ofi_rxd), and with "
        "several rails, so that one in flight on a link that fails can be sent again; 0 never, "
        "1 always (needs FI_MSG)",
        &c->emulate_atomics, OPAL_INFO_LVL_6, NULL);

    c->emulate_rma = -1;
    (void) mca_btl_ofi_reg_int(
        "emulate_rma",
        "Carry puts and gets as messages the target copies in or answers from its progress "
        "loop, in pieces of one message, instead of the provider's RMA: -1 where the "
        "provider's loses data (udp;ofi_rxd), 0 never, 1 always (needs FI_MSG)",
        &c->emulate_rma, OPAL_INFO_LVL_6, NULL);

    /* on where it holds: across nodes osc/rdma then takes its own node's
     * locks, posts and atomics with processor atomics instead of a round
     * trip through the provider to itself (a PSCW epoch across two
     * simulated hosts 41-62 us instead of 60-79; locks as fast, the
     * round trip saved going into 0015's fairness). It needs
     * osc-rdma/patches 0013-0015 (Debian's osc/rdma looks for the flag in
     * btl_flags, never sees it, and is unaffected): 0015 makes those
     * test-and-set locks reachable from the other nodes (MPICH's
     * rma/linked_list hung in 6 of 20 runs without it) */
    c->global_atomics = -1;
    (void) mca_btl_ofi_reg_int(
        "global_atomics",
        "Tell osc/rdma that this btl's atomics are atomic with respect to processor atomics "
        "on the same memory, so that it uses processor atomics and copies on its own node "
        "and the btl only for other nodes (faster PSCW epochs across nodes): "
        "-1 where the target's processor applies them (default; atomics carried as "
        "messages; shm, sockets, and ofi_rxm or ofi_rxd over any provider), 0 never, 1 always "
        "(only for a provider whose atomics are coherent with the processor's)",
        &c->global_atomics, OPAL_INFO_LVL_6, NULL);
}

/* What the component says: verbosity, version, choice; fault injection (testing). */
static void mca_btl_ofi_register_info(mca_btl_ofi_component_t *c)
{
    c->verbose = 0;
    (void) mca_btl_ofi_reg_int("verbose",
                               "Verbosity of this component's own output stream: 1 errors and "
                               "the provider choice (one line per candidate), 5 resources and "
                               "limits, 20 per-peer events",
                               &c->verbose, OPAL_INFO_LVL_3, NULL);

    c->version = MCA_BTL_OFI_VERSION_STRING;
    (void) mca_btl_ofi_reg_string("version", "Version of this btl/ofi component (read-only)",
                                  &c->version, OPAL_INFO_LVL_3, MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
                                  MCA_BASE_VAR_SCOPE_CONSTANT);

    mca_btl_ofi_selected_provider = "";
    (void) mca_btl_ofi_reg_string(
        "selected_provider",
        "The libfabric provider this process selected (read-only, empty before MPI_Init)",
        &mca_btl_ofi_selected_provider, OPAL_INFO_LVL_3, MCA_BASE_VAR_FLAG_DEFAULT_ONLY,
        MCA_BASE_VAR_SCOPE_CONSTANT);

#if MCA_BTL_OFI_FAULT_INJECTION
    c->inject_fault = NULL;
    (void) mca_btl_ofi_reg_string(
        "inject_fault",
        "TESTING ONLY: comma-separated CALL@N items; the Nth call of CALL fails with FI_EIO "
        "(CALL: getinfo, mr_reg, write, read, atomic, send) or, for cq, the Nth completion is "
        "reported as an error (rmacq: the Nth completion of a put, get or atomic; remote: after "
        "the Nth completion, an error on an operation a peer aimed at this process; repost: "
        "the Nth posting of a receive buffer and the 64 after it find the queue full, "
        "FI_ENOMEM). Empty (default): no fault",
        &c->inject_fault, OPAL_INFO_LVL_9, 0, MCA_BASE_VAR_SCOPE_READONLY);
#endif
}

/* MPI_T performance variables: the operations counted per process. */
static void mca_btl_ofi_register_counters(mca_btl_ofi_component_t *c)
{
    (void) c;

    mca_btl_ofi_reg_counter("put_count", "Put operations issued by this process",
                            offsetof(mca_btl_ofi_counters_t, put_count));
    mca_btl_ofi_reg_counter("get_count", "Get operations issued by this process",
                            offsetof(mca_btl_ofi_counters_t, get_count));
    mca_btl_ofi_reg_counter("atomic_count",
                            "Atomic operations (op, fetch-op, compare-swap) issued by this process",
                            offsetof(mca_btl_ofi_counters_t, atomic_count));
    mca_btl_ofi_reg_counter("put_bytes", "Bytes written by put operations",
                            offsetof(mca_btl_ofi_counters_t, put_bytes));
    mca_btl_ofi_reg_counter("get_bytes", "Bytes read by get operations",
                            offsetof(mca_btl_ofi_counters_t, get_bytes));
    mca_btl_ofi_reg_counter("send_count", "Two-sided messages sent by this process",
                            offsetof(mca_btl_ofi_counters_t, send_count));
    mca_btl_ofi_reg_counter("send_bytes", "Bytes of two-sided messages sent, headers included",
                            offsetof(mca_btl_ofi_counters_t, send_bytes));
    mca_btl_ofi_reg_counter("recv_count",
                            "Messages received by this process (two-sided, emulated atomics)",
                            offsetof(mca_btl_ofi_counters_t, recv_count));
    mca_btl_ofi_reg_counter("recv_bytes", "Bytes of messages received, headers included",
                            offsetof(mca_btl_ofi_counters_t, recv_bytes));
    mca_btl_ofi_reg_counter("put_gathered",
                            "Of put_count, the small puts gathered and sent in messages of "
                            "several (btl_ofi_put_gather_size)",
                            offsetof(mca_btl_ofi_counters_t, put_gathered));
    mca_btl_ofi_reg_counter("get_gathered",
                            "Of get_count, the small gets gathered and asked for in messages of "
                            "several (btl_ofi_get_gather_size)",
                            offsetof(mca_btl_ofi_counters_t, get_gathered));
    mca_btl_ofi_reg_counter("put_notified",
                            "Peers' puts that arrived in this process's memory and announced "
                            "it (btl_ofi_put_notify_size)",
                            offsetof(mca_btl_ofi_counters_t, put_notified));
}

static int mca_btl_ofi_component_register(void)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    mca_btl_ofi_register_choice(c);
    mca_btl_ofi_register_resources(c);
    mca_btl_ofi_register_liveness(c);
    mca_btl_ofi_register_paths(c);
    mca_btl_ofi_register_info(c);
    mca_btl_ofi_register_counters(c);

    /* latency, bandwidth, limits and flags: the base BTL parameters */
    return mca_btl_base_param_register(&c->super.btl_version, &mca_btl_ofi_module_template.super);
}

/* TEXT as one line (a new string, or NULL): a paragraph's lines joined by
 * a space; between paragraphs and before each indented line (the fields:
 * "  Host: ...") " | ". One line because tests and scripts that count a
 * message by its header or anchor on its fields ("Call: fi_write" at the
 * end of a line) must still find the show_help copy once. */
static char *mca_btl_ofi_one_line(const char *text)
{
    char *line = malloc(3 * strlen(text) + 1), *out = line;
    const char *in = text;

    if (NULL == line) {
        return NULL;
    }
    while ('\0' != *in) {
        int newlines = 0;
        bool indented = false;

        while ('\n' == *in || ' ' == *in) {
            newlines += '\n' == *in;
            indented = ' ' == *in && 0 < newlines;
            ++in;
        }
        if ('\0' == *in) {
            break;
        }
        if (out != line) {
            /* a separator for whatever run of blanks came before */
            const char *sep = (1 < newlines || indented) ? " | " : " ";

            memcpy(out, sep, strlen(sep));
            out += strlen(sep);
        }
        while ('\0' != *in && '\n' != *in) {
            *out++ = *in++;
        }
    }
    *out = '\0';
    return line;
}

void mca_btl_ofi_help_copy(const char *topic, ...)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    static const char ours[] = "btl/ofi: ";
    char *text, *line;
    va_list ap;

    if (0 > c->output || MCA_BTL_OFI_VERBOSE_ERROR > c->verbose) {
        return;
    }
    va_start(ap, topic);
    text = opal_show_help_vstring(MCA_BTL_OFI_HELP_FILE, topic, false, ap);
    va_end(ap);
    line = NULL == text ? NULL : mca_btl_ofi_one_line(text);
    if (NULL != line) {
        MCA_BTL_OFI_VERBOSE(
            MCA_BTL_OFI_VERBOSE_ERROR, "(show_help '%s') %s", topic,
            line + (0 == strncmp(line, ours, sizeof(ours) - 1) ? sizeof(ours) - 1 : 0));
    }
    free(line);
    free(text);
}

static int mca_btl_ofi_component_open(void)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    /* our largest message on tcp;ofi_rxm: the table's, or the user's */
    mca_btl_ofi_provenv_set((mca_btl_ofi_param_is_default("max_send_size")
                                 ? MCA_BTL_OFI_RXM_MAX_SEND
                                 : mca_btl_ofi_module_template.super.btl_max_send_size)
                            + sizeof(mca_btl_ofi_msg_hdr_t));

    /* Keep libfabric loaded for the life of the process. Providers leave
     * exit-time hooks behind that outlive fi_close (shm and tcp do), and
     * Open MPI unloads this component, and with it libfabric, at
     * MPI_Finalize: the process then crashed at exit in unmapped code. */
    (void) dlopen("libfabric.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);

#ifdef MCA_BTL_OFI_HELP_DIR
    /* out-of-tree installs keep our help file beside Open MPI's, not in it */
    (void) opal_show_help_add_dir(MCA_BTL_OFI_HELP_DIR);
#endif
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    c->num_modules = 0;
    c->modules[0] = NULL;
    c->only_context = NULL;
    return OPAL_SUCCESS;
}

static int mca_btl_ofi_component_close(void)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    if (c->output >= 0) {
        opal_output_close(c->output);
        c->output = -1;
    }
    return OPAL_SUCCESS;
}

/* --------------------------------------------------------------- checking */

/* Bounds of btl_ofi_max_send_size (bytes): ob1 needs room for its headers
 * in an eager message; 64 descriptors of the largest size are allocated at
 * once. */
#define MCA_BTL_OFI_MIN_SEND_SIZE 1024
#define MCA_BTL_OFI_MAX_SEND_SIZE (1024 * 1024)

/* Bring every integer parameter into its range, saying so once for each:
 * the value below (above) the range is replaced by BELOW (ABOVE), a bound
 * or the default. */
static void mca_btl_ofi_check_ints(void)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    const struct {
        int *value;
        const char *name;
        int lo, hi;
        const char *range;
        int below, above;
    } checks[] = {
        {&c->num_contexts_per_module, "btl_ofi_num_contexts_per_module", 1, INT_MAX, "at least 1",
         1, 1},
        {&c->num_cq_read, "btl_ofi_num_cq_read", 1, 128, "from 1 to 128", 1, 128},
        {&c->progress_threshold, "btl_ofi_progress_threshold", 1, INT_MAX, "at least 1", 64, 64},
        {&c->peer_probe_timeout, "btl_ofi_peer_probe_timeout", 1, 3600, "from 1 to 3600", 3, 3},
        {&c->emulate_atomics, "btl_ofi_emulate_atomics", -1, 1, "-1 (where needed), 0 or 1", -1,
         -1},
        {&c->emulate_rma, "btl_ofi_emulate_rma", -1, 1, "-1 (where needed), 0 or 1", -1, -1},
        {&c->global_atomics, "btl_ofi_global_atomics", -1, 1, "-1 (where known), 0 or 1", 0, 0},
        {&c->max_rails, "btl_ofi_max_rails", 1, MCA_BTL_OFI_MAX_RAILS, "from 1 to 8", 1,
         MCA_BTL_OFI_MAX_RAILS},
        {&c->rd_num, "btl_ofi_rd_num", 1, 4096, "from 1 to 4096", 8, 8},
        {&c->multi_recv_size, "btl_ofi_multi_recv_size", 0, INT_MAX, "0 or more", 0, 0},
        {&c->progress_thread_interval, "btl_ofi_progress_thread_interval", 1, 1000000,
         "from 1 to 1000000 (microseconds)", 1, 1000000},
        {&c->mode, "btl_ofi_mode", MCA_BTL_OFI_MODE_ONE_SIDED, MCA_BTL_OFI_MODE_FULL, "0, 1 or 2",
         MCA_BTL_OFI_MODE_FULL, MCA_BTL_OFI_MODE_FULL},
    };

    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); ++i) {
        int value = *checks[i].value;

        if (value < checks[i].lo || value > checks[i].hi) {
            int use = value < checks[i].lo ? checks[i].below : checks[i].above;

            MCA_BTL_OFI_SHOW_HELP("bad param", opal_process_info.nodename, checks[i].name, value,
                                  checks[i].range, use);
            *checks[i].value = use;
        }
    }
}

/* Bring every parameter into range, saying so once for each. */
static void mca_btl_ofi_check_params(void)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    const char *host = opal_process_info.nodename;

    mca_btl_ofi_check_ints();
    if (0 == c->rail_split_size) {
        c->rail_split_size = SIZE_MAX; /* never */
    }
    /* btl_ofi_max_send_size is a base BTL parameter kept in the module
     * template; it sizes every receive buffer and send descriptor (64 are
     * allocated at once). 0 (or a string, read as 0) left ob1 no eager limit
     * and a message blaming btl_ofi_eager_limit; -1 wrapped the buffer size
     * around and crashed in opal_free_list_grow_st (divide by zero); 2 GiB
     * failed the allocation and made us report "no usable provider". */
    if (mca_btl_ofi_module_template.super.btl_max_send_size < MCA_BTL_OFI_MIN_SEND_SIZE
        || mca_btl_ofi_module_template.super.btl_max_send_size > MCA_BTL_OFI_MAX_SEND_SIZE) {
        size_t use = mca_btl_ofi_module_template.super.btl_max_send_size < MCA_BTL_OFI_MIN_SEND_SIZE
                         ? MCA_BTL_OFI_MIN_SEND_SIZE
                         : MCA_BTL_OFI_MAX_SEND_SIZE;
        MCA_BTL_OFI_SHOW_HELP("bad size param", host, "btl_ofi_max_send_size",
                              mca_btl_ofi_module_template.super.btl_max_send_size,
                              (size_t) MCA_BTL_OFI_MIN_SEND_SIZE,
                              (size_t) MCA_BTL_OFI_MAX_SEND_SIZE, use);
        mca_btl_ofi_module_template.super.btl_max_send_size = use;
    }
    if (NULL != c->provider_include && '\0' == c->provider_include[0]) {
        c->provider_include = NULL;
    }
    if (NULL != c->provider_exclude && '\0' == c->provider_exclude[0]) {
        c->provider_exclude = NULL;
    }
    if (NULL != c->if_include && '\0' == c->if_include[0]) {
        c->if_include = NULL;
    }
    if (NULL != c->if_exclude && '\0' == c->if_exclude[0]) {
        c->if_exclude = NULL;
    }
    if (NULL != c->provider_include && NULL != c->provider_exclude) {
        MCA_BTL_OFI_SHOW_HELP("include and exclude", host, c->provider_include,
                              c->provider_exclude);
    }
}

static bool mca_btl_ofi_in_list(char **list, const char *name)
{
    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (0 == strcmp(list[i], name)) {
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------ interfaces */

/* An entry of btl_ofi_if_include/exclude as an address and prefix length
 * ("10.1.0.0/16", "fd00::/64", or one address); false when it is not an
 * address, i.e. it names an interface. */
static bool mca_btl_ofi_cidr_parse(const char *spec, int *family, unsigned char *net, int *bits,
                                   bool *valid)
{
    char buf[INET6_ADDRSTRLEN + 8], *slash, *end;
    long len;

    *valid = true;
    if (strlen(spec) >= sizeof(buf)) {
        return false;
    }
    strcpy(buf, spec);
    slash = strchr(buf, '/');
    if (NULL != slash) {
        *slash = '\0';
    }
    if (1 == inet_pton(AF_INET, buf, net)) {
        *family = AF_INET;
    } else if (1 == inet_pton(AF_INET6, buf, net)) {
        *family = AF_INET6;
    } else {
        /* "eth0" names an interface; "eth0/24" or "10.1/16" is nothing */
        *valid = (NULL == slash);
        return !*valid;
    }
    *bits = AF_INET == *family ? 32 : 128;
    if (NULL != slash) {
        len = strtol(slash + 1, &end, 10);
        if ('\0' == slash[1] || '\0' != *end || len < 0 || len > *bits) {
            *valid = false;
            return true;
        }
        *bits = (int) len;
    }
    return true;
}

/* Whether the first `bits' bits of two addresses agree. */
static bool mca_btl_ofi_prefix_equal(const unsigned char *a, const unsigned char *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;

    if (0 != memcmp(a, b, (size_t) whole)) {
        return false;
    }
    return 0 == rest || 0 == ((a[whole] ^ b[whole]) & (0xff << (8 - rest)));
}

/* The interface a candidate domain sends from (the one holding its source
 * address), or NULL for providers without one (shm). */
static const char *mca_btl_ofi_iface_of(const struct fi_info *info, const struct ifaddrs *ifs)
{
    int family, ifamily;
    const unsigned char *mine = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &family);

    if (NULL == mine) {
        return NULL;
    }
    for (const struct ifaddrs *i = ifs; NULL != i; i = i->ifa_next) {
        /* getifaddrs gives each address in the full size of its family */
        const unsigned char *theirs =
            mca_btl_ofi_sa_bytes(i->ifa_addr, sizeof(struct sockaddr_in6), &ifamily);
        if (NULL != theirs && ifamily == family
            && mca_btl_ofi_prefix_equal(mine, theirs, AF_INET == family ? 32 : 128)) {
            return i->ifa_name;
        }
    }
    /* tcp, sockets and udp name their domains after the interface */
    return info->domain_attr->name;
}

/* Whether a candidate on interface `iface' matches an entry of a list. */
static bool mca_btl_ofi_if_matches(char **list, const char *iface, const struct fi_info *info)
{
    unsigned char net[16];
    int family, afamily = AF_UNSPEC, bits;
    bool valid;
    const unsigned char *addr = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &afamily);

    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (!mca_btl_ofi_cidr_parse(list[i], &family, net, &bits, &valid)) {
            if (0 == strcmp(list[i], iface)) {
                return true;
            }
        } else if (valid && NULL != addr && family == afamily
                   && mca_btl_ofi_prefix_equal(addr, net, bits)) {
            return true;
        }
    }
    return false;
}

/* Says once per entry of an interface list what is wrong with it: a
 * malformed subnet, or an interface this host does not have (a list
 * shared by hosts may name another host's interface: a warning). */
static void mca_btl_ofi_if_list_check(const char *param, char **list, const struct ifaddrs *ifs)
{
    unsigned char net[16];
    int family, bits;
    bool valid, found;

    for (int i = 0; NULL != list && NULL != list[i]; ++i) {
        if (mca_btl_ofi_cidr_parse(list[i], &family, net, &bits, &valid)) {
            if (!valid) {
                MCA_BTL_OFI_SHOW_HELP(
                    "bad interface", opal_process_info.nodename, param, list[i],
                    "it is not a subnet in CIDR notation (address/prefix length)");
            }
            continue;
        }
        found = false;
        for (const struct ifaddrs *j = ifs; NULL != j && !found; j = j->ifa_next) {
            found = 0 == strcmp(j->ifa_name, list[i]);
        }
        if (!found) {
            MCA_BTL_OFI_SHOW_HELP("bad interface", opal_process_info.nodename, param, list[i],
                                  "this host has no interface of that name");
        }
    }
}

/* The kind of source address a candidate domain has: peers on other hosts
 * cannot use a loopback or an IPv6 link-local one (no interface scope
 * travels in the address). */
enum {
    MCA_BTL_OFI_ADDR_OTHER,
    MCA_BTL_OFI_ADDR_GLOBAL,
    MCA_BTL_OFI_ADDR_LOOPBACK,
    MCA_BTL_OFI_ADDR_LINKLOCAL
};

static int mca_btl_ofi_addr_kind(const struct fi_info *info)
{
    const struct sockaddr *sa = (const struct sockaddr *) info->src_addr;

    if (NULL == sa || info->src_addrlen < sizeof(sa->sa_family)) {
        return MCA_BTL_OFI_ADDR_OTHER;
    }
    if (AF_INET == sa->sa_family && info->src_addrlen >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
        return 127 == (ntohl(in->sin_addr.s_addr) >> 24) ? MCA_BTL_OFI_ADDR_LOOPBACK
                                                         : MCA_BTL_OFI_ADDR_GLOBAL;
    }
    if (AF_INET6 == sa->sa_family && info->src_addrlen >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
            return MCA_BTL_OFI_ADDR_LOOPBACK;
        }
        return IN6_IS_ADDR_LINKLOCAL(&in6->sin6_addr) ? MCA_BTL_OFI_ADDR_LINKLOCAL
                                                      : MCA_BTL_OFI_ADDR_GLOBAL;
    }
    return MCA_BTL_OFI_ADDR_OTHER;
}

/* The selection lists, split once, and this host's interfaces. */
typedef struct mca_btl_ofi_lists_t {
    char **prov_include, **prov_exclude, **if_include, **if_exclude;
    struct ifaddrs *ifs;
} mca_btl_ofi_lists_t;

/* Why btl_ofi_if_include/exclude leave a candidate out, or NULL; `named':
 * the include list names it. */
static const char *mca_btl_ofi_if_refusal(const struct fi_info *info, const char *iface,
                                          const mca_btl_ofi_lists_t *lists, bool *named)
{
    *named = false;
    if (NULL == iface) {
        return NULL; /* no network interface (shm): the lists do not apply */
    }
    if (NULL != lists->if_include) {
        if (!mca_btl_ofi_if_matches(lists->if_include, iface, info)) {
            return "interface not in btl_ofi_if_include";
        }
        *named = true;
    }
    if (mca_btl_ofi_if_matches(lists->if_exclude, iface, info)) {
        return "interface listed in btl_ofi_if_exclude";
    }
    return NULL;
}

/* Whether the provider of `info' also offers a domain, allowed by the
 * interface lists, with an address that other hosts can reach. */
static bool mca_btl_ofi_has_global_twin(const struct fi_info *all, const struct fi_info *info,
                                        const mca_btl_ofi_lists_t *lists)
{
    bool named;

    for (; NULL != all; all = all->next) {
        if (0 == strcmp(all->fabric_attr->prov_name, info->fabric_attr->prov_name)
            && MCA_BTL_OFI_ADDR_GLOBAL == mca_btl_ofi_addr_kind(all)
            && NULL
                   == mca_btl_ofi_if_refusal(all, mca_btl_ofi_iface_of(all, lists->ifs), lists,
                                             &named)) {
            return true;
        }
    }
    return false;
}

/* "eth1 10.77.1.1" for the verbose lines: domain names repeat across
 * address families. */
static void mca_btl_ofi_where(const struct fi_info *info, const char *iface, char *buf, size_t size)
{
    char addr[INET6_ADDRSTRLEN] = "?";
    int family;
    const unsigned char *bytes = mca_btl_ofi_sa_bytes(info->src_addr, info->src_addrlen, &family);

    if (NULL != bytes) {
        (void) inet_ntop(family, bytes, addr, sizeof(addr));
    }
    snprintf(buf, size, "%s (interface %s, %s)", info->domain_attr->name, iface, addr);
}

static const char *mca_btl_ofi_refusal(const struct fi_info *all, const struct fi_info *info,
                                       const char *iface, const mca_btl_ofi_lists_t *lists)
{
    const char *prov = info->fabric_attr->prov_name;
    char **include = lists->prov_include, **exclude = lists->prov_exclude;
    int kind = mca_btl_ofi_addr_kind(info);
    const char *why;
    bool named;

    if (NULL != include && !mca_btl_ofi_in_list(include, prov)) {
        return "not in btl_ofi_provider_include";
    }
    if (NULL == include && mca_btl_ofi_in_list(exclude, prov)) {
        return "listed in btl_ofi_provider_exclude";
    }
    if (info->domain_attr->mr_mode & (FI_MR_LOCAL | FI_MR_ENDPOINT | FI_MR_RMA_EVENT)) {
        return "needs local or per-endpoint memory registration (FI_MR_LOCAL/FI_MR_ENDPOINT)";
    }
    why = mca_btl_ofi_if_refusal(info, iface, lists, &named);
    if (NULL != why) {
        return why;
    }
    if (MCA_BTL_OFI_ADDR_LINKLOCAL == kind) {
        return "IPv6 link-local address (peers on other hosts cannot use it)";
    }
    if (MCA_BTL_OFI_ADDR_LOOPBACK == kind && !named
        && mca_btl_ofi_has_global_twin(all, info, lists)) {
        return "loopback, and the provider offers another interface (peers on other hosts "
               "cannot reach a loopback address; name it in btl_ofi_if_include to use it)";
    }
    return NULL;
}

/* Whether two candidates are one provider domain on one address. */
static bool mca_btl_ofi_same_domain(const struct fi_info *a, const struct fi_info *b)
{
    return 0 == strcmp(a->fabric_attr->prov_name, b->fabric_attr->prov_name)
           && 0 == strcmp(a->domain_attr->name, b->domain_attr->name)
           && a->src_addrlen == b->src_addrlen
           && (0 == a->src_addrlen || 0 == memcmp(a->src_addr, b->src_addr, a->src_addrlen));
}

/* Whether INFO's domain and address came earlier in ALL: libfabric lists
 * one domain several times (ofi_rxm once per variant of the core
 * provider's attributes). What decides a candidate (lists, address,
 * rails, its twin with FI_DELIVERY_COMPLETE) is the domain and address,
 * so the first listing's verdict holds for the rest: they are neither
 * looked at again nor printed again. */
static bool mca_btl_ofi_listed_before(const struct fi_info *all, const struct fi_info *info)
{
    for (; all != info; all = all->next) {
        if (mca_btl_ofi_same_domain(all, info)) {
            return true;
        }
    }
    return false;
}

static const struct fi_info *mca_btl_ofi_find_twin(const struct fi_info *list,
                                                   const struct fi_info *info)
{
    for (; NULL != list; list = list->next) {
        if (0 == strcmp(list->fabric_attr->prov_name, info->fabric_attr->prov_name)
            && 0 == strcmp(list->fabric_attr->name, info->fabric_attr->name)
            && 0 == strcmp(list->domain_attr->name, info->domain_attr->name)) {
            return list;
        }
    }
    return NULL;
}

static struct fi_info *mca_btl_ofi_hints(bool delivery_complete)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    struct fi_info *hints = fi_allocinfo();

    if (NULL == hints) {
        return NULL;
    }
    hints->caps = FI_RMA | FI_ATOMIC;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    hints->domain_attr->threading = c->locking ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
    if (MCA_BTL_OFI_PROGRESS_DEFAULT != c->progress_mode) {
        hints->domain_attr->data_progress = (enum fi_progress) c->progress_mode;
    }
    if (delivery_complete) {
        hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
    }
    return hints;
}

/* The same provider and domain with more capabilities and the given data
 * progress, or NULL. */
static struct fi_info *mca_btl_ofi_refine(const struct fi_info *info, uint64_t caps,
                                          enum fi_progress progress)
{
    struct fi_info *hints = fi_dupinfo(info), *found = NULL;

    if (NULL == hints) {
        return NULL;
    }
    hints->caps |= caps;
    hints->domain_attr->data_progress = progress;
    if (0 != fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, &found)) {
        found = NULL;
    } else if (NULL != found->next) {
        /* the first match is the one we asked for; drop the rest */
        fi_freeinfo(found->next);
        found->next = NULL;
    }
    fi_freeinfo(hints);
    return found;
}

/* The candidate as we will open it: with the extra capabilities, and
 * manual data progress unless the user asked otherwise. */
static struct fi_info *mca_btl_ofi_pick(const struct fi_info *twin, uint64_t extra)
{
    struct fi_info *mine = NULL;

    if (MCA_BTL_OFI_PROGRESS_DEFAULT == mca_btl_ofi_component.progress_mode
        && FI_PROGRESS_MANUAL != twin->domain_attr->data_progress) {
        mine = mca_btl_ofi_refine(twin, extra, FI_PROGRESS_MANUAL);
    }
    if (NULL == mine) {
        mine = mca_btl_ofi_refine(twin, extra, twin->domain_attr->data_progress);
    }
    return mine;
}

/* --------------------------------------------------------------- init */

/* Who handles each message type of btl/ofi's own: the files that own the
 * protocols, so that frag.c delivers them without calling up; set once, before any
 * module posts a receive buffer. */
static void mca_btl_ofi_msg_handlers_set(void)
{
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_AMO_REQ, mca_btl_ofi_amo_serve);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_AMO_RESP, mca_btl_ofi_amo_answer);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_PUT, mca_btl_ofi_rma_serve);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_GET, mca_btl_ofi_rma_serve);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_RMA_RESP, mca_btl_ofi_rma_answer);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_PUTV, mca_btl_ofi_putv_serve);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_GETV, mca_btl_ofi_getv_serve);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_RAIL_CUT, mca_btl_ofi_rail_cut_heard);
    mca_btl_ofi_msg_handler_set(MCA_BTL_OFI_MSG_ACK, mca_btl_ofi_seq_acked);
}

/* The selection lists, split once, and this host's interfaces; false
 * (said) when the interface lists contradict each other. */
static bool mca_btl_ofi_lists_open(mca_btl_ofi_lists_t *lists)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;

    if (NULL != c->if_include && NULL != c->if_exclude) {
        /* as btl/tcp: which one the user meant cannot be guessed */
        MCA_BTL_OFI_SHOW_HELP("if include and exclude", opal_process_info.nodename, c->if_include,
                              c->if_exclude);
        return false;
    }
    lists->prov_include = opal_argv_split(c->provider_include, ',');
    lists->prov_exclude = opal_argv_split(c->provider_exclude, ',');
    lists->if_include = opal_argv_split(c->if_include, ',');
    lists->if_exclude = opal_argv_split(c->if_exclude, ',');
    if (0 != getifaddrs(&lists->ifs)) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "getifaddrs failed (%s): interfaces are known by domain name only",
                            strerror(errno));
        lists->ifs = NULL;
    }
    mca_btl_ofi_if_list_check("btl_ofi_if_include", lists->if_include, lists->ifs);
    mca_btl_ofi_if_list_check("btl_ofi_if_exclude", lists->if_exclude, lists->ifs);
    return true;
}

static void mca_btl_ofi_lists_close(mca_btl_ofi_lists_t *lists)
{
    opal_argv_free(lists->prov_include);
    opal_argv_free(lists->prov_exclude);
    opal_argv_free(lists->if_include);
    opal_argv_free(lists->if_exclude);
    if (NULL != lists->ifs) {
        freeifaddrs(lists->ifs);
    }
}

/* Every candidate (ALL), and the same asked with FI_DELIVERY_COMPLETE
 * (WITH_DC): a candidate without a twin there cannot promise remote
 * completion. Either may be NULL. */
static void mca_btl_ofi_candidates(struct fi_info **all, struct fi_info **with_dc)
{
    struct fi_info *hints;
    int rc;

    *all = *with_dc = NULL;
    hints = mca_btl_ofi_hints(false);
    if (NULL == hints) {
        return;
    }
    rc = MCA_BTL_OFI_FAULT(MCA_BTL_OFI_FAULT_GETINFO)
             ? -FI_EIO
             : fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, all);
    fi_freeinfo(hints);
    if (0 != rc) {
        /* no match at all is -FI_ENODATA, reported as "no provider" */
        if (-FI_ENODATA != rc) {
            MCA_BTL_OFI_REPORT("fi_getinfo", rc);
        }
        *all = NULL;
        return;
    }
    hints = mca_btl_ofi_hints(true);
    if (NULL == hints) {
        return;
    }
    rc = fi_getinfo(MCA_BTL_OFI_FI_API, NULL, NULL, 0, hints, with_dc);
    fi_freeinfo(hints);
    if (0 != rc) {
        *with_dc = NULL;
    }
}

/* The candidate TWIN (of provider PROV, domain DOM) asked for the
 * capabilities our paths need on it: messages for two-sided traffic and
 * emulated atomics and RMA, multi-receive buffers where it has them; NULL
 * (said) when it lacks what we need. */
static struct fi_info *mca_btl_ofi_candidate_caps(const struct fi_info *twin, const char *prov,
                                                  const char *dom)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    uint32_t quirks = mca_btl_ofi_provider_quirks(prov);
    bool msg = MCA_BTL_OFI_MODE_ONE_SIDED != c->mode || 1 == c->emulate_atomics
               || 1 == c->emulate_rma
               || (0 > c->emulate_atomics && (quirks & MCA_BTL_OFI_QUIRK_FETCH_ATOMICS))
               || (0 > c->emulate_rma && (quirks & MCA_BTL_OFI_QUIRK_RMA));
    uint64_t extra = msg ? FI_MSG : 0;
    struct fi_info *mine = NULL;

    if (msg && c->multi_recv_size > 0) {
        /* pack messages into few big buffers where the provider can */
        mine = mca_btl_ofi_pick(twin, extra | FI_MULTI_RECV);
    }
    if (NULL == mine) {
        mine = mca_btl_ofi_pick(twin, extra);
    }
    if (NULL == mine && MCA_BTL_OFI_MODE_FULL == c->mode) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_INFO,
                            "candidate %s domain %s: no FI_MSG, one-sided traffic only", prov, dom);
        mine = mca_btl_ofi_pick(twin, 0);
    }
    if (NULL == mine) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "candidate %s domain %s: refused, no FI_MSG for messages", prov, dom);
    }
    return mine;
}

/* Go through the candidates in libfabric's order and open a module (a
 * rail) on each one the lists and the rails taken so far allow, saying
 * for each why it was refused or that it was taken. Returns how many were
 * taken (into TAKEN, their interfaces into TAKEN_IF); SEEN: every provider
 * met, for the message when none is. */
static int mca_btl_ofi_take_candidates(struct fi_info *all, struct fi_info *with_dc,
                                       mca_btl_ofi_lists_t *lists, mca_btl_ofi_module_t **taken,
                                       char (*taken_if)[IF_NAMESIZE + 1], char ***seen)
{
    int ntaken = 0, rc;

    for (struct fi_info *info = all; NULL != info; info = info->next) {
        const char *prov = info->fabric_attr->prov_name;
        const char *dom = info->domain_attr->name;
        const char *iface, *why;
        const struct fi_info *twin = NULL;
        char where[INET6_ADDRSTRLEN + IF_NAMESIZE + 8] = "";
        mca_btl_ofi_module_t *module;
        struct fi_info *mine;

        if (mca_btl_ofi_listed_before(all, info)) {
            continue;
        }
        iface = mca_btl_ofi_iface_of(info, lists->ifs);
        why = mca_btl_ofi_refusal(all, info, iface, lists);
        if (!mca_btl_ofi_in_list(*seen, prov)) {
            opal_argv_append_nosize(seen, prov);
        }
        if (NULL != iface) {
            mca_btl_ofi_where(info, iface, where, sizeof(where));
            dom = where;
        }
        if (NULL == why && ntaken > 0) {
            why = mca_btl_ofi_rail_refusal(taken, taken_if, ntaken, info, iface);
        }
        if (NULL == why && NULL == (twin = mca_btl_ofi_find_twin(with_dc, info))) {
            why = "no FI_DELIVERY_COMPLETE, so a flush could not promise remote completion";
        }
        if (NULL != why) {
            MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "candidate %s domain %s: refused, %s",
                                prov, dom, why);
            continue;
        }
        mine = mca_btl_ofi_candidate_caps(twin, prov, dom);
        if (NULL == mine) {
            continue;
        }
        module = mca_btl_ofi_module_alloc();
        if (NULL == module) {
            fi_freeinfo(mine);
            break;
        }
        module->rail = ntaken;
        mca_btl_ofi_rail_net(module, info, iface, lists->ifs);
        rc = mca_btl_ofi_module_init(module, mine);
        if (OPAL_SUCCESS != rc) {
            fi_freeinfo(mine);
            mca_btl_ofi_module_free(module);
            if (OPAL_ERR_NOT_SUPPORTED != rc) {
                MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                                    "candidate %s domain %s: refused, opening it failed", prov,
                                    dom);
            }
            continue;
        }
        snprintf(taken_if[ntaken], sizeof(taken_if[ntaken]), "%s", NULL != iface ? iface : "");
        taken[ntaken++] = module;
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR, "candidate %s domain %s: taken (rail %d)",
                            prov, dom, ntaken - 1);
        mca_btl_ofi_rail_speed(module, info, iface);
    }
    return ntaken;
}

/* The modules taken become the component's: checked, published in the
 * modex, set up for several rails where there are; the array handed to
 * the BTL framework, or NULL (the modules then finalized). */
static mca_btl_base_module_t **mca_btl_ofi_publish(mca_btl_ofi_module_t **taken, int ntaken)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_base_module_t **modules = NULL;
    int rc;

    for (int i = 0; i < ntaken; ++i) {
        rc = mca_btl_base_param_verify(&taken[i]->super);
        if (OPAL_SUCCESS != rc) {
            goto err_finalize;
        }
    }
    rc = mca_btl_ofi_modex_send(taken, ntaken);
    if (OPAL_SUCCESS != rc) {
        goto err_finalize;
    }
    modules = malloc((size_t) ntaken * sizeof(*modules));
    if (NULL == modules) {
        goto err_finalize;
    }
    for (int i = 0; i < ntaken; ++i) {
        modules[i] = &taken[i]->super;
        c->modules[i] = taken[i];
        if (ntaken > 1) {
            mca_btl_ofi_rails_join(taken[i]);
        }
    }
    c->num_modules = ntaken;
    c->only_context = 1 == ntaken && 1 == taken[0]->num_contexts ? taken[0]->contexts : NULL;
    free(mca_btl_ofi_selected_provider);
    mca_btl_ofi_selected_provider = strdup(taken[0]->info->fabric_attr->prov_name);
    return modules;

err_finalize:
    for (int i = 0; i < ntaken; ++i) {
        (void) mca_btl_ofi_finalize(&taken[i]->super);
    }
    return NULL;
}

static mca_btl_base_module_t **mca_btl_ofi_component_init(int *num_btl_modules,
                                                          bool enable_progress_threads,
                                                          bool enable_mpi_threads)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    struct fi_info *all, *with_dc;
    mca_btl_ofi_lists_t lists = {NULL, NULL, NULL, NULL, NULL};
    mca_btl_ofi_module_t *taken[MCA_BTL_OFI_MAX_RAILS];
    char taken_if[MCA_BTL_OFI_MAX_RAILS][IF_NAMESIZE + 1];
    mca_btl_base_module_t **modules = NULL;
    char **seen = NULL;
    char *seen_str;
    int ntaken;
    (void) enable_progress_threads;

    *num_btl_modules = 0;
    mca_btl_ofi_check_params();
    c->locking = enable_mpi_threads || c->progress_thread;
    memcpy(&c->my_name, &OPAL_PROC_MY_NAME, sizeof(c->my_name));
    c->mpi_state = (const volatile int32_t *) dlsym(RTLD_DEFAULT, "ompi_mpi_state");
#if MCA_BTL_OFI_FAULT_INJECTION
    mca_btl_ofi_fault_parse(c->inject_fault);
#endif
    if (!mca_btl_ofi_lists_open(&lists)) {
        return NULL;
    }
    mca_btl_ofi_msg_handlers_set();
    mca_btl_ofi_candidates(&all, &with_dc);
    ntaken = mca_btl_ofi_take_candidates(all, with_dc, &lists, taken, taken_if, &seen);
    if (0 == ntaken) {
        seen_str = opal_argv_join(seen, ',');
        MCA_BTL_OFI_SHOW_HELP("no provider", opal_process_info.nodename,
                              c->provider_include ? c->provider_include : "(not set)",
                              c->provider_exclude ? c->provider_exclude : "(not set)",
                              c->if_include ? c->if_include : "(not set)",
                              c->if_exclude ? c->if_exclude : "(not set)",
                              (seen_str && seen_str[0]) ? seen_str : "(none)");
        free(seen_str);
    } else {
        modules = mca_btl_ofi_publish(taken, ntaken);
        if (NULL != modules) {
            *num_btl_modules = ntaken;
            mca_btl_ofi_provenv_say(taken[0]->info);
        }
    }
    mca_btl_ofi_lists_close(&lists);
    opal_argv_free(seen);
    if (NULL != all) {
        fi_freeinfo(all);
    }
    if (NULL != with_dc) {
        fi_freeinfo(with_dc);
    }
    return modules;
}
