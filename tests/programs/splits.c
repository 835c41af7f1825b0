/* A program that crashes under the allreduce algorithms that split its message.
 *
 * Every rank: ITERATIONS (argv[1], default 300) MPI_Allreduce of 256 doubles with a
 * user-defined commutative sum. An algorithm that reduces the whole vector at once (recursive
 * doubling, a linear or binomial reduction) hands the operation all 256 elements; one that
 * cuts the vector into pieces (Open MPI's ring, segmented ring and Rabenseifner, MPICH's
 * reduce-scatter-allgather and ring) hands it fewer, and the operation then aborts the
 * process: a candidate that kills the program, as Open MPI 4.1's forced ring allreduce kills
 * AMG on 4 nodes. Prints "time T s" at the end.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define COUNT 256

static void sum(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    if (*len < COUNT) {
        fprintf(stderr, "splits: the operation was handed %d of %d elements\n", *len, COUNT);
        abort();
    }
    for (int i = 0; i < *len; ++i)
        ((double *)inout)[i] += ((double *)in)[i];
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int iterations = argc > 1 ? atoi(argv[1]) : 300;
    MPI_Op op;
    MPI_Op_create(sum, 1, &op);
    double x[COUNT], y[COUNT];
    for (int i = 0; i < COUNT; ++i)
        x[i] = i;
    double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i)
        MPI_Allreduce(x, y, COUNT, MPI_DOUBLE, op, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) printf("time %.6f s\n", t);
    MPI_Op_free(&op);
    MPI_Finalize();
    return 0;
}
