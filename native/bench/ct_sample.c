/* ct_sample: the platform sampler (NewMadeleine-style sampling of the real hardware).
 *
 *   ct_sample [-q] [-s SIZES] [-c BYTES] [-w CVAR -v V1,V2,...] OP...
 *
 * OP is pingpong (ranks 0 and 1; the others wait), vector, burst, allreduce, bcast, reduce,
 * allgather, alltoall, alltoallv, allgatherv, gather, scatter, reduce_scatter_block,
 * reduce_scatter, scan or barrier. SIZE is bytes per rank's buffer, but the total of all
 * ranks' blocks for the gathers, scatters, all-to-alls and reduce-scatters (each rank's
 * block is SIZE / ranks; the v-variants with equal counts); barrier ignores it. burst is BURST_LEN
 * messages of SIZE bytes rank 0 sends back to back (nonblocking) and rank 1 answers with one empty
 * one, the time per message: what a transport that aggregates small messages into one packet
 * (NewMadeleine) speeds up. vector is a ping-pong of VECTOR_TOTAL bytes of non-contiguous data
 * (every other block of a strided array, one MPI vector datatype) whose SIZE is the block length:
 * the library packs it into one buffer or hands its blocks over as a list (iovec), NewMadeleine's
 * copy-vs-iovec choice; the time is for the whole message.
 *
 * SIZES is a comma list of byte counts (default: 1 B to 4 MiB, powers of two and their
 * midpoints). With -w, the integer control variable CVAR is written through MPI_T before each
 * measurement, and every measurement runs on a fresh communicator (Open MPI's coll_tuned reads
 * its forced algorithm when a communicator is created; MPICH reads the variable on the next
 * call), so one launch measures every algorithm, interleaved size by size.
 *
 * A warm-up sweep over every size comes first. Per (op, size, value): a warm-up block, then
 * BLOCKS timed blocks; the iteration count of a block is calibrated so that it lasts about
 * TARGET seconds. A block's time is the maximum over
 * the ranks; the statistic is the median over blocks with the quartiles as spread.
 * Output, rank 0, one line each (JSON Lines):
 *   {"op":"allreduce","value":2,"size":1024,"median_ns":...,"q1_ns":...,"q3_ns":...,"iters":N,
 *    "control_ns":... (-1 without -c)}
 * and {"error":"..."} for a value the library refused.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/ct_stats.h"
#include "../include/ct_usage.h"

enum op {
    PINGPONG,
    VECTOR,
    BURST,
    ALLREDUCE,
    BCAST,
    REDUCE,
    ALLGATHER,
    ALLTOALL,
    ALLTOALLV,
    ALLGATHERV,
    GATHER,
    SCATTER,
    REDUCE_SCATTER_BLOCK,
    REDUCE_SCATTER,
    SCAN,
    BARRIER,
    N_OPS
};
static const char *const op_names[N_OPS] = {"pingpong",
                                            "vector",
                                            "burst",
                                            "allreduce",
                                            "bcast",
                                            "reduce",
                                            "allgather",
                                            "alltoall",
                                            "alltoallv",
                                            "allgatherv",
                                            "gather",
                                            "scatter",
                                            "reduce_scatter_block",
                                            "reduce_scatter",
                                            "scan",
                                            "barrier"};

/* Counts and displacements of the v-variants and reduce_scatter: equal blocks, one a rank. */
static int *counts, *displs;

#define BURST_LEN 32 /* messages of one burst */

#define VECTOR_TOTAL (256L << 10) /* bytes a vector message carries, whatever its blocks */

#define MAX_SIZES 64
#define MAX_VALUES 32
#define MAX_BLOCKS 15

static int blocks = 9;       /* the full sample: 9 blocks of 2 ms per (size, method) */
static double target = 2e-3; /* seconds per block */

/* One block of `iterations` calls of `op` with `size` bytes; seconds per call, max over ranks. */
static double block(enum op op, MPI_Comm comm, char *a, char *b, int size, long iterations) {
    int rank, ranks;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    int per_rank = size / ranks > 0 ? size / ranks : 1; /* gather/alltoall: size is the total */
    int doubles = size / (int)sizeof(double) > 0 ? size / (int)sizeof(double) : 1;
    int block_doubles = doubles / ranks > 0 ? doubles / ranks : 1; /* reduce-scatters */
    if (op == ALLTOALLV || op == ALLGATHERV || op == REDUCE_SCATTER)
        for (int r = 0; r < ranks; ++r) {
            counts[r] = op == REDUCE_SCATTER ? block_doubles : per_rank;
            displs[r] = r * per_rank;
        }
    MPI_Datatype vector = MPI_DATATYPE_NULL;
    MPI_Request burst[BURST_LEN];
    if (op == VECTOR) { /* every other block of `size` bytes, VECTOR_TOTAL bytes in all */
        long count = VECTOR_TOTAL / size > 0 ? VECTOR_TOTAL / size : 1;
        MPI_Type_vector((int)count, size, 2 * size, MPI_BYTE, &vector);
        MPI_Type_commit(&vector);
    }
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iterations; ++i) {
        switch (op) {
        case PINGPONG:
            if (rank == 0) {
                MPI_Send(a, size, MPI_BYTE, 1, 0, comm);
                MPI_Recv(a, size, MPI_BYTE, 1, 0, comm, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(a, size, MPI_BYTE, 0, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(a, size, MPI_BYTE, 0, 0, comm);
            }
            break;
        case VECTOR:
            if (rank == 0) {
                MPI_Send(a, 1, vector, 1, 0, comm);
                MPI_Recv(a, 1, vector, 1, 0, comm, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(a, 1, vector, 0, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(a, 1, vector, 0, 0, comm);
            }
            break;
        case BURST:
            if (rank == 0) {
                for (int m = 0; m < BURST_LEN; ++m)
                    MPI_Isend(a + (long)m * size, size, MPI_BYTE, 1, m, comm, &burst[m]);
                MPI_Waitall(BURST_LEN, burst, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, BURST_LEN, comm, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                for (int m = 0; m < BURST_LEN; ++m)
                    MPI_Irecv(a + (long)m * size, size, MPI_BYTE, 0, m, comm, &burst[m]);
                MPI_Waitall(BURST_LEN, burst, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, BURST_LEN, comm);
            }
            break;
        case ALLREDUCE:
            MPI_Allreduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, comm);
            break;
        case BCAST:
            MPI_Bcast(a, size, MPI_BYTE, 0, comm);
            break;
        case REDUCE:
            MPI_Reduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, 0, comm);
            break;
        case ALLGATHER:
            MPI_Allgather(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, comm);
            break;
        case ALLTOALL:
            MPI_Alltoall(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, comm);
            break;
        case ALLTOALLV:
            MPI_Alltoallv(a, counts, displs, MPI_BYTE, b, counts, displs, MPI_BYTE, comm);
            break;
        case ALLGATHERV:
            MPI_Allgatherv(a, per_rank, MPI_BYTE, b, counts, displs, MPI_BYTE, comm);
            break;
        case GATHER:
            MPI_Gather(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, 0, comm);
            break;
        case SCATTER:
            MPI_Scatter(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, 0, comm);
            break;
        case REDUCE_SCATTER_BLOCK:
            MPI_Reduce_scatter_block(a, b, block_doubles, MPI_DOUBLE, MPI_SUM, comm);
            break;
        case REDUCE_SCATTER:
            MPI_Reduce_scatter(a, b, counts, MPI_DOUBLE, MPI_SUM, comm);
            break;
        case SCAN:
            MPI_Scan(a, b, doubles, MPI_DOUBLE, MPI_SUM, comm);
            break;
        case BARRIER:
            MPI_Barrier(comm);
            break;
        default:
            break;
        }
    }
    double mine = MPI_Wtime() - t0, slowest = 0.0;
    if (vector != MPI_DATATYPE_NULL) MPI_Type_free(&vector);
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    /* ping-pong: one-way time, as the paper's curves */
    double per = op == PINGPONG || op == VECTOR ? 2.0 : op == BURST ? (double)BURST_LEN : 1.0;
    return slowest / (double)iterations / per;
}

/* The control: a ping-pong of `control` bytes (-c), below every eager limit, so no method
 * compared across launches changes it; it says how fast this launch's processes are (one
 * launch on these machines can be 2.5x slower than the next, throughout). Median of 3 short
 * blocks, in ns; -1 without -c. */
static long control = -1;
static long control_iterations = 0;

static double control_ns(MPI_Comm comm, char *a, char *b) {
    if (control < 0) return -1.0;
    if (control_iterations == 0) { /* calibrated once per launch: a block of about 0.3 ms */
        long n = 16;
        double t = block(PINGPONG, comm, a, b, (int)control, n);
        control_iterations = (long)(3e-4 / (t > 0 ? t : 1e-9));
        if (control_iterations < 16) control_iterations = 16;
        MPI_Bcast(&control_iterations, 1, MPI_LONG, 0, comm);
    }
    double s[3];
    for (int k = 0; k < 3; ++k)
        s[k] = block(PINGPONG, comm, a, b, (int)control, control_iterations) * 1e9;
    return ct_quantile(s, 3, 0.5);
}

static void measure(enum op op, MPI_Comm comm, char *a, char *b, int size, int value) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    double level = control_ns(comm, a, b);
    /* warm-up and calibration: grow the count until a block lasts about target/4 */
    long iterations = 1;
    double t = block(op, comm, a, b, size, iterations);
    while (t * (double)iterations < target / 4 && iterations < (1L << 24)) {
        iterations *= 4;
        t = block(op, comm, a, b, size, iterations);
    }
    long n = (long)(target / (t > 0 ? t : 1e-9));
    if (n < 1) n = 1;
    MPI_Bcast(&n, 1, MPI_LONG, 0, comm); /* every rank runs the same count */
    double samples[MAX_BLOCKS];
    for (int k = 0; k < blocks; ++k)
        samples[k] = block(op, comm, a, b, size, n) * 1e9;
    if (rank == 0) {
        printf("{\"op\":\"%s\",\"value\":%d,\"size\":%d,\"median_ns\":%.2f,\"q1_ns\":%.2f,"
               "\"q3_ns\":%.2f,\"iters\":%ld,\"control_ns\":%.2f}\n",
               op_names[op], value, size, ct_quantile(samples, blocks, 0.5),
               ct_quantile(samples, blocks, 0.25), ct_quantile(samples, blocks, 0.75), n, level);
        fflush(stdout);
    }
}

static int parse_list(const char *text, long *out, int max) {
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save))
        out[n++] = strtol(tok, NULL, 10);
    free(copy);
    return n;
}

/* Write integer control variable `name` through MPI_T; 0 on success. */
static int cvar_write(const char *name, int value) {
    int index, count, err;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS) return 1;
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS) return 2;
    err = MPI_T_cvar_write(handle, &value);
    MPI_T_cvar_handle_free(&handle);
    return err == MPI_SUCCESS ? 0 : 3;
}

int main(int argc, char **argv) {
    long sizes[MAX_SIZES], values[MAX_VALUES];
    int n_sizes = 0, n_values = 0, rank, ranks, provided, quick = 0;
    const char *cvar = NULL;
    int ops[N_OPS], n_ops = 0;

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-q")) {
            quick = 1;
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            n_sizes = parse_list(argv[++i], sizes, MAX_SIZES);
        } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
            cvar = argv[++i];
        } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            control = strtol(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "-v") && i + 1 < argc) {
            n_values = parse_list(argv[++i], values, MAX_VALUES);
        } else {
            int k = 0;
            while (k < N_OPS && strcmp(argv[i], op_names[k]))
                ++k;
            if (k == N_OPS || n_ops == N_OPS) {
                ct_usage_exit("ct_sample: unknown operation '%s'\n", argv[i]);
            }
            ops[n_ops++] = k;
        }
    }
    if (n_ops == 0 || (cvar && n_values == 0) ||
        ((ops[0] == PINGPONG || ops[0] == VECTOR || ops[0] == BURST) && ranks < 2)) {
        ct_usage_exit("usage: ct_sample [-q] [-s SIZES] [-c BYTES] [-w CVAR -v V1,V2,...] OP...\n");
    }
    if (quick) {
        blocks = 7;
        target = 1e-3;
    }
    if (n_sizes == 0) /* 1 B .. 4 MiB: powers of two and their midpoints */
        for (long s = 1; s <= 4L << 20 && n_sizes < MAX_SIZES; s *= 2) {
            sizes[n_sizes++] = s;
            if (s >= 4 && s < 4L << 20) sizes[n_sizes++] = s + s / 2;
        }
    long largest = 0;
    for (int i = 0; i < n_sizes; ++i)
        largest = sizes[i] > largest ? sizes[i] : largest;
    for (int o = 0; o < n_ops; ++o) { /* a vector spans twice its data; a burst, its messages */
        if (ops[o] == VECTOR) largest = 2 * (largest > VECTOR_TOTAL ? largest : VECTOR_TOTAL);
        if (ops[o] == BURST) largest *= BURST_LEN;
    }
    /* a reduce-scatter of a small size still sends one double a rank */
    if (largest < (long)ranks * (long)sizeof(double)) largest = (long)ranks * (long)sizeof(double);
    char *a = calloc((size_t)largest + 64, 1), *b = calloc((size_t)largest * 2 + 64, 1);
    counts = malloc(sizeof(int) * (size_t)ranks);
    displs = malloc(sizeof(int) * (size_t)ranks);
    if (!cvar) {
        values[0] = -1;
        n_values = 1;
    }
    /* Warm-up sweep before anything is timed: the first pass over the sizes pays for page
     * faults and the transport's lazy set-up (seen: 4x at 256 KiB on MPICH/UCX), which would
     * otherwise count against whichever method is measured first. */
    for (int o = 0; o < n_ops; ++o)
        for (int i = 0; i < n_sizes; ++i)
            for (int rep = 0; rep < 2; ++rep)
                block((enum op)ops[o], MPI_COMM_WORLD, a, b, (int)sizes[i],
                      sizes[i] >= 1 << 18 ? 4 : 32);
    /* Sizes outer, values inner: every method is measured at the same point of the run, so
     * none gains from running later (a warmer process) than another; the order of the values
     * rotates size by size, so no method is always the first measured after a size change. */
    for (int o = 0; o < n_ops; ++o)
        for (int i = 0; i < n_sizes; ++i)
            for (int w = 0; w < n_values; ++w) {
                int v = (w + i) % n_values;
                if (cvar) {
                    int err = cvar_write(cvar, (int)values[v]);
                    if (err) {
                        if (rank == 0 && o == 0 && i == 0)
                            printf("{\"error\":\"cannot write %s=%ld through MPI_T (step %d)\","
                                   "\"value\":%ld}\n",
                                   cvar, values[v], err, values[v]);
                        continue;
                    }
                }
                MPI_Comm comm; /* fresh: Open MPI binds collective algorithms at creation */
                MPI_Comm_dup(MPI_COMM_WORLD, &comm);
                measure((enum op)ops[o], comm, a, b, (int)sizes[i], (int)values[v]);
                MPI_Comm_free(&comm);
            }
    free(a);
    free(b);
    free(counts);
    free(displs);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
