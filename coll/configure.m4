# -*- shell-script -*-
#
# In-tree configuration of the ofi coll component, read by Open MPI 4.1's
# autogen.pl when this directory is ompi/mca/coll/ofi of an Open MPI
# source tree.  (Out of tree, the BTL's configure.ac one level up builds
# it; Makefile.am serves both.)
#
# MCA_ompi_coll_ofi_CONFIG([action-if-can-compile], [action-if-cant-compile])
# ------------------------------------------------------------------------
# The component needs nothing beyond Open MPI itself: the BTL it runs
# over (one with put, get and fetching atomics) is found at run time, and
# a communicator no such BTL serves keeps its previous collectives.
AC_DEFUN([MCA_ompi_coll_ofi_CONFIG],[
    AC_CONFIG_FILES([ompi/mca/coll/ofi/Makefile])

    # Open MPI's own flags apply in tree; nothing extra here.
    coll_ofi_CPPFLAGS=
    coll_ofi_CFLAGS=
    coll_ofi_LDFLAGS=
    coll_ofi_LIBS=
    AC_SUBST([coll_ofi_CPPFLAGS])
    AC_SUBST([coll_ofi_CFLAGS])
    AC_SUBST([coll_ofi_LDFLAGS])
    AC_SUBST([coll_ofi_LIBS])

    $1
])dnl
