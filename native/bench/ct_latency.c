/* ct_latency: what one intercepted MPI call costs.
 *
 *   ct_latency pingpong SIZE ITERATIONS   ranks 0 and 1 bounce a SIZE-byte message; rank 0
 *                                         prints the one-way latency in ns (median of 15 blocks)
 *   ct_latency test ITERATIONS            every rank calls MPI_Test on MPI_REQUEST_NULL in a
 *                                         loop; rank 0 prints ns per call (median of 15 blocks)
 *
 * Output: one line "result NS". Run it with and without libcommtune preloaded to see its cost.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/ct_stats.h"

#define BLOCKS 15

static double pingpong_block(int rank, char *buf, int size, long iterations) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iterations; ++i) {
        if (rank == 0) {
            MPI_Send(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * (double)iterations) * 1e9;
}

static double test_block(long iterations) {
    MPI_Request request = MPI_REQUEST_NULL;
    int flag = 0;
    double t0 = MPI_Wtime();
    for (long i = 0; i < iterations; ++i)
        MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) / (double)iterations * 1e9;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int pingpong = argc > 1 && strcmp(argv[1], "pingpong") == 0;
    if (argc < (pingpong ? 4 : 3) || (pingpong && size < 2)) {
        if (rank == 0)
            fprintf(stderr, "usage: ct_latency pingpong SIZE ITERATIONS | test ITERATIONS\n");
        MPI_Finalize();
        return 2;
    }
    int bytes = pingpong ? atoi(argv[2]) : 0;
    long iterations = atol(argv[pingpong ? 3 : 2]);
    char *buf = calloc((size_t)bytes + 1, 1);
    double blocks[BLOCKS];
    if (pingpong)
        pingpong_block(rank, buf, bytes, iterations / 10 + 1); /* warm-up */
    else
        test_block(iterations / 10 + 1);
    for (int b = 0; b < BLOCKS; ++b)
        blocks[b] =
            pingpong ? pingpong_block(rank, buf, bytes, iterations) : test_block(iterations);
    if (rank == 0) printf("result %.2f\n", ct_quantile(blocks, BLOCKS, 0.5));
    free(buf);
    MPI_Finalize();
    return 0;
}
