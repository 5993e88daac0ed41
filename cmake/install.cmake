# `cmake --install`: libaccel.so.0, its headers, the `accel` command (src/cli), a
# pkg-config file and a CMake package. Two components, one per Debian package
# (packaging/cpack.cmake): `runtime` (the .so.0 and the command) and `dev` (the rest).
include(CMakePackageConfigHelpers)

set(ACCEL_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/accel")

# libaccel.so.0 needs no $ORIGIN entry (install-dirs.cmake): it is in the libdir itself.
set_target_properties(accel PROPERTIES INSTALL_RPATH "")
# The C++ headers use std::optional and std::variant: consumers compile as C++17 too.
target_compile_features(accel INTERFACE cxx_std_17)

install(TARGETS accel EXPORT accelTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(DIRECTORY include/accel DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# CMake package: find_package(accel) gives accel::accel, which brings Torch's include
# directories and flags along (the C++ API is written over LibTorch's types).
install(EXPORT accelTargets NAMESPACE accel:: FILE accelTargets.cmake
  DESTINATION ${ACCEL_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(packaging/accelConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/packaging/accelConfig.cmake
  INSTALL_DESTINATION ${ACCEL_INSTALL_CMAKEDIR})
# The SONAME changes with the major version (ACCEL_ABI_VERSION), so does compatibility.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/packaging/accelConfigVersion.cmake
  VERSION ${ACCEL_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/packaging/accelConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/packaging/accelConfigVersion.cmake
  DESTINATION ${ACCEL_INSTALL_CMAKEDIR} COMPONENT dev)

# accel.pc. Its prefix is the one given at install time (`cmake --install --prefix`,
# /usr in the .deb), so the file is completed then: configure time fills in everything
# but @ACCEL_PC_PREFIX@. Absolute paths, as Debian's .pc files have: pkg-config drops
# -I/usr/include only when it is spelled so.
set(ACCEL_PC_PREFIX "@ACCEL_PC_PREFIX@")
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(ACCEL_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(ACCEL_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()
configure_file(packaging/accel.pc.in ${CMAKE_CURRENT_BINARY_DIR}/packaging/accel.pc.in @ONLY)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(_accel_pc_dest "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(_accel_pc_dest "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
# One intermediate file per destination: installs to several prefixes may run at once.
# file(INSTALL) honours DESTDIR and records the file in install_manifest.txt.
install(CODE "
  set(ACCEL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  string(MD5 _accel_pc_key \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}\")
  set(_accel_pc \"${CMAKE_CURRENT_BINARY_DIR}/packaging/pc-\${_accel_pc_key}/accel.pc\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/packaging/accel.pc.in\" \"\${_accel_pc}\" @ONLY)
  file(INSTALL DESTINATION \"${_accel_pc_dest}\" TYPE FILE FILES \"\${_accel_pc}\")
  " COMPONENT dev)

include(packaging/cpack.cmake)
