/* ct_demo: commtune's demo application.
 *
 * A 1-D halo exchange of mid-size messages between neighbouring ranks, and allreduces of several
 * sizes, as in an iterative solver: its speed depends on the shared-memory transport's eager limit
 * and single-copy mechanism and on the allreduce algorithm. Rank 0 prints
 *     ct_demo: time <seconds> s
 * measured between two barriers, so a tuner can use it with --metric 'regex:time ([0-9.]+)'.
 *
 * usage: ct_demo [iterations]   (default 1000)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int halo_bytes[] = {8 << 10, 96 << 10, 384 << 10};
static const int reduce_doubles[] = {1, 8 << 10, 64 << 10};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    if (iters <= 0) iters = 1000;

    int max_halo = halo_bytes[COUNT(halo_bytes) - 1];
    int max_reduce = reduce_doubles[COUNT(reduce_doubles) - 1];
    char *send_left = malloc((size_t)max_halo), *send_right = malloc((size_t)max_halo);
    char *recv_left = malloc((size_t)max_halo), *recv_right = malloc((size_t)max_halo);
    double *red_in = malloc(sizeof(double) * (size_t)max_reduce);
    double *red_out = malloc(sizeof(double) * (size_t)max_reduce);
    if (!send_left || !send_right || !recv_left || !recv_right || !red_in || !red_out) {
        fprintf(stderr, "ct_demo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(send_left, rank, (size_t)max_halo);
    memset(send_right, rank + 1, (size_t)max_halo);
    for (int k = 0; k < max_reduce; ++k)
        red_in[k] = rank + k * 1e-3;

    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double checksum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; ++it) {
        for (int h = 0; h < COUNT(halo_bytes); ++h) {
            MPI_Request req[4];
            MPI_Status st[4];
            int n = halo_bytes[h];
            MPI_Irecv(recv_left, n, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]);
            MPI_Irecv(recv_right, n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
            MPI_Isend(send_right, n, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[2]);
            MPI_Isend(send_left, n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[3]);
            MPI_Waitall(4, req, st);
            checksum += recv_left[n - 1] + recv_right[0];
        }
        for (int r = 0; r < COUNT(reduce_doubles); ++r) {
            int n = reduce_doubles[r];
            MPI_Allreduce(red_in, red_out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            checksum += red_out[n - 1];
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double elapsed = MPI_Wtime() - t0;
    if (rank == 0)
        printf("ct_demo: ranks %d iterations %d checksum %.6e time %.6f s\n", size, iters, checksum,
               elapsed);
    free(send_left);
    free(send_right);
    free(recv_left);
    free(recv_right);
    free(red_in);
    free(red_out);
    MPI_Finalize();
    return 0;
}
