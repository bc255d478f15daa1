/*
 * btl/ofi names of the shm provider's endpoints.
 *
 * shm names an endpoint's region in /dev/shm after its address. Three
 * things follow:
 *
 * - A name must be unique: shm's default is the process id, and a region
 *   left by a process killed before it could clean up then makes a later
 *   process given the same pid fail fi_enable with -FI_EBUSY. Ours has a
 *   random part.
 *
 * - Open MPI 4.1 does not always close us: after MPI_T_init_thread every
 *   framework's close at MPI_Finalize is only a decrement, the real one
 *   waits for MPI_T_finalize (which 4.1.4 crashes in, so applications
 *   and tools skip it), and the regions (16 MiB each, a few MiB touched)
 *   would stay in /dev/shm for good. So the names given are kept and
 *   removed at exit (or when the component is unloaded: atexit in a
 *   shared object runs at dlclose). A name whose endpoint was closed is
 *   gone already; its removal fails harmlessly. Removing a name never
 *   unmaps anything, and by then no peer needs to look it up.
 *
 * - A process that is killed (a job aborted after a rank died: mpirun
 *   ends the others with SIGKILL) removes nothing: the faults tests left
 *   20-33 regions a run. So the first process on a node to name an
 *   endpoint removes the regions of processes that no longer exist. Only
 *   names that carry our pid namespace's number are looked at, since
 *   only there does a pid say whether its process lives: a container
 *   that shares /dev/shm but not our pids keeps its regions, and a pid
 *   that lives (whoever's process it is now) keeps its region too.
 */

#include "opal_config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "btl_ofi.h"
#include "btl_ofi_shmname.h"

#define MCA_BTL_OFI_SHM_NAMES (MCA_BTL_OFI_MAX_CONTEXTS * MCA_BTL_OFI_MAX_RAILS)
#define MCA_BTL_OFI_SHM_PREFIX "btlofi-"

static char mca_btl_ofi_shm_names[MCA_BTL_OFI_SHM_NAMES][80];
static int mca_btl_ofi_shm_count;
static pid_t mca_btl_ofi_shm_owner;
static bool mca_btl_ofi_shm_swept;

static void mca_btl_ofi_shm_names_remove(void)
{
    /* a forked child exiting must not remove its parent's names */
    if (getpid() != mca_btl_ofi_shm_owner) {
        return;
    }
    for (int i = 0; i < mca_btl_ofi_shm_count; ++i) {
        (void) shm_unlink(mca_btl_ofi_shm_names[i]);
    }
    mca_btl_ofi_shm_count = 0;
}

/* Keep REGION for removal at exit. Called from the single-threaded
 * set-up. */
static void mca_btl_ofi_shm_name_keep(const char *region)
{
    static bool registered;

    if (!registered) {
        registered = (0 == atexit(mca_btl_ofi_shm_names_remove));
        mca_btl_ofi_shm_owner = getpid();
    }
    if (!registered || mca_btl_ofi_shm_count >= MCA_BTL_OFI_SHM_NAMES) {
        return;
    }
    snprintf(mca_btl_ofi_shm_names[mca_btl_ofi_shm_count++], sizeof(mca_btl_ofi_shm_names[0]), "%s",
             region);
}

/* Our pid namespace's number (the inode of /proc/self/ns/pid), 0 if
 * unknown. */
static uint64_t mca_btl_ofi_pidns(void)
{
    struct stat st;

    return (0 == stat("/proc/self/ns/pid", &st)) ? (uint64_t) st.st_ino : 0;
}

/* Remove the regions in /dev/shm named by processes of pid namespace NS
 * that no longer exist. */
static void mca_btl_ofi_shm_sweep(uint64_t ns)
{
    char prefix[40];
    size_t plen;
    struct dirent *e;
    int removed = 0;
    DIR *dir;

    if (0 == ns || NULL == (dir = opendir("/dev/shm"))) {
        return;
    }
    plen = (size_t) snprintf(prefix, sizeof(prefix), MCA_BTL_OFI_SHM_PREFIX "%" PRIu64 "-", ns);
    while (NULL != (e = readdir(dir))) {
        char *end;
        long pid;

        if (0 != strncmp(e->d_name, prefix, plen)) {
            continue;
        }
        errno = 0;
        pid = strtol(e->d_name + plen, &end, 10);
        if (0 != errno || end == e->d_name + plen || '-' != *end || pid <= 0
            || pid == (long) getpid()) {
            continue;
        }
        /* ESRCH only: EPERM means the process lives (another user's) */
        if (0 != kill((pid_t) pid, 0) && ESRCH == errno && 0 == shm_unlink(e->d_name)) {
            ++removed;
        }
    }
    closedir(dir);
    if (removed > 0) {
        MCA_BTL_OFI_VERBOSE(MCA_BTL_OFI_VERBOSE_ERROR,
                            "removed %d shm region(s) from /dev/shm left by processes that no "
                            "longer exist (killed before they could remove them)",
                            removed);
    }
}

int mca_btl_ofi_shm_name(char *name, size_t size, int index)
{
    static const char scheme[] = "fi_shm://";
    const uint64_t ns = mca_btl_ofi_pidns();
    uint64_t salt = 0;
    int n;

    if (!mca_btl_ofi_shm_swept) {
        mca_btl_ofi_shm_swept = true;
        mca_btl_ofi_shm_sweep(ns);
    }
    if (sizeof(salt) != getrandom(&salt, sizeof(salt), 0)) {
        struct timespec now;
        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        salt = ((uint64_t) now.tv_sec * 1000000000u + (uint64_t) now.tv_nsec)
               ^ ((uint64_t) getpid() << 32);
    }
    n = snprintf(name, size, "%s" MCA_BTL_OFI_SHM_PREFIX "%" PRIu64 "-%d-%016" PRIx64 "-%d", scheme,
                 ns, (int) getpid(), salt, index);
    if (n < 0 || (size_t) n >= size) {
        opal_output(0, "btl/ofi: the shm endpoint name does not fit in %zu bytes", size);
        return OPAL_ERROR;
    }
    mca_btl_ofi_shm_name_keep(name + sizeof(scheme) - 1);
    return OPAL_SUCCESS;
}
