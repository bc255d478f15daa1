/*
 * sync: every MPI one-sided synchronisation mode over an MPI_Win_create
 * window (so every transfer to another rank crosses our btl/ofi):
 *   fence; post/start/complete/wait (a ring, a star, and 100 exposure
 *   epochs each served by two access epochs); lock/unlock shared and exclusive (an
 *   exclusive lock protects a get-increment-put counter: exact final count);
 *   lock_all with MPI_Win_flush, MPI_Win_flush_local (the origin buffer is
 *   reusable once it returns), MPI_Win_flush_local_all, MPI_Win_flush_all;
 *   flush_local after puts the btl copied, which needs no btl flush
 *   (osc-rdma/patches 0021: btl_ofi_flush_count counted, buffers overwritten
 *   at once, every byte checked at the target after one flush);
 *   unlock_ordered: an exclusive-lock counter and shared-lock puts whose
 *   unlocks send the release behind the puts, no flush (0022: counted
 *   across nodes); complete_ordered: MPI_Win_complete after a copied put
 *   to a rank of another node, no flush, the target's answer riding on its
 *   next post (0023: counted across nodes); get_ordered: unlock and
 *   complete after a small get from a rank of another node, no flush, the
 *   bytes checked (0024: counted across nodes);
 *   and visibility to a second origin: rank 1 puts 1 MiB + 1 B into rank 0's
 *   window, flushes, tells rank 2 with a two-sided message, and rank 2 reads
 *   the region back from rank 0 and checks every byte (with 2 ranks, rank 1
 *   reads it back itself through a second window on the same memory).
 *
 *   sync message (run across hosts, btl_ofi_global_atomics -1): also
 *   pscw_message, PSCW's post and complete to another node as btl
 *   messages (osc-rdma/patches 0017), counted.
 */
#include "common.h"

#define SLOT 8192                      /* per-rank slot in the slot area */
#define SLOTS_OFF 0                    /* n slots of SLOT bytes */
#define FENCE_SZ 4096
#define CNT_OFF (64 * SLOT)            /* exclusive-lock counter (int64) */
#define VIS_OFF (CNT_OFF + 4096)       /* visibility region */
#define VIS_MAX ((1u << 20) + 1)
#define WIN_BYTES (VIS_OFF + VIS_MAX + 4096)
#define MAX_RANKS 64
#define TAG_NOTIFY 17

static MPI_Win win;
static unsigned char *wbase;
static tc_expect_t exp_all; /* growth this rank must see over the whole test */
static unsigned round_no = 100;

static void count_put(int target, size_t bytes)
{
    if (target != tc_rank) {
        exp_all.min[TC_PUT_COUNT] += 1;
        exp_all.min[TC_PUT_BYTES] += bytes;
    }
}

static void count_get(int target, size_t bytes)
{
    if (target != tc_rank) {
        exp_all.min[TC_GET_COUNT] += 1;
        exp_all.min[TC_GET_BYTES] += bytes;
    }
}

static void self_lock(void)
{
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, tc_rank, 0, win));
}

static void self_unlock(void)
{
    MPI_CHECK(MPI_Win_unlock(tc_rank, win));
}

/* ---------------- fence ---------------- */
static void test_fence(void)
{
    const int n = tc_size, right = (tc_rank + 1) % n, left = (tc_rank + n - 1) % n;
    unsigned char *buf = malloc(FENCE_SZ);
    MPI_CHECK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int e = 0; e < 4; ++e) {
        unsigned r = round_no++;
        /* epoch 1: put to the right neighbour */
        tc_fill(buf, tc_rank, FENCE_SZ, r);
        MPI_CHECK(MPI_Put(buf, FENCE_SZ, MPI_BYTE, right, SLOTS_OFF + (e % 2) * SLOT, FENCE_SZ,
                          MPI_BYTE, win));
        count_put(right, FENCE_SZ);
        MPI_CHECK(MPI_Win_fence(0, win));
        tc_verify(tc_fmt("fence epoch %d: data put by rank %d", e, left),
                  wbase + SLOTS_OFF + (e % 2) * SLOT, left, FENCE_SZ, r);
        /* epoch 2: get it back from the right neighbour */
        memset(buf, 0, FENCE_SZ);
        MPI_CHECK(MPI_Get(buf, FENCE_SZ, MPI_BYTE, right, SLOTS_OFF + (e % 2) * SLOT, FENCE_SZ,
                          MPI_BYTE, win));
        count_get(right, FENCE_SZ);
        MPI_CHECK(MPI_Win_fence(0, win));
        tc_verify(tc_fmt("fence epoch %d: data read back from rank %d", e, right), buf, tc_rank,
                  FENCE_SZ, r);
    }
    MPI_CHECK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    free(buf);
    tc_say("  ok fence: 4 rounds of put + get between fences");
}

/* ---------------- post/start/complete/wait ---------------- */
static MPI_Group group_of(const int *ranks, int count)
{
    MPI_Group world, g;
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_incl(world, count, ranks, &g));
    MPI_CHECK(MPI_Group_free(&world));
    return g;
}

static void test_pscw(void)
{
    const int n = tc_size, right = (tc_rank + 1) % n, left = (tc_rank + n - 1) % n;
    unsigned char *buf = malloc(SLOT);

    /* ring: expose to the left neighbour, access the right one */
    MPI_Group gl = group_of(&left, 1), gr = group_of(&right, 1);
    for (int e = 0; e < 3; ++e) {
        unsigned r = round_no++;
        size_t sz = e == 1 ? 1 : SLOT - e; /* 8192, 1, 8190 bytes */
        tc_fill(buf, tc_rank, sz, r);
        MPI_CHECK(MPI_Win_post(gl, 0, win));
        MPI_CHECK(MPI_Win_start(gr, 0, win));
        MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, right, SLOTS_OFF, (int) sz, MPI_BYTE, win));
        count_put(right, sz);
        MPI_CHECK(MPI_Win_complete(win));
        MPI_CHECK(MPI_Win_wait(win));
        tc_verify(tc_fmt("pscw ring round %d: data put by rank %d", e, left), wbase + SLOTS_OFF,
                  left, sz, r);
    }
    MPI_CHECK(MPI_Group_free(&gl));
    MPI_CHECK(MPI_Group_free(&gr));

    /* star: rank 0 exposes to everyone else, each writes its own slot */
    unsigned r = round_no++;
    if (tc_rank == 0) {
        int others[MAX_RANKS];
        for (int i = 1; i < n; ++i) {
            others[i - 1] = i;
        }
        MPI_Group g = group_of(others, n - 1);
        MPI_CHECK(MPI_Win_post(g, 0, win));
        MPI_CHECK(MPI_Win_wait(win));
        for (int i = 1; i < n; ++i) {
            tc_verify(tc_fmt("pscw star: slot of rank %d", i), wbase + SLOTS_OFF + i * SLOT, i,
                      SLOT / 2 + i, r);
        }
        MPI_CHECK(MPI_Group_free(&g));
    } else {
        int zero = 0;
        MPI_Group g = group_of(&zero, 1);
        tc_fill(buf, tc_rank, SLOT / 2 + tc_rank, r);
        MPI_CHECK(MPI_Win_start(g, 0, win));
        MPI_CHECK(MPI_Put(buf, SLOT / 2 + tc_rank, MPI_BYTE, 0, SLOTS_OFF + tc_rank * SLOT,
                          SLOT / 2 + tc_rank, MPI_BYTE, win));
        count_put(0, SLOT / 2 + tc_rank);
        MPI_CHECK(MPI_Win_complete(win));
        MPI_CHECK(MPI_Group_free(&g));
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(buf);
    tc_say("  ok post/start/complete/wait: 3 ring rounds (8192, 1, 8190 B) and a %d-origin star",
           n - 1);
}

/* btl_ofi_put_copied_ordered: an atomic after puts the btl copied is
 * applied after them (osc-rdma/patches 0022, 0023 use it) */
static int ordered_puts(void)
{
    unsigned long long ordered = 0;

    if (0 != tc_cvar_read_ull("btl_ofi_put_copied_ordered", &ordered)) {
        CHECK(!tc_check_ours_enabled(), "cvar btl_ofi_put_copied_ordered not found (not our btl/ofi?)");
        return 0;
    }
    return ordered != 0;
}

/* the lowest rank of each rank's node, in node_of; this rank's own */
static int nodes_of(int *node_of)
{
    int first;
    MPI_Comm node;

    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Allreduce(&tc_rank, &first, 1, MPI_INT, MPI_MIN, node));
    MPI_CHECK(MPI_Comm_free(&node));
    MPI_CHECK(MPI_Allgather(&first, 1, MPI_INT, node_of, 1, MPI_INT, MPI_COMM_WORLD));
    return first;
}

/* The first rank T of another node than rank 0's that holds its own
 * state (the lowest rank of its node, where osc/rdma keeps the node's
 * state), or -1, said under WHAT, when every rank is on rank 0's node */
static int remote_holder(const char *what)
{
    int node_of[MAX_RANKS];

    (void) nodes_of(node_of);
    for (int i = 1; i < tc_size; ++i) {
        if (node_of[i] == i && node_of[i] != node_of[0]) {
            return i;
        }
    }
    tc_say("  %s: no rank of another node holds its own state (one node): not run here, "
           "the hosts runs check it", what);
    return -1;
}

/* complete_ordered (osc-rdma/patches 0023): MPI_Win_complete after one
 * put the btl copied, to a target T on another node that holds its own
 * state (the first rank of its node), must not flush: it raises T's count
 * of completes with an atomic behind the put, which T's MPI_Win_wait sees
 * only once the put is stored (every byte checked at T each epoch, the
 * origin's buffer overwritten as soon as complete returns). T answers
 * that atomic with its next message to the origin: where T's posts are
 * messages (not btl atomics), btl_ofi_answer_carried grows at T. Rank 0
 * is the origin, the others wait. */
static void test_complete_ordered(void)
{
    enum { ROUNDS = 60, SZ = 24 };
    const int zero = 0;
    unsigned long long unhurried = 0;
    unsigned char buf[SZ];
    tc_counters_t c0, c1;

    const int ordered = ordered_puts();
    if (0 != tc_cvar_read_ull("btl_ofi_atomic_unhurried_flag", &unhurried)) {
        CHECK(!tc_check_ours_enabled(), "complete_ordered: cvar btl_ofi_atomic_unhurried_flag not found");
    }
    const int T = remote_holder("complete_ordered");
    if (T < 0) {
        return;
    }
    CHECK(!ordered || 0 != unhurried, "complete_ordered: btl_ofi_put_copied_ordered true but "
          "btl_ofi_atomic_unhurried_flag 0");
    const int check = ordered && tc_have_counters && tc_check_ours_enabled();
    MPI_Group g0 = group_of(&zero, 1), gT = group_of(&T, 1);

    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_counters_read(&c0);
    for (int k = 0; k < ROUNDS; ++k) {
        unsigned r = round_no++;

        if (0 == tc_rank) {
            tc_fill(buf, 0, SZ, r);
            MPI_CHECK(MPI_Win_start(gT, 0, win));
            MPI_CHECK(MPI_Put(buf, SZ, MPI_BYTE, T, SLOTS_OFF, SZ, MPI_BYTE, win));
            count_put(T, SZ);
            MPI_CHECK(MPI_Win_complete(win));
            memset(buf, 0xEE, SZ);
        } else if (T == tc_rank) {
            MPI_CHECK(MPI_Win_post(g0, 0, win));
            MPI_CHECK(MPI_Win_wait(win));
            tc_verify(tc_fmt("complete_ordered round %d: %d bytes put by rank 0, checked when "
                             "MPI_Win_wait returned", k, SZ), wbase + SLOTS_OFF, 0, SZ, r);
        }
    }
    tc_counters_read(&c1);
    MPI_CHECK(MPI_Group_free(&g0));
    MPI_CHECK(MPI_Group_free(&gT));
    const unsigned long long flushes = c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT];
    const unsigned long long amo = c1.v[TC_ATOMIC_COUNT] - c0.v[TC_ATOMIC_COUNT];
    const unsigned long long carried = c1.v[TC_ANSWER_CARRIED] - c0.v[TC_ANSWER_CARRIED];
    if (check && 0 == tc_rank) {
        CHECK(0 == flushes, "complete_ordered: %d MPI_Win_complete after one copied put to rank %d "
              "(another node) flushed %llu time(s), expected 0 (btl_ofi_put_copied_ordered true)",
              ROUNDS, T, flushes);
        CHECK(ROUNDS == amo, "complete_ordered: btl_ofi_atomic_count grew by %llu over %d epochs, "
              "expected %d (one atomic behind the put per complete)", amo, ROUNDS, ROUNDS);
    }
    /* T's posts as messages (its atomic count still): they carry the answers */
    if (check && T == tc_rank && amo < ROUNDS) {
        CHECK(carried >= ROUNDS / 2, "complete_ordered: %llu of %d answers to rank 0's completes rode "
              "on rank %d's next post, expected at least %d (btl_ofi_answer_carried)", carried, ROUNDS,
              T, ROUNDS / 2);
    }
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("  ok complete_ordered: %d epochs rank 0 -> rank %d, every byte at the target%s", ROUNDS, T,
           check ? ", no flush in complete" : " (put_copied_ordered false: complete flushes, data only)");
}

/* get_ordered (osc-rdma/patches 0024): where btl/ofi orders an atomic
 * after small gets (btl_ofi_get_ordered_max > 0), MPI_Win_unlock after a
 * get from a rank T of another node that holds its own state, and
 * MPI_Win_complete after one, release or complete behind the get without
 * a flush. T writes a new pattern before each epoch (its own lock, then a
 * barrier, or before its post); rank 0 reads GO_SZ bytes in the epoch and
 * checks every byte against the round's pattern once unlock or complete
 * returned; btl_ofi_flush_count must not grow at rank 0 over the
 * epochs. */
static void test_get_ordered(void)
{
    enum { ROUNDS = 40, GO_SZ = 48 };
    const int zero = 0;
    unsigned long long omax = 0;
    unsigned char buf[GO_SZ];
    tc_counters_t c0, c1;

    if (0 != tc_cvar_read_ull("btl_ofi_get_ordered_max", &omax)) {
        CHECK(!tc_check_ours_enabled(), "get_ordered: cvar btl_ofi_get_ordered_max not found");
    }
    const int T = remote_holder("get_ordered");
    if (T < 0) {
        return;
    }
    const int check = omax >= GO_SZ && tc_have_counters && tc_check_ours_enabled();
    MPI_Group g0 = group_of(&zero, 1), gT = group_of(&T, 1);

    /* lock, get, unlock */
    unsigned long long flushes = 0;
    for (int k = 0; k < ROUNDS; ++k) {
        unsigned r = round_no++;

        if (T == tc_rank) {
            self_lock();
            tc_fill(wbase + SLOTS_OFF, T, GO_SZ, r);
            self_unlock();
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (0 == tc_rank) {
            memset(buf, 0xEE, GO_SZ);
            MPI_CHECK(MPI_Win_lock(k & 1 ? MPI_LOCK_SHARED : MPI_LOCK_EXCLUSIVE, T, 0, win));
            MPI_CHECK(MPI_Get(buf, GO_SZ, MPI_BYTE, T, SLOTS_OFF, GO_SZ, MPI_BYTE, win));
            count_get(T, GO_SZ);
            tc_counters_read(&c0);
            MPI_CHECK(MPI_Win_unlock(T, win));
            tc_counters_read(&c1);
            flushes += c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT];
            tc_verify(tc_fmt("get_ordered round %d: %d bytes read from rank %d under a %s lock, "
                             "checked when MPI_Win_unlock returned", k, GO_SZ, T,
                             k & 1 ? "shared" : "exclusive"), buf, T, GO_SZ, r);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    if (check && 0 == tc_rank) {
        CHECK(0 == flushes, "get_ordered: %d MPI_Win_unlock after one %d-byte get from rank %d (another "
              "node) flushed %llu time(s), expected 0 (btl_ofi_get_ordered_max %llu)", ROUNDS, GO_SZ, T,
              flushes, omax);
    }

    /* start, get, complete against post, wait */
    tc_counters_read(&c0);
    for (int k = 0; k < ROUNDS; ++k) {
        unsigned r = round_no++;

        if (0 == tc_rank) {
            memset(buf, 0xEE, GO_SZ);
            MPI_CHECK(MPI_Win_start(gT, 0, win));
            MPI_CHECK(MPI_Get(buf, GO_SZ, MPI_BYTE, T, SLOTS_OFF, GO_SZ, MPI_BYTE, win));
            count_get(T, GO_SZ);
            MPI_CHECK(MPI_Win_complete(win));
            tc_verify(tc_fmt("get_ordered pscw round %d: %d bytes read from rank %d, checked when "
                             "MPI_Win_complete returned", k, GO_SZ, T), buf, T, GO_SZ, r);
        } else if (T == tc_rank) {
            /* the exposure epoch's data, in place before the post */
            tc_fill(wbase + SLOTS_OFF, T, GO_SZ, r);
            MPI_CHECK(MPI_Win_post(g0, 0, win));
            MPI_CHECK(MPI_Win_wait(win));
        }
    }
    tc_counters_read(&c1);
    if (check && 0 == tc_rank) {
        CHECK(c1.v[TC_FLUSH_COUNT] == c0.v[TC_FLUSH_COUNT],
              "get_ordered: %d MPI_Win_complete after one %d-byte get from rank %d flushed %llu "
              "time(s), expected 0", ROUNDS, GO_SZ, T, c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT]);
    }
    MPI_CHECK(MPI_Group_free(&g0));
    MPI_CHECK(MPI_Group_free(&gT));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("  ok get_ordered: %d lock and %d PSCW epochs reading rank %d, every byte%s", ROUNDS, ROUNDS, T,
           check ? ", no flush in unlock or complete" : " (btl_ofi_get_ordered_max 0: flushes, data only)");
}

/* "sync message": over several nodes with btl_ofi_global_atomics -1, a
 * post or complete to a rank of another node is one btl message that the
 * receiver applies to its own state (osc-rdma/patches 0017), not a btl
 * atomic OR or add waited for. ROUNDS ring epochs (post to the left
 * neighbour, start the right one, one put of SZ bytes checked byte by
 * byte at the left's window) must leave btl_ofi_atomic_count where it was
 * and grow btl_ofi_send_count by at least one per post and complete this
 * rank sent to another node. */
static int message_mode;

static void test_pscw_message(void)
{
    enum { ROUNDS = 50, SZ = 8 };
    const int n = tc_size, right = (tc_rank + 1) % n, left = (tc_rank + n - 1) % n;
    int node_of[MAX_RANKS], nodes = 0;
    unsigned char buf[SZ];
    tc_counters_t before, after;

    /* a node named by its lowest rank */
    const int first = nodes_of(node_of);
    for (int i = 0; i < n; ++i) {
        nodes += node_of[i] == i;
    }
    CHECK(nodes > 1, "pscw message: every rank on one node (run it across hosts)");
    const unsigned remote = (node_of[left] != first) + (node_of[right] != first);

    MPI_Group gl = group_of(&left, 1), gr = group_of(&right, 1);
    tc_counters_read(&before);
    for (int k = 0; k < ROUNDS; ++k) {
        unsigned r = round_no++;
        tc_fill(buf, tc_rank, SZ, r);
        MPI_CHECK(MPI_Win_post(gl, 0, win));
        MPI_CHECK(MPI_Win_start(gr, 0, win));
        MPI_CHECK(MPI_Put(buf, SZ, MPI_BYTE, right, SLOTS_OFF, SZ, MPI_BYTE, win));
        count_put(right, SZ);
        MPI_CHECK(MPI_Win_complete(win));
        MPI_CHECK(MPI_Win_wait(win));
        tc_verify(tc_fmt("pscw message round %d: data put by rank %d", k, left), wbase + SLOTS_OFF, left, SZ, r);
    }
    tc_counters_read(&after);
    MPI_CHECK(MPI_Group_free(&gl));
    MPI_CHECK(MPI_Group_free(&gr));
    if (tc_have_counters) {
        const unsigned long long amo = after.v[TC_ATOMIC_COUNT] - before.v[TC_ATOMIC_COUNT];
        const unsigned long long sends = after.v[TC_SEND_COUNT] - before.v[TC_SEND_COUNT];
        /* after copied puts, a complete to a rank of another node holding
         * its own state is an atomic behind them (0023) */
        const unsigned long long behind =
            ordered_puts() && node_of[right] != first && node_of[right] == right ? ROUNDS : 0;
        CHECK(behind == amo, "pscw message: btl_ofi_atomic_count grew by %llu over %d epochs, expected %llu "
                             "(each post and complete to another node one message, but a complete behind "
                             "copied puts to a rank holding its own state: an atomic)", amo, ROUNDS, behind);
        CHECK(sends >= (unsigned long long) ROUNDS * remote, "pscw message: btl_ofi_send_count grew by %llu, "
              "expected at least %u (a post and a complete per epoch to each peer of another node)", sends,
              ROUNDS * remote);
        /* sockets acknowledges every message sent with a completion level:
         * ours go unacknowledged, 16 in a row to a peer, then one
         * acknowledged (mca_btl_ofi_frag_send_quick); other providers
         * send none so */
        char prov[64] = "";
        const unsigned long long quick = after.v[TC_SEND_QUICK] - before.v[TC_SEND_QUICK];
        const int acked = 0 == tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov))
                          && 0 == strcmp(prov, "sockets");
        CHECK(acked ? quick >= (unsigned long long) ROUNDS * remote / 2 : 0 == quick,
              "pscw message: btl_ofi_send_quick grew by %llu on %s, expected %s %u", quick, prov,
              acked ? "at least" : "exactly", acked ? ROUNDS * remote / 2 : 0);
    }
    tc_say("  ok %d ring epochs, posts and completes to another node as messages, no btl atomic", ROUNDS);
}

/* ---------------- lock shared ---------------- */
/* Many exposure epochs, each served by two access epochs: every rank
 * posts to all others, then starts the nearer half of them, puts, completes,
 * starts the farther half, puts, completes, and waits. Posts of the
 * farther half often arrive during the first start (queued for the
 * second), and the next round's posts arrive while this one's wait runs:
 * a post lost, merged with another or taken by the wrong epoch hangs the
 * job or fails the byte check. */
static void test_pscw_split(void)
{
    enum { ROUNDS = 100, SZ = 64 };
    const int n = tc_size, near = (n - 1) / 2;
    int all[MAX_RANKS], first[MAX_RANKS], second[MAX_RANKS], nf = 0, ns = 0;
    unsigned char buf[SZ];

    for (int d = 1; d < n; ++d) {
        all[d - 1] = (tc_rank + d) % n;
        if (d <= near) {
            first[nf++] = (tc_rank + d) % n;
        } else {
            second[ns++] = (tc_rank + d) % n;
        }
    }
    MPI_Group gall = group_of(all, n - 1), gf = group_of(first, nf), gs = group_of(second, ns);
    for (int k = 0; k < ROUNDS; ++k) {
        unsigned r = round_no++;
        tc_fill(buf, tc_rank, SZ, r);
        MPI_CHECK(MPI_Win_post(gall, 0, win));
        for (int half = 0; half < 2; ++half) {
            const int *peers = half ? second : first, np = half ? ns : nf;
            MPI_CHECK(MPI_Win_start(half ? gs : gf, 0, win));
            for (int i = 0; i < np; ++i) {
                MPI_CHECK(MPI_Put(buf, SZ, MPI_BYTE, peers[i], SLOTS_OFF + tc_rank * SLOT, SZ,
                                  MPI_BYTE, win));
                count_put(peers[i], SZ);
            }
            MPI_CHECK(MPI_Win_complete(win));
        }
        MPI_CHECK(MPI_Win_wait(win));
        for (int i = 0; i < n - 1; ++i) {
            tc_verify(tc_fmt("pscw split round %d: data put by rank %d", k, all[i]),
                      wbase + SLOTS_OFF + all[i] * SLOT, all[i], SZ, r);
        }
    }
    MPI_CHECK(MPI_Group_free(&gall));
    MPI_CHECK(MPI_Group_free(&gf));
    MPI_CHECK(MPI_Group_free(&gs));
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    tc_say("  ok post to all, two starts (%d and %d peers), wait: %d rounds", nf, ns, ROUNDS);
}

static void test_lock_shared(void)
{
    const int n = tc_size;
    unsigned r = round_no++;
    unsigned char *buf = malloc(SLOT);
    for (int T = 0; T < n; T += (n > 1 ? n - 1 : 1)) { /* target 0, then n-1 */
        size_t sz = 3000 + tc_rank;
        tc_fill(buf, tc_rank, sz, r);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, win));
        MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, T, SLOTS_OFF + tc_rank * SLOT, (int) sz,
                          MPI_BYTE, win));
        count_put(T, sz);
        MPI_CHECK(MPI_Win_unlock(T, win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (tc_rank == T) {
            self_lock();
            for (int i = 0; i < n; ++i) {
                tc_verify(tc_fmt("lock shared: slot of rank %d at target %d", i, T),
                          wbase + SLOTS_OFF + i * SLOT, i, 3000 + i, r);
            }
            self_unlock();
        }
        /* and read every slot back under a shared lock */
        for (int i = 0; i < n; ++i) {
            memset(buf, 0, SLOT);
            MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, win));
            MPI_CHECK(MPI_Get(buf, 3000 + i, MPI_BYTE, T, SLOTS_OFF + i * SLOT, 3000 + i,
                              MPI_BYTE, win));
            count_get(T, 3000 + i);
            MPI_CHECK(MPI_Win_unlock(T, win));
            tc_verify(tc_fmt("lock shared: slot of rank %d read back from target %d", i, T), buf,
                      i, 3000 + i, r);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (n == 1) {
            break;
        }
    }
    free(buf);
    tc_say("  ok lock shared: %d concurrent origins put then get, targets 0 and %d", n, n - 1);
}

/* ---------------- lock exclusive counter ---------------- */
#define K_EXCL 10
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return x < y ? -1 : x > y;
}

/* Under an exclusive lock of T (taken here, left to the caller to
 * release): read the int64 counter at OFF, flush, write it plus one (a put
 * the btl copies, after the flush). Returns the value read. */
static int64_t excl_increment(int T, int off)
{
    int64_t v = -1, seen;

    MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, win));
    MPI_CHECK(MPI_Get(&v, 1, MPI_INT64_T, T, off, 1, MPI_INT64_T, win));
    MPI_CHECK(MPI_Win_flush(T, win));
    count_get(T, 8);
    seen = v;
    v += 1;
    MPI_CHECK(MPI_Put(&v, 1, MPI_INT64_T, T, off, 1, MPI_INT64_T, win));
    count_put(T, 8);
    return seen;
}

/* After every rank made K increments of T's counter at OFF (the values
 * it read in SEEN): the count is n*K and the values read, sorted, are
 * 0..n*K-1 (collective; WHAT names the case). */
static void excl_check(int T, int off, const int64_t *seen, int K, const char *what)
{
    const int n = tc_size;
    int64_t final = 0;

    if (tc_rank == T) {
        self_lock();
        memcpy(&final, wbase + off, 8);
        self_unlock();
    }
    MPI_CHECK(MPI_Bcast(&final, 1, MPI_INT64_T, T, MPI_COMM_WORLD));
    int64_t *all = tc_rank == 0 ? malloc(sizeof(int64_t) * n * K) : NULL;
    MPI_CHECK(MPI_Gather(seen, K, MPI_INT64_T, all, K, MPI_INT64_T, 0, MPI_COMM_WORLD));
    if (tc_rank == 0) {
        CHECK(final == (int64_t) n * K,
              "%s: counter at rank %d is %" PRId64 ", expected %d (lost updates: the exclusive "
              "lock did not exclude, or a put/get was not complete at unlock)",
              what, T, final, n * K);
        qsort(all, (size_t) n * K, sizeof(int64_t), cmp_i64);
        for (int i = 0; i < n * K; ++i) {
            CHECK(all[i] == i, "%s: counter at rank %d: the values read under the lock are not "
                  "0..%d: sorted position %d is %" PRId64, what, T, n * K - 1, i, all[i]);
        }
        free(all);
    }
}

static void test_lock_exclusive(void)
{
    const int n = tc_size;
    for (int T = 0; T < n; T += (n > 1 ? n - 1 : 1)) {
        if (tc_rank == T) {
            self_lock();
            memset(wbase + CNT_OFF, 0, 8);
            self_unlock();
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        int64_t seen[K_EXCL];
        for (int k = 0; k < K_EXCL; ++k) {
            seen[k] = excl_increment(T, CNT_OFF);
            MPI_CHECK(MPI_Win_unlock(T, win));
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        excl_check(T, CNT_OFF, seen, K_EXCL, "exclusive-lock counter");
        if (n == 1) {
            break;
        }
    }
    tc_say("  ok lock exclusive: get-increment-put counter reached %d at targets 0 and %d",
           n * K_EXCL, n - 1);
}

/* ---------------- lock_all + flush / flush_local / flush_all ---------------- */
static void wait_notify(int from, unsigned expect_round)
{
    unsigned got = 0;
    MPI_CHECK(MPI_Recv(&got, 1, MPI_UNSIGNED, from, TAG_NOTIFY, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE));
    CHECK(got == expect_round, "notification from rank %d carries round %u, expected %u", from, got,
          expect_round);
}

static void notify(int to, unsigned r)
{
    MPI_CHECK(MPI_Send(&r, 1, MPI_UNSIGNED, to, TAG_NOTIFY, MPI_COMM_WORLD));
}

#define FL_SZ (256 * 1024 + 5)

static void test_flushes(void)
{
    const int n = tc_size, right = (tc_rank + 1) % n, left = (tc_rank + n - 1) % n;
    unsigned char *buf = malloc(FL_SZ);
    unsigned char *rbuf = malloc(FL_SZ);

    MPI_CHECK(MPI_Win_lock_all(0, win));

    /* MPI_Win_flush: the put is complete at the target when it returns */
    for (int e = 0; e < 3; ++e) {
        unsigned r = round_no++;
        size_t sz = e == 0 ? 1 : (e == 1 ? 4097 : FL_SZ);
        tc_fill(buf, tc_rank, sz, r);
        MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, right, VIS_OFF, (int) sz, MPI_BYTE, win));
        count_put(right, sz);
        MPI_CHECK(MPI_Win_flush(right, win));
        notify(right, r);
        wait_notify(left, r);
        MPI_CHECK(MPI_Win_sync(win));
        tc_verify(tc_fmt("flush: %zu bytes put by rank %d, flushed before the notification", sz,
                         left),
                  wbase + VIS_OFF, left, sz, r);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_say("  ok lock_all + MPI_Win_flush: put, flush, notify, target checks (1, 4097, %d B)",
           FL_SZ);

    /* MPI_Win_flush_local: the origin buffer may be reused when it returns */
    for (int e = 0; e < 3; ++e) {
        unsigned r = round_no++;
        tc_fill(buf, tc_rank, FL_SZ, r);
        MPI_CHECK(MPI_Put(buf, FL_SZ, MPI_BYTE, right, VIS_OFF, FL_SZ, MPI_BYTE, win));
        count_put(right, FL_SZ);
        if (e == 2) {
            MPI_CHECK(MPI_Win_flush_local_all(win));
        } else {
            MPI_CHECK(MPI_Win_flush_local(right, win));
        }
        /* overwrite the origin buffer: the target must still get round r */
        memset(buf, 0xDD, FL_SZ);
        MPI_CHECK(MPI_Win_flush(right, win));
        notify(right, r);
        wait_notify(left, r);
        MPI_CHECK(MPI_Win_sync(win));
        tc_verify(tc_fmt("flush_local%s: data put by rank %d whose buffer was overwritten after "
                         "the local flush", e == 2 ? "_all" : "", left),
                  wbase + VIS_OFF, left, FL_SZ, r);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* and a get: flush_local completes it at the origin */
    {
        unsigned r = round_no++;
        MPI_CHECK(MPI_Win_sync(win));
        tc_fill(wbase + VIS_OFF, tc_rank, FL_SZ, r);
        MPI_CHECK(MPI_Win_sync(win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        memset(rbuf, 0, FL_SZ);
        MPI_CHECK(MPI_Get(rbuf, FL_SZ, MPI_BYTE, left, VIS_OFF, FL_SZ, MPI_BYTE, win));
        count_get(left, FL_SZ);
        MPI_CHECK(MPI_Win_flush_local(left, win));
        tc_verify(tc_fmt("get completed by flush_local from rank %d", left), rbuf, left, FL_SZ, r);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_say("  ok lock_all + MPI_Win_flush_local(_all): origin buffer reusable, target saw the "
           "old data; get completed by flush_local");

    /* MPI_Win_flush_all: put to every rank, one flush_all */
    {
        unsigned r = round_no++;
        size_t sz = 5000 + tc_rank;
        tc_fill(buf, tc_rank, sz, r);
        for (int t = 0; t < n; ++t) {
            MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, t, SLOTS_OFF + tc_rank * SLOT, (int) sz,
                              MPI_BYTE, win));
            count_put(t, sz);
        }
        MPI_CHECK(MPI_Win_flush_all(win));
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        MPI_CHECK(MPI_Win_sync(win));
        for (int i = 0; i < n; ++i) {
            tc_verify(tc_fmt("flush_all: slot written by rank %d", i),
                      wbase + SLOTS_OFF + i * SLOT, i, 5000 + i, r);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    tc_say("  ok lock_all + MPI_Win_flush_all: puts to all %d ranks complete after one flush_all",
           n);

    MPI_CHECK(MPI_Win_unlock_all(win));
    free(buf);
    free(rbuf);
}

/* ---------------- flush_local after puts the btl copied ---------------- */
/* osc-rdma/patches 0021: after puts btl/ofi copied before btl_put returned
 * (at most btl_ofi_put_copied_max bytes, a read-only variable; 0 where it
 * copies none), MPI_Win_flush_local returns without a flush; after
 * anything else it flushes. Each round every rank puts pieces of sizes
 * around that limit into its right neighbour's window, each followed by
 * MPI_Win_flush_local (or _all) and its buffer overwritten at once, then a
 * get and an accumulate, each flushed locally and its buffer checked or
 * overwritten; after one MPI_Win_flush the neighbour finds every piece and
 * the accumulated sum exact. Where the limit is above 0 btl_ofi_flush_count
 * must not grow over the copied puts and their local flushes, and must
 * grow where a larger put came (a flush_local that skipped it would leave
 * that buffer in use: the overwrite would reach the target). */
#define FLL_CELL_OFF (CNT_OFF + 512) /* int64: the sum of the left neighbour's accumulates */
enum { FLL_PIECES = 6 };

static void fll_put(unsigned char *buf, size_t sz, size_t off, unsigned r, int right, int all)
{
    tc_fill(buf, tc_rank, sz, r);
    MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, right, VIS_OFF + off, (int) sz, MPI_BYTE, win));
    count_put(right, sz);
    if (all) {
        MPI_CHECK(MPI_Win_flush_local_all(win));
    } else {
        MPI_CHECK(MPI_Win_flush_local(right, win));
    }
    memset(buf, 0xEE, sz); /* a flush_local that returned early lets this reach the target */
}

static void test_flush_local(void)
{
    enum { ROUNDS = 20, GET_SZ = 100 };
    const int n = tc_size, right = (tc_rank + 1) % n, left = (tc_rank + n - 1) % n;
    unsigned long long copied = 0;
    size_t lim, sizes[FLL_PIECES], offs[FLL_PIECES], off = 0;
    unsigned rounds_of[FLL_PIECES], own_round;
    int64_t left_sum = 0;
    unsigned char *buf, *rbuf;
    tc_counters_t c0, c1;

    if (0 != tc_cvar_read_ull("btl_ofi_put_copied_max", &copied)) {
        CHECK(!tc_check_ours_enabled(), "flush_local: cvar btl_ofi_put_copied_max not found (not our btl/ofi?)");
        copied = 0;
    }
    /* pieces 0-2 and 5 within the limit, 3 one byte past it, 4 twice it */
    lim = copied > 0 ? (size_t) copied : 4096;
    const size_t want[FLL_PIECES] = {1, 8, lim, lim + 1, 2 * lim, 24};
    for (int i = 0; i < FLL_PIECES; ++i) {
        sizes[i] = want[i];
        offs[i] = off;
        off += (want[i] + 63) & ~(size_t) 63;
    }
    CHECK(off <= VIS_MAX, "flush_local: pieces of %zu bytes do not fit the region (%u)", off, VIS_MAX);
    if (0 == tc_rank) {
        if (copied > 0) {
            tc_say("  btl_ofi_put_copied_max %llu: local flushes after such puts need no flush", copied);
        } else {
            tc_say("  btl_ofi_put_copied_max 0 (puts not gathered here: several rails, a progress "
                   "thread or emulated RMA): every MPI_Win_flush_local flushes, checked for data only");
        }
    }
    buf = malloc(2 * lim + 64);
    rbuf = malloc(GET_SZ);
    CHECK(NULL != buf && NULL != rbuf, "flush_local: malloc");

    /* our own slot, read by the left neighbour's gets; the sum cell */
    own_round = round_no++;
    self_lock();
    tc_fill(wbase + SLOTS_OFF + tc_rank * SLOT, tc_rank, GET_SZ, own_round);
    memset(wbase + FLL_CELL_OFF, 0, 8);
    self_unlock();
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    MPI_CHECK(MPI_Win_lock_all(0, win));
    /* what came before is complete: the first local flush may be short */
    MPI_CHECK(MPI_Win_flush_all(win));
    for (int k = 0; k < ROUNDS; ++k) {
        const int all = k & 1;
        int64_t v = k + 1 + tc_rank;

        /* copied puts only */
        tc_counters_read(&c0);
        for (int i = 0; i < FLL_PIECES; ++i) {
            if (sizes[i] <= lim) {
                rounds_of[i] = round_no++;
                fll_put(buf, sizes[i], offs[i], rounds_of[i], right, all);
            }
        }
        tc_counters_read(&c1);
        if (copied > 0 && tc_have_counters && tc_check_ours_enabled()) {
            CHECK(c1.v[TC_FLUSH_COUNT] == c0.v[TC_FLUSH_COUNT],
                  "flush_local round %d: btl_ofi_flush_count grew by %llu over 4 puts of at most "
                  "btl_ofi_put_copied_max (%llu) bytes and their MPI_Win_flush_local%s, expected 0",
                  k, c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT], copied, all ? "_all" : "");
        }
        /* larger ones: each local flush flushes */
        for (int i = 0; i < FLL_PIECES; ++i) {
            if (sizes[i] > lim) {
                rounds_of[i] = round_no++;
                tc_counters_read(&c0);
                fll_put(buf, sizes[i], offs[i], rounds_of[i], right, all);
                tc_counters_read(&c1);
                if (tc_have_counters && tc_check_ours_enabled()) {
                    CHECK(c1.v[TC_FLUSH_COUNT] > c0.v[TC_FLUSH_COUNT],
                          "flush_local round %d: a put of %zu bytes (more than btl_ofi_put_copied_max, "
                          "%llu) and its MPI_Win_flush_local%s asked no btl flush", k, sizes[i], copied,
                          all ? "_all" : "");
                }
            }
        }
        /* a get: complete at the origin once the local flush returns */
        memset(rbuf, 0, GET_SZ);
        MPI_CHECK(MPI_Get(rbuf, GET_SZ, MPI_BYTE, right, SLOTS_OFF + right * SLOT, GET_SZ, MPI_BYTE, win));
        count_get(right, GET_SZ);
        MPI_CHECK(MPI_Win_flush_local(right, win));
        tc_verify(tc_fmt("flush_local round %d: get from rank %d after MPI_Win_flush_local", k, right), rbuf,
                  right, GET_SZ, own_round);
        /* an accumulate: its buffer free once the local flush returns */
        MPI_CHECK(MPI_Accumulate(&v, 1, MPI_INT64_T, right, FLL_CELL_OFF, 1, MPI_INT64_T, MPI_SUM, win));
        MPI_CHECK(MPI_Win_flush_local(right, win));
        v = -1000000;
        left_sum += k + 1 + left;

        /* one flush makes all of it visible to the neighbour */
        MPI_CHECK(MPI_Win_flush(right, win));
        notify(right, rounds_of[FLL_PIECES - 1]);
        wait_notify(left, rounds_of[FLL_PIECES - 1]);
        MPI_CHECK(MPI_Win_sync(win));
        for (int i = 0; i < FLL_PIECES; ++i) {
            tc_verify(tc_fmt("flush_local round %d: %zu bytes put by rank %d, buffer overwritten after "
                             "MPI_Win_flush_local%s", k, sizes[i], left, all ? "_all" : ""),
                      wbase + VIS_OFF + offs[i], left, sizes[i], rounds_of[i]);
        }
        int64_t got;
        memcpy(&got, wbase + FLL_CELL_OFF, 8);
        CHECK(got == left_sum, "flush_local round %d: accumulated sum from rank %d is %lld, expected %lld", k,
              left, (long long) got, (long long) left_sum);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    free(buf);
    free(rbuf);
    tc_say("  ok %d rounds: puts of 1 B-%zu B each locally flushed and overwritten, gets and accumulates "
           "between, every byte and sum exact at the target%s", ROUNDS, 2 * lim,
           copied > 0 ? "; no btl flush for the copied ones" : "");
}

/* ---------------- unlock behind copied puts ---------------- */
/* osc-rdma/patches 0022: where btl/ofi says an atomic after puts it copied
 * is applied after them (btl_ofi_put_copied_ordered), MPI_Win_unlock of a
 * peer on another node after nothing but such puts sends the lock's
 * release behind them and flushes nothing. Targets 0 and n-1 in turn:
 * every rank K times takes the exclusive lock, reads the counter, flushes,
 * writes it plus one and unlocks (the put after the flush is copied: the
 * unlock takes the new path; a release that overtook the put would let
 * the next holder read a stale count: the final count and the sorted
 * values read are checked exactly); then every rank puts 40 bytes into
 * its slot under a shared lock and unlocks, and the target checks every
 * slot after a barrier (complete at the target when unlock returned). Over
 * each unlock of a peer on another node that holds its own lock word (the
 * first rank of its node) btl_ofi_flush_count must not grow where the
 * variable is true; other peers (lock words on one node in shared memory,
 * or with another rank of the peer's node) and a btl without it are
 * checked for data only. */
#define UO_CNT_OFF (CNT_OFF + 1024) /* int64 counter */
static void test_unlock_ordered(void)
{
    enum { K = 60, SH_SZ = 40 };
    const int n = tc_size;
    int node_of[MAX_RANKS];
    unsigned long long skipped = 0;
    unsigned char buf[SH_SZ];
    tc_counters_t c0, c1;

    const int ordered = ordered_puts();
    const int first = nodes_of(node_of);
    if (0 == tc_rank) {
        tc_say("  btl_ofi_put_copied_ordered %s%s", ordered ? "true" : "false",
               ordered ? ": unlocks of peers on other nodes after copied puts must not flush"
                       : " (several rails or contexts, no gathering, or atomics a NIC applies): "
                         "every unlock flushes, checked for data only");
    }
    for (int T = 0; T < n; T += n - 1) {
        /* a peer on another node holding its own lock word (osc/rdma keeps a
         * node's lock words with its first rank): puts and release reach
         * one process */
        const int check = ordered && node_of[T] != first && node_of[T] == T && tc_have_counters &&
                          tc_check_ours_enabled();
        int64_t seen[K];
        unsigned r = round_no++;

        if (tc_rank == T) {
            self_lock();
            memset(wbase + UO_CNT_OFF, 0, 8);
            memset(wbase + SLOTS_OFF, 0, (size_t) n * SLOT);
            self_unlock();
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (int k = 0; k < K; ++k) {
            seen[k] = excl_increment(T, UO_CNT_OFF);
            tc_counters_read(&c0);
            MPI_CHECK(MPI_Win_unlock(T, win));
            tc_counters_read(&c1);
            if (check) {
                CHECK(c1.v[TC_FLUSH_COUNT] == c0.v[TC_FLUSH_COUNT],
                      "unlock_ordered: MPI_Win_unlock of rank %d (exclusive, after one copied put) "
                      "flushed %llu time(s) with btl_ofi_put_copied_ordered true, expected 0", T,
                      c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT]);
                ++skipped;
            }
        }
        /* a shared lock: the put complete at the target when unlock returns */
        tc_fill(buf, tc_rank, SH_SZ, r);
        MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, win));
        MPI_CHECK(MPI_Put(buf, SH_SZ, MPI_BYTE, T, SLOTS_OFF + tc_rank * SLOT, SH_SZ, MPI_BYTE, win));
        count_put(T, SH_SZ);
        tc_counters_read(&c0);
        MPI_CHECK(MPI_Win_unlock(T, win));
        tc_counters_read(&c1);
        if (check) {
            CHECK(c1.v[TC_FLUSH_COUNT] == c0.v[TC_FLUSH_COUNT],
                  "unlock_ordered: MPI_Win_unlock of rank %d (shared, after one copied put) flushed "
                  "%llu time(s) with btl_ofi_put_copied_ordered true, expected 0", T,
                  c1.v[TC_FLUSH_COUNT] - c0.v[TC_FLUSH_COUNT]);
            ++skipped;
        }
        memset(buf, 0xEE, SH_SZ);
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (tc_rank == T) {
            self_lock();
            for (int i = 0; i < n; ++i) {
                tc_verify(tc_fmt("unlock_ordered: %d bytes put by rank %d under a shared lock, read "
                                 "after its unlock and a barrier", SH_SZ, i),
                          wbase + SLOTS_OFF + i * SLOT, i, SH_SZ, r);
            }
            self_unlock();
        }
        excl_check(T, UO_CNT_OFF, seen, K, "unlock_ordered (a release that overtook its put?)");
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    }
    unsigned long long total = 0;
    MPI_CHECK(MPI_Reduce(&skipped, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    tc_say("  ok unlock_ordered: counter reached %d at targets 0 and %d, shared-lock puts complete at "
           "unlock; %llu unlock(s) checked to flush nothing", n * K, n - 1, total);
}

/* ---------------- visibility to a second origin ---------------- */
static void test_visibility(void)
{
    const int n = tc_size;
    static const size_t vsizes[] = {VIS_MAX, 65537, VIS_MAX, 7, VIS_MAX, VIS_MAX - 4096};
    const int rounds = (int) (sizeof(vsizes) / sizeof(vsizes[0]));
    unsigned char *buf = malloc(VIS_MAX);
    MPI_Win win2 = MPI_WIN_NULL;

    /* reader: rank 2, or with 2 ranks rank 1 itself through a second window
     * over the same memory (its own registration and epoch) */
    const int reader = n >= 3 ? 2 : 1;
    if (n == 2) {
        tc_say("  note visibility: only 2 ranks, so rank 1 is both writer and reader; it reads "
               "through a second window on the same memory of rank 0");
        MPI_CHECK(MPI_Win_create(wbase, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win2));
        MPI_CHECK(MPI_Win_lock_all(0, win2));
    }
    MPI_CHECK(MPI_Win_lock_all(0, win));
    for (int e = 0; e < rounds; ++e) {
        unsigned r = round_no++;
        size_t sz = vsizes[e];
        if (tc_rank == 1) {
            tc_fill(buf, 1, sz, r);
            MPI_CHECK(MPI_Put(buf, (int) sz, MPI_BYTE, 0, VIS_OFF, (int) sz, MPI_BYTE, win));
            count_put(0, sz);
            MPI_CHECK(MPI_Win_flush(0, win));
            if (reader != 1) {
                notify(reader, r);
            }
        }
        if (tc_rank == reader) {
            if (reader != 1) {
                wait_notify(1, r);
            }
            memset(buf, 0, sz);
            MPI_Win rwin = n == 2 ? win2 : win;
            MPI_CHECK(MPI_Get(buf, (int) sz, MPI_BYTE, 0, VIS_OFF, (int) sz, MPI_BYTE, rwin));
            count_get(0, sz);
            MPI_CHECK(MPI_Win_flush(0, rwin));
            tc_verify(tc_fmt("visibility round %d: %zu bytes put by rank 1 into rank 0, read by "
                             "rank %d", e, sz, reader),
                      buf, 1, sz, r);
        }
        MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        tc_say("  ok visibility round %d: %zu B put by rank 1 + flush, read from rank 0 by rank %d",
               e, sz, reader);
    }
    MPI_CHECK(MPI_Win_unlock_all(win));
    if (win2 != MPI_WIN_NULL) {
        MPI_CHECK(MPI_Win_unlock_all(win2));
        MPI_CHECK(MPI_Win_free(&win2));
    }
    free(buf);
}

int main(int argc, char **argv)
{
    tc_init(&argc, &argv, "sync");
    message_mode = argc > 1 && 0 == strcmp(argv[1], "message");
    if (tc_size < 2 || tc_size > MAX_RANKS) {
        FAILF("sync needs 2..%d ranks (got %d)", MAX_RANKS, tc_size);
    }
    void *mem = NULL;
    CHECK(0 == posix_memalign(&mem, 4096, WIN_BYTES), "posix_memalign");
    wbase = mem;
    memset(wbase, 0, WIN_BYTES);
    MPI_CHECK(MPI_Win_create(wbase, WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));

    tc_counters_t before, after;
    struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"fence", test_fence},
        {"pscw", test_pscw},
        {"pscw_split", test_pscw_split},
        {"pscw_message", message_mode ? test_pscw_message : NULL},
        {"complete_ordered", test_complete_ordered},
        {"get_ordered", test_get_ordered},
        {"lock_shared", test_lock_shared},
        {"lock_exclusive", test_lock_exclusive},
        {"flushes", test_flushes},
        {"flush_local", test_flush_local},
        {"unlock_ordered", test_unlock_ordered},
        {"visibility", test_visibility},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
        if (NULL == cases[i].fn) {
            continue;
        }
        memset(&exp_all, 0, sizeof(exp_all));
        double t0 = tc_now();
        tc_counters_read(&before);
        cases[i].fn();
        tc_counters_read(&after);
        tc_counters_check(cases[i].name, &before, &after, &exp_all, 1, 1);
        tc_say("sync %s passed (%.2fs)", cases[i].name, tc_now() - t0);
    }

    MPI_CHECK(MPI_Win_free(&win));
    free(mem);
    tc_finish();
    return 0;
}
