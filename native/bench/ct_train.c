/* ct_train: the training benchmark of `commtune train` (Wang et al.'s synthetic program).
 *
 * Its communication is set by its inputs, as in the paper: the share of point-to-point
 * operations and of collective operations among an iteration's slots, the point-to-point and the
 * collective message size, and the communicator size (the number of ranks it is launched with);
 * plus a share of computation. An iteration has 16 slots: round(16 * p2p) ring exchanges
 * (MPI_Sendrecv to the right, from the left, then the other way), round(16 * coll) collectives
 * (the first round(n * a2a) of them all-to-alls of the collective size in all, as NPB IS
 * exchanges its keys; of the others, allreduces, every fourth a broadcast), and a busy loop of
 * compute * 400 microseconds.
 *
 * The iteration count is calibrated (on the library's current configuration) so that the timed
 * part takes about -T seconds; rank 0 prints the time of one iteration:
 *     ct_train: iterations <n> time <seconds per iteration> s
 *
 * usage: ct_train -p P2P -c COLL -s P2P_BYTES -S COLL_BYTES [-a A2A] [-x COMPUTE] [-T SECONDS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../include/ct_usage.h"

#define SLOTS 16

static double p2p_share = 0.5, coll_share = 0.5, a2a_share = 0, compute_share = 0, target = 0.15;
static long p2p_bytes = 1024, coll_bytes = 1024;

static void busy(double seconds) {
    double end = MPI_Wtime() + seconds;
    volatile double x = 1.0;
    while (MPI_Wtime() < end)
        for (int k = 0; k < 64; ++k)
            x = x * 1.0000001 + 1e-9;
}

static void iteration(char *sbuf, char *rbuf, double *in, double *out, int left, int right,
                      int ranks) {
    int n_p2p = (int)(p2p_share * SLOTS + 0.5), n_coll = (int)(coll_share * SLOTS + 0.5);
    int n_a2a = (int)(a2a_share * n_coll + 0.5);
    int n_doubles = coll_bytes / 8 > 0 ? (int)(coll_bytes / 8) : 1;
    int per_rank = n_doubles / ranks > 0 ? n_doubles / ranks : 1; /* in and out hold n_doubles */
    for (int k = 0; k < n_p2p; ++k) {
        int to = k % 2 ? left : right, from = k % 2 ? right : left;
        MPI_Sendrecv(sbuf, (int)p2p_bytes, MPI_BYTE, to, k, rbuf, (int)p2p_bytes, MPI_BYTE, from, k,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int k = 0; k < n_coll; ++k) {
        if (k < n_a2a)
            MPI_Alltoall(in, per_rank, MPI_DOUBLE, out, per_rank, MPI_DOUBLE, MPI_COMM_WORLD);
        else if (k % 4 == 3)
            MPI_Bcast(in, n_doubles, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        else
            MPI_Allreduce(in, out, n_doubles, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (compute_share > 0) busy(compute_share * 400e-6);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, opt;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "p:c:s:S:a:x:T:")) != -1) {
        switch (opt) {
        case 'p':
            p2p_share = atof(optarg);
            break;
        case 'c':
            coll_share = atof(optarg);
            break;
        case 's':
            p2p_bytes = atol(optarg);
            break;
        case 'S':
            coll_bytes = atol(optarg);
            break;
        case 'a':
            a2a_share = atof(optarg);
            break;
        case 'x':
            compute_share = atof(optarg);
            break;
        case 'T':
            target = atof(optarg);
            break;
        default:
            ct_usage_exit(
                "usage: ct_train -p P2P -c COLL -s BYTES -S BYTES [-a A] [-x C] [-T S]\n");
        }
    }
    if (p2p_share < 0 || coll_share < 0 || p2p_share + coll_share > 1.0001 || p2p_bytes < 1 ||
        coll_bytes < 1 || a2a_share < 0 || a2a_share > 1 || compute_share < 0 || target <= 0) {
        ct_usage_exit("ct_train: inputs out of range\n");
    }
    char *sbuf = malloc((size_t)p2p_bytes), *rbuf = malloc((size_t)p2p_bytes);
    size_t n_doubles = coll_bytes / 8 > 0 ? (size_t)(coll_bytes / 8) : 1;
    size_t n_alloc = n_doubles + (size_t)size; /* an all-to-all sends at least one per rank */
    double *in = malloc(sizeof(double) * n_alloc), *out = malloc(sizeof(double) * n_alloc);
    if (!sbuf || !rbuf || !in || !out) {
        fprintf(stderr, "ct_train: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, rank, (size_t)p2p_bytes);
    for (size_t k = 0; k < n_alloc; ++k)
        in[k] = rank + 1e-3 * (double)k;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;

    /* Warm-up and calibration: double the count until it takes a tenth of the target. */
    long count = 1;
    for (;;) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (long i = 0; i < count; ++i)
            iteration(sbuf, rbuf, in, out, left, right, size);
        double dt = MPI_Wtime() - t0;
        MPI_Bcast(&dt, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (dt >= target / 10 || count >= (1L << 20)) {
            count = (long)(count * target / (dt > 0 ? dt : 1e-9)) + 1;
            break;
        }
        count *= 2;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < count; ++i)
        iteration(sbuf, rbuf, in, out, left, right, size);
    MPI_Barrier(MPI_COMM_WORLD);
    double per = (MPI_Wtime() - t0) / (double)count;
    if (rank == 0) printf("ct_train: iterations %ld time %.9f s\n", count, per);
    free(sbuf);
    free(rbuf);
    free(in);
    free(out);
    MPI_Finalize();
    return 0;
}
