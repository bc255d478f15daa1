/*
 * leave: a peer that finalized is not lost.
 *
 *   leave -flag PATH [-n N]       (run with --mca async_mpi_finalize 1)
 *
 * Rank 1 (on h2) first sends rank 0 (on h1) 8 messages, which rank 0
 * takes and, finalizing within a tenth of a second, never acknowledges:
 * rank 1's numbered messages then wait for an acknowledgement that never
 * comes, and its stall probe finds rank 0's listener closed. Rank 0 sends
 * N messages of 1 KiB to rank 1, calls
 * MPI_Finalize (no barrier in it with async_mpi_finalize: its btl closes
 * its connections and liveness listener at once), then creates PATH.
 * Rank 1 waits for PATH without calling MPI, so that what follows
 * happens after rank 0 left: it receives the N messages, checking every
 * byte, and keeps calling MPI for a second, then finalizes. With several
 * rails those numbered messages are acknowledged to the process that
 * left: one acknowledgement every 32 received, and the rest at the next
 * periodic check (a tenth of a second). Sockets and udp;ofi_rxd complete
 * a send only once the receiver progressed: there rank 1 first probes
 * until the last message is there (and the acknowledgements of all but
 * the last few go before rank 0 left); tcp;ofi_rxm completes it once its
 * socket took it, so every acknowledgement meets a closed connection
 * (the first is written before the peer's reset comes back; only the
 * next ones fail, as they did in that CI). Nothing
 * may be declared lost and both exit 0: a process that ended with
 * MPI_Finalize is gone, not lost (a fresh CI once saw "lost contact with
 * peer ... Transport endpoint is not connected" when a late
 * acknowledgement met a peer that had finalized).
 */
#include "../common.h"

#include <errno.h>
#include <sys/stat.h>

#define MSG 1024

int main(int argc, char **argv)
{
    const char *flag = NULL;
    int n = 100;

    tc_init(&argc, &argv, "leave");
    CHECK(2 == tc_size, "needs 2 ranks, has %d", tc_size);
    for (int i = 1; i + 1 < argc; ++i) {
        if (0 == strcmp(argv[i], "-flag")) {
            flag = argv[i + 1];
        } else if (0 == strcmp(argv[i], "-n")) {
            n = atoi(argv[i + 1]);
        }
    }
    CHECK(NULL != flag && n > 0, "usage: leave -flag PATH [-n N]");
    unsigned char *buf = malloc(MSG);
    CHECK(NULL != buf, "malloc failed");
    /* every rank has set its btl up and reached the other */
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    char prov[256] = "";
    const int wait_first = 0 == tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov))
                           && 0 == strcmp(prov, "tcp;ofi_rxm");
    tc_counters_finalize();
    MPI_T_finalize();
    if (0 == tc_rank) {
        for (int i = 0; i < 8; ++i) {
            MPI_CHECK(MPI_Recv(buf, MSG, MPI_BYTE, 1, 1000 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            tc_verify("leave: message from rank 1", buf, 1, MSG, (unsigned) i);
        }
        for (int i = 0; i < n; ++i) {
            tc_fill(buf, 0, MSG, (unsigned) i);
            MPI_CHECK(MPI_Send(buf, MSG, MPI_BYTE, 1, i, MPI_COMM_WORLD));
        }
        printf("leave: rank 0 sent %d messages and finalizes\n", n);
        fflush(stdout);
        MPI_Finalize();
        FILE *f = fopen(flag, "w");
        CHECK(NULL != f, "cannot create %s: %s", flag, strerror(errno));
        fclose(f);
        free(buf);
        return 0;
    }
    for (int i = 0; i < 8; ++i) {
        tc_fill(buf, 1, MSG, (unsigned) i);
        MPI_CHECK(MPI_Send(buf, MSG, MPI_BYTE, 0, 1000 + i, MPI_COMM_WORLD));
    }
    int there = wait_first;
    while (!there) {
        MPI_CHECK(MPI_Iprobe(0, n - 1, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE));
    }
    struct stat st;
    while (0 != stat(flag, &st)) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < n; ++i) {
        MPI_CHECK(MPI_Recv(buf, MSG, MPI_BYTE, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        tc_verify("leave: message from rank 0", buf, 0, MSG, (unsigned) i);
    }
    double end = tc_now() + 1.0;
    while (tc_now() < end) {
        int any = 0;
        MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &any, MPI_STATUS_IGNORE));
        CHECK(!any, "a message nobody sent arrived");
    }
    printf("leave: rank 1 received and checked %d messages from rank 0 after it finalized\n", n);
    printf("OK leave\n");
    fflush(stdout);
    free(buf);
    MPI_Finalize();
    return 0;
}
