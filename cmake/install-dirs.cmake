# Where `cmake --install` puts things, and how installed programs find libaccel.
# Included before any target exists: the RPATH settings initialise each target's.

# Debian's multiarch libdir (lib/x86_64-linux-gnu) for every prefix, not only /usr:
# /usr/local/lib/<triplet> is on Debian's default ld.so, pkg-config and CMake search
# paths too, and the .deb (prefix /usr) must use it. A -DCMAKE_INSTALL_LIBDIR wins.
if(NOT DEFINED CMAKE_INSTALL_LIBDIR AND CMAKE_LIBRARY_ARCHITECTURE
   AND EXISTS "/etc/debian_version" AND NOT CMAKE_CROSSCOMPILING)
  set(CMAKE_INSTALL_LIBDIR "lib/${CMAKE_LIBRARY_ARCHITECTURE}" CACHE PATH
      "Object code libraries (lib/<multiarch triplet> on Debian)")
endif()
include(GNUInstallDirs)

# Installed programs find libaccel relative to themselves ($ORIGIN/../lib/...), so a
# tree installed with `cmake --install --prefix DIR` works wherever it lands, with no
# LD_LIBRARY_PATH. Lintian accepts $ORIGIN paths in Debian packages. libaccel.so sits
# in that directory itself and needs no $ORIGIN entry (install.cmake clears it).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(CMAKE_INSTALL_RPATH "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _accel_bin_to_lib "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
  set(CMAKE_INSTALL_RPATH "$ORIGIN/${_accel_bin_to_lib}")
endif()
# A LibTorch outside the system directories (a pip or pytorch.org download) is added
# to the installed RPATH; Debian's, in /usr/lib/<triplet>, is not.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
