/* commtune.h: user-defined performance variables for programs and runtimes (e.g. OpenCoarrays).
 *
 *   int id = commtune_pvar_register("halo_exchange_seconds");
 *   ...
 *   commtune_pvar_record(id, seconds);
 *
 * Each rank records values; at MPI_Finalize their statistics (samples, min, max, mean, std dev,
 * sum over all ranks) land in the profile's "user" list. The calls are safe from any thread.
 *
 * commtune_cvar_write("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "recursive_doubling") changes an
 * MPI_T control variable at run time where the library allows it (0: done, -1: refused or no
 * libcommtune); MPICH takes an algorithm on the next call, Open MPI on the next communicator.
 * MPICH 4.0 has no MPI_T enums for its algorithm variables: give their number there.
 *
 * Nothing to link: the functions live in libcommtune, loaded with LD_PRELOAD. Without it they
 * are weak and absent, and these inline helpers do nothing (register returns -1).
 */
#ifndef COMMTUNE_H
#define COMMTUNE_H

#ifdef __cplusplus
extern "C" {
#endif

int commtune_pvar_register_impl(const char *name) __attribute__((weak));
void commtune_pvar_record_impl(int id, double value) __attribute__((weak));
int commtune_cvar_write_impl(const char *name, const char *value) __attribute__((weak));

/* A variable's id (the same name gives the same id), or -1 without libcommtune or when full. */
static inline int commtune_pvar_register(const char *name) {
    return commtune_pvar_register_impl ? commtune_pvar_register_impl(name) : -1;
}

/* Record one value of a registered variable; ignored for id -1. */
static inline void commtune_pvar_record(int id, double value) {
    if (commtune_pvar_record_impl && id >= 0) commtune_pvar_record_impl(id, value);
}

/* Write an MPI_T control variable now (an enum item's name or a number, as text). */
static inline int commtune_cvar_write(const char *name, const char *value) {
    return commtune_cvar_write_impl ? commtune_cvar_write_impl(name, value) : -1;
}

#ifdef __cplusplus
}
#endif

#endif
