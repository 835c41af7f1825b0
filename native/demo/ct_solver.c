/* ct_solver: a second bundled application, shaped like a Krylov solver.
 *
 * Each iteration exchanges a small halo with both neighbours (MPI_Sendrecv, 4 KiB), computes
 * two dot products (MPI_Allreduce of one double) and a norm (MPI_Allreduce of 16 doubles); every
 * 8th iteration rank 0 broadcasts a 256 KiB preconditioner update. Unlike ct_demo it is bound by
 * latency, not bandwidth. Rank 0 prints
 *     ct_solver: time <seconds> s
 *
 * usage: ct_solver [iterations]   (default 2000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HALO (4 << 10)
#define UPDATE (256 << 10)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 2000;
    if (iters <= 0) iters = 2000;
    char *send = malloc(HALO), *recv = malloc(HALO), *update = malloc(UPDATE);
    if (!send || !recv || !update) {
        fprintf(stderr, "ct_solver: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(send, rank, HALO);
    memset(update, 7, UPDATE);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double local[16], global[16], checksum = 0;
    for (int k = 0; k < 16; ++k)
        local[k] = rank + k;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; ++it) {
        MPI_Sendrecv(send, HALO, MPI_BYTE, right, 0, recv, HALO, MPI_BYTE, left, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(send, HALO, MPI_BYTE, left, 1, recv, HALO, MPI_BYTE, right, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (int d = 0; d < 2; ++d) {
            MPI_Allreduce(local, global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            checksum += global[0];
        }
        MPI_Allreduce(local, global, 16, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it % 8 == 0) MPI_Bcast(update, UPDATE, MPI_BYTE, 0, MPI_COMM_WORLD);
        checksum += global[15] + recv[0];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - t0;
    if (rank == 0)
        printf("ct_solver: ranks %d iterations %d checksum %.6e time %.6f s\n", size, iters,
               checksum, elapsed);
    free(send);
    free(recv);
    free(update);
    MPI_Finalize();
    return 0;
}
