/* libcommtune core: per-thread tables, MPI_Init/MPI_Finalize hooks, bytes of a call, Fortran
 * symbol resolution, warnings. See ct_core.h for the contract of the wrappers' fast path.
 */
#define _GNU_SOURCE
#include "ct_core.h"

#include "ct_vendor.h"
#include <unistd.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const ct_op_names[CT_NUM_OPS] = {
#define CT_OP(name, klass) #name,
#include "ct_ops.h"
#undef CT_OP
};
const int ct_op_classes[CT_NUM_OPS] = {
#define CT_OP(name, klass) klass,
#include "ct_ops.h"
#undef CT_OP
};
const char *const ct_class_names[CT_NUM_CLASSES] = {"send", "recv", "wait", "coll",
                                                    "rma",  "io",   "init", "finalize"};

CT_TLS int ct_depth;
CT_TLS ct_table *ct_tls;
int ct_on;
uint64_t ct_next_sample = UINT64_MAX;
ct_run_t ct_run;

static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_table *tables;
static int initialised; /* MPI_Init seen: a second one is the application's error, not ours */

void ct_warn(const char *fmt, ...) {
    static int warned;
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED)) return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fprintf(stderr, "commtune: %s (further warnings suppressed)\n", text);
}

ct_table *ct_thread_table(void) {
    ct_table *t = calloc(1, sizeof *t);
    if (t == NULL) {
        ct_warn("out of memory for a thread's table: its calls pass through unmeasured");
        return NULL;
    }
    pthread_mutex_lock(&tables_lock);
    t->next = tables;
    tables = t;
    pthread_mutex_unlock(&tables_lock);
    ct_tls = t;
    return t;
}

/* Tables outlive their threads: a thread that ended before MPI_Finalize still counts. */
void ct_sum_tables(ct_opstat *out) {
    memset(out, 0, sizeof(ct_opstat) * CT_NUM_OPS);
    pthread_mutex_lock(&tables_lock);
    for (ct_table *t = tables; t != NULL; t = t->next) {
        for (int op = 0; op < CT_NUM_OPS; ++op) {
            out[op].calls += t->ops[op].calls;
            out[op].bytes += t->ops[op].bytes;
            out[op].ticks += t->ops[op].ticks;
            for (int k = 0; k < CT_SIZE_CLASSES; ++k)
                out[op].sizes[k] += t->ops[op].sizes[k];
        }
    }
    pthread_mutex_unlock(&tables_lock);
}

/* ---- time ---- */
static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double calibration_seconds;
static uint64_t calibration_ticks;

/* Ticks per second from the span since MPI_Init began, measured with both clocks. */
static void calibrate(void) {
#if defined(__x86_64__) || defined(__i386__)
    double dt = monotonic() - calibration_seconds;
    uint64_t dticks = ct_now() - calibration_ticks;
    if (dt > 1e-4 && dticks > 0)
        ct_run.ticks_per_second = (double)dticks / dt;
    else if (ct_run.ticks_per_second <= 0)
        ct_run.ticks_per_second = 1e9;
#else
    ct_run.ticks_per_second = 1e9;
#endif
}

double ct_seconds(uint64_t ticks) {
    return ct_run.ticks_per_second > 0 ? (double)ticks / ct_run.ticks_per_second : 0.0;
}

/* ---- modules ---- */
static void (*const module_registrations[])(void) = {ct_mpit_register, ct_hints_register,
                                                     ct_policy_register, ct_user_register};
static const ct_module *modules[CT_MAX_MODULES];
static int n_modules;

void ct_register(const ct_module *module) {
    if (n_modules < CT_MAX_MODULES)
        modules[n_modules++] = module;
    else
        ct_warn("more than %d modules: one is left out", CT_MAX_MODULES);
}

int ct_modules(const ct_module *const **out) {
    *out = modules;
    return n_modules;
}

#define CT_EACH_MODULE(callback)                                                                   \
    for (int m_ = 0; m_ < n_modules; ++m_)                                                         \
        if (modules[m_]->callback != NULL) modules[m_]->callback()

/* ---- MPI_Init and MPI_Finalize ---- */
int ct_init_enter(void) {
    if (ct_depth || initialised) return 0;
    initialised = 1;
    for (size_t i = 0; i < sizeof module_registrations / sizeof *module_registrations; ++i)
        module_registrations[i]();
    ct_config_load();
    if (ct_config.disable) return 0;
    ct_depth = 1;
    calibration_seconds = monotonic();
    calibration_ticks = ct_now();
    ct_run.init_enter = calibration_ticks;
    CT_EACH_MODULE(before_init);
    return 1;
}

void ct_init_leave(int op, int rc, int provided, uint64_t t0) {
    uint64_t t1 = ct_now();
    if (rc == MPI_SUCCESS) {
        calibrate();
        ct_run.provided = provided;
        if (PMPI_Comm_dup(MPI_COMM_WORLD, &ct_run.comm) == MPI_SUCCESS) {
            PMPI_Comm_set_errhandler(ct_run.comm, MPI_ERRORS_RETURN);
            MPI_Comm node;
            ct_run.cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
            ct_run.node_ranks = 0;
            if (PMPI_Comm_split_type(ct_run.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
                MPI_SUCCESS) {
                PMPI_Comm_size(node, &ct_run.node_ranks);
                PMPI_Comm_free(&node);
            }
            CT_EACH_MODULE(after_init);
            ct_table *t = ct_tls ? ct_tls : ct_thread_table();
            if (t != NULL) {
                t->ops[op].calls++;
                t->ops[op].ticks += t1 - t0;
                t->ops[op].sizes[0]++;
                __atomic_store_n(&ct_on, 1, __ATOMIC_RELEASE);
            }
        } else {
            ct_run.comm = MPI_COMM_NULL;
            ct_warn("cannot duplicate MPI_COMM_WORLD: no profile");
        }
        if (ct_config.debug && ct_rank(MPI_COMM_WORLD) == 0) ct_config_dump(stderr);
    }
    ct_depth = 0;
}

void ct_finalize_enter(int op) {
    if (ct_depth) return;
    ct_depth = 1;
    if (__atomic_exchange_n(&ct_on, 0, __ATOMIC_ACQ_REL)) {
        ct_run.finalize_enter = ct_now();
        calibrate();
        ct_table *t = ct_tls ? ct_tls : ct_thread_table();
        if (t != NULL) {
            t->ops[op].calls++;
            t->ops[op].sizes[0]++;
        }
        CT_EACH_MODULE(sample);
        ct_profile_write();
        PMPI_Comm_free(&ct_run.comm);
    }
    /* Open MPI crashes on MPI_T_finalize after MPI_Finalize: always before it. */
    CT_EACH_MODULE(finalize);
    ct_depth = 0;
}

/* ---- bytes ---- */
uint64_t ct_bytes(int count, MPI_Datatype type) {
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
    if (PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

/* Peers of a collective: the remote group of an intercommunicator. */
int ct_size(MPI_Comm comm) {
    int inter = 0, size = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &size);
    else
        PMPI_Comm_size(comm, &size);
    return size;
}

int ct_rank(MPI_Comm comm) {
    int rank = -1;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

int ct_is_root(int root, MPI_Comm comm) {
    return root == MPI_ROOT || (root >= 0 && ct_rank(comm) == root);
}

/* The bytes of the first n counts of one datatype. */
static uint64_t sum_bytes(const int counts[], MPI_Datatype type, int n) {
    uint64_t total = 0;
    for (int i = 0; counts != NULL && i < n; ++i)
        total += ct_bytes(counts[i], type);
    return total;
}

uint64_t ct_vbytes(const int counts[], MPI_Datatype type, MPI_Comm comm) {
    return sum_bytes(counts, type, ct_size(comm));
}

uint64_t ct_wbytes(const int counts[], const MPI_Datatype types[], MPI_Comm comm) {
    uint64_t total = 0;
    int n = ct_size(comm);
    for (int i = 0; counts != NULL && types != NULL && i < n; ++i)
        total += ct_bytes(counts[i], types[i]);
    return total;
}

uint64_t ct_wbytes_f(const int counts[], const MPI_Fint types[], MPI_Comm comm) {
    uint64_t total = 0;
    int n = ct_size(comm);
    for (int i = 0; counts != NULL && types != NULL && i < n; ++i)
        total += ct_bytes(counts[i], MPI_Type_f2c(types[i]));
    return total;
}

/* Out-neighbours of a process topology (a Cartesian one: two per dimension, as MPI's
 * neighbourhood collectives count them, periodic or not); 0 without a topology. */
int ct_out_degree(MPI_Comm comm) {
    int kind = MPI_UNDEFINED, n = 0, in = 0, out = 0, weighted = 0;
    PMPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        PMPI_Cartdim_get(comm, &n);
        return 2 * n;
    }
    if (kind == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(comm, ct_rank(comm), &n);
        return n;
    }
    if (kind == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &in, &out, &weighted);
        return out;
    }
    return 0;
}

uint64_t ct_nbytes(const int counts[], MPI_Datatype type, MPI_Comm comm) {
    return sum_bytes(counts, type, ct_out_degree(comm));
}

/* ---- Fortran ---- */
int ct_fortran_resolve(void **slot, const char *symbol) {
    if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != NULL) return 1;
    void *found = dlsym(RTLD_NEXT, symbol);
    if (found == NULL) {
        fprintf(stderr, "commtune: the MPI library has no Fortran entry point %s\n", symbol);
        return 0;
    }
    __atomic_store_n(slot, found, __ATOMIC_RELEASE);
    return 1;
}

int ct_fortran_in_place(const void *buf) {
    static const void *in_place;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        in_place = ct_vendor_fortran_in_place();
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return in_place != NULL && buf == in_place;
}

/* ---- text buffers ---- */
void ct_buf_printf(ct_buf *b, const char *fmt, ...) {
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n =
            vsnprintf(b->data ? b->data + b->len : NULL, b->data ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->data != NULL && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap <= b->len + (size_t)n)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (grown == NULL) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
}
