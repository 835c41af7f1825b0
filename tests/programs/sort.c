/* An integer sort's exchange: every rank buckets random keys by destination and sends the
 * buckets with MPI_Alltoallv (uneven counts), then agrees on the total with MPI_Allreduce.
 * Most of its MPI time is the all-to-all-v. Prints "time <seconds> s" on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 50;
    int keys = argc > 2 ? atoi(argv[2]) : 1 << 16;
    int *send = malloc(sizeof(int) * keys), *recv = malloc(sizeof(int) * 2 * keys);
    int *scounts = calloc(size, sizeof(int)), *rcounts = calloc(size, sizeof(int));
    int *sdispls = calloc(size, sizeof(int)), *rdispls = calloc(size, sizeof(int));
    srand(rank + 1);
    double t0 = MPI_Wtime();
    for (int r = 0; r < rounds; r++) {
        for (int p = 0; p < size; p++)
            scounts[p] = 0;
        for (int i = 0; i < keys; i++) {
            send[i] = rand();
            scounts[send[i] % size]++;
        }
        MPI_Alltoall(scounts, 1, MPI_INT, rcounts, 1, MPI_INT, MPI_COMM_WORLD);
        long total = 0;
        for (int p = 0; p < size; p++) {
            sdispls[p] = p ? sdispls[p - 1] + scounts[p - 1] : 0;
            rdispls[p] = p ? rdispls[p - 1] + rcounts[p - 1] : 0;
            total += rcounts[p];
        }
        if (total > 2 * keys) MPI_Abort(MPI_COMM_WORLD, 1);
        MPI_Alltoallv(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT,
                      MPI_COMM_WORLD);
        long all = 0;
        MPI_Allreduce(&total, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("time %.6f s\n", t);
    free(send), free(recv), free(scounts), free(rcounts), free(sdispls), free(rdispls);
    MPI_Finalize();
    return 0;
}
