/*
 * stream: small broadcasts back to back, the pattern of a code that
 * broadcasts a scalar or a short vector every step, through coll/tuned
 * over ob1 over btl/ofi: the root's eager sends run ahead of the others,
 * so many messages wait unexpected at the receivers while they post their
 * buffers again.
 *
 * libfabric 1.17's shm then refused those postings with FI_ENOMEM for
 * good when its multi-receive buffers were used (README, "Two-sided
 * traffic"): 4 of 6 runs of this program hung on shm. btl/ofi now posts
 * one buffer per message there.
 *
 * -n COUNT broadcasts per size (default 40000) of 8, 32, 128 and 512
 * bytes, the root changing with each size; every byte of every broadcast
 * is checked on every rank.
 */
#include "ts.h"

static unsigned char pattern(long i, size_t k)
{
    return (unsigned char) (i * 7 + (long) k * 13 + 1);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {8, 32, 128, 512};
    unsigned char buf[512];
    long bad = 0;

    ts_init(&argc, &argv, "stream");
    CHECK(tc_size >= 2, "needs at least 2 ranks, has %d", tc_size);
    long n = (long) ts_arg_size(argc, argv, "-n", 40000);
    double t0 = tc_now();

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        const int root = (int) (s % (size_t) tc_size);
        for (long i = 0; i < n; ++i) {
            for (size_t k = 0; k < sizes[s]; ++k) {
                buf[k] = tc_rank == root ? pattern(i, k) : 0;
            }
            MPI_CHECK(MPI_Bcast(buf, (int) sizes[s], MPI_BYTE, root, MPI_COMM_WORLD));
            for (size_t k = 0; k < sizes[s]; ++k) {
                if (buf[k] != pattern(i, k) && bad++ < 5) {
                    tc_say("MPI_Bcast of %zu bytes from rank %d, call %ld: byte %zu is %u, "
                           "expected %u",
                           sizes[s], root, i, k, buf[k], pattern(i, k));
                }
            }
        }
    }
    CHECK(0 == bad, "%ld bytes differed", bad);
    tc_say("stream: %ld broadcasts of each of 8, 32, 128, 512 bytes, every byte checked, in %.2fs",
           n, tc_now() - t0);
    ts_finish();
    return 0;
}
