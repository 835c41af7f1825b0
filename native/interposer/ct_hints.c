/* MPI-IO hints of the configuration: COMMTUNE_IO_HINTS="key=value;..." is merged into the info
 * object of every MPI_File_open (the application's own hints are kept, the configuration's win)
 * and read back with MPI_File_get_info after the first successful open: a hint the library does
 * not report back is "ignored" (ROMIO drops keys it does not know, and striping a file system
 * cannot do), one reported with another value "differs". A probe key no library knows goes in
 * too: a library that reports it back echoes every key it was given (Open MPI's OMPIO), so its
 * read-back proves nothing and every hint is "unverified". Rank 0's checks go to the profile
 * ("hints"), where the tuner turns them into not-applied knobs, as it does for CVARs.
 * The same table holds the HDF5 properties of COMMTUNE_HDF5_PROPS, which ct_hdf5.c applies and
 * reads back; they are written to the profile with the hints (kind "hdf5").
 */
#include "ct_core.h"

#include <stdio.h>
#include <string.h>

#define CT_MAX_CHECKS 48
#define CT_PROBE_KEY "commtune_probe_unknown_hint"

static ct_setting checks[CT_MAX_CHECKS];
static int n_checks = -1; /* -1: COMMTUNE_IO_HINTS and COMMTUNE_HDF5_PROPS not parsed yet */
static int checked;

static void parse_list(const char *text, int kind, const char *variable) {
    while (text != NULL && *text != '\0' && n_checks < CT_MAX_CHECKS) {
        const char *end = strchr(text, ';');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        const char *eq = memchr(text, '=', len);
        if (eq != NULL && eq > text && (size_t)(eq - text) < sizeof checks[0].key &&
            len - (size_t)(eq - text) - 1 < sizeof checks[0].intended) {
            ct_setting *h = &checks[n_checks++];
            memcpy(h->key, text, (size_t)(eq - text));
            h->key[eq - text] = '\0';
            memcpy(h->intended, eq + 1, len - (size_t)(eq - text) - 1);
            h->intended[len - (size_t)(eq - text) - 1] = '\0';
            h->kind = kind;
        } else if (len > 0) {
            ct_warn("%s: '%.*s' is not key=value; left out", variable, (int)len, text);
        }
        text = end ? end + 1 : NULL;
    }
}

static void parse(void) {
    n_checks = 0;
    parse_list(ct_config.io_hints, CT_SETTING_HINT, "COMMTUNE_IO_HINTS");
    parse_list(ct_config.hdf5_props, CT_SETTING_HDF5, "COMMTUNE_HDF5_PROPS");
}

ct_setting *ct_settings(int *n) {
    if (n_checks < 0) parse();
    *n = n_checks;
    return checks;
}

static int count(int kind) {
    int n = 0;
    for (int i = 0; i < n_checks; ++i)
        n += checks[i].kind == kind;
    return n;
}

MPI_Info ct_hints_merge(MPI_Info user, int *owned) {
    if (n_checks < 0) parse();
    *owned = 0;
    if (count(CT_SETTING_HINT) == 0) return user;
    MPI_Info info;
    int rc = user == MPI_INFO_NULL ? PMPI_Info_create(&info) : PMPI_Info_dup(user, &info);
    if (rc != MPI_SUCCESS) return user;
    for (int i = 0; i < n_checks; ++i)
        if (checks[i].kind == CT_SETTING_HINT)
            PMPI_Info_set(info, checks[i].key, checks[i].intended);
    PMPI_Info_set(info, CT_PROBE_KEY, "1");
    *owned = 1;
    return info;
}

void ct_hints_check(MPI_File fh) {
    if (n_checks <= 0 || checked || count(CT_SETTING_HINT) == 0) return;
    MPI_Info used;
    if (PMPI_File_get_info(fh, &used) != MPI_SUCCESS) return;
    checked = 1;
    char probe[8];
    int echoes = 0;
    PMPI_Info_get(used, CT_PROBE_KEY, (int)sizeof probe - 1, probe, &echoes);
    for (int i = 0; i < n_checks; ++i) {
        ct_setting *h = &checks[i];
        if (h->kind != CT_SETTING_HINT) continue;
        int flag = 0;
        PMPI_Info_get(used, h->key, (int)sizeof h->actual - 1, h->actual, &flag);
        if (!flag)
            h->status = "ignored";
        else if (strcmp(h->actual, h->intended) != 0)
            h->status = "differs";
        else
            h->status = echoes ? "unverified" : "applied";
    }
    PMPI_Info_free(&used);
}

static void write_json(FILE *out) {
    int n = n_checks > 0 ? n_checks : 0;
    fputc('[', out);
    for (int i = 0; i < n; ++i) {
        const ct_setting *h = &checks[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        ct_json_string(out, h->key);
        fputs(", \"intended\": ", out);
        ct_json_string(out, h->intended);
        fputs(", \"actual\": ", out);
        if (h->status != NULL && strcmp(h->status, "ignored") != 0)
            ct_json_string(out, h->actual);
        else
            fputs("null", out);
        fputs(", \"status\": ", out);
        ct_json_string(out, h->status ? h->status : "unchecked");
        fputs(", \"kind\": ", out);
        ct_json_string(out, h->kind == CT_SETTING_HDF5 ? "hdf5" : "mpi-io");
        fputc('}', out);
    }
    fputs(n ? "\n  ]" : "]", out);
}

void ct_hints_register(void) {
    static const ct_module module = {.section = "hints", .write_json = write_json};
    ct_register(&module);
}
