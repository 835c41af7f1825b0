/* Returns from main without MPI_Finalize: libcommtune must neither hang nor
 * crash. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("leaving without MPI_Finalize\n");
    return 0;
}
