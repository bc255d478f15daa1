/*
 * Stand-in for an Open MPI internal header that ompi/op/op.h includes
 * but Debian's libopenmpi-dev does not install.  op.h only needs the
 * int -> MPI_Fint conversion for Fortran-defined ops; Open MPI 4.1 on
 * the platforms we build for has a Fortran INTEGER the size of a C int,
 * which is what this conversion assumes (checked at compile time).
 *
 * coll/Makefile.am puts this directory last on the include path
 * (-idirafter), so a tree that has the real header uses it.
 */
#ifndef MCA_COLL_OFI_SHIM_FINT_2_INT_H
#define MCA_COLL_OFI_SHIM_FINT_2_INT_H

#include "mpi.h"

#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) ((MPI_Fint) (a))
#endif

typedef char mca_coll_ofi_fint_is_int[(sizeof(MPI_Fint) == sizeof(int)) ? 1 : -1];

#endif
