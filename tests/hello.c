/*
 * hello: MPI_Init, a barrier, MPI_Finalize -- and on rank 0 one line with
 * what MPI_T says about btl/ofi:
 *
 *   hello: np=2 btl_ofi_version=0.1.0 btl_ofi_selected_provider=shm
 *          btl_ofi_num_contexts_per_module=1
 *
 * (<absent> for a variable that does not exist, e.g. when btl/ofi stepped
 * aside or Open MPI's own btl/ofi was loaded). Used by tests/badinput.sh,
 * which checks the line; hello itself never fails on these values.
 */
#include "common.h"

/* Read an integer cvar; returns 0 on success. */
static int cvar_read_int(const char *name, long long *out)
{
    int idx = tc_cvar_find(name);
    if (idx < 0) {
        return -1;
    }
    char vname[256], desc[1024];
    int namelen = sizeof(vname), desclen = sizeof(desc), verbosity, bind, scope, count = 0;
    MPI_Datatype dt;
    MPI_T_enum et;
    if (MPI_SUCCESS != MPI_T_cvar_get_info(idx, vname, &namelen, &verbosity, &dt, &et, desc,
                                           &desclen, &bind, &scope)) {
        return -2;
    }
    MPI_T_cvar_handle h;
    if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(idx, NULL, &h, &count)) {
        return -2;
    }
    union {
        int i;
        unsigned u;
        long l;
        unsigned long ul;
        long long ll;
        unsigned long long ull;
        char pad[64];
    } v;
    memset(&v, 0, sizeof(v));
    int rc = MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    if (MPI_SUCCESS != rc) {
        return -2;
    }
    if (dt == MPI_INT) {
        *out = v.i;
    } else if (dt == MPI_UNSIGNED) {
        *out = v.u;
    } else if (dt == MPI_LONG) {
        *out = v.l;
    } else if (dt == MPI_UNSIGNED_LONG) {
        *out = (long long) v.ul;
    } else if (dt == MPI_LONG_LONG) {
        *out = v.ll;
    } else if (dt == MPI_UNSIGNED_LONG_LONG) {
        *out = (long long) v.ull;
    } else {
        return -2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &tc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tc_size);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);

    char version[256], prov[1024], ctx[64];
    long long nctx = 0;
    if (tc_cvar_read_string("btl_ofi_version", version, sizeof(version)) != 0) {
        snprintf(version, sizeof(version), "<absent>");
    }
    if (tc_cvar_read_string("btl_ofi_selected_provider", prov, sizeof(prov)) != 0) {
        snprintf(prov, sizeof(prov), "<absent>");
    }
    if (cvar_read_int("btl_ofi_num_contexts_per_module", &nctx) == 0) {
        snprintf(ctx, sizeof(ctx), "%lld", nctx);
    } else {
        snprintf(ctx, sizeof(ctx), "<absent>");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (tc_rank == 0) {
        printf("hello: np=%d btl_ofi_version=%s btl_ofi_selected_provider=%s "
               "btl_ofi_num_contexts_per_module=%s\n",
               tc_size, version, prov, ctx);
        fflush(stdout);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
