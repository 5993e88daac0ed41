#!/usr/bin/env bash
# Configures and builds libaccel into ./build (Release-with-debug-info, Ninja, ccache, -j2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/python-env.sh
scripts/java-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j "${ACCEL_BUILD_JOBS:-2}"
