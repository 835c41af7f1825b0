/* ct_simcoll: one collective's time per message size on a simulated cluster (SimGrid's SMPI).
 *
 *   ct_simcoll -s SIZES [-r REPS] OP
 *
 * OP is allreduce, bcast, reduce, allgather, alltoall, gather, scatter or barrier; SIZES a comma
 * list of byte counts, read as ct_sample reads them: bytes per rank's buffer, but the total of
 * all ranks' blocks for the gathers, scatters and all-to-alls (each rank's block SIZE / ranks).
 *
 * SMPI's clock is simulated and, with computation left out of the simulation, a call takes the
 * same simulated time every time: one call per size is the measurement (ct_sample's blocks of
 * repeated calls would multiply the simulation's wall time and measure nothing more), after one
 * warm-up call. A barrier comes before each call; a call's time is the slowest rank's.
 * Output, rank 0, one JSON line per size: {"op":"allreduce","size":1024,"seconds":...,"ranks":N}
 * The algorithm is chosen outside (smpirun --cfg=smpi/OP:NAME or smpi/coll-selector).
 *
 * Built with a real MPI's mpicc (commtune calibrate's check of how a platform orders the
 * collectives), -r REPS makes each size's time the median of REPS calls, every one after a
 * barrier as in the simulation: a real machine's calls vary where the simulated ones do not.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/ct_stats.h"
#include "../include/ct_usage.h"

#define MAX_SIZES 64
#define MAX_REPS 1000

static double call(const char *op, char *a, char *b, long size, int ranks) {
    int per_rank = size / ranks > 0 ? (int)(size / ranks) : 1;
    int doubles = size / (long)sizeof(double) > 0 ? (int)(size / (long)sizeof(double)) : 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (strcmp(op, "allreduce") == 0)
        MPI_Allreduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (strcmp(op, "bcast") == 0)
        MPI_Bcast(a, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (strcmp(op, "reduce") == 0)
        MPI_Reduce(a, b, doubles, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (strcmp(op, "allgather") == 0)
        MPI_Allgather(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, MPI_COMM_WORLD);
    else if (strcmp(op, "alltoall") == 0)
        MPI_Alltoall(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, MPI_COMM_WORLD);
    else if (strcmp(op, "gather") == 0)
        MPI_Gather(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, 0, MPI_COMM_WORLD);
    else if (strcmp(op, "scatter") == 0)
        MPI_Scatter(a, per_rank, MPI_BYTE, b, per_rank, MPI_BYTE, 0, MPI_COMM_WORLD);
    else
        MPI_Barrier(MPI_COMM_WORLD);
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return slowest;
}

int main(int argc, char **argv) {
    static const char *known[] = {"allreduce", "bcast",  "reduce",  "allgather",
                                  "alltoall",  "gather", "scatter", "barrier"};
    MPI_Init(&argc, &argv);
    int rank, ranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    long sizes[MAX_SIZES];
    int n_sizes = 0, reps = 1;
    const char *op = NULL;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            for (char *tok = strtok(argv[++i], ","); tok && n_sizes < MAX_SIZES;
                 tok = strtok(NULL, ","))
                sizes[n_sizes++] = atol(tok);
        } else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else {
            op = argv[i];
        }
    }
    int ok = op != NULL && n_sizes > 0 && reps >= 1 && reps <= MAX_REPS;
    for (size_t k = 0; ok && k < sizeof known / sizeof *known; ++k)
        if (strcmp(op, known[k]) == 0) ok = 2;
    if (ok != 2)
        ct_usage_exit("usage: ct_simcoll -s SIZES [-r REPS (1-1000)] OP (allreduce, bcast, "
                      "reduce, allgather, alltoall, gather, scatter, barrier)\n");
    long largest = 8;
    for (int k = 0; k < n_sizes; ++k)
        if (sizes[k] > largest) largest = sizes[k];
            /* the root of a gather receives the total; every other buffer holds at most SIZE bytes.
             * The contents do not matter to the simulation: under SMPI every rank shares one copy
             * (SMPI_SHARED_MALLOC), or a thousand ranks would need a thousand buffers. */
#ifdef SMPI_SHARED_MALLOC
    char *a = SMPI_SHARED_MALLOC((size_t)largest + 8), *b = SMPI_SHARED_MALLOC((size_t)largest + 8);
#else
    char *a = malloc((size_t)largest + 8), *b = malloc((size_t)largest + 8);
    memset(a, 1, (size_t)largest + 8);
    memset(b, 0, (size_t)largest + 8);
#endif
    /* a warm-up call: a selector may set up on its first call (SMPI's MPICH and MVAPICH2
     * selectors split the communicator by node), a cost no later call pays */
    call(op, a, b, sizes[0], ranks);
    static double times[MAX_REPS];
    for (int k = 0; k < n_sizes; ++k) {
        if (reps > 1) /* a real machine's first call of a size sets up buffers: not timed */
            call(op, a, b, sizes[k], ranks);
        for (int r = 0; r < reps; ++r)
            times[r] = call(op, a, b, sizes[k], ranks);
        double t = ct_quantile(times, reps, 0.5);
        if (rank == 0) {
            printf("{\"op\":\"%s\",\"size\":%ld,\"seconds\":%.12g,\"ranks\":%d}\n", op, sizes[k], t,
                   ranks);
            fflush(stdout);
        }
    }
#ifdef SMPI_SHARED_MALLOC
    SMPI_SHARED_FREE(a);
    SMPI_SHARED_FREE(b);
#else
    free(a);
    free(b);
#endif
    MPI_Finalize();
    return 0;
}
