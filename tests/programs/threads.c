/* MPI_THREAD_MULTIPLE: on every even rank, THREADS threads each send 25
 * messages of 8 bytes to the next rank, where as many threads receive them (tag
 * = thread number).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define MESSAGES 25

static int rank, size;

static void *worker(void *arg) {
    int tag = (int)(long)arg;
    double value = tag;
    for (int i = 0; i < MESSAGES; ++i) {
        if (rank % 2 == 0)
            MPI_Send(&value, 1, MPI_DOUBLE, rank + 1, tag, MPI_COMM_WORLD);
        else
            MPI_Recv(&value, 1, MPI_DOUBLE, rank - 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; ++t)
        pthread_create(&threads[t], NULL, worker, (void *)t);
    for (int t = 0; t < THREADS; ++t)
        pthread_join(threads[t], NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("threads done\n");
    MPI_Finalize();
    return 0;
}
