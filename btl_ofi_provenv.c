/*
 * btl/ofi defaults for libfabric's own provider variables.
 *
 * Some of libfabric 1.17's provider defaults do not fit a BTL. We set our
 * values in the environment at component open, while libfabric has not
 * read them yet (it does at its first fi_getinfo, ours at component init;
 * open comes before any pml's transport is initialised), and only where
 * the user set nothing: a user's own value always wins. README "Start-up
 * and memory" has the measurements.
 *
 * ofi_rxm keeps two pools of 1024 bounce buffers of FI_OFI_RXM_BUFFER_SIZE
 * bytes each (receive, allocated when the endpoint is enabled; transmit,
 * at the first send), every page touched, plus as many receive buffers as
 * FI_OFI_RXM_MSG_RX_SIZE asks of the core provider:
 *
 * FI_OFI_RXM_MSG_RX_SIZE=1024: left unset, rxm over tcp posts 4096
 *   receive buffers (with libfabric's 16 KiB buffers a process held 105
 *   MiB whatever the job's size, 53 at 1024); below 1024 nothing more is
 *   freed (the pools start at 1024 buffers).
 *
 * FI_OFI_RXM_BUFFER_SIZE=2048 with FI_OFI_RXM_EAGER_LIMIT = our largest
 *   message (64 KiB and our header, 65552): over tcp rxm sends an eager
 *   message from the caller's buffer and receives it into the posted one
 *   (its direct send and dynamic receive buffering), so a message up to
 *   the eager limit needs no bounce buffer of its size; the buffers then
 *   only carry small control messages. 16 KiB buffers held 33 MiB of the
 *   53 MiB a process had; 2 KiB ones hold 4.7. ob1's latency and
 *   bandwidth from 8 B to 1 MiB, and osc/rdma's, stayed within the
 *   run-to-run noise, and 5000 unexpected 12 KiB messages arrived intact.
 *   Lowering the buffer size alone would lower the eager limit with it
 *   (4-16 KiB sends 3x slower through rxm's rendezvous), so the two are
 *   set together, and only if the user set neither. libfabric's own eager
 *   limit (16384) was 16 bytes short of our largest message: each of
 *   them went through rxm's segmentation, and ob1's copy pipeline (large
 *   messages of derived datatypes, or with RDMA turned off) moved 800-980
 *   MB/s where 1470-1650 now (1 MiB, one host). Over verbs rxm needs the
 *   two equal: where an RDMA device exists (/sys/class/infiniband not
 *   empty), rxm may run over verbs, and both are left to libfabric.
 */

#include "btl_ofi.h"
#include "btl_ofi_provenv.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* which of the variables were ours (unset by the user at open) */
static bool mca_btl_ofi_rx_size_ours = false;
static const char *mca_btl_ofi_buffers_whose = "the user's";

/* true when the kernel lists an RDMA device (a verbs provider may be
 * usable); an unreadable or missing class directory lists none */
static bool mca_btl_ofi_rdma_device_present(void)
{
    DIR *dir = opendir("/sys/class/infiniband");
    struct dirent *entry;
    bool found = false;

    if (NULL == dir) {
        return false;
    }
    while (!found && NULL != (entry = readdir(dir))) {
        found = '.' != entry->d_name[0];
    }
    closedir(dir);
    return found;
}

void mca_btl_ofi_provenv_set(size_t largest)
{
    static bool decided = false;
    char eager[32];

    if (decided) {
        return; /* opened again: the variables are ours already, not the user's */
    }
    decided = true;

    mca_btl_ofi_rx_size_ours = (NULL == getenv("FI_OFI_RXM_MSG_RX_SIZE"));
    (void) setenv("FI_OFI_RXM_MSG_RX_SIZE", "1024", 0);

    if (NULL != getenv("FI_OFI_RXM_BUFFER_SIZE") || NULL != getenv("FI_OFI_RXM_EAGER_LIMIT")) {
        return; /* the user's choice */
    }
    if (mca_btl_ofi_rdma_device_present()) {
        mca_btl_ofi_buffers_whose = "libfabric's: an RDMA device is present, and rxm over verbs "
                                    "needs the two equal";
        return;
    }
    (void) snprintf(eager, sizeof(eager), "%zu", largest);
    (void) setenv("FI_OFI_RXM_BUFFER_SIZE", "2048", 1);
    (void) setenv("FI_OFI_RXM_EAGER_LIMIT", eager, 1);
    mca_btl_ofi_buffers_whose = "btl/ofi's default: 2 KiB buffers, and every message of ours "
                                "eager, needing none over tcp; set either variable to choose";
}

static const char *mca_btl_ofi_provenv_value(const char *name)
{
    const char *value = getenv(name);

    return NULL == value ? "libfabric's default" : value;
}

void mca_btl_ofi_provenv_say(const struct fi_info *info)
{
    if (NULL == strstr(info->fabric_attr->prov_name, "ofi_rxm")) {
        return;
    }
    MCA_BTL_OFI_VERBOSE(
        MCA_BTL_OFI_VERBOSE_ERROR, "ofi_rxm receive queue: FI_OFI_RXM_MSG_RX_SIZE=%s (%s)",
        mca_btl_ofi_provenv_value("FI_OFI_RXM_MSG_RX_SIZE"),
        mca_btl_ofi_rx_size_ours ? "btl/ofi's default: libfabric's own posts 4096 receive "
                                   "buffers; set the variable to choose"
                                 : "the user's");
    MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                        "ofi_rxm bounce buffers: FI_OFI_RXM_BUFFER_SIZE=%s, "
                        "FI_OFI_RXM_EAGER_LIMIT=%s (%s)",
                        mca_btl_ofi_provenv_value("FI_OFI_RXM_BUFFER_SIZE"),
                        mca_btl_ofi_provenv_value("FI_OFI_RXM_EAGER_LIMIT"),
                        mca_btl_ofi_buffers_whose);
}
