/* A usage error found by every rank alike (each reads the same command line), shared by
 * commtune's C programs: rank 0 says it, every rank leaves MPI and exits with 2. Not
 * MPI_Abort: a launcher may kill the job before it has forwarded rank 0's message (seen
 * with MPICH's hydra, the message lost in about one run of a few hundred). */
#ifndef CT_USAGE_H
#define CT_USAGE_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void ct_usage_exit(const char *format, ...) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        va_list args;
        va_start(args, format);
        vfprintf(stderr, format, args);
        va_end(args);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(2);
}

#endif
