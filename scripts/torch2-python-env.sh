#!/usr/bin/env bash
# The Python peer of the LibTorch 2.x configuration: a venv at .deps/py-torch2
# (git-ignored) with PyPI's torch and Accelerate, pinned below, in which the
# tests run PyTorch's own FSDP and distributed checkpoint (tests/dist/fsdp_dcp.py)
# against libaccel's. PyPI's torch is its CUDA build: pip installs its NVIDIA
# libraries too (about 5 GB; a minute or two), which torch imports without a GPU.
# Idempotent: a matching stamp skips the install. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
torch=${ACCEL_TORCH2_VERSION:-2.15.0} accelerate=1.15.0
venv=.deps/py-torch2
stamp="$venv/.installed-torch-$torch-accelerate-$accelerate"
if [ ! -f "$stamp" ]; then
  rm -rf "$venv"
  echo "torch2-python-env: installing torch $torch and accelerate $accelerate into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$torch" "accelerate==$accelerate" >&2
  touch "$stamp"
fi
echo "$PWD/$venv/bin/python"
