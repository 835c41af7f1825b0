/* ct_probe: commtune's tiny MPI helper.
 *
 *   ct_probe cvars   rank 0 prints every MPI_T control variable as one JSON object per line
 *                    (name, datatype, enum values, scope, current value, description).
 *   ct_probe pvars   rank 0 prints every MPI_T performance variable the same way (name, class,
 *                    datatype, binding, read-only, continuous, description).
 *   ct_probe init    MPI_Init, one small call of each collective commtune tunes, MPI_Finalize;
 *                    exits 0 only if all of it worked (used to test knob values that abort init).
 */
#include "../include/ct_mpit_text.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *type_name(MPI_Datatype t) {
    if (t == MPI_INT) return "int";
    if (t == MPI_UNSIGNED) return "unsigned";
    if (t == MPI_UNSIGNED_LONG) return "unsigned_long";
    if (t == MPI_UNSIGNED_LONG_LONG) return "unsigned_long_long";
    if (t == MPI_COUNT) return "count";
    if (t == MPI_CHAR) return "char";
    if (t == MPI_DOUBLE) return "double";
    if (t == MPI_C_BOOL) return "bool";
    return "other";
}

static const char *scope_name(int scope) {
    switch (scope) {
    case MPI_T_SCOPE_CONSTANT:
        return "constant";
    case MPI_T_SCOPE_READONLY:
        return "readonly";
    case MPI_T_SCOPE_LOCAL:
        return "local";
    case MPI_T_SCOPE_GROUP:
        return "group";
    case MPI_T_SCOPE_GROUP_EQ:
        return "group_eq";
    case MPI_T_SCOPE_ALL:
        return "all";
    case MPI_T_SCOPE_ALL_EQ:
        return "all_eq";
    default:
        return "unknown";
    }
}

static const char *bind_name(int bind) {
    switch (bind) {
    case MPI_T_BIND_NO_OBJECT:
        return "none";
    case MPI_T_BIND_MPI_COMM:
        return "communicator";
    case MPI_T_BIND_MPI_DATATYPE:
        return "datatype";
    case MPI_T_BIND_MPI_ERRHANDLER:
        return "errhandler";
    case MPI_T_BIND_MPI_FILE:
        return "file";
    case MPI_T_BIND_MPI_GROUP:
        return "group";
    case MPI_T_BIND_MPI_OP:
        return "op";
    case MPI_T_BIND_MPI_REQUEST:
        return "request";
    case MPI_T_BIND_MPI_WIN:
        return "window";
    case MPI_T_BIND_MPI_MESSAGE:
        return "message";
    case MPI_T_BIND_MPI_INFO:
        return "info";
    default:
        return "other";
    }
}

static void print_value(int idx, MPI_Datatype t) {
    MPI_T_cvar_handle h;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS) {
        fputs("null", stdout);
        return;
    }
    if (t == MPI_CHAR) {
        char *buf = calloc((size_t)count + 2, 1);
        if (buf && count >= 0 && MPI_T_cvar_read(h, buf) == MPI_SUCCESS)
            ct_json_string(stdout, buf);
        else
            fputs("null", stdout);
        free(buf);
    } else if (count == 1 && t == MPI_C_BOOL) {
        _Bool v = 0;
        if (MPI_T_cvar_read(h, &v) == MPI_SUCCESS)
            fputs(v ? "true" : "false", stdout);
        else
            fputs("null", stdout);
    } else if (count == 1 && (t == MPI_INT || t == MPI_UNSIGNED)) {
        int v = 0;
        if (MPI_T_cvar_read(h, &v) == MPI_SUCCESS)
            printf(t == MPI_INT ? "%d" : "%u", v);
        else
            fputs("null", stdout);
    } else if (count == 1 &&
               (t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG || t == MPI_COUNT)) {
        unsigned long long v = 0;
        if (MPI_T_cvar_read(h, &v) == MPI_SUCCESS)
            printf("%llu", v);
        else
            fputs("null", stdout);
    } else if (count == 1 && t == MPI_DOUBLE) {
        double v = 0;
        if (MPI_T_cvar_read(h, &v) == MPI_SUCCESS)
            printf("%.17g", v);
        else
            fputs("null", stdout);
    } else {
        fputs("null", stdout);
    }
    MPI_T_cvar_handle_free(&h);
}

static int list_cvars(void) {
    int provided, n = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
    MPI_T_cvar_get_num(&n);
    for (int i = 0; i < n; ++i) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &dt, &en, desc, &desc_len, &bind,
                                &scope) != MPI_SUCCESS)
            continue;
        fputs("{\"name\":", stdout);
        ct_json_string(stdout, name);
        printf(",\"datatype\":\"%s\",\"scope\":\"%s\",\"bind\":\"%s\",\"verbosity\":%d,"
               "\"value\":",
               type_name(dt), scope_name(scope), bind_name(bind), verbosity);
        print_value(i, dt);
        fputs(",\"enum\":", stdout);
        if (en == MPI_T_ENUM_NULL) {
            fputs("null", stdout);
        } else {
            int items = 0;
            char en_name[256];
            int en_len = sizeof en_name;
            MPI_T_enum_get_info(en, &items, en_name, &en_len);
            putchar('[');
            for (int k = 0; k < items; ++k) {
                int value;
                char item[256];
                int item_len = sizeof item;
                MPI_T_enum_get_item(en, k, &value, item, &item_len);
                printf("%s[%d,", k ? "," : "", value);
                ct_json_string(stdout, item);
                putchar(']');
            }
            putchar(']');
        }
        fputs(",\"description\":", stdout);
        ct_json_string(stdout, desc);
        fputs("}\n", stdout);
    }
    MPI_T_finalize();
    return 0;
}

static int list_pvars(void) {
    int provided, n = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return 1;
    MPI_T_pvar_get_num(&n);
    for (int i = 0; i < n; ++i) {
        char name[256], desc[4096];
        int name_len = sizeof name, desc_len = sizeof desc, verbosity, var_class, bind, readonly,
            continuous, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &name_len, &verbosity, &var_class, &dt, &en, desc,
                                &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            continue;
        fputs("{\"name\":", stdout);
        ct_json_string(stdout, name);
        printf(",\"class\":\"%s\",\"datatype\":\"%s\",\"bind\":\"%s\",\"verbosity\":%d,"
               "\"readonly\":%s,\"continuous\":%s,\"description\":",
               ct_pvar_class_name(var_class), type_name(dt), bind_name(bind), verbosity,
               readonly ? "true" : "false", continuous ? "true" : "false");
        ct_json_string(stdout, desc);
        fputs("}\n", stdout);
    }
    MPI_T_finalize();
    return 0;
}

static int exercise_collectives(void) {
    enum { N = 4096 };
    static double a[N], b[N * 4];
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = size <= 4 ? N / 4 : N / size;
    for (int k = 0; k < N; ++k)
        a[k] = k;
    for (int len = 1; len <= n; len *= 32) {
        MPI_Allreduce(a, b, len, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(a, len, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        MPI_Reduce(a, b, len, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Allgather(a, len, MPI_DOUBLE, b, len, MPI_DOUBLE, MPI_COMM_WORLD);
        MPI_Alltoall(b, len, MPI_DOUBLE, a, len, MPI_DOUBLE, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "init";
    MPI_Init(&argc, &argv);
    int rank, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(mode, "cvars") == 0) {
        if (rank == 0) rc = list_cvars();
    } else if (strcmp(mode, "pvars") == 0) {
        if (rank == 0) rc = list_pvars();
    } else {
        rc = exercise_collectives();
    }
    MPI_Finalize();
    return rc;
}
