/* ct_calibrate: what a simulator needs to stand for this machine (commtune calibrate).
 *
 * Ranks 0 and 1 time (and, launched with more ranks, every pair 2k, 2k+1 the same side by side:
 * the machine under the load of all its nodes talking at once), over the message sizes of
 * FILE in their order (commtune
 * draws them at random, log-uniform, so that no size is measured in a phase of its own),
 * four things per size and repetition, the ping-pong first and the others in a random order:
 *
 *   pingpong  one-way time of an MPI_Send/MPI_Recv round trip, halved
 *   send      how long MPI_Send keeps the sender (the receive already posted)
 *   isend     how long MPI_Isend keeps the sender
 *   recv      how long MPI_Recv takes when the message was sent well before
 *   train     TRAIN messages sent back to back (MPI_Isend each, then MPI_Waitall) and an empty
 *             answer once all arrived: the time per message. A collective loads a node's link
 *             with a few messages at once; a shaper (a token bucket) lets one message through
 *             at its burst rate, and a train that outgrows its bucket at the sustained rate
 *
 * as SimGrid's own calibration does (platform-calibration; Cornebize et al. 2019), and a
 * rank's compute rate (flop/s of a multiply-add loop in cache) while every rank computes.
 *
 *   ct_calibrate -f FILE [-s SEED] [-r REPS] [-p]      (FILE: one size in bytes a line)
 *   ct_calibrate -c                                     (the compute rate only)
 *
 * -p: the ping-pong only (a simulated run: no busy waiting, no compute loop). -c: under SMPI
 * with computation simulated, the rate printed is the simulating machine's times the
 * platform's speed over smpi/host-speed (SimGrid's own benchmarking of compute bursts).
 * Output, rank 0: "host RANK NAME" for ranks 0 and 1, "flops RANK RATE", "pairs N", then one
 * line "sample OP SIZE SECONDS" a measurement of the pair 0, 1.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_SEND, OP_ISEND, OP_RECV, N_TIMED };
enum { TRAIN = 4 }; /* messages a train: a collective's few at once (log2 of 4-16 ranks) */
/* ranks 2k and 2k+1 of the launch: a pair, measured side by side with every other pair */
static MPI_Comm pair = MPI_COMM_NULL;
static const char *const timed_names[N_TIMED] = {"send", "isend", "recv"};

/* a small generator of our own for the order of the timed calls: the same under every MPI */
static unsigned long long state = 88172645463325252ULL;
static unsigned long long next_random(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static void spin(double seconds) {
    double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until) {
    }
}

static double flop_rate(void) {
    enum { N = 2048 };
    static double a[N], b[N], c[N];
    for (int i = 0; i < N; ++i) {
        a[i] = 1.0;
        b[i] = 0.999999;
        c[i] = 1e-7;
    }
    long passes = 0;
    double t0 = MPI_Wtime(), elapsed = 0.0;
    while (elapsed < 0.2) {
        for (int k = 0; k < 64; ++k)
            for (int i = 0; i < N; ++i)
                a[i] = a[i] * b[i] + c[i];
        passes += 64;
        elapsed = MPI_Wtime() - t0;
    }
    volatile double sink = a[N / 2];
    (void)sink;
    return 2.0 * N * (double)passes / elapsed;
}

/* one-way time of a round trip of `size` bytes between ranks 0 and 1 */
static double pingpong(int rank, char *buf, int size) {
    double t0 = MPI_Wtime();
    if (rank == 0) {
        MPI_Send(buf, size, MPI_CHAR, 1, 1, pair);
        MPI_Recv(buf, size, MPI_CHAR, 1, 1, pair, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(buf, size, MPI_CHAR, 0, 1, pair, MPI_STATUS_IGNORE);
        MPI_Send(buf, size, MPI_CHAR, 0, 1, pair);
    }
    return (MPI_Wtime() - t0) / 2.0;
}

/* rank 0's time per message of a train of TRAIN messages of `size` bytes to rank 1 (`into`:
 * rank 1's TRAIN buffers), up to the answer that all arrived */
static double train(int rank, char *buf, char *into, int size) {
    MPI_Request requests[TRAIN];
    char token = 0;
    MPI_Barrier(pair);
    double t0 = MPI_Wtime();
    for (int k = 0; k < TRAIN; ++k) {
        if (rank == 0)
            MPI_Isend(buf, size, MPI_CHAR, 1, 6, pair, &requests[k]);
        else
            MPI_Irecv(into + (size_t)k * (size_t)size, size, MPI_CHAR, 0, 6, pair, &requests[k]);
    }
    MPI_Waitall(TRAIN, requests, MPI_STATUSES_IGNORE);
    if (rank == 1) {
        MPI_Send(&token, 0, MPI_CHAR, 0, 7, pair);
        return 0.0;
    }
    MPI_Recv(&token, 0, MPI_CHAR, 1, 7, pair, MPI_STATUS_IGNORE);
    return (MPI_Wtime() - t0) / TRAIN;
}

/* rank 0's time in one timed call; `wait` is how long the message had to arrive */
static double timed(int op, int rank, char *buf, int size, double wait) {
    double t = 0.0;
    char token = 0;
    if (op == OP_RECV) {
        if (rank == 1) {
            MPI_Recv(&token, 0, MPI_CHAR, 0, 2, pair, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 3, pair);
        } else {
            MPI_Send(&token, 0, MPI_CHAR, 1, 2, pair);
            spin(wait);
            double t0 = MPI_Wtime();
            MPI_Recv(buf, size, MPI_CHAR, 1, 3, pair, MPI_STATUS_IGNORE);
            t = MPI_Wtime() - t0;
        }
        return t;
    }
    if (rank == 1) { /* the receive posted before rank 0 sends: it says when with a token */
        MPI_Request request;
        MPI_Irecv(buf, size, MPI_CHAR, 0, 3, pair, &request);
        MPI_Send(&token, 0, MPI_CHAR, 0, 2, pair);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        MPI_Send(&token, 0, MPI_CHAR, 0, 4, pair);
        return 0.0;
    }
    MPI_Recv(&token, 0, MPI_CHAR, 1, 2, pair, MPI_STATUS_IGNORE);
    double t0 = MPI_Wtime();
    if (op == OP_SEND) {
        MPI_Send(buf, size, MPI_CHAR, 1, 3, pair);
        t = MPI_Wtime() - t0;
    } else {
        MPI_Request request;
        MPI_Isend(buf, size, MPI_CHAR, 1, 3, pair, &request);
        t = MPI_Wtime() - t0;
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    MPI_Recv(&token, 0, MPI_CHAR, 1, 4, pair, MPI_STATUS_IGNORE);
    return t;
}

int main(int argc, char **argv) {
    int rank, ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    long seed = 1, reps = 5, n_sizes = 0, max_size = 1;
    const char *file = NULL;
    int pingpong_only = 0, compute_only = 0;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "-p") == 0)
            pingpong_only = 1;
        else if (strcmp(argv[i], "-c") == 0)
            compute_only = 1;
        else if (i + 1 < argc && strcmp(argv[i], "-s") == 0)
            seed = atol(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-f") == 0)
            file = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "-r") == 0)
            reps = atol(argv[++i]);
    }
    if (compute_only) {
        double rate = flop_rate();
        if (rank == 0) printf("flops 0 %.6g\n", rate);
        MPI_Finalize();
        return 0;
    }
    long *sizes = NULL;
    FILE *in = file ? fopen(file, "r") : NULL;
    if (in) {
        long value, capacity = 0;
        while (fscanf(in, "%ld", &value) == 1 && value >= 0) {
            if (n_sizes == capacity) {
                capacity = capacity ? 2 * capacity : 64;
                sizes = realloc(sizes, sizeof(long) * (size_t)capacity);
            }
            sizes[n_sizes++] = value;
            if (value > max_size) max_size = value;
        }
        fclose(in);
    }
    if (ranks < 2 || n_sizes < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: ct_calibrate -f FILE [-s SEED] [-r REPS] [-p] (at least 2 "
                            "ranks; FILE: sizes in bytes, one a line)\n");
        free(sizes);
        MPI_Finalize();
        return 2;
    }
    state ^= (unsigned long long)seed * 2654435761ULL;
    char name[MPI_MAX_PROCESSOR_NAME + 1] = {0}, other[MPI_MAX_PROCESSOR_NAME + 1] = {0};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    if (rank == 1)
        MPI_Send(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    else if (rank == 0)
        MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (rank == 0) printf("host 0 %s\nhost 1 %s\n", name, other);
    if (!pingpong_only) { /* every rank at once: a rank's rate with its node as busy */
        MPI_Barrier(MPI_COMM_WORLD);
        double rate = flop_rate();
        if (rank == 1)
            MPI_Send(&rate, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        else if (rank == 0) {
            double other_rate = 0.0;
            MPI_Recv(&other_rate, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("flops 0 %.6g\nflops 1 %.6g\n", rate, other_rate);
        }
    }
    char *buf = calloc((size_t)max_size + 1, 1);
    int mate = 0, mates = 0;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    MPI_Comm_rank(pair, &mate);
    MPI_Comm_size(pair, &mates);
    /* the receiver of a pair holds a train's messages */
    char *into =
        pingpong_only || mate != 1 ? NULL : calloc((size_t)TRAIN * ((size_t)max_size + 1), 1);
    if (rank == 0) printf("pairs %d\n", ranks / 2);
    MPI_Barrier(MPI_COMM_WORLD);
    if (mates == 2) {           /* a rank left without a mate (an odd count) waits */
        pingpong(mate, buf, 1); /* warm-up: connections made before anything is timed */
        pingpong(mate, buf, (int)max_size);
        for (long i = 0; i < n_sizes; ++i) {
            int size = (int)sizes[i];
            for (long r = 0; r < reps; ++r) {
                double one_way = pingpong(mate, buf, size);
                if (rank == 0) printf("sample pingpong %d %.9g\n", size, one_way);
                if (pingpong_only) continue;
                int order[N_TIMED] = {OP_SEND, OP_ISEND, OP_RECV};
                if (mate == 0)
                    for (int k = N_TIMED - 1; k > 0; --k) {
                        int j = (int)(next_random() % (unsigned long long)(k + 1));
                        int swap = order[k];
                        order[k] = order[j];
                        order[j] = swap;
                    }
                if (mate == 0)
                    MPI_Send(order, N_TIMED, MPI_INT, 1, 5, pair);
                else
                    MPI_Recv(order, N_TIMED, MPI_INT, 0, 5, pair, MPI_STATUS_IGNORE);
                for (int k = 0; k < N_TIMED; ++k) {
                    double t = timed(order[k], mate, buf, size, 4.0 * one_way + 2e-5);
                    if (rank == 0) printf("sample %s %d %.9g\n", timed_names[order[k]], size, t);
                }
                double per_message = train(mate, buf, into, size);
                if (rank == 0) printf("sample train %d %.9g\n", size, per_message);
            }
        }
    }
    MPI_Comm_free(&pair);
    free(into);
    free(buf);
    free(sizes);
    MPI_Finalize();
    return 0;
}
