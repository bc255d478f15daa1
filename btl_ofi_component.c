/*
 * btl/ofi component: MCA parameters and performance variables, open and
 * close, and init, which takes the modules btl_ofi_discovery.c opens on
 * the allowed providers and publishes them.
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
#include "btl_ofi_discovery.h"
#include "btl_ofi_modex.h"
#include "btl_ofi_progress.h"
#include "btl_ofi_provenv.h"
#include "btl_ofi_emulate.h"
#include "btl_ofi_frag.h"
#include "btl_ofi_rails.h"
#include "btl_ofi_seq.h"

#include <stdarg.h>
#include <limits.h>
#include <dlfcn.h>

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
            mca_btl_ofi_context_t *context = module->contexts + i;
            const mca_btl_ofi_counters_t *counters = &context->counters;
            const mca_btl_ofi_counters_t *gathered = &context->putv.counters;
            const mca_btl_ofi_counters_t *asked = &context->getv.counters;
            /* each under the lock its writers hold: the progress thread
             * counts the messages it sends while MPI_T reads (helgrind) */
            MCA_BTL_OFI_LOCK(&context->lock);
            total += *(const uint64_t *) ((const char *) counters + offset);
            if (offsetof(mca_btl_ofi_counters_t, atomic_count) == offset) {
                total += (uint64_t) counters->atomic_local_count;
            }
            MCA_BTL_OFI_UNLOCK(&context->lock);
            MCA_BTL_OFI_LOCK(&context->putv.lock);
            total += *(const uint64_t *) ((const char *) gathered + offset);
            MCA_BTL_OFI_UNLOCK(&context->putv.lock);
            MCA_BTL_OFI_LOCK(&context->getv.lock);
            total += *(const uint64_t *) ((const char *) asked + offset);
            MCA_BTL_OFI_UNLOCK(&context->getv.lock);
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

    /* 16 KiB (a quarter of a message at most: 16 KiB on tcp;ofi_rxm, 4
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
        "at most a quarter of the provider's message size (4 KiB on sockets). 0: never. "
        "Default 16 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->put_gather_size);

    c->stream_budget = MCA_BTL_OFI_STREAM_BUDGET;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "stream_budget",
        "Bytes of messages in flight to one peer of this node where the provider's "
        "connection between two local processes stops for good once the receiver holds too "
        "much it has not read (sockets over loopback; see the README, Stream budget). "
        "Further ones wait for earlier ones to complete (pvar btl_ofi_stream_held). 0: no "
        "budget, at that risk. Default 20 KiB",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5, MCA_BASE_VAR_SCOPE_READONLY,
        &c->stream_budget);

    c->get_gather_size = 16384; /* as puts: 2 KiB gets 246 -> 793 MB/s on tcp;ofi_rxm */
    (void) mca_base_component_var_register(
        &c->super.btl_version, "get_gather_size",
        "Gets of at most this many bytes from one peer are gathered and asked for in one "
        "message, which the target answers with all their bytes: a derived datatype of many "
        "small pieces (a column of a matrix, a strided ARMCI get) then costs a few messages "
        "instead of one exchange per piece; a get alone still goes as the provider's read. "
        "Where puts are gathered (btl_ofi_put_gather_size says where), with the same cap. 0: "
        "never. "
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

    /* read by osc-rdma/patches 0021 (MPI_Win_flush_local): a put copied
     * before btl_put returns is complete at its origin */
    c->put_copied_max = 0;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "put_copied_max",
        "Puts without completion callback of at most this many bytes have their bytes copied "
        "before btl_put returns, so that the caller may reuse its buffer at once (read-only, "
        "set at MPI_Init: btl_ofi_put_gather_size's limit where puts are gathered, else 0). "
        "With it osc/rdma's MPI_Win_flush_local after such puts needs no round trip",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->put_copied_max);

    /* read by osc-rdma/patches 0022 (MPI_Win_unlock): the release of a
     * lock may follow such puts without a flush between */
    c->put_copied_ordered = false;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "put_copied_ordered",
        "True when an atomic to a peer issued after puts copied before btl_put returned "
        "(btl_ofi_put_copied_max) is applied at the peer after them, and completes after them "
        "(read-only, set at MPI_Init: one rail, one context, atomics the target's processor "
        "applies). With it osc/rdma's MPI_Win_unlock after such puts sends the lock's release "
        "behind them instead of flushing first: one round trip instead of two",
        MCA_BASE_VAR_TYPE_BOOL, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->put_copied_ordered);

    /* read by osc-rdma/patches 0024 (MPI_Win_unlock, MPI_Win_complete
     * after gets): gets an atomic after them is ordered behind */
    c->get_ordered_max = 0;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "get_ordered_max",
        "An atomic to a peer issued after gets from it of at most this many bytes is applied "
        "at the peer after they read, and completes after them (read-only, set at MPI_Init; 0 "
        "where not: several rails or contexts, atomics a NIC applies, or gets not gathered). "
        "With it osc/rdma's MPI_Win_unlock and MPI_Win_complete after such gets send the "
        "release or complete in the gets' own message instead of waiting for them first",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->get_ordered_max);

    /* read by osc-rdma/patches 0023 (MPI_Win_complete): the flag bit of
     * an atomic it does not wait for */
    c->atomic_unhurried_flag = 0;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "atomic_unhurried_flag",
        "A bit of btl_atomic_op's flags saying that the caller will not wait for this atomic "
        "soon (read-only, set at MPI_Init; 0 where it means nothing: without "
        "btl_ofi_put_copied_ordered). An atomic carried at the end of gathered puts with it "
        "is answered by the target with its next message to the caller, or its next progress "
        "pass: osc/rdma's MPI_Win_complete after such puts then costs the target no message "
        "of its own",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->atomic_unhurried_flag);

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
    mca_btl_ofi_reg_counter("send_quick",
                            "Messages (two-sided or the component's own) sent without the "
                            "provider's acknowledgement where it acknowledges every other "
                            "(sockets): at most 16 in a row to a peer, then one acknowledged",
                            offsetof(mca_btl_ofi_counters_t, send_quick));
    mca_btl_ofi_reg_counter("stream_held",
                            "Times a message to a peer of this node was held back until earlier "
                            "ones completed, each try counted (sockets: btl_ofi_stream_budget "
                            "bytes of messages in flight per peer, below what stalls a "
                            "loopback connection for good)",
                            offsetof(mca_btl_ofi_counters_t, stream_held));
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
    mca_btl_ofi_reg_counter("answer_carried",
                            "Answers to a peer's gathered puts and the atomic after them that "
                            "rode at the end of a message of this process to it instead of "
                            "going alone (the peer did not wait for them: osc/rdma's "
                            "MPI_Win_complete)",
                            offsetof(mca_btl_ofi_counters_t, answer_carried));
    mca_btl_ofi_reg_counter("put_notified",
                            "Peers' puts that arrived in this process's memory and announced "
                            "it (btl_ofi_put_notify_size)",
                            offsetof(mca_btl_ofi_counters_t, put_notified));
    mca_btl_ofi_reg_counter("flush_count",
                            "Flushes asked of this btl (btl_flush: osc/rdma's MPI_Win_flush, "
                            "unlock, fence, complete, and MPI_Win_flush_local unless only puts "
                            "it copied came before: btl_ofi_put_copied_max)",
                            offsetof(mca_btl_ofi_counters_t, flush_count));
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

/* The modules taken become the component's: checked, published in the
 * modex, set up for several rails where there are; the array handed to
 * the BTL framework, or NULL (the modules then finalized). */
static mca_btl_base_module_t **mca_btl_ofi_publish(mca_btl_ofi_module_t **taken, int ntaken)
{
    mca_btl_ofi_component_t *c = &mca_btl_ofi_component;
    mca_btl_base_module_t **modules = NULL;
    int rc;

    if (OPAL_UNLIKELY(ntaken < 1)) {
        return NULL; /* the caller says why */
    }
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
    /* the least of the modules' (0 with several rails): its buffers taken
     * now, so that a put within it is always gathered, hence copied */
    c->put_copied_max = SIZE_MAX;
    for (int i = 0; i < ntaken; ++i) {
        if (taken[i]->putv_max > 0) {
            (void) mca_btl_ofi_putv_prepare(taken[i]);
        }
        if (taken[i]->putv_max < c->put_copied_max) {
            c->put_copied_max = taken[i]->putv_max;
        }
    }
    c->only_context = 1 == ntaken && 1 == taken[0]->num_contexts ? taken[0]->contexts : NULL;
    for (int i = 0; i < ntaken; ++i) {
        const uint32_t quirks = mca_btl_ofi_provider_quirks(taken[i]->info->fabric_attr->prov_name);

        /* frag_send_quick keeps its per-peer counts under the one
         * context's lock; numbered messages (rails) are all acknowledged */
        taken[i]->quick_max = 1 == taken[i]->num_contexts && !taken[i]->track
                                      && (quirks & MCA_BTL_OFI_QUIRK_SEND_ACKED)
                                  ? taken[i]->info->tx_attr->inject_size
                                  : 0;
        /* a budget per peer of this node (mca_btl_ofi_stream_room); the
         * rails' numbered messages and copies are accounted otherwise */
        taken[i]->stream_budget = !taken[i]->track && (quirks & MCA_BTL_OFI_QUIRK_STREAM_STALL)
                                      ? (int64_t) c->stream_budget
                                      : 0;
    }
    /* atomics behind gathered puts: their messages and the atomic's leave
     * one context in order, over one rail, and the target's processor
     * applies the atomic as the provider applies the others' */
    taken[0]->amo_ordered =
        NULL != c->only_context && taken[0]->putv_max > 0 && mca_btl_ofi_atomics_cpu(taken[0]);
    c->put_copied_ordered = taken[0]->amo_ordered;
    c->atomic_unhurried_flag = taken[0]->amo_ordered ? MCA_BTL_OFI_ATOMIC_FLAG_UNHURRIED : 0;
    c->get_ordered_max = taken[0]->amo_ordered ? taken[0]->getv_max : 0;
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
