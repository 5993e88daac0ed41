# Debian packages, built by CPack from the install components (packaging/build-deb.sh):
#   libaccel0     runtime: libaccel.so.0 and the `accel` command
#   libaccel-dev  headers, the libaccel.so link, accel.pc and the CMake package
#   python3-libaccel, libaccel-java, golang-libaccel-dev: the bindings (packaging/bindings.cmake)
# Included by cmake/install.cmake after every install rule.

set(ACCEL_DEB_MAINTAINER "libaccel developers <dev@libaccel.invalid>" CACHE STRING
    "Maintainer field of the Debian packages")
set(ACCEL_DEB_RELEASE 1 CACHE STRING "Debian revision of the packages (the -N of VERSION-N)")
set(ACCEL_DEB_VERSION "${ACCEL_VERSION}-${ACCEL_DEB_RELEASE}")
if(CMAKE_LIBRARY_ARCHITECTURE AND NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  # A build tree configured before cmake/install-dirs.cmake existed keeps "lib" cached.
  message(STATUS "libaccel: CMAKE_INSTALL_LIBDIR is ${CMAKE_INSTALL_LIBDIR}; Debian packages "
                 "want lib/${CMAKE_LIBRARY_ARCHITECTURE} (cmake -U CMAKE_INSTALL_LIBDIR to reset)")
endif()

# Every Debian package carries its copyright and changelog in /usr/share/doc/<package>.
set(_accel_doc_build ${CMAKE_CURRENT_BINARY_DIR}/packaging/doc)
configure_file(${CMAKE_CURRENT_LIST_DIR}/changelog.Debian.in ${_accel_doc_build}/changelog.Debian @ONLY)
# -n: no name or time stamp in the gzip header, so the package is reproducible.
execute_process(COMMAND gzip -n -9 -c ${_accel_doc_build}/changelog.Debian
  OUTPUT_FILE ${_accel_doc_build}/changelog.Debian.gz RESULT_VARIABLE _accel_gzip_rc)
if(NOT _accel_gzip_rc EQUAL 0)
  message(FATAL_ERROR "gzip failed (${_accel_gzip_rc}) on ${_accel_doc_build}/changelog.Debian")
endif()
foreach(_component_package IN ITEMS runtime:libaccel0 dev:libaccel-dev)
  string(REPLACE ":" ";" _component_package "${_component_package}")
  list(GET _component_package 0 _component)
  list(GET _component_package 1 _package)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/copyright ${_accel_doc_build}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_package} COMPONENT ${_component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libaccel)
set(CPACK_PACKAGE_VERSION ${ACCEL_VERSION})
set(CPACK_PACKAGE_VENDOR "libaccel developers")
set(CPACK_PACKAGE_CONTACT "${ACCEL_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
# DESTDIR staging keeps CMAKE_INSTALL_PREFIX = /usr during the install, so accel.pc
# (written at install time, cmake/install.cmake) names /usr, not the staging folder.
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${ACCEL_DEB_RELEASE})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# dpkg-shlibdeps derives Depends from the ELF files (libtorch1.13, libc6, libstdc++6,
# ...); libaccel0 gets a shlibs file so packages built against it depend on it.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libaccel0)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# Without OpenBLAS LibTorch falls back to the reference BLAS, 13x slower (CONTRIBUTING.md).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "libopenblas0-openmp")
# dpkg >= 1.16 runs ldconfig on this trigger; without it lintian reports an error.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/packaging/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/packaging/triggers)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
"Accelerate's distributed training model over LibTorch (library)
libaccel brings the training model of Hugging Face Accelerate to C and every
language with a C FFI: prepare a model, optimizer and data loader, and the same
training loop runs on one CPU, one GPU, several processes or several machines,
over LibTorch's c10d (Gloo on CPU).

This package contains the shared library and the accel command, which launches
a program on several processes or machines.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libaccel-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The headers of the C++ API and accelConfig.cmake need LibTorch's headers and CMake files.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libaccel0 (= ${ACCEL_DEB_VERSION}), libtorch-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
"Accelerate's distributed training model over LibTorch (development files)
libaccel brings the training model of Hugging Face Accelerate to C and every
language with a C FFI: prepare a model, optimizer and data loader, and the same
training loop runs on one CPU, one GPU, several processes or several machines,
over LibTorch's c10d (Gloo on CPU).

This package contains the C headers (accel/accel.h), the C++ API headers, the
pkg-config file accel.pc and the CMake package (find_package(accel)).")

# include(CPack) comes last, in packaging/bindings.cmake (after bindings/ adds its packages).
