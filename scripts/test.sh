#!/usr/bin/env bash
# The whole test suite: install dependencies, build, run every test under CTest
# against Debian's LibTorch 1.13, then the C ABI tests again under ASan+UBSan
# (scripts/test-sanitizers.sh; skip with ACCEL_SANITIZER_TESTS=0), then the
# LibTorch 2.x configuration from PyPI's torch wheel (scripts/test-torch2.sh;
# skip with ACCEL_TORCH2_TESTS=0). Arguments go to the main suite's ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
status=0
(cd build && ctest --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" "$@") || status=$?
if [ "${ACCEL_SANITIZER_TESTS:-1}" != 0 ]; then
  scripts/test-sanitizers.sh || status=$?
fi
if [ "${ACCEL_TORCH2_TESTS:-1}" != 0 ]; then
  scripts/test-torch2.sh || status=$?
fi
exit "$status"
