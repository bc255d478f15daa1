/*
 * One-sided MPI demo over btl/ofi: put, get and atomics on an
 * MPI_Win_create window (the window kind whose traffic crosses the BTL even
 * on one node), with every byte checked and a few timings printed.
 *
 *   scripts/ofirun -np 2 examples/osc_demo
 */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int find_cvar(const char *name, char *value, int len)
{
    int count, i;
    MPI_T_cvar_get_num(&count);
    for (i = 0; i < count; ++i) {
        char n[256], desc[1024];
        int nlen = sizeof(n), dlen = sizeof(desc), verb, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_handle h;
        int hc;
        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, n, &nlen, &verb, &dt, &en, desc, &dlen, &bind, &scope)
            || strcmp(n, name)) {
            continue;
        }
        char buf[4096]; /* Open MPI sizes string cvars at 2048 characters */
        MPI_T_cvar_handle_alloc(i, NULL, &h, &hc);
        if (hc > (int) sizeof(buf)) {
            MPI_T_cvar_handle_free(&h);
            return 0;
        }
        MPI_T_cvar_read(h, buf);
        MPI_T_cvar_handle_free(&h);
        size_t used = strnlen(buf, sizeof(buf) - 1);
        if (used >= (size_t) len) {
            used = (size_t) len - 1;
        }
        memcpy(value, buf, used);
        value[used] = '\0';
        return 1;
    }
    return 0;
}

/* Open MPI counts a counter from the moment its handle is allocated, so
 * handles are allocated before the traffic and read after it. BIND: the
 * object the counter is bound to (MPI_T_BIND_NO_OBJECT, or
 * MPI_T_BIND_MPI_COMM for coll/ofi's, bound to MPI_COMM_WORLD); NULL
 * handle where there is no such counter. */
static MPI_T_pvar_handle pvar_start(MPI_T_pvar_session session, const char *name, int want_bind)
{
    int count, i;
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_T_pvar_handle h = MPI_T_PVAR_HANDLE_NULL;
    MPI_T_pvar_get_num(&count);
    for (i = 0; i < count; ++i) {
        char n[256], desc[1024];
        int nlen = sizeof(n), dlen = sizeof(desc), verb, var_class, bind, ro, cont, atomic, hc;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_SUCCESS == MPI_T_pvar_get_info(i, n, &nlen, &verb, &var_class, &dt, &en, desc,
                                               &dlen, &bind, &ro, &cont, &atomic)
            && 0 == strcmp(n, name) && bind == want_bind) {
            MPI_T_pvar_handle_alloc(session, i, MPI_T_BIND_MPI_COMM == bind ? &world : NULL, &h,
                                    &hc);
            break;
        }
    }
    return h;
}

static unsigned long long pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle h)
{
    unsigned long long v = 0;
    if (MPI_T_PVAR_HANDLE_NULL != h) {
        MPI_T_pvar_read(session, h, &v);
    }
    return v;
}

int main(int argc, char **argv)
{
    const size_t max = 1 << 22;
    const int iters = 1000;
    int rank, size, provided, peer, i, errors = 0;
    char provider[256] = "?", version[64] = "?";
    unsigned char *win_mem, *src, got[8];
    int64_t *counter_mem, one = 1, fetched;
    MPI_Win win, cwin;
    MPI_T_pvar_session session;
    double t, lat_put, lat_get, lat_fop, lat_cas, bw;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (0 == rank) {
            fprintf(stderr, "osc_demo: needs at least 2 ranks (every figure is an operation "
                            "on another process's memory); run with -np 2\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    peer = (rank + 1) % size;

    if (!find_cvar("btl_ofi_version", version, sizeof(version))) {
        if (0 == rank) {
            fprintf(stderr, "osc_demo: btl_ofi_version is missing: this is not our btl/ofi "
                            "(run through scripts/ofirun)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    find_cvar("btl_ofi_selected_provider", provider, sizeof(provider));

    win_mem = calloc(max, 1);
    src = malloc(max);
    counter_mem = calloc(1, sizeof(int64_t));
    for (size_t k = 0; k < max; ++k) {
        src[k] = (unsigned char) (k * 131 + rank * 7 + 1);
    }
    MPI_Win_create(win_mem, max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_create(counter_mem, sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &cwin);
    MPI_T_pvar_session_create(&session);
    MPI_T_pvar_handle put_h = pvar_start(session, "btl_ofi_put_count", MPI_T_BIND_NO_OBJECT);
    MPI_T_pvar_handle amo_h = pvar_start(session, "btl_ofi_atomic_count", MPI_T_BIND_NO_OBJECT);

    /* latency: 8-byte put + flush, get + flush, fetch-add, compare-swap */
    MPI_Win_lock_all(0, win);
    MPI_Win_lock_all(0, cwin);
    t = MPI_Wtime();
    for (i = 0; i < iters; ++i) {
        MPI_Put(src, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
    lat_put = (MPI_Wtime() - t) / iters * 1e6;
    t = MPI_Wtime();
    for (i = 0; i < iters; ++i) {
        MPI_Get(got, 8, MPI_BYTE, peer, 0, 8, MPI_BYTE, win);
        MPI_Win_flush(peer, win);
    }
    lat_get = (MPI_Wtime() - t) / iters * 1e6;
    t = MPI_Wtime();
    for (i = 0; i < iters; ++i) {
        MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, peer, 0, MPI_SUM, cwin);
        MPI_Win_flush(peer, cwin);
    }
    lat_fop = (MPI_Wtime() - t) / iters * 1e6;
    t = MPI_Wtime();
    for (i = 0; i < iters; ++i) {
        int64_t cmp = -1, val = -2, old;
        MPI_Compare_and_swap(&val, &cmp, &old, MPI_INT64_T, peer, 0, cwin);
        MPI_Win_flush(peer, cwin);
    }
    lat_cas = (MPI_Wtime() - t) / iters * 1e6;
    MPI_Win_unlock_all(cwin);

    /* bandwidth: 4 MiB puts, 16 per flush */
    t = MPI_Wtime();
    for (i = 0; i < 16; ++i) {
        MPI_Put(src, (int) max, MPI_BYTE, peer, 0, (int) max, MPI_BYTE, win);
    }
    MPI_Win_flush(peer, win);
    bw = 16.0 * max / (MPI_Wtime() - t) / 1e6;
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* check every byte the left neighbour wrote, and the shared counter */
    int left = (rank + size - 1) % size;
    for (size_t k = 0; k < max; ++k) {
        if (win_mem[k] != (unsigned char) (k * 131 + left * 7 + 1)) {
            if (errors++ < 5) {
                fprintf(stderr, "rank %d: byte %zu is %u, expected %u\n", rank, k, win_mem[k],
                        (unsigned char) (k * 131 + left * 7 + 1));
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* the left neighbour added 1 to this rank's counter iters times; its
     * compare-and-swaps compared with -1 and never matched */
    if (*counter_mem != (int64_t) iters) {
        fprintf(stderr, "rank %d: counter is %lld, expected %lld\n", rank,
                (long long) *counter_mem, (long long) iters);
        errors++;
    }
    unsigned long long puts = pvar_read(session, put_h);
    unsigned long long atomics = pvar_read(session, amo_h);

    /* collectives: with coll_ofi_priority raised (scripts/demo.sh does),
     * coll/ofi runs them as puts and atomics over the same btl. A 1 MiB
     * broadcast from the last rank and a sum over every rank, checked */
    MPI_T_pvar_handle bc_h = pvar_start(session, "coll_ofi_served_bcast", MPI_T_BIND_MPI_COMM);
    MPI_T_pvar_handle ar_h = pvar_start(session, "coll_ofi_served_allreduce", MPI_T_BIND_MPI_COMM);
    const int nelem = 1 << 18;
    int *vec = malloc(nelem * sizeof(int));
    for (i = 0; i < nelem; ++i) {
        vec[i] = rank == size - 1 ? i * 7 + 3 : -1;
    }
    t = MPI_Wtime();
    MPI_Bcast(vec, nelem, MPI_INT, size - 1, MPI_COMM_WORLD);
    double t_bcast = MPI_Wtime() - t;
    for (i = 0; i < nelem; ++i) {
        errors += vec[i] != i * 7 + 3;
        vec[i] = i + rank;
    }
    t = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, vec, nelem, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t_allreduce = MPI_Wtime() - t;
    for (i = 0; i < nelem; ++i) {
        errors += vec[i] != size * i + size * (size - 1) / 2;
    }
    free(vec);
    unsigned long long bcasts = pvar_read(session, bc_h);
    unsigned long long allreduces = pvar_read(session, ar_h);
    MPI_Allreduce(MPI_IN_PLACE, &errors, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    if (0 == rank) {
        printf("btl/ofi %s over provider \"%s\", %d ranks\n", version, provider, size);
        printf("every figure: rank 0 on rank 1's memory (another process), through btl/ofi\n");
        printf("  %-30s %8.2f us\n", "put 8 B + flush", lat_put);
        printf("  %-30s %8.2f us\n", "get 8 B + flush", lat_get);
        printf("  %-30s %8.2f us\n", "fetch-and-add 8 B + flush", lat_fop);
        printf("  %-30s %8.2f us\n", "compare-and-swap 8 B + flush", lat_cas);
        printf("  %-30s %8.1f MB/s\n", "put bandwidth, 4 MiB puts", bw);
        printf("  rank 0 issued %llu puts and %llu atomics through btl/ofi\n", puts, atomics);
        printf("  %-30s %8.2f ms\n", "MPI_Bcast 1 MiB", t_bcast * 1e3);
        printf("  %-30s %8.2f ms\n", "MPI_Allreduce 1 MiB of int", t_allreduce * 1e3);
        if (bcasts > 0 && allreduces > 0) {
            printf("  collectives served by coll/ofi over the same btl (%llu bcast, %llu allreduce "
                   "on MPI_COMM_WORLD)\n",
                   bcasts, allreduces);
        } else {
            printf("  collectives served by Open MPI's own coll components (coll/ofi: "
                   "--mca coll_ofi_priority 90)\n");
        }
        printf("%s: %d wrong byte(s) or count(s)\n", errors ? "FAILED" : "verified", errors);
    }
    MPI_T_pvar_session_free(&session);
    MPI_Win_free(&cwin);
    MPI_Win_free(&win);
    free(win_mem);
    free(src);
    free(counter_mem);
    MPI_T_finalize();
    MPI_Finalize();
    return errors ? 1 : 0;
}
