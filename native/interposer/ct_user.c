/* User-defined performance variables (commtune.h): AITuning's UserDefinedPerformanceVar with a
 * probe, in C. Statistics per rank (Welford), combined across ranks by ct_profile.c.
 */
#include "ct_core.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#define MAX_USER_VARS 256
#define USER_NAME_LEN 128

typedef struct {
    char name[USER_NAME_LEN];
    ct_running stat;
} user_var;

static user_var vars[MAX_USER_VARS];
static int n_vars;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

CT_EXPORT int commtune_pvar_register_impl(const char *name) {
    int id = -1;
    if (name == NULL || *name == '\0') return -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_vars && id < 0; ++i)
        if (strncmp(vars[i].name, name, USER_NAME_LEN - 1) == 0) id = i;
    if (id < 0 && n_vars < MAX_USER_VARS) {
        id = n_vars++;
        /* Tabs and newlines would break the lines sent to rank 0. */
        size_t i = 0;
        for (; name[i] != '\0' && i < USER_NAME_LEN - 1; ++i)
            vars[id].name[i] = name[i] == '\t' || name[i] == '\n' ? ' ' : name[i];
        vars[id].name[i] = '\0';
    }
    pthread_mutex_unlock(&lock);
    if (id < 0)
        ct_warn("more than %d user-defined variables: %s is not recorded", MAX_USER_VARS, name);
    return id;
}

CT_EXPORT void commtune_pvar_record_impl(int id, double value) {
    if (id < 0 || id >= MAX_USER_VARS) return;
    pthread_mutex_lock(&lock);
    if (id < n_vars) {
        ct_running_add(&vars[id].stat, value);
    }
    pthread_mutex_unlock(&lock);
}

/* A user variable's statistic on this rank for the policy engine (0; -1: none yet). */
int ct_user_value(const char *name, const char *stat, double *out) {
    int rc = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_vars; ++i) {
        const user_var *v = &vars[i];
        const ct_running *r = &v->stat;
        if (strcmp(v->name, name) != 0 || r->samples == 0) continue;
        rc = 0;
        *out = ct_running_value(r, stat, r->mean * (double)r->samples);
        break;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static size_t lines(char **out) {
    ct_buf b = {0};
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_vars; ++i) {
        const ct_running *r = &vars[i].stat;
        ct_buf_printf(&b, "%s\tuser\t%llu\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n", vars[i].name,
                      (unsigned long long)r->samples, r->min, r->max, r->mean, r->m2,
                      r->mean * (double)r->samples);
    }
    pthread_mutex_unlock(&lock);
    *out = b.failed ? NULL : b.data;
    return b.failed ? 0 : b.len;
}

void ct_user_register(void) {
    static const ct_module module = {.lines = lines};
    ct_register(&module);
}
