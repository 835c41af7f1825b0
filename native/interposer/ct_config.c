/* libcommtune's settings: the COMMTUNE_* variables of its core, declared and read in this one
 * file (COMMTUNE_DEBUG=1 prints them at MPI_Init on rank 0). The policy engine reads its own
 * two, COMMTUNE_POLICY and COMMTUNE_POLICY_EVERY, in ct_policy.c.
 */
#include "ct_core.h"

#include <stdlib.h>
#include <string.h>

ct_config_t ct_config;

static const struct {
    const char *name, *fallback, *help;
} spec[] = {
    {"COMMTUNE_DISABLE", "0", "1: pass every call through, write no profile"},
    {"COMMTUNE_DEBUG", "0", "1: print these settings at MPI_Init (rank 0)"},
    {"COMMTUNE_PROFILE", "commtune-profile-<pid>.json", "where rank 0 writes the JSON profile"},
    {"COMMTUNE_CVARS", "", "name=value;... control variables to read back after MPI_Init"},
    {"COMMTUNE_CVAR_WRITE", "", "name=value;... control variables to write through MPI_T"},
    {"COMMTUNE_IO_HINTS", "", "key=value;... MPI-IO hints merged into every MPI_File_open"},
    {"COMMTUNE_PVARS", "1", "0: open no MPI_T performance variable session"},
    {"COMMTUNE_PVAR_INTERVAL", "0.1", "seconds between PVAR samples (0: init and finalize only)"},
};

static const char *setting(const char *name) {
    const char *value = getenv(name);
    return value != NULL && *value != '\0' ? value : NULL;
}

static int flag(const char *name, int fallback) {
    const char *value = setting(name);
    if (value == NULL) return fallback;
    return !(strcmp(value, "0") == 0 || strcmp(value, "no") == 0 || strcmp(value, "false") == 0);
}

void ct_config_load(void) {
    ct_config.disabled = flag("COMMTUNE_DISABLE", 0);
    ct_config.debug = flag("COMMTUNE_DEBUG", 0);
    ct_config.pvars = flag("COMMTUNE_PVARS", 1);
    ct_config.profile = setting("COMMTUNE_PROFILE");
    ct_config.cvars = setting("COMMTUNE_CVARS");
    ct_config.cvar_write = setting("COMMTUNE_CVAR_WRITE");
    ct_config.io_hints = setting("COMMTUNE_IO_HINTS");
    ct_config.hdf5_props = setting("COMMTUNE_HDF5_PROPS");
    ct_config.pvar_interval = 0.1;
    const char *interval = setting("COMMTUNE_PVAR_INTERVAL");
    if (interval != NULL) {
        char *end = NULL;
        double seconds = strtod(interval, &end);
        if (end != interval && *end == '\0' && seconds >= 0)
            ct_config.pvar_interval = seconds;
        else
            fprintf(stderr, "commtune: COMMTUNE_PVAR_INTERVAL=%s is not a number of seconds\n",
                    interval);
    }
}

void ct_config_dump(FILE *out) {
    for (size_t i = 0; i < sizeof spec / sizeof spec[0]; ++i) {
        const char *value = setting(spec[i].name);
        fprintf(out, "commtune: %-24s %-28s %s\n", spec[i].name, value ? value : spec[i].fallback,
                spec[i].help);
    }
}
