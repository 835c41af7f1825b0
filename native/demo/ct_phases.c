/* A program whose communication changes while it runs, for the policy engine: phases of small
 * allreduces (8 B) and of large ones (256 KiB by default), alternating, so that the best
 * allreduce algorithm of one phase is not the best of the other and a rule that switches at
 * run time can beat any single static setting.
 *
 *   ct_phases [ROUNDS] [SMALL_CALLS] [LARGE_CALLS] [LARGE_BYTES] [world|cart]
 *
 * ``cart``: the allreduces run on a one-dimensional periodic Cartesian communicator over all
 * ranks (as stencil codes such as SNAP compute), not on MPI_COMM_WORLD.
 *
 * Prints each phase's time and, last, "time T s" (the whole run, the slowest rank's).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/ct_usage.h"

static double phase(MPI_Comm comm, int calls, int count, double *buf, double *out) {
    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < calls; ++i) {
        buf[0] = (double)i;
        MPI_Allreduce(buf, out, count, MPI_DOUBLE, MPI_SUM, comm);
    }
    double local = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return slowest;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    int small_calls = argc > 2 ? atoi(argv[2]) : 100000;
    int large_calls = argc > 3 ? atoi(argv[3]) : 2000;
    long large_bytes = argc > 4 ? atol(argv[4]) : 262144;
    const char *on = argc > 5 ? argv[5] : "world";
    int cart = strcmp(on, "cart") == 0;
    if (rounds < 1 || small_calls < 0 || large_calls < 0 || large_bytes < 8 ||
        (!cart && strcmp(on, "world") != 0)) {
        ct_usage_exit("usage: ct_phases [ROUNDS] [SMALL] [LARGE] [BYTES] [world|cart]\n");
    }
    MPI_Comm comm = MPI_COMM_WORLD;
    if (cart) {
        int dims[1] = {size}, periods[1] = {1};
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &comm);
    }
    int large_count = (int)(large_bytes / (long)sizeof(double));
    double *buf = calloc((size_t)large_count, sizeof(double));
    double *out = calloc((size_t)large_count, sizeof(double));
    if (buf == NULL || out == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < large_count; ++i)
        buf[i] = rank + i % 7;
    double total = 0;
    for (int r = 0; r < rounds; ++r) {
        double small = phase(comm, small_calls, 1, buf, out);
        double large = phase(comm, large_calls, large_count, buf, out);
        total += small + large;
        if (rank == 0) printf("round %d: small %.6f s, large %.6f s\n", r, small, large);
    }
    if (rank == 0) printf("time %.6f s\n", total);
    free(buf);
    free(out);
    if (cart) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
