#!/usr/bin/env bash
# CMake refuses a LibTorch outside the two supported configurations, naming the
# version it found and the supported ones; and a directory that is no torch
# wheel, naming what is missing. Both are configured against stand-ins (a
# TorchConfigVersion.cmake and empty libraries): the check runs before anything
# reads the libraries.
# Usage: run_unsupported_libtorch.sh SOURCE_DIR WORK_DIR
set -uo pipefail
source_dir=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
configure() {
  cmake -S "$source_dir" -B "$work/build-$1" -G Ninja -DACCEL_TORCH_WHEEL="$2" -DACCEL_BUILD_TESTS=OFF \
    -DACCEL_BUILD_BINDINGS=OFF -DACCEL_BUILD_EXAMPLES=OFF -DACCEL_BUILD_BENCH=OFF 2>&1
}
expect() {  # expect NAME STATUS OUTPUT PATTERN...
  local name=$1 status=$2 output=$3
  shift 3
  [ "$status" -ne 0 ] || { echo "$name: CMake accepted it"; exit 1; }
  for pattern in "$@"; do
    echo "$output" | tr '\n' ' ' | tr -s ' ' | grep -q -- "$pattern" || { echo "$name: no '$pattern' in:"; echo "$output"; exit 1; }
  done
  echo "$name: refused as expected"
}

old="$work/torch-2.3"
mkdir -p "$old/share/cmake/Torch" "$old/lib"
echo 'set(PACKAGE_VERSION "2.3.0")' >"$old/share/cmake/Torch/TorchConfigVersion.cmake"
touch "$old/lib/libtorch_cpu.so" "$old/lib/libc10.so"
output=$(configure old "$old"); status=$?
expect "LibTorch 2.3" "$status" "$output" "LibTorch 2.3.0 found" "supports 1.13" "2.11 to 2.15" \
  "ACCEL_ALLOW_UNTESTED_LIBTORCH"

empty="$work/not-a-wheel"
mkdir -p "$empty"
output=$(configure empty "$empty"); status=$?
expect "not a wheel" "$status" "$output" "is not a torch wheel's package directory" "TorchConfigVersion.cmake is missing"
