/* libcommtune's core: what the generated wrappers call, and what the modules share.
 *
 * A wrapper asks ct_enter() whether to measure (not inside another wrapped call of this thread,
 * not before MPI_Init or after MPI_Finalize), times the PMPI call with a cycle counter and hands
 * the result to ct_leave(), which adds it to this thread's table. Each thread has its own table
 * (no atomics on the fast path); the tables are summed at MPI_Finalize. Nothing here may change
 * what the application computes or abort it: on an internal error libcommtune warns once and
 * passes calls through.
 */
#ifndef CT_CORE_H
#define CT_CORE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define CT_EXPORT __attribute__((visibility("default")))
#define CT_TLS __thread __attribute__((tls_model("initial-exec")))
#define CT_UNLIKELY(x) __builtin_expect(!!(x), 0)

enum ct_class {
    CT_CLASS_SEND,
    CT_CLASS_RECV,
    CT_CLASS_WAIT,
    CT_CLASS_COLL,
    CT_CLASS_RMA,
    CT_CLASS_IO,
    CT_CLASS_INIT,
    CT_CLASS_FINALIZE,
    CT_NUM_CLASSES
};

enum ct_op {
#define CT_OP(name, klass) CT_OP_##name,
#include "ct_ops.h"
#undef CT_OP
    CT_NUM_OPS
};

/* Size classes: 0 bytes, then [2^(k-1), 2^k - 1] for k = 1..64. */
#define CT_SIZE_CLASSES 65

typedef struct {
    uint64_t calls, bytes, ticks;
    uint64_t sizes[CT_SIZE_CLASSES];
} ct_opstat;

typedef struct ct_table {
    ct_opstat ops[CT_NUM_OPS];
    struct ct_table *next;
} ct_table;

extern const char *const ct_op_names[CT_NUM_OPS];
extern const int ct_op_classes[CT_NUM_OPS];
extern const char *const ct_class_names[CT_NUM_CLASSES];

extern CT_TLS int ct_depth;
extern CT_TLS ct_table *ct_tls;
extern int ct_on;
extern uint64_t ct_next_sample;

/* ---- time ---- */
static inline uint64_t ct_now(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}
double ct_seconds(uint64_t ticks);

/* ---- the wrappers' fast path ---- */
ct_table *ct_thread_table(void);
void ct_sample_pvars(uint64_t now);

static inline int ct_enter(void) {
    if (ct_depth || !__atomic_load_n(&ct_on, __ATOMIC_RELAXED)) return 0;
    ct_depth = 1;
    return 1;
}

static inline void ct_leave(int op, uint64_t bytes, uint64_t t0, uint64_t t1) {
    ct_table *t = ct_tls;
    if (CT_UNLIKELY(t == NULL)) t = ct_thread_table();
    if (t != NULL) {
        ct_opstat *s = &t->ops[op];
        s->calls++;
        s->bytes += bytes;
        s->ticks += t1 - t0;
        s->sizes[bytes ? 64 - __builtin_clzll(bytes) : 0]++;
    }
    if (CT_UNLIKELY(t1 >= __atomic_load_n(&ct_next_sample, __ATOMIC_RELAXED))) ct_sample_pvars(t1);
    ct_depth = 0;
}

int ct_init_enter(void);
void ct_init_leave(int op, int rc, int provided, uint64_t t0);
void ct_finalize_enter(int op);

/* ---- bytes of a call (mpi.protos expressions) ---- */
uint64_t ct_bytes(int count, MPI_Datatype type);
uint64_t ct_vbytes(const int counts[], MPI_Datatype type, MPI_Comm comm);
uint64_t ct_wbytes(const int counts[], const MPI_Datatype types[], MPI_Comm comm);
uint64_t ct_wbytes_f(const int counts[], const MPI_Fint types[], MPI_Comm comm);
int ct_out_degree(MPI_Comm comm);
uint64_t ct_nbytes(const int counts[], MPI_Datatype type, MPI_Comm comm);
int ct_size(MPI_Comm comm);
int ct_rank(MPI_Comm comm);
int ct_is_root(int root, MPI_Comm comm);

/* ---- Fortran ---- */
int ct_fortran_resolve(void **slot, const char *symbol);
int ct_fortran_in_place(const void *buf);

/* ---- shared between modules ---- */
#include "../include/ct_mpit_text.h"

void ct_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#include "ct_running.h"
#include "ct_settings.h"

/* ---- modules ----
 * A module (MPI_T, MPI-IO hints, the policy engine, user variables) registers its callbacks
 * with the core from its ct_<module>_register(), which the core calls once, in the order of
 * its table (ct_core.c), before the settings are read; every callback may be NULL. At
 * MPI_Init the core calls before_init (before PMPI_Init) and after_init (once ct_run is set);
 * at MPI_Finalize sample, then the profile (ct_profile.c) asks each module for the lines its
 * rank sends to rank 0 and, on rank 0, for its section of the JSON profile, named `section`;
 * then finalize (always, before PMPI_Finalize).
 */
typedef struct {
    const char *section; /* its key in the profile, NULL: none */
    void (*before_init)(void);
    void (*after_init)(void);
    void (*sample)(void);
    size_t (*lines)(char **out); /* malloc'd "name\tclass\tn\tmin\tmax\tmean\tm2\tlast\n" lines */
    void (*write_json)(FILE *out);
    void (*finalize)(void);
} ct_module;
#define CT_MAX_MODULES 8
void ct_register(const ct_module *module);
int ct_modules(const ct_module *const **out);
void ct_mpit_register(void);
void ct_hints_register(void);
void ct_policy_register(void);
void ct_user_register(void);
extern ct_config_t ct_config;
void ct_config_load(void);
void ct_config_dump(FILE *out);

/* MPI_T: ct_mpit.c */
void ct_mpit_sample(void);

/* The policy engine's periodic rules: ct_policy.c */
extern int ct_policy_on;
void ct_policy_safe_point(MPI_Comm comm);
int ct_cvar_write(const char *name, const char *value, char *why, size_t size);
int ct_pvar_value(const char *name, const char *stat, double *out);
int ct_user_value(const char *name, const char *stat, double *out);

/* MPI-IO hints and HDF5 properties: ct_hints.c, ct_hdf5.c */
enum { CT_SETTING_HINT, CT_SETTING_HDF5 };
typedef struct {
    char key[MPI_MAX_INFO_KEY + 1];
    char intended[256];
    char actual[256];
    const char *status; /* NULL until read back */
    int kind;           /* CT_SETTING_HINT or CT_SETTING_HDF5 */
} ct_setting;
ct_setting *ct_settings(int *n);
MPI_Info ct_hints_merge(MPI_Info user, int *owned);
void ct_hints_check(MPI_File fh);

/* The profile: ct_profile.c */
typedef struct {
    uint64_t init_enter, finalize_enter;
    double ticks_per_second;
    int provided;
    MPI_Comm comm;  /* our duplicate of MPI_COMM_WORLD */
    int cpus;       /* online CPUs of this node */
    int node_ranks; /* ranks on this node (MPI_COMM_TYPE_SHARED) */
} ct_run_t;
extern ct_run_t ct_run;
void ct_profile_write(void);
void ct_sum_tables(ct_opstat *out);

/* A growable text buffer for the lines the ranks send to rank 0. */
typedef struct {
    char *data;
    size_t len, cap;
    int failed;
} ct_buf;
void ct_buf_printf(ct_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
