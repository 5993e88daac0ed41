# Third-party packages, all from the distribution (scripts/install-deps.sh).
# Protobuf before Torch: a LibTorch built without protobuf (pip's) defines
# protobuf::libprotobuf as an empty stand-in unless the real target exists.
find_package(Protobuf REQUIRED)  # TensorBoard event files (src/tracking)
# LibTorch: Debian's libtorch-dev (1.13, the system-package configuration) through
# its TorchConfig, or the LibTorch inside PyPI's torch wheel (2.x): with CUDA through
# its TorchConfig (scripts/build-cuda.sh), on the CPU through its CPU libraries
# alone (-DACCEL_TORCH_WHEEL=$(scripts/torch2-env.sh), cmake/torch-wheel-cpu.cmake).
set(ACCEL_TORCH_WHEEL "" CACHE PATH "A torch wheel's package directory: build against its CPU libraries")
if(ACCEL_PYTHON_WHEEL)
  include(${CMAKE_CURRENT_LIST_DIR}/python-wheel-torch.cmake)
endif()
if(ACCEL_TORCH_WHEEL)
  include(${CMAKE_CURRENT_LIST_DIR}/torch-wheel-cpu.cmake)
else()
  find_package(Torch REQUIRED)
endif()
# The configurations CI and the GPU sessions build; another LibTorch may compile
# but has never been tested, so it is refused unless asked for.
set(ACCEL_SUPPORTED_LIBTORCH "1.13 (Debian's libtorch-dev) and 2.11 to 2.15 (PyPI's torch wheel)")
option(ACCEL_ALLOW_UNTESTED_LIBTORCH "Build against a LibTorch outside ${ACCEL_SUPPORTED_LIBTORCH}" OFF)
if(NOT ACCEL_ALLOW_UNTESTED_LIBTORCH AND NOT Torch_VERSION MATCHES "^1\\.13\\."
   AND NOT Torch_VERSION MATCHES "^2\\.1[1-5]\\.")
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} found (${TORCH_INSTALL_PREFIX}); libaccel supports "
                      "${ACCEL_SUPPORTED_LIBTORCH}. Point Torch_DIR or ACCEL_TORCH_WHEEL at one of those, or "
                      "pass -DACCEL_ALLOW_UNTESTED_LIBTORCH=ON to try this one.")
endif()
if(ACCEL_PYTHON_WHEEL AND NOT Torch_VERSION VERSION_EQUAL ACCEL_WHEEL_TORCH_PIN)
  message(FATAL_ERROR "The wheel names torch==${ACCEL_WHEEL_TORCH_PIN} (pyproject.toml) but would link LibTorch "
                      "${Torch_VERSION} (${TORCH_INSTALL_PREFIX}): build against torch ${ACCEL_WHEEL_TORCH_PIN}, "
                      "or change both pins (pyproject.toml, scripts/torch2-env.sh) together")
endif()
find_package(nlohmann_json 3.9 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(yaml-cpp REQUIRED)  # Accelerate config files (src/cli)
find_package(ZLIB REQUIRED)
find_package(CURL REQUIRED)  # the MLflow tracker's REST client (src/tracking/http_client.cpp)
find_package(SQLite3 REQUIRED)  # the trackio tracker writes trackio's SQLite store (src/tracking/trackio_tracker.cpp)
# xxHash (XXH3): checkpoint file checksums in the manifest (src/checkpoint).
find_path(ACCEL_XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
find_library(ACCEL_XXHASH_LIBRARY NAMES xxhash REQUIRED)
find_package(Threads REQUIRED)
# LibTorch's CPU kernels run on OpenMP; loader workers limit their own team to one thread.
find_package(OpenMP REQUIRED COMPONENTS CXX)

# LibTorch's exported flags carry -D_GLIBCXX_USE_CXX11_ABI and friends; keep them,
# but strip the include of the full torch/torch.h umbrella: we include narrow headers.
separate_arguments(ACCEL_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

# Torch's imported target; CUDA builds also expose c10_cuda.
set(ACCEL_TORCH_LIBS ${TORCH_LIBRARIES})
set(ACCEL_HAS_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(ACCEL_HAS_CUDA ON)
endif()
# c10d's ProcessGroupNCCL.hpp includes <nccl.h>, which a CUDA LibTorch does not
# ship: system NCCL, or pip's nvidia-nccl package beside a pip torch.
if(ACCEL_HAS_CUDA)
  find_path(ACCEL_NCCL_INCLUDE_DIR nccl.h
    HINTS "${Torch_DIR}/../../../../nvidia/nccl/include" ENV NCCL_INCLUDE_DIR)
  if(NOT ACCEL_NCCL_INCLUDE_DIR)
    message(FATAL_ERROR "CUDA LibTorch found but not nccl.h: install NCCL's headers or pass -DACCEL_NCCL_INCLUDE_DIR=...")
  endif()
endif()
message(STATUS "libaccel: LibTorch ${Torch_VERSION}, CUDA ${ACCEL_HAS_CUDA}")

# Gloo's synchronous pairs for the two-rank allreduce (src/state/gloo_direct.cpp):
# only with the system's Gloo headers and library, and only when LibTorch links
# that same libgloo (Debian's does; a pip LibTorch bundles its own Gloo, and two
# copies of Gloo in one process must not meet). Otherwise c10d's Gloo serves.
set(ACCEL_GLOO_DIRECT OFF)
find_path(ACCEL_GLOO_INCLUDE_DIR gloo/transport/tcp/pair.h)
find_library(ACCEL_GLOO_LIBRARY NAMES gloo)
find_library(ACCEL_TORCH_CPU_LIBRARY NAMES torch_cpu HINTS "${TORCH_INSTALL_PREFIX}/lib")
if(ACCEL_GLOO_INCLUDE_DIR AND ACCEL_GLOO_LIBRARY AND ACCEL_TORCH_CPU_LIBRARY AND CMAKE_OBJDUMP)
  execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${ACCEL_TORCH_CPU_LIBRARY}"
                  OUTPUT_VARIABLE ACCEL_TORCH_CPU_HEADERS ERROR_QUIET)
  if(ACCEL_TORCH_CPU_HEADERS MATCHES "NEEDED +libgloo\\.so")
    set(ACCEL_GLOO_DIRECT ON)
  endif()
endif()
message(STATUS "libaccel: Gloo on the calling thread for two ranks: ${ACCEL_GLOO_DIRECT}")

# oneDNN's matmul for float32 products on the CPU (src/matmul/onednn_matmul.cpp):
# only with the system's oneDNN headers, and only when LibTorch links that same
# libdnnl (Debian's does; a pip LibTorch carries its own copy inside
# libtorch_cpu, and two copies in one process must not meet). Otherwise the
# products stay ATen's.
set(ACCEL_ONEDNN OFF)
find_path(ACCEL_ONEDNN_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(ACCEL_ONEDNN_LIBRARY NAMES dnnl)
if(ACCEL_ONEDNN_INCLUDE_DIR AND ACCEL_ONEDNN_LIBRARY AND ACCEL_TORCH_CPU_LIBRARY AND CMAKE_OBJDUMP)
  if(NOT DEFINED ACCEL_TORCH_CPU_HEADERS)
    execute_process(COMMAND "${CMAKE_OBJDUMP}" -p "${ACCEL_TORCH_CPU_LIBRARY}"
                    OUTPUT_VARIABLE ACCEL_TORCH_CPU_HEADERS ERROR_QUIET)
  endif()
  if(ACCEL_TORCH_CPU_HEADERS MATCHES "NEEDED +libdnnl\\.so")
    set(ACCEL_ONEDNN ON)
  endif()
endif()
message(STATUS "libaccel: oneDNN matrix products on the CPU: ${ACCEL_ONEDNN}")
