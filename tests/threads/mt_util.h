/*
 * Helpers shared by the multi-threaded btl/ofi tests (tests/threads/).
 * Builds on tests/common.h (fatal checks, "is it ours", counters) and adds:
 *  - mt_init(): MPI_Init_thread at a required level, failing loudly when the
 *    Open MPI build provides less;
 *  - the btl_ofi_send_count and btl_ofi_recv_count pvars (common.h tracks
 *    the one-sided ones only);
 *  - reading an integer control variable (btl_ofi_num_contexts_per_module).
 */
#ifndef BTL_OFI_TESTS_MT_UTIL_H
#define BTL_OFI_TESTS_MT_UTIL_H

#include "../common.h"

#include <errno.h>
#include <pthread.h>

static MPI_T_pvar_handle mt_send_handle, mt_recv_handle;
static int mt_have_send = 0, mt_have_recv = 0;

TC_FN const char *mt_level_name(int level)
{
    switch (level) {
    case MPI_THREAD_SINGLE:
        return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
        return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
        return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
        return "MPI_THREAD_MULTIPLE";
    default:
        return "unknown";
    }
}

/* Value of an int, unsigned or bool cvar: 0 on success, -1 when it does not
 * exist, -2 when it has another type or cannot be read. */
TC_FN int mt_cvar_read_int(const char *name, int *out)
{
    int idx = tc_cvar_find(name);
    if (idx < 0) {
        return -1;
    }
    char vname[256], desc[1024];
    int namelen = sizeof(vname), desclen = sizeof(desc);
    int verbosity, bind, scope;
    MPI_Datatype dtype;
    MPI_T_enum enumtype;
    if (MPI_SUCCESS != MPI_T_cvar_get_info(idx, vname, &namelen, &verbosity, &dtype, &enumtype,
                                           desc, &desclen, &bind, &scope)
        || (dtype != MPI_INT && dtype != MPI_UNSIGNED && dtype != MPI_C_BOOL)) {
        return -2;
    }
    MPI_T_cvar_handle handle;
    int count = 0;
    /* room for any of the three; a bool is read into its first byte */
    union {
        int i;
        unsigned u;
        _Bool b;
        char pad[16];
    } value;
    memset(&value, 0, sizeof(value));
    if (MPI_SUCCESS != MPI_T_cvar_handle_alloc(idx, NULL, &handle, &count)) {
        return -2;
    }
    int rc = MPI_T_cvar_read(handle, &value);
    MPI_T_cvar_handle_free(&handle);
    if (MPI_SUCCESS != rc) {
        return -2;
    }
    *out = dtype == MPI_C_BOOL ? (value.b ? 1 : 0) : value.i;
    return 0;
}

TC_FN unsigned long long mt_send_count(void)
{
    unsigned long long v = 0;
    if (mt_have_send) {
        MPI_CHECK(MPI_T_pvar_read(tc_session, mt_send_handle, &v));
    }
    return v;
}

TC_FN unsigned long long mt_recv_count(void)
{
    unsigned long long v = 0;
    if (mt_have_recv) {
        MPI_CHECK(MPI_T_pvar_read(tc_session, mt_recv_handle, &v));
    }
    return v;
}

/*
 * MPI_Init_thread(required), then what tc_init does: rank/size, errors
 * returned, MPI_T, our component and provider checked, counters opened
 * (btl_ofi_send_count included).
 */
TC_FN void mt_init(int *argc, char ***argv, const char *name, int required)
{
    int provided = -1, tprovided = -1;
    tc_name = name;
    if (MPI_SUCCESS != MPI_Init_thread(argc, argv, required, &provided)) {
        printf("\nFAIL [rank ?] MPI_Init_thread(%s) failed\n", mt_level_name(required));
        fflush(stdout);
        exit(3);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &tc_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tc_size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (provided < required) {
        FAILF("MPI_Init_thread asked for %s and this Open MPI provided only %s: the Open MPI "
              "build cannot run this test (it needs --enable-mpi-thread-multiple; check "
              "`ompi_info | grep -i thread')",
              mt_level_name(required), mt_level_name(provided));
    }
    int is_main = 0;
    MPI_CHECK(MPI_Is_thread_main(&is_main));
    CHECK(is_main, "MPI_Is_thread_main says the initialising thread is not the main thread");
    MPI_CHECK(MPI_T_init_thread(required, &tprovided));
    tc_say("%s: MPI_Init_thread(%s) provided %s", name, mt_level_name(required),
           mt_level_name(provided));
    tc_check_ours();
    tc_counters_init();

    const char *why = NULL;
    int idx = tc_pvar_find("btl_ofi_send_count", &why);
    if (idx < 0) {
        if (tc_check_ours_enabled()) {
            FAILF("pvar btl_ofi_send_count: %s", why);
        }
        return;
    }
    int count = 0;
    MPI_CHECK(MPI_T_pvar_handle_alloc(tc_session, idx, NULL, &mt_send_handle, &count));
    CHECK(count == 1, "pvar btl_ofi_send_count has count %d, expected 1", count);
    mt_have_send = 1;

    idx = tc_pvar_find("btl_ofi_recv_count", &why);
    if (idx < 0) {
        if (tc_check_ours_enabled()) {
            FAILF("pvar btl_ofi_recv_count: %s", why);
        }
        return;
    }
    MPI_CHECK(MPI_T_pvar_handle_alloc(tc_session, idx, NULL, &mt_recv_handle, &count));
    CHECK(count == 1, "pvar btl_ofi_recv_count has count %d, expected 1", count);
    mt_have_recv = 1;
}

TC_FN void mt_finish(void)
{
    if (mt_have_send) {
        MPI_T_pvar_handle_free(tc_session, &mt_send_handle);
    }
    if (mt_have_recv) {
        MPI_T_pvar_handle_free(tc_session, &mt_recv_handle);
    }
    tc_finish();
}

/* Parse a positive integer option value or fail. */
TC_FN int mt_atoi(const char *opt, const char *s, int lo, int hi)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        FAILF("option %s: '%s' is not an integer in [%d, %d]", opt, s, lo, hi);
    }
    return (int) v;
}

#endif /* BTL_OFI_TESTS_MT_UTIL_H */
