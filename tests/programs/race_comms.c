/* Collectives as solvers and libraries make them, each result checked (issue 93): a program
 * raced in-run must print exactly what it prints unraced, and never hang.
 *
 *   race_comms ITERATIONS
 *
 * Each iteration splits the world into a communicator of the world's size, its rank order
 * kept on even iterations and reversed on odd ones, broadcasts from its rank 0 (world rank 0,
 * or the last), reduces to it and frees it: hundreds of communicators made and freed, a
 * freed handle reused by one of another order. Beside them a sub-communicator of each pair
 * of ranks (world rank / 2) lives the whole run, with an allreduce, an in-place allgather and
 * an alltoall on it every iteration; the world makes an allreduce and an in-place allgather
 * whose ignored send count and type differ between ranks (MPI_DATATYPE_NULL on rank 0), and
 * an allreduce on an inter-communicator between the even and the odd ranks (left alone).
 * Any wrong value: a line on stderr and MPI_Abort. At the end rank 0 prints a checksum of
 * everything received and "race_comms ok".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WORDS 64

static void check(int ok, const char *what, int iteration) {
    if (ok) return;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "race_comms: wrong %s at iteration %d on rank %d\n", what, iteration, rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iterations = argc > 1 ? atoi(argv[1]) : 200;
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
    int pair_size, pair_rank;
    MPI_Comm_size(pair, &pair_size);
    MPI_Comm_rank(pair, &pair_rank);
    MPI_Comm half, inter; /* the even ranks and the odd ones, and between them */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 == 0 ? 1 : 0, 7, &inter);
    long remote_sum = 0; /* the world ranks of the other parity */
    for (int r = 0; r < size; ++r)
        if (r % 2 != rank % 2) remote_sum += r;
    int *gathered = malloc(sizeof(int) * (size_t)size * WORDS);
    int *sent = malloc(sizeof(int) * (size_t)size * WORDS);
    int *got = malloc(sizeof(int) * (size_t)size * WORDS);
    long checksum = 0;
    for (int i = 0; i < iterations; ++i) {
        MPI_Comm c;
        int key = i % 2 == 0 ? rank : size - 1 - rank;
        MPI_Comm_split(MPI_COMM_WORLD, 0, key, &c);
        int root_world = i % 2 == 0 ? 0 : size - 1;
        int buf[WORDS];
        for (int repeat = 0; repeat < 3; ++repeat) {
            for (int w = 0; w < WORDS; ++w)
                buf[w] = rank == root_world ? i * 1000 + repeat * 100 + w : -1;
            MPI_Bcast(buf, WORDS, MPI_INT, 0, c);
            for (int w = 0; w < WORDS; ++w)
                check(buf[w] == i * 1000 + repeat * 100 + w, "broadcast", i);
            checksum += buf[WORDS - 1];
        }
        int mine = rank + i, total = 0;
        MPI_Reduce(&mine, &total, 1, MPI_INT, MPI_SUM, 0, c);
        if (rank == root_world) check(total == size * (size - 1) / 2 + size * i, "reduce", i);
        MPI_Comm_free(&c);

        double x = rank + 0.5 * i, sum = 0.0;
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, pair);
        double want = 0.0;
        for (int r = rank - pair_rank; r < rank - pair_rank + pair_size; ++r)
            want += r + 0.5 * i;
        check(sum == want, "allreduce on the pair", i);
        for (int r = 0; r < pair_size * WORDS; ++r)
            gathered[r] = -1;
        for (int w = 0; w < WORDS; ++w)
            gathered[pair_rank * WORDS + w] = rank * 100000 + i * 10 + w % 10;
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, WORDS, MPI_INT, pair);
        for (int r = 0; r < pair_size; ++r)
            for (int w = 0; w < WORDS; ++w) {
                int from = rank - pair_rank + r;
                check(gathered[r * WORDS + w] == from * 100000 + i * 10 + w % 10,
                      "in-place allgather on the pair", i);
            }
        for (int r = 0; r < pair_size * WORDS; ++r)
            sent[r] = rank * 1000 + r + i;
        MPI_Alltoall(sent, WORDS, MPI_INT, got, WORDS, MPI_INT, pair);
        for (int r = 0; r < pair_size; ++r)
            for (int w = 0; w < WORDS; ++w) {
                int from = rank - pair_rank + r;
                check(got[r * WORDS + w] == from * 1000 + pair_rank * WORDS + w + i,
                      "alltoall on the pair", i);
            }

        long one = rank + i, all = 0;
        MPI_Allreduce(&one, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        check(all == (long)size * (size - 1) / 2 + (long)size * i, "allreduce on the world", i);
        long across = 0;
        MPI_Allreduce(&one, &across, 1, MPI_LONG, MPI_SUM, inter);
        long remote = 0; /* the other group's count of ranks */
        for (int r = 0; r < size; ++r)
            remote += r % 2 != rank % 2;
        check(across == remote_sum + remote * i, "allreduce on the inter-communicator", i);
        for (int r = 0; r < size * WORDS; ++r)
            gathered[r] = r / WORDS == rank ? rank * 7 + i : -1;
        /* the ignored send arguments differ between ranks: rank 0 gives MPI_DATATYPE_NULL */
        if (rank == 0)
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, gathered, WORDS, MPI_INT,
                          MPI_COMM_WORLD);
        else
            MPI_Allgather(MPI_IN_PLACE, 3 * rank, MPI_DOUBLE, gathered, WORDS, MPI_INT,
                          MPI_COMM_WORLD);
        for (int r = 0; r < size * WORDS; ++r)
            check(gathered[r] == (r / WORDS) * 7 + i, "in-place allgather on the world", i);
        checksum += (long)sum + all + gathered[size * WORDS - 1] + got[WORDS - 1];
    }
    long everything = 0;
    MPI_Reduce(&checksum, &everything, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("race_comms checksum %ld\nrace_comms ok\n", everything);
    free(gathered);
    free(sent);
    free(got);
    MPI_Comm_free(&pair);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
