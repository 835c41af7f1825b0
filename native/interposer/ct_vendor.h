/* What differs between MPI libraries, in one place (like mpi4py's per-vendor config headers).
 *
 * Fortran's MPI_IN_PLACE is the address of a variable of the library's Fortran layer, not C's
 * MPI_IN_PLACE: Open MPI's common block mpi_fortran_in_place_ (in libmpi), MPICH's pointer
 * MPIR_F_MPI_IN_PLACE (in libmpifort, set when the Fortran layer initialises).
 *
 * MPI_T before MPI_Init: MPICH accepts writes of its CVARs; Open MPI 4.1 has not registered most
 * component variables yet (unknown name) or refuses them (SET_NEVER / SET_NOT_NOW), so commtune
 * writes again after MPI_Init and reports what the library refused.
 */
#ifndef CT_VENDOR_H
#define CT_VENDOR_H

#include <dlfcn.h>

#if defined(OPEN_MPI)
#define CT_VENDOR "openmpi"
static inline const void *ct_vendor_fortran_in_place(void) {
    return dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
}
#elif defined(MPICH)
#define CT_VENDOR "mpich"
static inline const void *ct_vendor_fortran_in_place(void) {
    void *const *slot = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE");
    return slot != NULL ? *slot : NULL;
}
#else
#define CT_VENDOR "unknown"
static inline const void *ct_vendor_fortran_in_place(void) { return NULL; }
#endif

#endif
