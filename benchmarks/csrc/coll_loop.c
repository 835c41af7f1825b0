/* coll_loop: a program that is one collective called in a loop (benchmarks/twin_blind.py):
 * OP of BYTES, ITERATIONS times, a little computation between the calls.
 * Built with a real MPI's mpicc and with smpicc.
 *
 * usage: coll_loop bcast|allreduce|reduce|allgather|alltoall BYTES ITERATIONS
 * prints "coll_loop: time <seconds> s" (rank 0, between two barriers).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: coll_loop OP BYTES ITERATIONS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *op = argv[1];
    long bytes = atol(argv[2]);
    int iterations = atoi(argv[3]);
    int each = (int)(bytes / size > 0 ? bytes / size : 1); /* a rank's block of a gather */
    char *in = malloc((size_t)bytes + 8), *out = malloc((size_t)bytes * (size_t)size + 8);
    memset(in, rank + 1, (size_t)bytes + 8);
    double sum = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) {
        if (strcmp(op, "bcast") == 0)
            MPI_Bcast(in, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (strcmp(op, "allreduce") == 0)
            MPI_Allreduce(in, out, (int)(bytes / 8 > 0 ? bytes / 8 : 1), MPI_DOUBLE, MPI_SUM,
                          MPI_COMM_WORLD);
        else if (strcmp(op, "reduce") == 0)
            MPI_Reduce(in, out, (int)(bytes / 8 > 0 ? bytes / 8 : 1), MPI_DOUBLE, MPI_SUM, 0,
                       MPI_COMM_WORLD);
        else if (strcmp(op, "allgather") == 0)
            MPI_Allgather(in, each, MPI_BYTE, out, each, MPI_BYTE, MPI_COMM_WORLD);
        else
            MPI_Alltoall(in, each, MPI_BYTE, out, each, MPI_BYTE, MPI_COMM_WORLD);
        for (long k = 0; k < bytes; k += 64) /* the computation between the calls */
            sum += in[k];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - t0;
    if (rank == 0)
        printf("coll_loop: %s %ld B x %d checksum %.0f time %.6f s\n", op, bytes, iterations, sum,
               elapsed);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
