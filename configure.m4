# -*- shell-script -*-
#
# In-tree configuration of the ofi BTL, read by Open MPI 4.1's autogen.pl
# when this directory is opal/mca/btl/ofi of an Open MPI source tree.
# (The stand-alone build uses configure.ac instead; Makefile.am serves
# both.)
#
# MCA_opal_btl_ofi_CONFIG([action-if-can-compile], [action-if-cant-compile])
# ------------------------------------------------------------------------
# The component builds when libfabric (>= 1.5 API) is found by Open MPI's
# OPAL_CHECK_OFI (--with-ofi / --with-libfabric).  Sets and substitutes
# btl_ofi_CPPFLAGS, btl_ofi_LDFLAGS and btl_ofi_LIBS, which Makefile.am
# uses and which Open MPI's MCA machinery also reads (as
# <framework>_<component>_LDFLAGS/LIBS) to add libfabric to the final
# link when the component is built statically into libopen-pal.
AC_DEFUN([MCA_opal_btl_ofi_CONFIG],[
    AC_CONFIG_FILES([opal/mca/btl/ofi/Makefile])

    OPAL_VAR_SCOPE_PUSH([btl_ofi_happy])

    # Sets opal_ofi_happy and opal_ofi_{CPPFLAGS,LDFLAGS,LIBS}; shared
    # with the other OFI components (runs its checks only once).
    OPAL_CHECK_OFI

    btl_ofi_happy=no
    AS_IF([test "$opal_ofi_happy" = "yes"],
          [OPAL_CHECK_OFI_VERSION_GE([1,5],
               [btl_ofi_happy=yes],
               [AC_MSG_WARN([the ofi BTL needs libfabric 1.5 or newer; not building it])])])

    AS_IF([test "$btl_ofi_happy" = "yes"],
          [btl_ofi_CPPFLAGS=$opal_ofi_CPPFLAGS
           btl_ofi_LDFLAGS=$opal_ofi_LDFLAGS
           btl_ofi_LIBS=$opal_ofi_LIBS
           $1],
          [AS_IF([test -n "$with_ofi" && test "$with_ofi" != "no"],
                 [AC_MSG_WARN([OFI libfabric support requested (--with-ofi or --with-libfabric), but the ofi BTL cannot be built])
                  AC_MSG_ERROR([Cannot continue.])])
           $2])

    # Open MPI's own CFLAGS apply in tree; nothing extra here.
    btl_ofi_CFLAGS=

    # The test-only fault switch (btl_ofi_inject_fault) is left out unless
    # asked for, as in the stand-alone build (--enable-fault-injection there).
    AC_ARG_ENABLE([btl-ofi-fault-injection],
        [AS_HELP_STRING([--enable-btl-ofi-fault-injection],
            [TESTING ONLY: build btl/ofi's btl_ofi_inject_fault parameter (default: no)])])
    AS_IF([test "$enable_btl_ofi_fault_injection" = "yes"],
          [btl_ofi_CPPFLAGS="$btl_ofi_CPPFLAGS -DMCA_BTL_OFI_FAULT_INJECTION=1"])

    AC_SUBST([btl_ofi_CPPFLAGS])
    AC_SUBST([btl_ofi_CFLAGS])
    AC_SUBST([btl_ofi_LDFLAGS])
    AC_SUBST([btl_ofi_LIBS])

    OPAL_VAR_SCOPE_POP
])dnl
