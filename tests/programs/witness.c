/* witness: which allreduce algorithm ran, told by the library's own calls of a user operation.
 *
 * MPI_Allreduce of <count> ints at each count given, with a commutative user operation that
 * records the length of every call the library makes of it: recursive doubling combines the
 * whole vector once per step, ring and reduce-scatter/allgather one block of it, linear and
 * reduce-then-broadcast only at the root. Each rank prints, per count,
 *     witness <rank> <count> <calls> <total length> <first length>
 * then the sum checked (the result must stay the sum, whatever ran). With ``sum`` first, the
 * operation is MPI_SUM (which some algorithms need) and each call is bracketed on stderr by
 *     begin <pid> <count>
 * for a library's lower layer to be watched instead (``ucx_sends.c``: UCX's sends).
 *
 * usage: witness [sum] count [count ...]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long calls, total, first;

static void add(void *in, void *inout, int *len, MPI_Datatype *type) {
    (void)type;
    int *a = in, *b = inout;
    for (int i = 0; i < *len; ++i)
        b[i] += a[i];
    if (calls++ == 0) first = *len;
    total += *len;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int sum = argc > 1 && strcmp(argv[1], "sum") == 0;
    MPI_Op op = MPI_SUM;
    if (!sum) MPI_Op_create(add, 1, &op);
    int bad = 0;
    for (int a = 1 + sum; a < argc; ++a) {
        int n = atoi(argv[a]);
        int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; ++i)
            in[i] = rank + i;
        calls = total = first = 0;
        fprintf(stderr, "begin %d %d\n", (int)getpid(), n);
        MPI_Allreduce(in, out, n, MPI_INT, op, MPI_COMM_WORLD);
        if (!sum) printf("witness %d %d %ld %ld %ld\n", rank, n, calls, total, first);
        for (int i = 0; i < n; ++i)
            bad += out[i] != size * i + size * (size - 1) / 2;
        free(in);
        free(out);
    }
    if (bad) fprintf(stderr, "witness: rank %d: %d wrong sums\n", rank, bad);
    if (!sum) MPI_Op_free(&op);
    MPI_Finalize();
    return bad != 0;
}
