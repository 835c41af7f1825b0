/* A program of known communication, for exact counts in the profile.
 * Every rank: 100 MPI_Allreduce of one double (8 bytes); 50 MPI_Send of 1 KiB
 * to the next rank and 50 MPI_Recv from the previous one; 10 MPI_Bcast of 4
 * ints; 20 MPI_Isend + MPI_Irecv of 64 KiB completed by 20 MPI_Waitall; 1
 * MPI_Alltoallv of 16 doubles per peer; 7 MPI_Iallreduce of one double and 3
 * MPI_Ialltoallv of 16 doubles per peer, each completed by MPI_Wait; 5
 * MPI_Neighbor_alltoall of 4 ints to each of the 2 neighbours of a periodic ring
 * (MPI_Cart_create); 3 fences around 1 MPI_Put of 2 ints;
 * with a path argument, 1 collective MPI-IO write of 1 KiB per rank. The
 * user-defined variable "step" records 1..10 on each rank. With COUNTS_WRITE=name=value, rank 0
 * first writes that control variable through commtune_cvar_write and prints the result.
 */
#include "commtune.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    const char *write = getenv("COUNTS_WRITE");
    if (write != NULL && strchr(write, '=') != NULL) {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(strchr(write, '=') - write), write);
        int rc = commtune_cvar_write(name, strchr(write, '=') + 1);
        if (rank == 0) printf("write %s rc %d\n", write, rc);
    }

    double x = rank, y = 0;
    for (int i = 0; i < 100; ++i)
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

    char out[1024], in[1024];
    memset(out, rank, sizeof out);
    for (int i = 0; i < 50; ++i) {
        if (rank % 2 == 0) {
            MPI_Send(out, 1024, MPI_CHAR, next, 1, MPI_COMM_WORLD);
            MPI_Recv(in, 1024, MPI_CHAR, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, 1024, MPI_CHAR, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(out, 1024, MPI_CHAR, next, 1, MPI_COMM_WORLD);
        }
    }

    int values[4] = {1, 2, 3, 4};
    for (int i = 0; i < 10; ++i)
        MPI_Bcast(values, 4, MPI_INT, 0, MPI_COMM_WORLD);

    static char big_out[65536], big_in[65536];
    for (int i = 0; i < 20; ++i) {
        MPI_Request req[2];
        MPI_Irecv(big_in, 65536, MPI_BYTE, prev, 2, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(big_out, 65536, MPI_BYTE, next, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }

    int *counts = malloc(sizeof(int) * size * 2), *displs = counts + size;
    double *a = calloc((size_t)size * 16, sizeof(double)), *b = calloc((size_t)size * 16, 8);
    for (int i = 0; i < size; ++i) {
        counts[i] = 16;
        displs[i] = 16 * i;
    }
    MPI_Alltoallv(a, counts, displs, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);

    MPI_Request pending;
    for (int i = 0; i < 7; ++i) {
        MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &pending);
        MPI_Wait(&pending, MPI_STATUS_IGNORE);
    }
    for (int i = 0; i < 3; ++i) {
        MPI_Ialltoallv(a, counts, displs, MPI_DOUBLE, b, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD,
                       &pending);
        MPI_Wait(&pending, MPI_STATUS_IGNORE);
    }
    MPI_Comm ring;
    int periodic = 1, ints[8] = {0}, got[8];
    MPI_Cart_create(MPI_COMM_WORLD, 1, &size, &periodic, 0, &ring);
    for (int i = 0; i < 5; ++i)
        MPI_Neighbor_alltoall(ints, 4, MPI_INT, got, 4, MPI_INT, ring);
    MPI_Comm_free(&ring);

    int window[2] = {0, 0}, mine[2] = {rank, rank};
    MPI_Win win;
    MPI_Win_create(window, sizeof window, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    MPI_Put(mine, 2, MPI_INT, next, 0, 2, MPI_INT, win);
    MPI_Win_fence(0, win);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);

    if (argc > 1) {
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                      &fh);
        MPI_File_write_at_all(fh, (MPI_Offset)rank * 1024, out, 1024, MPI_CHAR, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }

    int step = commtune_pvar_register("step");
    for (int i = 1; i <= 10; ++i)
        commtune_pvar_record(step, i);

    if (rank == 0) printf("counts done on %d ranks\n", size);
    free(counts);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
