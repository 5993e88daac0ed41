# The CPU libraries of the LibTorch inside PyPI's `torch` wheel (scripts/torch2-env.sh),
# for the LibTorch 2.x configuration built by CI on machines without CUDA.
#
# PyPI's Linux wheel is a CUDA build, and its TorchConfig.cmake stops when no CUDA
# toolkit is installed. A CPU program needs only libtorch_cpu and libc10 (libtorch
# itself links libtorch_cuda), so this file defines what TorchConfig would for those
# two, from the wheel's files: the variables dependencies.cmake reads (TORCH_LIBRARIES,
# TORCH_INCLUDE_DIRS, TORCH_CXX_FLAGS, TORCH_INSTALL_PREFIX, Torch_VERSION) and the
# imported targets torch_cpu and c10. A machine with CUDA builds against the full
# TorchConfig instead (scripts/build-cuda.sh).
#
# In: ACCEL_TORCH_WHEEL, the wheel's package directory (…/site-packages/torch).
set(TORCH_INSTALL_PREFIX "${ACCEL_TORCH_WHEEL}")
set(_accel_torch_lib "${TORCH_INSTALL_PREFIX}/lib")
foreach(_accel_file share/cmake/Torch/TorchConfigVersion.cmake lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${TORCH_INSTALL_PREFIX}/${_accel_file}")
    message(FATAL_ERROR "ACCEL_TORCH_WHEEL=${ACCEL_TORCH_WHEEL} is not a torch wheel's package directory: "
                        "${_accel_file} is missing (scripts/torch2-env.sh installs one and prints its path)")
  endif()
endforeach()

# The version TorchConfigVersion.cmake states (its first line sets PACKAGE_VERSION).
file(STRINGS "${TORCH_INSTALL_PREFIX}/share/cmake/Torch/TorchConfigVersion.cmake" _accel_version_line
     REGEX "set\\(PACKAGE_VERSION \"[0-9.]+\"\\)" LIMIT_COUNT 1)
string(REGEX MATCH "([0-9]+)\\.([0-9]+)\\.([0-9]+)" _accel_match "${_accel_version_line}")
set(_accel_MAJOR "${CMAKE_MATCH_1}")
set(_accel_MINOR "${CMAKE_MATCH_2}")
set(_accel_PATCH "${CMAKE_MATCH_3}")
set(Torch_VERSION "${_accel_MAJOR}.${_accel_MINOR}.${_accel_PATCH}")

set(TORCH_INCLUDE_DIRS "${TORCH_INSTALL_PREFIX}/include" "${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include")
# The wheel is built with the C++11 ABI of std::string (as Debian's libraries are).
set(TORCH_CXX_FLAGS "-D_GLIBCXX_USE_CXX11_ABI=1")

add_library(c10 SHARED IMPORTED)
set_target_properties(c10 PROPERTIES
  IMPORTED_LOCATION "${_accel_torch_lib}/libc10.so"
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}")
add_library(torch_cpu SHARED IMPORTED)
set_target_properties(torch_cpu PROPERTIES
  IMPORTED_LOCATION "${_accel_torch_lib}/libtorch_cpu.so"
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  # What the wheel's own torch_cpu target carries: c10d's Gloo process group is
  # declared only under USE_C10D_GLOO, and its headers' layout depends on it.
  INTERFACE_COMPILE_DEFINITIONS "USE_DISTRIBUTED;USE_C10D_GLOO;USE_RPC;USE_TENSORPIPE"
  INTERFACE_COMPILE_OPTIONS "${TORCH_CXX_FLAGS}"
  INTERFACE_LINK_LIBRARIES c10)
# LibTorch 2.x's headers need C++20 (its TorchConfig asks for cxx_std_20 too); the
# code stays C++17, and the 1.13 configuration compiles it as such.
target_compile_features(torch_cpu INTERFACE cxx_std_20)
set(TORCH_LIBRARIES torch_cpu c10)
set(Torch_FOUND TRUE)
