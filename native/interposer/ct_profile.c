/* The profile: at MPI_Finalize every rank sends its numbers to rank 0 (on our duplicate of
 * MPI_COMM_WORLD, errors returned, never fatal), which writes one JSON file, atomically.
 *
 * Per operation: calls, bytes and time, each as {sum, min, max, mean, median, std} over ranks
 * (std: population standard deviation), and the message size classes summed over ranks. Wang's
 * features (share of communication time in point-to-point and in collectives, mean bytes per
 * process of each, communicator size), PVAR statistics like TAU's table, user-defined variables,
 * and the CVAR read-back of ct_mpit.c.
 */
#define _GNU_SOURCE
#include "ct_core.h"
#include "ct_vendor.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { PER_OP = 3, WALL = 0, MPI_TIME = 1, COMM_TIME = 2, MEMORY_PEAK = 3, EXTRA = 4 };

/* This process's memory high-water mark (VmHWM, resident), in bytes; NaN where unknown. */
static double memory_peak(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return NAN;
    char line[256];
    double kib = NAN;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = strtod(line + 6, NULL);
            break;
        }
    fclose(f);
    return kib * 1024.0;
}

enum { CPUSET_TEXT = 128 };

/* The CPUs this process may run on (its binding), as ranges: "0", "0-1", "0,2-3"; "" where
 * unknown. Read when the profile is written: the launcher bound the rank before it started. */
static void cpuset_text(char *text, size_t len) {
    cpu_set_t set;
    text[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) != 0) return;
    size_t used = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && used + 24 < len; ++cpu) {
        if (!CPU_ISSET(cpu, &set)) continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            ++last;
        int w = last > cpu
                    ? snprintf(text + used, len - used, "%s%d-%d", used ? "," : "", cpu, last)
                    : snprintf(text + used, len - used, "%s%d", used ? "," : "", cpu);
        if (w < 0) break;
        used += (size_t)w;
        cpu = last;
    }
}

static void number(FILE *out, double v) {
    if (!isfinite(v))
        fputs("null", out);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.9g", v);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* {sum, min, max, mean, median, std} of n values spaced stride apart. */
static void stats(FILE *out, const double *values, int n, int stride) {
    double *sorted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i) {
        double v = values[(size_t)i * (size_t)stride];
        if (sorted != NULL) sorted[i] = v;
        sum += v;
    }
    double mean = n > 0 ? sum / n : 0;
    for (int i = 0; i < n; ++i) {
        double d = values[(size_t)i * (size_t)stride] - mean;
        sq += d * d;
    }
    double median = 0, lo = 0, hi = 0;
    if (sorted != NULL && n > 0) {
        qsort(sorted, (size_t)n, sizeof(double), by_value);
        median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
        lo = sorted[0];
        hi = sorted[n - 1];
    }
    free(sorted);
    const char *keys[] = {"{\"sum\": ",   ", \"min\": ",    ", \"max\": ",
                          ", \"mean\": ", ", \"median\": ", ", \"std\": "};
    double vals[] = {sum, lo, hi, mean, median, n > 0 ? sqrt(sq / n) : 0};
    for (int k = 0; k < 6; ++k) {
        fputs(keys[k], out);
        number(out, vals[k]);
    }
    fputc('}', out);
}

/* ---- variables sent as text lines: name, class, samples, min, max, mean, m2, x ---- */
typedef struct {
    char name[256], klass[32];
    double samples, min, max, mean, m2, xsum;
    double *xs; /* x of each rank (NaN: rank did not have it) */
} merged;

static int merge_lines(const char *text, size_t len, int rank, int size, merged **all, int *n) {
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) break;
        char line[1024];
        size_t l = (size_t)(nl - p) < sizeof line - 1 ? (size_t)(nl - p) : sizeof line - 1;
        memcpy(line, p, l);
        line[l] = '\0';
        p = nl + 1;
        merged m = {0};
        char *tab = strchr(line, '\t');
        if (tab == NULL) continue;
        *tab = '\0';
        snprintf(m.name, sizeof m.name, "%.255s", line);
        if (sscanf(tab + 1, "%31s %lf %lf %lf %lf %lf %lf", m.klass, &m.samples, &m.min, &m.max,
                   &m.mean, &m.m2, &m.xsum) != 7)
            continue;
        merged *into = NULL;
        for (int i = 0; i < *n; ++i)
            if (strcmp((*all)[i].name, m.name) == 0 && strcmp((*all)[i].klass, m.klass) == 0)
                into = &(*all)[i];
        if (into == NULL) {
            merged *grown = realloc(*all, sizeof **all * (size_t)(*n + 1));
            double *xs = malloc(sizeof(double) * (size_t)size);
            if (grown == NULL || xs == NULL) {
                free(xs);
                if (grown != NULL) *all = grown;
                return -1;
            }
            *all = grown;
            into = &(*all)[(*n)++];
            *into = m;
            into->xs = xs;
            for (int r = 0; r < size; ++r)
                xs[r] = NAN;
        } else {
            /* Chan et al.'s pairwise combination of two (count, mean, M2). */
            double total = into->samples + m.samples;
            double delta = m.mean - into->mean;
            if (total > 0) {
                into->mean += delta * m.samples / total;
                into->m2 += m.m2 + delta * delta * into->samples * m.samples / total;
            }
            into->min = m.min < into->min ? m.min : into->min;
            into->max = m.max > into->max ? m.max : into->max;
            into->samples = total;
            into->xsum += m.xsum;
        }
        into->xs[rank] = m.xsum;
    }
    return 0;
}

static void write_variables(FILE *out, merged *vars, int n, int user, int size) {
    int first = 1;
    fputc('[', out);
    for (int i = 0; i < n; ++i) {
        const merged *v = &vars[i];
        if ((strcmp(v->klass, "user") == 0) != user) continue;
        fputs(first ? "\n    {\"name\": " : ",\n    {\"name\": ", out);
        first = 0;
        ct_json_string(out, v->name);
        if (!user) {
            fputs(", \"class\": ", out);
            ct_json_string(out, v->klass);
        }
        fputs(", \"samples\": ", out);
        number(out, v->samples);
        fputs(", \"min\": ", out);
        number(out, v->min);
        fputs(", \"max\": ", out);
        number(out, v->max);
        fputs(", \"mean\": ", out);
        number(out, v->mean);
        fputs(", \"std\": ", out);
        number(out, v->samples > 0 ? sqrt(v->m2 / v->samples) : 0);
        if (user) {
            fputs(", \"sum\": ", out);
            number(out, v->xsum);
        } else {
            /* The last value read on each rank: for counters, the run's total. */
            double *finals = malloc(sizeof(double) * (size_t)size);
            int k = 0;
            for (int r = 0; finals != NULL && r < size; ++r)
                if (!isnan(v->xs[r])) finals[k++] = v->xs[r];
            fputs(", \"final\": ", out);
            stats(out, finals ? finals : &v->xsum, finals ? k : 1, 1);
            free(finals);
        }
        fputc('}', out);
    }
    fputs(first ? "]" : "\n  ]", out);
}

static const char *thread_level(int provided) {
    switch (provided) {
    case MPI_THREAD_SINGLE:
        return "single";
    case MPI_THREAD_FUNNELED:
        return "funneled";
    case MPI_THREAD_SERIALIZED:
        return "serialized";
    case MPI_THREAD_MULTIPLE:
        return "multiple";
    default:
        return "unknown";
    }
}

static void write_json(FILE *out, int size, const double *all, int n, const uint64_t *hist,
                       merged *vars, int n_vars, const char *cpusets) {
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    PMPI_Get_library_version(library, &len);
    char *nl = strchr(library, '\n');
    if (nl != NULL) *nl = '\0';
    fprintf(out, "{\n  \"format\": \"commtune-profile\",\n  \"version\": 1,\n");
    fprintf(out, "  \"vendor\": \"%s\",\n  \"library\": ", CT_VENDOR);
    ct_json_string(out, library);
    fprintf(out, ",\n  \"ranks\": %d,\n  \"thread_level\": \"%s\",\n", size,
            thread_level(ct_run.provided));
    fprintf(out, "  \"cpus\": %d,\n  \"node_ranks\": %d,\n", ct_run.cpus, ct_run.node_ranks);
    fputs("  \"cpusets\": [", out); /* each rank's binding, in rank order */
    for (int r = 0; r < size; ++r) {
        if (r) fputs(", ", out);
        ct_json_string(out, cpusets + (size_t)r * CPUSET_TEXT);
    }
    fputs("],\n", out);
    fprintf(out, "  \"ticks_per_second\": %.6g,\n  \"pvar_interval\": %g,\n",
            ct_run.ticks_per_second, ct_config.pvar_interval);
    const char *extras[] = {"wall_time", "mpi_time", "comm_time", "memory_peak"};
    for (int e = 0; e < EXTRA; ++e) {
        fprintf(out, "  \"%s\": ", extras[e]);
        stats(out, all + CT_NUM_OPS * PER_OP + e, size, n);
        fputs(",\n", out);
    }

    /* Wang's features, over all ranks: shares of communication time, mean bytes per process. */
    double p2p_time = 0, coll_time = 0, p2p_bytes = 0, coll_bytes = 0, comm_time = 0, wall = 0;
    for (int r = 0; r < size; ++r) {
        const double *row = all + (size_t)r * (size_t)n;
        for (int op = 0; op < CT_NUM_OPS; ++op) {
            int k = ct_op_classes[op];
            double bytes = row[op * PER_OP + 1], seconds = row[op * PER_OP + 2];
            if (k == CT_CLASS_SEND || k == CT_CLASS_RECV || k == CT_CLASS_WAIT) p2p_time += seconds;
            if (k == CT_CLASS_SEND) p2p_bytes += bytes;
            if (k == CT_CLASS_COLL) {
                coll_time += seconds;
                coll_bytes += bytes;
            }
        }
        comm_time += row[CT_NUM_OPS * PER_OP + COMM_TIME];
        wall += row[CT_NUM_OPS * PER_OP + WALL];
    }
    fputs("  \"features\": {\"p2p_time_share\": ", out);
    number(out, comm_time > 0 ? p2p_time / comm_time : 0);
    fputs(", \"p2p_bytes\": ", out);
    number(out, p2p_bytes / size);
    fputs(", \"coll_time_share\": ", out);
    number(out, comm_time > 0 ? coll_time / comm_time : 0);
    fputs(", \"coll_bytes\": ", out);
    number(out, coll_bytes / size);
    fprintf(out, ", \"comm_size\": %d, \"comm_time_share\": ", size);
    number(out, wall > 0 ? comm_time / wall : 0);
    fputs("},\n  \"operations\": {", out);

    int first = 1;
    for (int op = 0; op < CT_NUM_OPS; ++op) {
        double calls = 0;
        for (int r = 0; r < size; ++r)
            calls += all[(size_t)r * (size_t)n + (size_t)op * PER_OP];
        if (calls == 0) continue;
        fprintf(out, "%s\n    \"%s\": {\"class\": \"%s\",\n      \"calls\": ", first ? "" : ",",
                ct_op_names[op], ct_class_names[ct_op_classes[op]]);
        first = 0;
        stats(out, all + op * PER_OP, size, n);
        fputs(",\n      \"bytes\": ", out);
        stats(out, all + op * PER_OP + 1, size, n);
        fputs(",\n      \"time\": ", out);
        stats(out, all + op * PER_OP + 2, size, n);
        fputs(",\n      \"sizes\": [", out);
        int first_size = 1;
        for (int k = 0; k < CT_SIZE_CLASSES; ++k) {
            uint64_t count = hist[op * CT_SIZE_CLASSES + k];
            if (count == 0) continue;
            uint64_t lo = k ? 1ull << (k - 1) : 0;
            uint64_t hi = k == 0 ? 0 : k == 64 ? UINT64_MAX : (1ull << k) - 1;
            fprintf(out, "%s{\"min\": %llu, \"max\": %llu, \"calls\": %llu}",
                    first_size ? "" : ", ", (unsigned long long)lo, (unsigned long long)hi,
                    (unsigned long long)count);
            first_size = 0;
        }
        fputs("]}", out);
    }
    fputs(first ? "}" : "\n  }", out);
    const ct_module *const *modules;
    for (int m = 0, n = ct_modules(&modules); m < n; ++m) {
        if (modules[m]->section == NULL || modules[m]->write_json == NULL) continue;
        fprintf(out, ",\n  \"%s\": ", modules[m]->section);
        modules[m]->write_json(out);
    }
    fputs(",\n  \"pvars\": ", out);
    write_variables(out, vars, n_vars, 0, size);
    fputs(",\n  \"user\": ", out);
    write_variables(out, vars, n_vars, 1, size);
    fputs("\n}\n", out);
}

static void write_file(int size, const double *all, int n, const uint64_t *hist, merged *vars,
                       int n_vars, const char *cpusets) {
    char fallback[64], tmp[4096];
    const char *path = ct_config.profile;
    if (path == NULL) {
        snprintf(fallback, sizeof fallback, "commtune-profile-%d.json", (int)getpid());
        path = fallback;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* /dev/null, a FIFO: written as it is; a rename would replace the device itself */
        FILE *direct = fopen(path, "w");
        if (direct == NULL) {
            fprintf(stderr, "commtune: cannot write the profile to %s: %s\n", path,
                    strerror(errno));
            return;
        }
        write_json(direct, size, all, n, hist, vars, n_vars, cpusets);
        fclose(direct);
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *out = fopen(tmp, "w");
    if (out == NULL) {
        fprintf(stderr, "commtune: cannot write the profile to %s: %s\n", tmp, strerror(errno));
        return;
    }
    write_json(out, size, all, n, hist, vars, n_vars, cpusets);
    if (fclose(out) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "commtune: cannot write the profile to %s: %s\n", path, strerror(errno));
        unlink(tmp);
    }
}

/* The variable lines of every module on this rank, joined (malloc'd; 0 and NULL: none). */
static int module_lines(char **out) {
    const ct_module *const *modules;
    ct_buf all = {0};
    for (int m = 0, n = ct_modules(&modules); m < n; ++m) {
        char *lines = NULL;
        size_t len = modules[m]->lines != NULL ? modules[m]->lines(&lines) : 0;
        if (len > 0 && lines != NULL) ct_buf_printf(&all, "%.*s", (int)len, lines);
        free(lines);
    }
    *out = all.failed ? NULL : all.data;
    if (all.failed) free(all.data);
    return all.failed ? 0 : (int)all.len;
}

void ct_profile_write(void) {
    MPI_Comm comm = ct_run.comm;
    int rank = 0, size = 1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        PMPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return;
    const int n = CT_NUM_OPS * PER_OP + EXTRA;
    ct_opstat *sum = malloc(sizeof(ct_opstat) * CT_NUM_OPS);
    double *local = calloc((size_t)n, sizeof(double));
    uint64_t *hist = calloc((size_t)CT_NUM_OPS * CT_SIZE_CLASSES, sizeof(uint64_t));
    uint64_t *hist_all = rank == 0 ? calloc((size_t)CT_NUM_OPS * CT_SIZE_CLASSES, 8) : NULL;
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)n * (size_t)size) : NULL;
    int *lengths = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    int *offsets = rank == 0 ? calloc((size_t)size, sizeof(int)) : NULL;
    char *text = NULL, *texts = NULL;
    char cpuset[CPUSET_TEXT];
    char *cpusets = rank == 0 ? calloc((size_t)size, CPUSET_TEXT) : NULL;
    cpuset_text(cpuset, sizeof cpuset);
    merged *vars = NULL;
    int n_vars = 0,
        ok = sum && local && hist && (rank != 0 || (hist_all && all && lengths && cpusets));
    /* Every rank takes part in every collective below, even one that is short of memory. */
    if (ok) {
        ct_sum_tables(sum);
        for (int op = 0; op < CT_NUM_OPS; ++op) {
            double seconds = ct_seconds(sum[op].ticks);
            int k = ct_op_classes[op];
            local[op * PER_OP] = (double)sum[op].calls;
            local[op * PER_OP + 1] = (double)sum[op].bytes;
            local[op * PER_OP + 2] = seconds;
            if (k != CT_CLASS_INIT && k != CT_CLASS_FINALIZE)
                local[CT_NUM_OPS * PER_OP + MPI_TIME] += seconds;
            if (k != CT_CLASS_INIT && k != CT_CLASS_FINALIZE && k != CT_CLASS_IO)
                local[CT_NUM_OPS * PER_OP + COMM_TIME] += seconds;
            memcpy(hist + op * CT_SIZE_CLASSES, sum[op].sizes, sizeof sum[op].sizes);
        }
        local[CT_NUM_OPS * PER_OP + WALL] = ct_seconds(ct_run.finalize_enter - ct_run.init_enter);
        local[CT_NUM_OPS * PER_OP + MEMORY_PEAK] = memory_peak();
    }
    int text_len = module_lines(&text);
    int rc = PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (rc == MPI_SUCCESS && ok)
        rc = PMPI_Gather(local, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, comm);
    if (rc == MPI_SUCCESS && ok)
        rc = PMPI_Reduce(hist, hist_all, CT_NUM_OPS * CT_SIZE_CLASSES, MPI_UINT64_T, MPI_SUM, 0,
                         comm);
    if (rc == MPI_SUCCESS && ok)
        rc = PMPI_Gather(cpuset, CPUSET_TEXT, MPI_CHAR, cpusets, CPUSET_TEXT, MPI_CHAR, 0, comm);
    if (rc == MPI_SUCCESS && ok)
        rc = PMPI_Gather(&text_len, 1, MPI_INT, lengths, 1, MPI_INT, 0, comm);
    long total = 0;
    if (rank == 0 && rc == MPI_SUCCESS && lengths != NULL) {
        for (int r = 0; r < size; ++r) {
            offsets[r] = (int)total;
            total += lengths[r];
        }
        texts = malloc((size_t)total + 1);
    }
    if (rc == MPI_SUCCESS && ok)
        rc = PMPI_Gatherv(text, text_len, MPI_CHAR, texts, lengths, offsets, MPI_CHAR, 0, comm);
    if (rc != MPI_SUCCESS || !ok) {
        if (rank == 0) fprintf(stderr, "commtune: cannot collect the profile: none written\n");
    } else if (rank == 0) {
        for (int r = 0; texts != NULL && r < size; ++r)
            merge_lines(texts + offsets[r], (size_t)lengths[r], r, size, &vars, &n_vars);
        write_file(size, all, n, hist_all, vars, n_vars, cpusets);
    }
    for (int i = 0; i < n_vars; ++i)
        free(vars[i].xs);
    free(vars);
    free(sum);
    free(local);
    free(hist);
    free(hist_all);
    free(all);
    free(lengths);
    free(offsets);
    free(text);
    free(texts);
    free(cpusets);
}
