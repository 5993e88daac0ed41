#!/usr/bin/env bash
# The whole test suite: install dependencies, build, run every test under CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
cd build
exec ctest --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" "$@"
