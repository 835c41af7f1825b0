/* libcommtune's settings: every COMMTUNE_* variable it reads, read here alone, from the table
 * generate.py writes (ct_settings.h, from src/commtune/libcommtune.py). COMMTUNE_DEBUG=1
 * prints them at MPI_Init on rank 0.
 */
#include "ct_core.h"

#include <stdlib.h>
#include <string.h>

ct_config_t ct_config;

static const char *setting(const char *name) {
    const char *value = getenv(name);
    return value != NULL && *value != '\0' ? value : NULL;
}

static int read_flag(const char *name, const char *fallback) {
    const char *value = setting(name);
    if (value == NULL) value = fallback;
    return !(strcmp(value, "0") == 0 || strcmp(value, "no") == 0 || strcmp(value, "false") == 0);
}

static const char *read_text(const char *name, const char *fallback) {
    const char *value = setting(name);
    return value != NULL ? value : *fallback != '\0' ? fallback : NULL;
}

static double read_seconds(const char *name, const char *fallback) {
    const char *value = setting(name);
    double fall = strtod(fallback, NULL);
    if (value == NULL) return fall;
    char *end = NULL;
    double seconds = strtod(value, &end);
    if (end != value && *end == '\0' && seconds >= 0) return seconds;
    fprintf(stderr, "commtune: %s=%s is not a number of seconds\n", name, value);
    return fall;
}

static int read_count(const char *name, const char *fallback) {
    const char *value = setting(name);
    int fall = atoi(fallback);
    if (value == NULL) return fall;
    char *end = NULL;
    long count = strtol(value, &end, 10);
    if (end != value && *end == '\0' && count > 0 && count <= 1 << 30) return (int)count;
    fprintf(stderr, "commtune: %s=%s is not a count above 0\n", name, value);
    return fall;
}

void ct_config_load(void) {
#define CT_READ(id, field, kind, name, fallback, help)                                             \
    ct_config.field = read_##kind(name, fallback);
    CT_SETTINGS(CT_READ)
#undef CT_READ
}

void ct_config_dump(FILE *out) {
#define CT_DUMP(id, field, kind, name, fallback, help)                                             \
    {                                                                                              \
        const char *value = setting(name);                                                         \
        fprintf(out, "commtune: %-24s %-28s %s\n", name,                                           \
                value       ? value                                                                \
                : *fallback ? fallback                                                             \
                            : "(unset)",                                                           \
                help);                                                                             \
    }
    CT_SETTINGS(CT_DUMP)
#undef CT_DUMP
}
