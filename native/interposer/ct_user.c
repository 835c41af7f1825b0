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
    uint64_t samples;
    double min, max, mean, m2, last;
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
        user_var *v = &vars[id];
        v->samples++;
        double delta = value - v->mean;
        v->mean += delta / (double)v->samples;
        v->m2 += delta * (value - v->mean);
        v->min = v->samples == 1 || value < v->min ? value : v->min;
        v->max = v->samples == 1 || value > v->max ? value : v->max;
        v->last = value;
    }
    pthread_mutex_unlock(&lock);
}

/* A user variable's statistic on this rank for the policy engine (0; -1: none yet). */
int ct_user_value(const char *name, const char *stat, double *out) {
    int rc = -1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_vars; ++i) {
        const user_var *v = &vars[i];
        if (strcmp(v->name, name) != 0 || v->samples == 0) continue;
        rc = 0;
        if (strcmp(stat, "min") == 0)
            *out = v->min;
        else if (strcmp(stat, "max") == 0)
            *out = v->max;
        else if (strcmp(stat, "mean") == 0)
            *out = v->mean;
        else if (strcmp(stat, "sd") == 0)
            *out = sqrt(v->m2 / (double)v->samples);
        else if (strcmp(stat, "n") == 0)
            *out = (double)v->samples;
        else if (strcmp(stat, "sum") == 0)
            *out = v->mean * (double)v->samples;
        else
            *out = v->last;
        break;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

size_t ct_user_lines(char **out) {
    ct_buf b = {0};
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_vars; ++i) {
        const user_var *v = &vars[i];
        ct_buf_printf(&b, "%s\tuser\t%llu\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n", v->name,
                      (unsigned long long)v->samples, v->min, v->max, v->mean, v->m2,
                      v->mean * (double)v->samples);
    }
    pthread_mutex_unlock(&lock);
    *out = b.failed ? NULL : b.data;
    return b.failed ? 0 : b.len;
}
