#!/usr/bin/env bash
# Configures and builds libaccel into ./build (Release-with-debug-info, Ninja, ccache, -j2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-env.sh
scripts/java-deps.sh
# ccache: paths relative to the tree, the build directory left out of the key, so
# a copy of the tree reuses these objects (packaging_python_wheel builds one).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# Everything on, also in a tree scripts/demo.sh configured with the library alone.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCEL_BUILD_TESTS=ON -DACCEL_BUILD_BINDINGS=ON \
  -DACCEL_BUILD_BENCH=ON -DACCEL_BUILD_EXAMPLES=ON "$@" >/dev/null
cmake --build build -j "${ACCEL_BUILD_JOBS:-2}"
