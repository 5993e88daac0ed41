#!/usr/bin/env bash
# Installs the LibTorch 2.x of the second build configuration: the one inside
# PyPI's `torch` wheel, the torch a Python user installs today, into
# .deps/torch2 (git-ignored). Prints the package directory (…/torch) on stdout.
#
# PyPI's Linux wheel is a CUDA build. The CPU configuration needs only its
# libtorch_cpu and libc10, and libtorch_cpu names two CUDA runtime libraries
# (libcudart, libcupti: the profiler's) that it finds through its RPATH
# ($ORIGIN/../../nvidia/cu13/lib) and loads without a GPU. So the wheel is
# installed without its dependencies (cuDNN, cuBLAS, NCCL, Triton: gigabytes
# nothing here uses) and those two small runtime packages beside it. Python
# cannot `import torch` from this directory; C++ builds are all it is for.
# Idempotent: a matching stamp skips the install.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${ACCEL_TORCH2_VERSION:-2.15.0}
cuda_runtime=13.2.86   # the nvidia-cuda-runtime/-cupti that torch 2.15.0's cuda-toolkit==13.2.2 pins
target=.deps/torch2
stamp="$target/.installed-$version"
if [ ! -f "$stamp" ]; then
  python=${PYTHON:-.venv/bin/python}
  [ -x "$python" ] || python=python3
  rm -rf "$target"
  echo "torch2-env: installing torch $version (the wheel's LibTorch, CPU libraries used) into $target" >&2
  "$python" -m pip install -q --disable-pip-version-check --no-deps --no-compile --target "$target" \
    "torch==$version" "nvidia-cuda-runtime==$cuda_runtime" "nvidia-cuda-cupti==$cuda_runtime" >&2
  touch "$stamp"
fi
echo "$PWD/$target/torch"
