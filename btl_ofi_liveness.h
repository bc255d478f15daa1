/*
 * btl/ofi peer liveness (btl_ofi_liveness.c): the verdicts the data paths
 * ask for when a post or a completion fails, the periodic peer check, and
 * the probes and identities the modex and rail failover use.
 */

#ifndef MCA_BTL_OFI_LIVENESS_H
#define MCA_BTL_OFI_LIVENESS_H

#include "btl_ofi_types.h"

#include <sys/socket.h>

BEGIN_C_DECLS

/* A refusal from a live host comes back within a round trip: wait that
 * long for it in a probe, so that a peer that died is named before the runtime
 * tears the job down; anything slower is left to the periodic check. */
#define MCA_BTL_OFI_SUSPECT_WAIT_MS 200

/* Who a process is on its host, as it publishes it (in its modex entry),
 * so that a peer sharing the host (same boot and pid namespace) can tell
 * whether the process still exists. */
typedef struct mca_btl_ofi_identity_t {
    uint32_t pid;
    uint32_t pad;
    uint64_t pidns;      /* inode of /proc/self/ns/pid */
    uint64_t start_time; /* field 22 of /proc/self/stat: guards against pid reuse */
    char boot_id[40];    /* /proc/sys/kernel/random/boot_id */
} mca_btl_ofi_identity_t;

/* room for why a peer was lost (the lost-peer line adds who and where) */
#define MCA_BTL_OFI_WHY_LEN 480

/** An operation to a peer known to be gone: OPAL_ERR_UNREACH once the
 * peer is named; before that the peer is marked for the next progress
 * pass to name (mca_btl_ofi_refusals_report) and the caller told to
 * progress and try again (OPAL_ERR_OUT_OF_RESOURCE). Never reports
 * itself: it is on the operations' path. */
int mca_btl_ofi_endpoint_refuse(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);
/** From progress: name every peer an operation was refused for
 * (mca_btl_ofi_endpoint_refuse), which ends the job. */
void mca_btl_ofi_refusals_report(struct mca_btl_ofi_module_t *module);

/** After a failed post or completion: when the peer (on this host) is gone,
 * mark it, report it once and return true. */
bool mca_btl_ofi_endpoint_check(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint);

/** A post the provider refused, for its caller: -FI_EAGAIN is
 * OPAL_ERR_OUT_OF_RESOURCE (try again); a peer found gone is reported as
 * such, the real cause, and gives OPAL_ERR_UNREACH; anything else is
 * reported once with the call's name and fi_strerror and gives OPAL_ERROR.
 * The one place that judges a failed post. */
int mca_btl_ofi_post_refused_at(struct mca_btl_ofi_module_t *module,
                                mca_btl_ofi_endpoint_t *endpoint, const char *call, ssize_t rc,
                                const char *file, int line);
#define mca_btl_ofi_post_refused(module, endpoint, call, rc)                                       \
    mca_btl_ofi_post_refused_at(module, endpoint, call, rc, __FILE__, __LINE__)

/* Report a peer as lost, once, through the upper layer's error callback. */
void mca_btl_ofi_endpoint_lost(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                               const char *why);

/* What one look at the peers found: peers lost (each with why, and the
 * errno of the probe that failed: ECONNREFUSED when the process is gone
 * but its host answers), and a same-host peer found gone (dead) with
 * maybe work still owed to it. Every endpoint is retained. */
typedef struct mca_btl_ofi_verdicts_t {
    mca_btl_ofi_endpoint_t **lost;
    char (*why)[MCA_BTL_OFI_WHY_LEN];
    int *errs;
    int nlost;
    mca_btl_ofi_endpoint_t *dead;
} mca_btl_ofi_verdicts_t;

/* Look at the peers when it is time to (peers on this host through /proc
 * every btl_ofi_peer_check_interval ms, stalls of peers on other hosts
 * every tenth of a second at most, probes' answers, liveness
 * connections): false when nothing was due. What to do about a verdict is
 * the caller's (mca_btl_ofi_peers_check: a cut link or a lost peer). */
bool mca_btl_ofi_peers_scan(mca_btl_ofi_module_t *module, mca_btl_ofi_verdicts_t *verdicts);
void mca_btl_ofi_verdicts_free(mca_btl_ofi_verdicts_t *verdicts);
/* A receive failed, its sender unknown: a same-host peer found gone is the
 * likely one; it is reported lost (naming it) and true returned. */
bool mca_btl_ofi_dead_sender(mca_btl_ofi_module_t *module);
/* An error without a clear cause involved this peer: probe it at the next
 * check (peers on other hosts; same-host peers are checked at once). */
void mca_btl_ofi_endpoint_suspect(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint);
/* Finalize's drain: whether ENDPOINT's peer will never take anything
 * from us again: lost, its goodbye heard, its process gone (this host),
 * or its liveness listener, closed as its btl finalizes, refusing a probe
 * (another host; waits MCA_BTL_OFI_SUSPECT_WAIT_MS at most). */
bool mca_btl_ofi_endpoint_left(mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint);
/* Close the probes of peers' hosts still under way (module teardown). */
void mca_btl_ofi_probes_fini(mca_btl_ofi_module_t *module);

/* Who this process is on its host, into its modex entry (pid, its start
 * time, the host's boot and pid-namespace identity). */
void mca_btl_ofi_identity(mca_btl_ofi_identity_t *id);
/* The peer's identity from its modex entry: whether /proc can check it. */
void mca_btl_ofi_endpoint_identity(mca_btl_ofi_endpoint_t *endpoint,
                                   const mca_btl_ofi_identity_t *peer);
/* The peer's host address (from its first provider address) and liveness
 * listener port, for the probes. */
void mca_btl_ofi_endpoint_host(const mca_btl_ofi_module_t *module, mca_btl_ofi_endpoint_t *endpoint,
                               const uint8_t *addr, size_t len, uint16_t port);
/* Open this module's liveness listener on its address (ADDR, a provider
 * address of LEN bytes); its port, or 0 when there is none. */
uint16_t mca_btl_ofi_probe_listen(mca_btl_ofi_module_t *module, const uint8_t *addr, size_t len);
/* HOST as text (address only), for messages. */
void mca_btl_ofi_host_name(const struct sockaddr_storage *host, char *buf, size_t len);
/* Connect to HOST's listener and wait up to WAIT_MS: 0 when it answered,
 * else the errno of why not. */
int mca_btl_ofi_probe_now(const struct sockaddr_storage *host, int wait_ms);

END_C_DECLS

#endif /* MCA_BTL_OFI_LIVENESS_H */
