#!/usr/bin/env bash
# Builds libaccel against a CUDA LibTorch 2.x into ./build-cuda: by default the
# one inside the machine's pip torch (python3 -c 'import torch'), with NCCL's
# header from pip's nvidia-nccl package beside it. The bindings are left out
# (they call only the C ABI, which is the same on CPU and GPU).
#   scripts/build-cuda.sh                 # then: cd build-cuda && ctest
#   DEPS_PREFIX=/opt/deps/usr scripts/build-cuda.sh
#   ACCEL_BUILD_TARGETS="accel accel_cuda_tests lm_bench_c" scripts/build-cuda.sh
# ACCEL_BUILD_TARGETS: build only these targets (a short GPU session: the
# library, the Cuda* tests and a bench, not the whole suite).
# DEPS_PREFIX: a prefix holding what Debian's packages give the CPU build
# (yaml-cpp, protobuf, nlohmann-json, CLI11, GoogleTest, and Gloo's headers, which
# pip's torch does not ship) on a machine without them.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
torch_dir=${Torch_DIR:-$("$python" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')/Torch}
prefix_path="$torch_dir"
extra=()
if [ -n "${DEPS_PREFIX:-}" ]; then
  prefix_path="$prefix_path;$DEPS_PREFIX;$DEPS_PREFIX/lib/x86_64-linux-gnu/cmake"
  extra+=(-DProtobuf_PROTOC_EXECUTABLE="$DEPS_PREFIX/bin/protoc" -DCMAKE_CXX_FLAGS="-isystem $DEPS_PREFIX/include")
  export LD_LIBRARY_PATH="$DEPS_PREFIX/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix_path" \
  -DTorch_DIR="$torch_dir" -DACCEL_BUILD_BINDINGS=OFF \
  "${extra[@]}" "$@"
read -r -a targets <<<"${ACCEL_BUILD_TARGETS:-}"
cmake --build build-cuda -j "${ACCEL_BUILD_JOBS:-$(nproc)}" ${targets[@]:+--target "${targets[@]}"}
