/* MPI_T in libcommtune: control variables written and read back, performance variables sampled.
 *
 * A configuration reaches the library through the environment (or files) set by commtune's
 * launch layer; here we prove it took. Every variable named in COMMTUNE_CVARS or
 * COMMTUNE_CVAR_WRITE is read back after MPI_Init and compared with the intended value; one that
 * is unknown, unreadable or different is reported, never silent. Variables in COMMTUNE_CVAR_WRITE
 * are also written through MPI_T: before MPI_Init where the library allows it (MPICH), else
 * after it (Open MPI registers most variables only during MPI_Init), and again after MPI_Init if
 * the library reset the early write.
 *
 * PVARs: one session; every numeric variable that is unbound or bound to a communicator (bound
 * to MPI_COMM_WORLD; an array, e.g. one value per peer, counts as the sum of its elements) is
 * started, read at MPI_Init, every COMMTUNE_PVAR_INTERVAL seconds
 * from inside a wrapped call (no thread of ours; a try-lock keeps one reader at a time) and at
 * MPI_Finalize.
 */
#include "ct_core.h"
#include "ct_vendor.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NAME_LEN 256

typedef struct {
    char *name;
    char *intended;
    int write;             /* write through MPI_T, not only read back */
    int written;           /* 1 before MPI_Init, 2 after it */
    char refused[96];      /* why the last write failed */
    char actual[NAME_LEN]; /* value read back, as text (enum item name when there is one) */
    const char *status;    /* applied, differs, unknown, unreadable */
} cvar_check;

static cvar_check *checks;
static int n_checks;
static int mpit_up;

static const char *error_name(int rc) {
    switch (rc) {
    case MPI_T_ERR_INVALID_NAME:
        return "unknown variable";
    case MPI_T_ERR_CVAR_SET_NEVER:
        return "refused: MPI_T_ERR_CVAR_SET_NEVER (fixed at start-up)";
    case MPI_T_ERR_CVAR_SET_NOT_NOW:
        return "refused: MPI_T_ERR_CVAR_SET_NOT_NOW";
    case MPI_T_ERR_INVALID_INDEX:
        return "refused: MPI_T_ERR_INVALID_INDEX";
    case MPI_T_ERR_INVALID_HANDLE:
        return "refused: MPI_T_ERR_INVALID_HANDLE";
    case MPI_T_ERR_NOT_INITIALIZED:
        return "refused: MPI_T not initialised";
    default:
        return "refused by the library";
    }
}

static char *trimmed_copy(const char *start, size_t len) {
    while (len > 0 && isspace((unsigned char)*start)) {
        ++start;
        --len;
    }
    while (len > 0 && isspace((unsigned char)start[len - 1]))
        --len;
    char *out = malloc(len + 1);
    if (out != NULL) {
        memcpy(out, start, len);
        out[len] = '\0';
    }
    return out;
}

/* "name=value;name=value" into checks; a name seen again takes the later value. */
static void add_checks(const char *list, int write) {
    for (const char *p = list; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq != NULL && eq > p) {
            char *name = trimmed_copy(p, (size_t)(eq - p));
            char *value = trimmed_copy(eq + 1, len - (size_t)(eq - p) - 1);
            cvar_check *found = NULL;
            for (int i = 0; name && i < n_checks; ++i)
                if (strcmp(checks[i].name, name) == 0) found = &checks[i];
            if (found == NULL && name && value) {
                cvar_check *grown = realloc(checks, sizeof *checks * (size_t)(n_checks + 1));
                if (grown != NULL) {
                    checks = grown;
                    found = &checks[n_checks++];
                    memset(found, 0, sizeof *found);
                    found->name = name;
                    name = NULL;
                }
            }
            if (found != NULL && value != NULL) {
                free(found->intended);
                found->intended = value;
                value = NULL;
                found->write |= write;
            }
            free(name);
            free(value);
        } else if (len > 0) {
            fprintf(stderr, "commtune: ignoring %.*s (expected name=value)\n", (int)len, p);
        }
        p = end ? end + 1 : NULL;
    }
}

/* ---- one control variable ---- */
typedef struct {
    int index;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    int bind, scope;
} cvar_info;

static int lookup(const char *name, cvar_info *info) {
    char found[NAME_LEN];
    int name_len = sizeof found, desc_len = 0, verbosity = 0;
    int rc = MPI_T_cvar_get_index(name, &info->index);
    if (rc != MPI_SUCCESS) return rc;
    return MPI_T_cvar_get_info(info->index, found, &name_len, &verbosity, &info->type,
                               &info->enumtype, NULL, &desc_len, &info->bind, &info->scope);
}

/* Variables bound to a communicator are read for the application's MPI_COMM_WORLD. */
static MPI_Comm bound_world = MPI_COMM_WORLD;

static int alloc_handle(const cvar_info *info, MPI_T_cvar_handle *handle, int *count) {
    void *object = info->bind == MPI_T_BIND_MPI_COMM ? (void *)&bound_world : NULL;
    if (info->bind != MPI_T_BIND_NO_OBJECT && info->bind != MPI_T_BIND_MPI_COMM)
        return MPI_T_ERR_INVALID_HANDLE;
    return MPI_T_cvar_handle_alloc(info->index, object, handle, count);
}

/* The C type behind an MPI_T variable's datatype: one lookup, then switches over the kind. */
typedef enum {
    K_NONE,
    K_BOOL,
    K_INT,
    K_UNSIGNED,
    K_LONG,
    K_ULONG,
    K_LLONG,
    K_ULLONG,
    K_COUNT,
    K_DOUBLE
} kind_t;

typedef union {
    _Bool b;
    int i;
    unsigned u;
    long l;
    unsigned long ul;
    long long ll;
    unsigned long long ull;
    MPI_Count c;
    double d;
} scalar_t;

static kind_t kind_of(MPI_Datatype t) {
    const struct {
        MPI_Datatype type;
        kind_t kind;
    } table[] = {{MPI_C_BOOL, K_BOOL},
                 {MPI_INT, K_INT},
                 {MPI_UNSIGNED, K_UNSIGNED},
                 {MPI_LONG, K_LONG},
                 {MPI_UNSIGNED_LONG, K_ULONG},
                 {MPI_LONG_LONG, K_LLONG},
                 {MPI_UNSIGNED_LONG_LONG, K_ULLONG},
                 {MPI_COUNT, K_COUNT},
                 {MPI_DOUBLE, K_DOUBLE}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i)
        if (table[i].type == t) return table[i].kind;
    return K_NONE;
}

static int is_integer(MPI_Datatype t) {
    kind_t k = kind_of(t);
    return k != K_NONE && k != K_DOUBLE;
}

static size_t kind_size(kind_t k) {
    const size_t sizes[] = {0,
                            sizeof(_Bool),
                            sizeof(int),
                            sizeof(unsigned),
                            sizeof(long),
                            sizeof(unsigned long),
                            sizeof(long long),
                            sizeof(unsigned long long),
                            sizeof(MPI_Count),
                            sizeof(double)};
    return sizes[k];
}

/* The scalar at raw as one number; 0 on success. */
static int read_number(kind_t k, const void *raw, double *out) {
    const scalar_t *v = raw;
    switch (k) {
    case K_BOOL:
        *out = v->b;
        return 0;
    case K_INT:
        *out = v->i;
        return 0;
    case K_UNSIGNED:
        *out = v->u;
        return 0;
    case K_LONG:
        *out = (double)v->l;
        return 0;
    case K_ULONG:
        *out = (double)v->ul;
        return 0;
    case K_LLONG:
        *out = (double)v->ll;
        return 0;
    case K_ULLONG:
        *out = (double)v->ull;
        return 0;
    case K_COUNT:
        *out = (double)v->c;
        return 0;
    case K_DOUBLE:
        *out = v->d;
        return 0;
    default:
        return -1;
    }
}

static void store_number(kind_t k, long long n, double d, scalar_t *v) {
    switch (k) {
    case K_BOOL:
        v->b = n != 0;
        break;
    case K_INT:
        v->i = (int)n;
        break;
    case K_UNSIGNED:
        v->u = (unsigned)n;
        break;
    case K_LONG:
        v->l = (long)n;
        break;
    case K_ULONG:
        v->ul = (unsigned long)n;
        break;
    case K_LLONG:
        v->ll = n;
        break;
    case K_ULLONG:
        v->ull = (unsigned long long)n;
        break;
    case K_COUNT:
        v->c = (MPI_Count)n;
        break;
    case K_DOUBLE:
        v->d = d;
        break;
    default:
        break;
    }
}

/* The item of an enum with this value (name) or this name (value). */
static int enum_name(MPI_T_enum e, long long value, char *name, int size) {
    int items = 0, len = size;
    if (e == MPI_T_ENUM_NULL || MPI_T_enum_get_info(e, &items, name, &len) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < items; ++i) {
        int v = 0;
        len = size;
        if (MPI_T_enum_get_item(e, i, &v, name, &len) == MPI_SUCCESS && v == value) return 0;
    }
    return -1;
}

static int enum_value(MPI_T_enum e, const char *name, long long *value) {
    char item[NAME_LEN];
    int items = 0, len = sizeof item;
    if (e == MPI_T_ENUM_NULL || MPI_T_enum_get_info(e, &items, item, &len) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < items; ++i) {
        int v = 0;
        len = sizeof item;
        if (MPI_T_enum_get_item(e, i, &v, item, &len) == MPI_SUCCESS &&
            strcasecmp(item, name) == 0) {
            *value = v;
            return 0;
        }
    }
    return -1;
}

/* The intended text as the variable's number: an integer, an enum item, or a boolean word. */
static int intended_number(const char *text, MPI_T_enum e, long long *value, double *real) {
    char *end = NULL;
    *value = strtoll(text, &end, 0);
    *real = (double)*value;
    if (end != text && *end == '\0') return 0;
    *real = strtod(text, &end);
    if (end != text && *end == '\0') {
        *value = (long long)*real;
        return 0;
    }
    if (enum_value(e, text, value) == 0) {
        *real = (double)*value;
        return 0;
    }
    if (strcasecmp(text, "true") == 0 || strcasecmp(text, "yes") == 0 ||
        strcasecmp(text, "on") == 0) {
        *value = 1;
        *real = 1;
        return 0;
    }
    if (strcasecmp(text, "false") == 0 || strcasecmp(text, "no") == 0 ||
        strcasecmp(text, "off") == 0) {
        *value = 0;
        *real = 0;
        return 0;
    }
    return -1;
}

static int try_write(cvar_check *c) {
    cvar_info info;
    MPI_T_cvar_handle handle;
    int count = 0;
    int rc = lookup(c->name, &info);
    if (rc == MPI_SUCCESS) rc = alloc_handle(&info, &handle, &count);
    if (rc != MPI_SUCCESS) {
        snprintf(c->refused, sizeof c->refused, "%s", error_name(rc));
        return rc;
    }
    if (info.scope == MPI_T_SCOPE_CONSTANT || info.scope == MPI_T_SCOPE_READONLY) {
        snprintf(c->refused, sizeof c->refused, "refused: read-only variable");
        MPI_T_cvar_handle_free(&handle);
        return MPI_T_ERR_CVAR_SET_NEVER;
    }
    if (info.type == MPI_CHAR) {
        rc = MPI_T_cvar_write(handle, c->intended);
    } else {
        long long value = 0;
        double real = 0;
        scalar_t raw = {0};
        if (count != 1 || intended_number(c->intended, info.enumtype, &value, &real) != 0) {
            snprintf(c->refused, sizeof c->refused, "refused: not a value of this variable");
            MPI_T_cvar_handle_free(&handle);
            return MPI_T_ERR_INVALID;
        }
        store_number(kind_of(info.type), value, real, &raw);
        rc = MPI_T_cvar_write(handle, &raw);
    }
    MPI_T_cvar_handle_free(&handle);
    if (rc != MPI_SUCCESS)
        snprintf(c->refused, sizeof c->refused, "%s", error_name(rc));
    else
        c->refused[0] = '\0';
    return rc;
}

/* Read the variable back into c->actual and set c->status. */
static void read_back(cvar_check *c) {
    cvar_info info;
    MPI_T_cvar_handle handle;
    int count = 0;
    c->actual[0] = '\0';
    if (lookup(c->name, &info) != MPI_SUCCESS) {
        c->status = "unknown";
        return;
    }
    if (alloc_handle(&info, &handle, &count) != MPI_SUCCESS) {
        c->status = "unreadable";
        return;
    }
    c->status = "unreadable";
    if (info.type == MPI_CHAR) {
        char *text = calloc((size_t)(count > 0 ? count : 1) + 1, 1);
        if (text != NULL && MPI_T_cvar_read(handle, text) == MPI_SUCCESS) {
            snprintf(c->actual, sizeof c->actual, "%s", text);
            char *want = trimmed_copy(c->intended, strlen(c->intended));
            char *got = trimmed_copy(text, strlen(text));
            c->status = want && got && strcasecmp(want, got) == 0 ? "applied" : "differs";
            free(want);
            free(got);
        }
        free(text);
    } else if (count == 1) {
        scalar_t raw = {0};
        double value = 0, real = 0;
        long long want = 0;
        if (MPI_T_cvar_read(handle, &raw) == MPI_SUCCESS &&
            read_number(kind_of(info.type), &raw, &value) == 0) {
            char item[NAME_LEN];
            if (enum_name(info.enumtype, (long long)value, item, sizeof item) == 0)
                snprintf(c->actual, sizeof c->actual, "%s", item);
            else if (is_integer(info.type))
                snprintf(c->actual, sizeof c->actual, "%.0f", value);
            else
                snprintf(c->actual, sizeof c->actual, "%.17g", value);
            int known = intended_number(c->intended, info.enumtype, &want, &real) == 0;
            int equal = is_integer(info.type) ? known && (double)want == value
                                              : known && fabs(real - value) <= 1e-9 * fabs(real);
            c->status = equal ? "applied" : "differs";
        }
    }
    MPI_T_cvar_handle_free(&handle);
}

/* ---- performance variables ---- */
typedef struct {
    MPI_T_pvar_handle handle;
    kind_t kind;
    int var_class, count;
    char name[NAME_LEN];
    ct_running stat;
} pvar_t;

static MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
static pvar_t *pvars;
static int n_pvars;
static void *pvar_buffer; /* room for the largest variable */
static size_t pvar_buffer_size;
static uint64_t interval_ticks;
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER;

/* Variable i into p, started; 0 if it is one we can sample (numeric, unbound or bound to a
 * communicator, at most 65536 elements). */
static int open_pvar(int i, pvar_t *p) {
    int name_len = sizeof p->name, desc_len = 0, verbosity, bind, readonly, continuous, atomic;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_pvar_get_info(i, p->name, &name_len, &verbosity, &p->var_class, &type, &enumtype,
                            NULL, &desc_len, &bind, &readonly, &continuous,
                            &atomic) != MPI_SUCCESS ||
        (bind != MPI_T_BIND_NO_OBJECT && bind != MPI_T_BIND_MPI_COMM) ||
        (p->kind = kind_of(type)) == K_NONE || ct_vendor_pvar_unsafe(p->name))
        return -1;
    void *object = bind == MPI_T_BIND_MPI_COMM ? (void *)&bound_world : NULL;
    if (MPI_T_pvar_handle_alloc(session, i, object, &p->handle, &p->count) != MPI_SUCCESS)
        return -1;
    size_t need = (size_t)p->count * kind_size(p->kind);
    if (p->count < 1 || p->count > 65536) {
        MPI_T_pvar_handle_free(session, &p->handle);
        return -1;
    }
    if (need > pvar_buffer_size) {
        void *grown = realloc(pvar_buffer, need);
        if (grown == NULL) {
            MPI_T_pvar_handle_free(session, &p->handle);
            return -1;
        }
        pvar_buffer = grown;
        pvar_buffer_size = need;
    }
    if (!continuous) MPI_T_pvar_start(session, p->handle);
    return 0;
}

static void open_pvars(void) {
    int n = 0;
    if (MPI_T_pvar_get_num(&n) != MPI_SUCCESS || n <= 0) return;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS) {
        session = MPI_T_PVAR_SESSION_NULL;
        return;
    }
    pvars = calloc((size_t)n, sizeof *pvars);
    for (int i = 0; pvars != NULL && i < n; ++i)
        if (open_pvar(i, &pvars[n_pvars]) == 0) ++n_pvars;
}

static void sample_all(void) {
    for (int i = 0; i < n_pvars; ++i) {
        pvar_t *p = &pvars[i];
        double v = 0, element = 0;
        int ok = MPI_T_pvar_read(session, p->handle, pvar_buffer) == MPI_SUCCESS;
        for (int k = 0; ok && k < p->count; ++k) {
            ok = read_number(p->kind, (char *)pvar_buffer + (size_t)k * kind_size(p->kind),
                             &element) == 0;
            v += element;
        }
        if (ok) ct_running_add(&p->stat, v);
    }
}

void ct_sample_pvars(uint64_t now) {
    if (pthread_mutex_trylock(&sample_lock) != 0) return;
    if (now >= ct_next_sample && n_pvars > 0) {
        sample_all();
        __atomic_store_n(&ct_next_sample, now + interval_ticks, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&sample_lock);
}

void ct_mpit_sample(void) {
    pthread_mutex_lock(&sample_lock);
    if (n_pvars > 0) sample_all();
    pthread_mutex_unlock(&sample_lock);
}

/* ---- the phases ---- */
static void before_init(void) {
    add_checks(ct_config.cvars, 0);
    add_checks(ct_config.cvar_write, 1);
    int provided = 0;
    if (MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        if (n_checks > 0)
            fprintf(stderr, "commtune: MPI_T is not available: control variables unchecked\n");
        return;
    }
    mpit_up = 1;
    for (int i = 0; i < n_checks; ++i)
        if (checks[i].write && try_write(&checks[i]) == MPI_SUCCESS) checks[i].written = 1;
}

static void after_init(void) {
    if (!mpit_up) return;
    for (int i = 0; i < n_checks; ++i) {
        cvar_check *c = &checks[i];
        read_back(c);
        if (c->write && strcmp(c->status, "applied") != 0 && try_write(c) == MPI_SUCCESS) {
            c->written = 2;
            read_back(c);
        }
    }
    if (ct_config.pvars) {
        open_pvars();
        ct_mpit_sample();
        if (n_pvars > 0 && ct_config.pvar_interval > 0) {
            interval_ticks = (uint64_t)(ct_config.pvar_interval * ct_run.ticks_per_second);
            __atomic_store_n(&ct_next_sample, ct_now() + interval_ticks, __ATOMIC_RELAXED);
        }
    }
}

static void finalize(void) {
    __atomic_store_n(&ct_next_sample, UINT64_MAX, __ATOMIC_RELAXED);
    pthread_mutex_lock(&sample_lock);
    if (session != MPI_T_PVAR_SESSION_NULL) {
        for (int i = 0; i < n_pvars; ++i)
            MPI_T_pvar_handle_free(session, &pvars[i].handle);
        MPI_T_pvar_session_free(&session);
        session = MPI_T_PVAR_SESSION_NULL;
        n_pvars = 0;
    }
    pthread_mutex_unlock(&sample_lock);
    if (mpit_up) {
        mpit_up = 0;
        MPI_T_finalize();
    }
}

/* ---- writes at run time (commtune.h), for runtime rules ---- */
int ct_cvar_write(const char *name, const char *value, char *why, size_t size) {
    if (!mpit_up || name == NULL || value == NULL) {
        snprintf(why, size, "refused: MPI_T is not available");
        return -1;
    }
    cvar_check c;
    memset(&c, 0, sizeof c);
    c.name = (char *)name;
    c.intended = (char *)value;
    int rc = try_write(&c);
    snprintf(why, size, "%s", rc == MPI_SUCCESS ? "" : c.refused);
    return rc == MPI_SUCCESS ? 0 : -1;
}

CT_EXPORT int commtune_cvar_write_impl(const char *name, const char *value) {
    char why[96];
    int rc = ct_cvar_write(name, value, why, sizeof why);
    if (rc != 0 && ct_config.debug)
        fprintf(stderr, "commtune: cannot write %s=%s: %s\n", name, value, why);
    return rc;
}

/* A PVAR's running statistic for the policy engine (0; -1: no such variable or no sample). */
int ct_pvar_value(const char *name, const char *stat, double *out) {
    int rc = -1;
    pthread_mutex_lock(&sample_lock);
    for (int i = 0; i < n_pvars; ++i) {
        const pvar_t *p = &pvars[i];
        if (strcmp(p->name, name) != 0 || p->stat.samples == 0) continue;
        rc = 0;
        *out = ct_running_value(&p->stat, stat, p->stat.last); /* a counter's last: its total */
        break;
    }
    pthread_mutex_unlock(&sample_lock);
    return rc;
}

/* ---- reporting ---- */
static void write_cvars_json(FILE *out) {
    fputc('[', out);
    for (int i = 0; i < n_checks; ++i) {
        const cvar_check *c = &checks[i];
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
        ct_json_string(out, c->name);
        fputs(", \"intended\": ", out);
        ct_json_string(out, c->intended);
        fputs(", \"actual\": ", out);
        if (c->status != NULL &&
            (strcmp(c->status, "applied") == 0 || strcmp(c->status, "differs") == 0))
            ct_json_string(out, c->actual);
        else
            fputs("null", out);
        fputs(", \"status\": ", out);
        ct_json_string(out, c->status ? c->status : "unchecked");
        fputs(", \"write\": ", out);
        if (!c->write)
            fputs("null", out);
        else if (c->written == 1)
            fputs("\"before MPI_Init\"", out);
        else if (c->written == 2)
            fputs("\"after MPI_Init\"", out);
        else
            ct_json_string(out, c->refused[0] ? c->refused : "refused");
        fputc('}', out);
    }
    fputs(n_checks ? "\n  ]" : "]", out);
}

static size_t pvar_lines(char **out) {
    ct_buf b = {0};
    pthread_mutex_lock(&sample_lock);
    for (int i = 0; i < n_pvars; ++i) {
        const pvar_t *p = &pvars[i];
        const ct_running *r = &p->stat;
        if (r->samples == 0) continue;
        ct_buf_printf(&b, "%s\t%s\t%llu\t%.17g\t%.17g\t%.17g\t%.17g\t%.17g\n", p->name,
                      ct_pvar_class_name(p->var_class), (unsigned long long)r->samples, r->min,
                      r->max, r->mean, r->m2, r->last);
    }
    pthread_mutex_unlock(&sample_lock);
    *out = b.failed ? NULL : b.data;
    return b.failed ? 0 : b.len;
}

void ct_mpit_register(void) {
    static const ct_module module = {.section = "cvars",
                                     .before_init = before_init,
                                     .after_init = after_init,
                                     .sample = ct_mpit_sample,
                                     .lines = pvar_lines,
                                     .write_json = write_cvars_json,
                                     .finalize = finalize};
    ct_register(&module);
}
