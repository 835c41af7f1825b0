/* two_sizes: a program whose allreduces come in two sizes (benchmarks/by_size.py): per
 * iteration SMALL_CALLS allreduces of SMALL bytes (a residual, a dot product) and one of
 * LARGE bytes (a field), a little computation between them; where a library's algorithms
 * rank differently at the two sizes, the best single algorithm loses at one of them.
 *
 * usage: two_sizes ITERATIONS [SMALL [LARGE [SMALL_CALLS]]]   (default 64 B, 64 KiB, 20)
 * prints "two_sizes: time <seconds> s" (rank 0, between two barriers).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int iterations = argc > 1 ? atoi(argv[1]) : 1000;
    int small = (argc > 2 ? atoi(argv[2]) : 64) / (int)sizeof(double);
    int large = (argc > 3 ? atoi(argv[3]) : 65536) / (int)sizeof(double);
    int calls = argc > 4 ? atoi(argv[4]) : 20;
    if (iterations <= 0 || small <= 0 || large <= 0 || calls < 0) {
        if (rank == 0) fprintf(stderr, "usage: two_sizes ITERATIONS [SMALL [LARGE [CALLS]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *in = malloc(sizeof(double) * (size_t)large), *out = malloc(sizeof(double) * (size_t)large);
    for (int i = 0; i < large; ++i)
        in[i] = rank + i * 1e-6;
    double check = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iterations; ++it) {
        for (int c = 0; c < calls; ++c) {
            MPI_Allreduce(in, out, small, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            in[0] = out[0] * 0.5;
        }
        MPI_Allreduce(in, out, large, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < large; i += 64)
            check += out[i];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("two_sizes: time %.6f s (check %g)\n", t, check);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
