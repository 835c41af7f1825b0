/* A halo exchange in one-sided MPI, as coarrays over MPI (OpenCoarrays) make it: every rank
 * puts a block into each neighbour's window inside one MPI_Win_lock_all epoch, flushes, and
 * the ranks meet at a barrier each step. Most of its MPI time is one-sided. Prints
 * "time <seconds> s" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 200;
    int count = argc > 2 ? atoi(argv[2]) : 4096; /* doubles a block */
    double *halo, *mine = calloc((size_t)count, sizeof(double));
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)(2 * count * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &halo, &win);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double t0 = MPI_Wtime();
    MPI_Win_lock_all(0, win);
    for (int s = 0; s < steps; ++s) {
        for (int i = 0; i < 8; ++i) {
            MPI_Put(mine, count, MPI_DOUBLE, left, count, count, MPI_DOUBLE, win);
            MPI_Put(mine, count, MPI_DOUBLE, right, 0, count, MPI_DOUBLE, win);
            MPI_Win_flush_all(win);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("time %.6f s\n", t);
    MPI_Win_free(&win);
    free(mine);
    MPI_Finalize();
    return 0;
}
