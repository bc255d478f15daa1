/*
 * mpit_probe.h: reads the MPI_T variables through which this project's
 * btl/ofi identifies itself (btl_ofi_version, btl_ofi_selected_provider)
 * and counts its traffic (btl_ofi_*_count). Open MPI's own btl/ofi has none
 * of them, so a benchmark prints "none" there. Used by osc_bench and
 * p2p_bench to say in their output which component carried the run.
 */
#ifndef MPIT_PROBE_H
#define MPIT_PROBE_H

#include <mpi.h>
#include <stdio.h>
#include <string.h>

/* Index of the control variable `want`, or -1. */
static int probe_cvar_index(const char *want)
{
    int num = 0;
    if (MPI_SUCCESS != MPI_T_cvar_get_num(&num)) {
        return -1;
    }
    for (int idx = 0; idx < num; ++idx) {
        char name[256], desc[64];
        int name_len = (int) sizeof(name), desc_len = (int) sizeof(desc);
        int verbosity, binding, scope;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_SUCCESS == MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &type, &enumtype,
                                               desc, &desc_len, &binding, &scope)
            && 0 == strcmp(name, want)) {
            return idx;
        }
    }
    return -1;
}

/* Copies the string value of control variable `want` into out (or "none"). */
static void probe_cvar_string(const char *want, char *out, size_t outlen)
{
    static char value[8192];
    int idx = probe_cvar_index(want), count = 0;
    MPI_T_cvar_handle handle;

    snprintf(out, outlen, "none");
    if (idx < 0 || MPI_SUCCESS != MPI_T_cvar_handle_alloc(idx, NULL, &handle, &count)) {
        return;
    }
    if (count > 0 && (size_t) count <= sizeof(value)) {
        memset(value, 0, sizeof(value));
        if (MPI_SUCCESS == MPI_T_cvar_read(handle, value)) {
            size_t used = strnlen(value, sizeof(value) - 1);
            if (0 == used) {
                snprintf(out, outlen, "(empty)");
            } else {
                used = used < outlen - 1 ? used : outlen - 1;
                memcpy(out, value, used);
                out[used] = '\0';
            }
        }
    }
    MPI_T_cvar_handle_free(&handle);
}

/* Counters of this process: handles allocated before the traffic (Open MPI
 * counts from allocation on), read after it. */
#define PROBE_MAX_PVARS 8
struct probe_pvars {
    MPI_T_pvar_session session;
    int n;
    const char *names[PROBE_MAX_PVARS];
    MPI_T_pvar_handle handles[PROBE_MAX_PVARS];
};

static void probe_pvars_start(struct probe_pvars *p, const char *const *names, int n)
{
    int num = 0;
    p->n = 0;
    if (MPI_SUCCESS != MPI_T_pvar_session_create(&p->session)) {
        p->session = MPI_T_PVAR_SESSION_NULL;
        return;
    }
    MPI_T_pvar_get_num(&num);
    for (int k = 0; k < n && p->n < PROBE_MAX_PVARS; ++k) {
        for (int idx = 0; idx < num; ++idx) {
            char name[256], desc[64];
            int name_len = (int) sizeof(name), desc_len = (int) sizeof(desc);
            int verbosity, var_class, binding, readonly, continuous, atomic, count;
            MPI_Datatype type;
            MPI_T_enum enumtype;
            if (MPI_SUCCESS != MPI_T_pvar_get_info(idx, name, &name_len, &verbosity, &var_class,
                                                   &type, &enumtype, desc, &desc_len, &binding,
                                                   &readonly, &continuous, &atomic)
                || 0 != strcmp(name, names[k])) {
                continue;
            }
            if (MPI_SUCCESS
                == MPI_T_pvar_handle_alloc(p->session, idx, NULL, &p->handles[p->n], &count)) {
                if (!continuous) {
                    MPI_T_pvar_start(p->session, p->handles[p->n]);
                }
                p->names[p->n++] = names[k];
            }
            break;
        }
    }
}

/* Prints "# NAME VALUE" for every counter found. */
static void probe_pvars_print(struct probe_pvars *p, const char *prefix)
{
    for (int k = 0; k < p->n; ++k) {
        unsigned long long v = 0;
        MPI_T_pvar_read(p->session, p->handles[k], &v);
        printf("# %s%s %llu\n", prefix, p->names[k], v);
    }
    fflush(stdout);
}

#endif
