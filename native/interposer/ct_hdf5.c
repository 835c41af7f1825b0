/* HDF5 properties of the configuration, applied the way H5Tuner does: by intercepting
 * H5Fcreate / H5Fopen (file-access properties) and H5Dwrite (the data-transfer mode) of an
 * unchanged application linked with HDF5, and calling the real ones found with dlsym.
 *
 * COMMTUNE_HDF5_PROPS="key=value;..." (parsed with the MPI-IO hints, ct_hints.c) names them:
 *   alignment_threshold, alignment        H5Pset_alignment
 *   sieve_buf_size                        H5Pset_sieve_buf_size
 *   meta_block_size                       H5Pset_meta_block_size
 *   rdcc_nbytes                           H5Pset_cache (raw-data chunk cache bytes)
 *   all_coll_metadata_ops                 H5Pset_all_coll_metadata_ops (true / false)
 *   coll_metadata_write                   H5Pset_coll_metadata_write (true / false)
 *   xfer_mode                             H5Pset_dxpl_mpio (collective / independent)
 * The application's property list is copied, never changed. After the first file is created or
 * opened its access properties are read back (H5Fget_access_plist); after the first write the
 * transfer mode is read back as the I/O HDF5 actually did (H5Pget_mpio_actual_io_mode: HDF5
 * falls back to independent I/O where it cannot do collective). Statuses as for hints:
 * applied, differs, unsupported (this HDF5 has no such call: a serial build), unchecked.
 *
 * libcommtune does not link HDF5: every HDF5 function is looked up at run time, so the library
 * works unchanged for programs without HDF5 (these wrappers are then never called). hid_t is
 * a 64-bit integer from HDF5 1.10 on; with an older HDF5 the properties are left alone.
 */
#define _GNU_SOURCE
#include "ct_core.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t ct_hid; /* hid_t */
typedef int ct_herr;    /* herr_t */
typedef unsigned long long ct_hsize;
#define CT_H5P_DEFAULT ((ct_hid)0)

enum { XFER_APP = -1, XFER_INDEPENDENT = 0, XFER_COLLECTIVE = 1 };

static struct {
    int ready; /* 0: not looked up; 1: usable; -1: no usable HDF5 */
    ct_hid (*pcopy)(ct_hid);
    ct_hid (*pcreate)(ct_hid);
    ct_herr (*pclose)(ct_hid);
    ct_hid (*fget_access_plist)(ct_hid);
    ct_herr (*set_alignment)(ct_hid, ct_hsize, ct_hsize);
    ct_herr (*get_alignment)(ct_hid, ct_hsize *, ct_hsize *);
    ct_herr (*set_sieve)(ct_hid, size_t);
    ct_herr (*get_sieve)(ct_hid, size_t *);
    ct_herr (*set_meta_block)(ct_hid, ct_hsize);
    ct_herr (*get_meta_block)(ct_hid, ct_hsize *);
    ct_herr (*set_cache)(ct_hid, int, size_t, size_t, double);
    ct_herr (*get_cache)(ct_hid, int *, size_t *, size_t *, double *);
    ct_herr (*set_coll_ops)(ct_hid, bool);
    ct_herr (*get_coll_ops)(ct_hid, bool *);
    ct_herr (*set_coll_write)(ct_hid, bool);
    ct_herr (*get_coll_write)(ct_hid, bool *);
    ct_herr (*set_dxpl_mpio)(ct_hid, int);
    ct_herr (*get_actual_io_mode)(ct_hid, int *);
    ct_hid *fapl_class, *dxpl_class;
} h5;

static ct_setting *settings; /* the HDF5 entries of the shared table, found by key */
static int n_settings;
static int file_checked, xfer_checked;

static ct_setting *find(const char *key) {
    for (int i = 0; i < n_settings; ++i)
        if (settings[i].kind == CT_SETTING_HDF5 && strcmp(settings[i].key, key) == 0)
            return &settings[i];
    return NULL;
}

static int any_file_property(void) {
    for (int i = 0; i < n_settings; ++i)
        if (settings[i].kind == CT_SETTING_HDF5 && strcmp(settings[i].key, "xfer_mode") != 0)
            return 1;
    return 0;
}

#define LOOKUP(field, name) (*(void **)&h5.field = dlsym(RTLD_DEFAULT, name))

static int ready(void) {
    if (h5.ready) return h5.ready > 0;
    settings = ct_settings(&n_settings);
    h5.ready = -1;
    unsigned major = 0, minor = 0, release = 0;
    ct_herr (*version)(unsigned *, unsigned *, unsigned *);
    ct_herr (*open)(void);
    *(void **)&version = dlsym(RTLD_DEFAULT, "H5get_libversion");
    *(void **)&open = dlsym(RTLD_DEFAULT, "H5open");
    if (version == NULL || open == NULL || version(&major, &minor, &release) < 0) return 0;
    if (major < 1 || (major == 1 && minor < 10)) {
        ct_warn("HDF5 %u.%u is older than 1.10: HDF5 properties left alone", major, minor);
        return 0;
    }
    open();
    LOOKUP(pcopy, "H5Pcopy");
    LOOKUP(pcreate, "H5Pcreate");
    LOOKUP(pclose, "H5Pclose");
    LOOKUP(fget_access_plist, "H5Fget_access_plist");
    LOOKUP(set_alignment, "H5Pset_alignment");
    LOOKUP(get_alignment, "H5Pget_alignment");
    LOOKUP(set_sieve, "H5Pset_sieve_buf_size");
    LOOKUP(get_sieve, "H5Pget_sieve_buf_size");
    LOOKUP(set_meta_block, "H5Pset_meta_block_size");
    LOOKUP(get_meta_block, "H5Pget_meta_block_size");
    LOOKUP(set_cache, "H5Pset_cache");
    LOOKUP(get_cache, "H5Pget_cache");
    LOOKUP(set_coll_ops, "H5Pset_all_coll_metadata_ops"); /* parallel builds only */
    LOOKUP(get_coll_ops, "H5Pget_all_coll_metadata_ops");
    LOOKUP(set_coll_write, "H5Pset_coll_metadata_write");
    LOOKUP(get_coll_write, "H5Pget_coll_metadata_write");
    LOOKUP(set_dxpl_mpio, "H5Pset_dxpl_mpio");
    LOOKUP(get_actual_io_mode, "H5Pget_mpio_actual_io_mode");
    LOOKUP(fapl_class, "H5P_CLS_FILE_ACCESS_ID_g");
    LOOKUP(dxpl_class, "H5P_CLS_DATASET_XFER_ID_g");
    if (!h5.pcopy || !h5.pcreate || !h5.pclose || !h5.fget_access_plist || !h5.fapl_class ||
        !h5.dxpl_class) {
        ct_warn("HDF5 without H5Pcopy/H5Pcreate/H5Fget_access_plist: properties left alone");
        return 0;
    }
    h5.ready = 1;
    return 1;
}

static unsigned long long number(const ct_setting *s) { return strtoull(s->intended, NULL, 10); }

static bool truth(const char *text) {
    return strcmp(text, "true") == 0 || strcmp(text, "1") == 0 || strcmp(text, "yes") == 0;
}

static void unsupported(ct_setting *s) {
    if (s != NULL && s->status == NULL) s->status = "unsupported";
}

/* A copy of the application's file-access list with the configuration's properties set. */
static ct_hid tuned_fapl(ct_hid fapl) {
    ct_hid p = fapl == CT_H5P_DEFAULT ? h5.pcreate(*h5.fapl_class) : h5.pcopy(fapl);
    if (p < 0) return -1;
    ct_setting *threshold = find("alignment_threshold"), *alignment = find("alignment");
    if ((threshold || alignment) && h5.get_alignment && h5.set_alignment) {
        ct_hsize t = 1, a = 1;
        h5.get_alignment(p, &t, &a);
        h5.set_alignment(p, threshold ? number(threshold) : t, alignment ? number(alignment) : a);
    }
    ct_setting *s = find("sieve_buf_size");
    if (s && h5.set_sieve) h5.set_sieve(p, (size_t)number(s));
    if ((s = find("meta_block_size")) && h5.set_meta_block) h5.set_meta_block(p, number(s));
    if ((s = find("rdcc_nbytes")) && h5.get_cache && h5.set_cache) {
        int mdc = 0;
        size_t slots = 0, bytes = 0;
        double w0 = 0.75;
        if (h5.get_cache(p, &mdc, &slots, &bytes, &w0) >= 0)
            h5.set_cache(p, mdc, slots, (size_t)number(s), w0);
    }
    if ((s = find("all_coll_metadata_ops"))) {
        if (h5.set_coll_ops)
            h5.set_coll_ops(p, truth(s->intended));
        else
            unsupported(s);
    }
    if ((s = find("coll_metadata_write"))) {
        if (h5.set_coll_write)
            h5.set_coll_write(p, truth(s->intended));
        else
            unsupported(s);
    }
    return p;
}

static void verdict(ct_setting *s, const char *actual) {
    if (s == NULL || s->status != NULL) return;
    snprintf(s->actual, sizeof s->actual, "%s", actual);
    s->status = strcmp(actual, s->intended) == 0 ? "applied" : "differs";
}

static void verdict_bool(ct_setting *s, bool actual) {
    if (s == NULL || s->status != NULL) return;
    snprintf(s->actual, sizeof s->actual, "%s", actual ? "1" : "0");
    s->status = truth(s->intended) == actual ? "applied" : "differs";
}

static void verdict_number(ct_setting *s, unsigned long long actual) {
    char text[32];
    snprintf(text, sizeof text, "%llu", actual);
    verdict(s, text);
}

/* What the file was opened with, read back once (the first file). */
static void check_file(ct_hid file) {
    if (file_checked) return;
    file_checked = 1;
    ct_hid p = h5.fget_access_plist(file);
    if (p < 0) return;
    ct_hsize t = 0, a = 0;
    if (h5.get_alignment && h5.get_alignment(p, &t, &a) >= 0) {
        verdict_number(find("alignment_threshold"), t);
        verdict_number(find("alignment"), a);
    }
    size_t sieve = 0;
    if (h5.get_sieve && h5.get_sieve(p, &sieve) >= 0) verdict_number(find("sieve_buf_size"), sieve);
    ct_hsize block = 0;
    if (h5.get_meta_block && h5.get_meta_block(p, &block) >= 0)
        verdict_number(find("meta_block_size"), block);
    int mdc = 0;
    size_t slots = 0, bytes = 0;
    double w0 = 0;
    if (h5.get_cache && h5.get_cache(p, &mdc, &slots, &bytes, &w0) >= 0)
        verdict_number(find("rdcc_nbytes"), bytes);
    bool flag = false;
    if (h5.get_coll_ops && h5.get_coll_ops(p, &flag) >= 0)
        verdict_bool(find("all_coll_metadata_ops"), flag);
    if (h5.get_coll_write && h5.get_coll_write(p, &flag) >= 0)
        verdict_bool(find("coll_metadata_write"), flag);
    h5.pclose(p);
}

static ct_hid open_tuned(ct_hid fapl, ct_hid *tuned) {
    *tuned = -1;
    if (ct_config.disable || !ready() || !any_file_property()) return fapl;
    *tuned = tuned_fapl(fapl);
    return *tuned >= 0 ? *tuned : fapl;
}

static void *real(const char *name) {
    void *fn = dlsym(RTLD_NEXT, name);
    if (fn == NULL) ct_warn("%s: the real function is not found (%s)", name, dlerror());
    return fn;
}

CT_EXPORT ct_hid H5Fcreate(const char *name, unsigned flags, ct_hid fcpl, ct_hid fapl) {
    static ct_hid (*next)(const char *, unsigned, ct_hid, ct_hid);
    if (next == NULL && (*(void **)&next = real("H5Fcreate")) == NULL) return -1;
    ct_hid tuned;
    ct_hid file = next(name, flags, fcpl, open_tuned(fapl, &tuned));
    if (tuned >= 0) {
        h5.pclose(tuned);
        if (file >= 0) check_file(file);
    }
    return file;
}

CT_EXPORT ct_hid H5Fopen(const char *name, unsigned flags, ct_hid fapl) {
    static ct_hid (*next)(const char *, unsigned, ct_hid);
    if (next == NULL && (*(void **)&next = real("H5Fopen")) == NULL) return -1;
    ct_hid tuned;
    ct_hid file = next(name, flags, open_tuned(fapl, &tuned));
    if (tuned >= 0) {
        h5.pclose(tuned);
        if (file >= 0) check_file(file);
    }
    return file;
}

CT_EXPORT ct_herr H5Dwrite(ct_hid dset, ct_hid mem_type, ct_hid mem_space, ct_hid file_space,
                           ct_hid dxpl, const void *buf) {
    static ct_herr (*next)(ct_hid, ct_hid, ct_hid, ct_hid, ct_hid, const void *);
    if (next == NULL && (*(void **)&next = real("H5Dwrite")) == NULL) return -1;
    ct_setting *mode = NULL;
    if (!ct_config.disable && ready()) mode = find("xfer_mode");
    if (mode == NULL) return next(dset, mem_type, mem_space, file_space, dxpl, buf);
    if (h5.set_dxpl_mpio == NULL) {
        unsupported(mode);
        return next(dset, mem_type, mem_space, file_space, dxpl, buf);
    }
    int collective = strcmp(mode->intended, "collective") == 0;
    ct_hid x = dxpl == CT_H5P_DEFAULT ? h5.pcreate(*h5.dxpl_class) : h5.pcopy(dxpl);
    if (x < 0) return next(dset, mem_type, mem_space, file_space, dxpl, buf);
    h5.set_dxpl_mpio(x, collective ? XFER_COLLECTIVE : XFER_INDEPENDENT);
    ct_herr rc = next(dset, mem_type, mem_space, file_space, x, buf);
    int actual = 0; /* H5D_MPIO_NO_COLLECTIVE; any other value is a kind of collective I/O */
    if (!xfer_checked && rc >= 0 && h5.get_actual_io_mode &&
        h5.get_actual_io_mode(x, &actual) >= 0) {
        xfer_checked = 1;
        verdict(mode, actual != 0 ? "collective" : "independent");
    }
    h5.pclose(x);
    return rc;
}
