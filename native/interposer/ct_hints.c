/* MPI-IO hints of the configuration: COMMTUNE_IO_HINTS="key=value;..." is merged into the info
 * object of every MPI_File_open (the application's own hints are kept, the configuration's win)
 * and read back with MPI_File_get_info after the first successful open: a hint the library does
 * not report back is "ignored" (ROMIO drops keys it does not know, and striping a file system
 * cannot do), one reported with another value "differs". A probe key no library knows goes in
 * too: a library that reports it back echoes every key it was given (Open MPI's OMPIO), so its
 * read-back proves nothing and every hint is "unverified". Rank 0's checks go to the profile
 * ("hints"), where the tuner turns them into not-applied knobs, as it does for CVARs.
 */
#include "ct_core.h"

#include <stdio.h>
#include <string.h>

#define CT_MAX_HINTS 32
#define CT_PROBE_KEY "commtune_probe_unknown_hint"

typedef struct {
    char key[MPI_MAX_INFO_KEY + 1];
    char intended[256];
    char actual[256];
    const char *status; /* NULL until read back */
} hint_check;

static hint_check hints[CT_MAX_HINTS];
static int n_hints = -1; /* -1: COMMTUNE_IO_HINTS not parsed yet */
static int checked;

static void parse(void) {
    n_hints = 0;
    const char *text = ct_config.io_hints;
    while (text != NULL && *text != '\0' && n_hints < CT_MAX_HINTS) {
        const char *end = strchr(text, ';');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        const char *eq = memchr(text, '=', len);
        if (eq != NULL && eq > text && (size_t)(eq - text) <= MPI_MAX_INFO_KEY &&
            len - (size_t)(eq - text) - 1 < sizeof hints[0].intended) {
            hint_check *h = &hints[n_hints++];
            memcpy(h->key, text, (size_t)(eq - text));
            h->key[eq - text] = '\0';
            memcpy(h->intended, eq + 1, len - (size_t)(eq - text) - 1);
            h->intended[len - (size_t)(eq - text) - 1] = '\0';
        } else if (len > 0) {
            ct_warn("COMMTUNE_IO_HINTS: '%.*s' is not key=value; left out", (int)len, text);
        }
        text = end ? end + 1 : NULL;
    }
}

MPI_Info ct_hints_merge(MPI_Info user, int *owned) {
    if (n_hints < 0) parse();
    *owned = 0;
    if (n_hints == 0) return user;
    MPI_Info info;
    int rc = user == MPI_INFO_NULL ? PMPI_Info_create(&info) : PMPI_Info_dup(user, &info);
    if (rc != MPI_SUCCESS) return user;
    for (int i = 0; i < n_hints; ++i)
        PMPI_Info_set(info, hints[i].key, hints[i].intended);
    PMPI_Info_set(info, CT_PROBE_KEY, "1");
    *owned = 1;
    return info;
}

void ct_hints_check(MPI_File fh) {
    if (n_hints <= 0 || checked) return;
    MPI_Info used;
    if (PMPI_File_get_info(fh, &used) != MPI_SUCCESS) return;
    checked = 1;
    char probe[8];
    int echoes = 0;
    PMPI_Info_get(used, CT_PROBE_KEY, (int)sizeof probe - 1, probe, &echoes);
    for (int i = 0; i < n_hints; ++i) {
        hint_check *h = &hints[i];
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

int ct_hints_write_json(FILE *out) {
    int n = n_hints > 0 ? n_hints : 0;
    fputc('[', out);
    for (int i = 0; i < n; ++i) {
        const hint_check *h = &hints[i];
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
        fputc('}', out);
    }
    fputs(n ? "\n  ]" : "]", out);
    return n;
}
