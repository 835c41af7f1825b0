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
#include <string.h>

#if defined(OPEN_MPI)
#define CT_VENDOR "openmpi"
static inline const void *ct_vendor_fortran_in_place(void) {
    return dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
}
/* Performance variables that crash when a handle is allocated: Open MPI 4.1.4's psm2 MTL
 * registers its statistics even when it is not in use and then reads them from an MQ it
 * never opened (psm2_mq_get_stats on NULL, seen with OMPI_MCA_pml=ob1). */
static inline int ct_vendor_pvar_unsafe(const char *name) {
    return strncmp(name, "mtl_psm2_", 9) == 0;
}
#elif defined(MPICH)
#define CT_VENDOR "mpich"
static inline const void *ct_vendor_fortran_in_place(void) {
    void *const *slot = dlsym(RTLD_DEFAULT, "MPIR_F_MPI_IN_PLACE");
    return slot != NULL ? *slot : NULL;
}
static inline int ct_vendor_pvar_unsafe(const char *name) {
    (void)name;
    return 0;
}
#else
#define CT_VENDOR "unknown"
static inline const void *ct_vendor_fortran_in_place(void) { return NULL; }
static inline int ct_vendor_pvar_unsafe(const char *name) {
    (void)name;
    return 0;
}
#endif

#endif
