/*
 * spawn: processes started with MPI_Comm_spawn reach their parents
 * through our btl/ofi (its peers added after start-up), and the merged
 * communicator carries two-sided, collective and one-sided traffic.
 *
 *   mpirun -np P tests/bin/spawn [-children C] [-rounds R]
 *
 * The P parents spawn C children (the same program; default 2), and both
 * sides merge the intercommunicator (parents first). On the merged
 * communicator of P + C ranks, R rounds (default 20) of:
 *   - a ring exchange with MPI_Sendrecv, sizes cycling from 0 B to 1 MiB
 *     (eager and rendezvous), every byte checked; a parent's neighbour
 *     is a child and the other way round where the ring crosses;
 *   - MPI_Bcast of 64 KiB from root round % n, MPI_Allreduce and
 *     MPI_Reduce (sum of longs) and MPI_Barrier, every value checked;
 * then MPI_Win_create windows (osc/rdma reaches them through the btl):
 *   a fence epoch in which every rank puts its pattern into its slot at
 *   every other rank and adds 1 to each one's counter with
 *   MPI_Accumulate; every slot and counter checked after the fence.
 * Every rank's btl/ofi send count must grow (ts.h: ob1 over `ofi,self'
 * has no other way to another process) and so must its put count.
 * The intercommunicator is disconnected before MPI_Finalize.
 */
#include "ts.h"

#define SLOT 4096
#define BCAST_BYTES (64 * 1024)

static const size_t sizes[] = {0, 1, 100, 4093, 8193, 65536, 300 * 1024, 1024 * 1024 + 5};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void exchange(MPI_Comm comm, int me, int n, unsigned round)
{
    const size_t size = sizes[round % NSIZES];
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    unsigned char *out = malloc(size + 1), *in = malloc(size + 1);
    MPI_Status st;
    int count = -1;

    CHECK(NULL != out && NULL != in, "out of memory");
    tc_fill(out, me, size, round);
    memset(in, 0, size + 1);
    MPI_CHECK(MPI_Sendrecv(out, (int) size, MPI_BYTE, right, (int) round, in, (int) size, MPI_BYTE,
                           left, (int) round, comm, &st));
    MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &count));
    CHECK(count == (int) size && st.MPI_SOURCE == left,
          "round %u: received %d bytes from %d, expected %zu from %d", round, count, st.MPI_SOURCE,
          size, left);
    tc_verify("ring exchange", in, left, size, round);
    free(out);
    free(in);
}

static void collectives(MPI_Comm comm, int me, int n, unsigned round)
{
    static unsigned char buf[BCAST_BYTES];
    const int root = (int) (round % (unsigned) n);
    const long mine = me * 100 + (long) round;
    const long want = 100L * n * (n - 1) / 2 + (long) n * round;
    long sum = -1, red = -1;

    if (me == root) {
        tc_fill(buf, root, sizeof(buf), round);
    } else {
        memset(buf, 0, sizeof(buf));
    }
    MPI_CHECK(MPI_Bcast(buf, (int) sizeof(buf), MPI_BYTE, root, comm));
    tc_verify("bcast", buf, root, sizeof(buf), round);
    MPI_CHECK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, comm));
    CHECK(sum == want, "round %u: allreduce %ld, expected %ld", round, sum, want);
    MPI_CHECK(MPI_Reduce(&mine, &red, 1, MPI_LONG, MPI_SUM, root, comm));
    CHECK(me != root || red == want, "round %u: reduce at %d: %ld, expected %ld", round, root, red,
          want);
    MPI_CHECK(MPI_Barrier(comm));
}

static void one_sided(MPI_Comm comm, int me, int n)
{
    const size_t bytes = (size_t) n * SLOT + sizeof(int64_t);
    unsigned char *base = calloc(1, bytes), *mine = malloc(SLOT);
    int64_t one = 1, *counter;
    MPI_Win win;

    CHECK(NULL != base && NULL != mine, "out of memory");
    counter = (int64_t *) (base + (size_t) n * SLOT);
    tc_fill(mine, me, SLOT, 7);
    MPI_CHECK(MPI_Win_create(base, (MPI_Aint) bytes, 1, MPI_INFO_NULL, comm, &win));
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int t = 0; t < n; ++t) {
        if (t != me) {
            MPI_CHECK(MPI_Put(mine, SLOT, MPI_BYTE, t, (MPI_Aint) me * SLOT, SLOT, MPI_BYTE, win));
            MPI_CHECK(MPI_Accumulate(&one, 1, MPI_INT64_T, t, (MPI_Aint) n * SLOT, 1, MPI_INT64_T,
                                     MPI_SUM, win));
        }
    }
    MPI_CHECK(MPI_Win_fence(0, win));
    for (int o = 0; o < n; ++o) {
        if (o != me) {
            tc_verify("put slot", base + (size_t) o * SLOT, o, SLOT, 7);
        }
    }
    CHECK(*counter == n - 1, "counter %lld, expected %d", (long long) *counter, n - 1);
    MPI_CHECK(MPI_Win_free(&win));
    free(base);
    free(mine);
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter, merged;
    ts_snap_t before, after;
    ts_delta_t d;
    int me, n, children, rounds;

    ts_init(&argc, &argv, "spawn");
    children = (int) ts_arg_size(argc, argv, "-children", 2);
    rounds = (int) ts_arg_size(argc, argv, "-rounds", 20);
    MPI_CHECK(MPI_Comm_get_parent(&parent));
    if (MPI_COMM_NULL == parent) {
        int errs[64];
        CHECK(children > 0 && children <= 64, "-children %d: 1 to 64", children);
        MPI_CHECK(MPI_Comm_spawn(argv[0], &argv[1], children, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                                 &inter, errs));
        for (int i = 0; i < children; ++i) {
            CHECK(MPI_SUCCESS == errs[i], "child %d could not be spawned (%d)", i, errs[i]);
        }
        MPI_CHECK(MPI_Intercomm_merge(inter, 0, &merged));
    } else {
        inter = parent;
        MPI_CHECK(MPI_Intercomm_merge(inter, 1, &merged));
    }
    MPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
    MPI_Comm_rank(merged, &me);
    MPI_Comm_size(merged, &n);
    if (0 == me) {
        printf("spawn: %d parents and %d children merged, %d rounds\n", n - children, children,
               rounds);
    }

    ts_snap(&before);
    for (unsigned r = 0; r < (unsigned) rounds; ++r) {
        exchange(merged, me, n, r);
        collectives(merged, me, n, r);
    }
    one_sided(merged, me, n);
    ts_snap(&after);
    d = ts_delta(&before, &after);
    ts_print_deltas(merged, "spawn", &d);
    CHECK(!ts_have_send || d.sends > 0,
          "rank %d of the merged communicator sent nothing through "
          "btl/ofi",
          me);
    CHECK(!tc_have_counters || d.puts > 0,
          "rank %d of the merged communicator put nothing "
          "through btl/ofi",
          me);

    MPI_CHECK(MPI_Comm_free(&merged));
    MPI_CHECK(MPI_Comm_disconnect(&inter));
    ts_finish();
    return 0;
}
