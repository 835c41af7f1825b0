/* coll_time: the time of one collective at one size, for comparing a real cluster with its
 * simulation (benchmarks/smpi_agreement.py). Built with a real MPI's mpicc and with smpicc.
 *
 * usage: coll_time allreduce|bcast|reduce|allgather|alltoall|pingpong BYTES REPS
 * prints "time <seconds>": the median over REPS of the slowest rank's time of one call
 * (a barrier before each), or half a ping-pong's round trip between ranks 0 and 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 4) {
        if (rank == 0) fprintf(stderr, "usage: coll_time OP BYTES REPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *op = argv[1];
    long bytes = atol(argv[2]);
    int reps = atoi(argv[3]);
    int per_rank = strcmp(op, "alltoall") == 0 || strcmp(op, "allgather") == 0;
    size_t total = (size_t)bytes * (per_rank ? (size_t)size : 1);
    char *in = malloc(total + 8), *out = malloc(total + 8);
    memset(in, rank, total + 8);
    double *times = malloc(sizeof(double) * (size_t)reps);
    for (int r = -1; r < reps; ++r) { /* r = -1: a warm-up call */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (strcmp(op, "allreduce") == 0)
            MPI_Allreduce(in, out, (int)(bytes / 8 > 0 ? bytes / 8 : 1), MPI_DOUBLE, MPI_SUM,
                          MPI_COMM_WORLD);
        else if (strcmp(op, "bcast") == 0)
            MPI_Bcast(in, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (strcmp(op, "reduce") == 0)
            MPI_Reduce(in, out, (int)(bytes / 8 > 0 ? bytes / 8 : 1), MPI_DOUBLE, MPI_SUM, 0,
                       MPI_COMM_WORLD);
        else if (strcmp(op, "allgather") == 0)
            MPI_Allgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        else if (strcmp(op, "alltoall") == 0)
            MPI_Alltoall(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        else if (rank == 0) {
            MPI_Send(in, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(out, (int)bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(out, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(in, (int)bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        double mine = MPI_Wtime() - t0, slowest;
        MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (r >= 0) times[r] = strcmp(op, "pingpong") == 0 ? slowest / 2 : slowest;
    }
    if (rank == 0) {
        qsort(times, (size_t)reps, sizeof(double), cmp);
        printf("time %.9f\n", times[reps / 2]);
    }
    free(in);
    free(out);
    free(times);
    MPI_Finalize();
    return 0;
}
