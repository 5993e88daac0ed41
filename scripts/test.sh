#!/usr/bin/env bash
# The whole test suite: install dependencies, build, run every test under CTest
# against Debian's LibTorch 1.13, then the C ABI tests again under ASan+UBSan
# (scripts/test-sanitizers.sh; skip with ACCEL_SANITIZER_TESTS=0), then the
# LibTorch 2.x configuration from PyPI's torch wheel (scripts/test-torch2.sh;
# skip with ACCEL_TORCH2_TESTS=0). Arguments go to the main suite's ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time goes to stderr and into the summary at the end, so a CI log
# shows where its minutes went (the budget is 40 minutes on 2 cores).
summary=""
phase() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  summary+="$(printf '  %-22s %5d s  exit %d' "$name" $((SECONDS - start)) "$rc")"$'\n'
  echo "test.sh: $name took $((SECONDS - start)) s (exit $rc)" >&2
  return "$rc"
}
suite() { scripts/seed-ctest-costs.sh build && (cd build && ctest --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" "$@"); }
# The three builds fill ccache with about 3 GB (the LibTorch 2.x precompiled header alone
# is 0.7 GB before compression); at ccache's default 5 GB a cache that also holds older
# builds evicts this run's entries, which packaging_python_wheel expects to reuse.
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-10G}
phase install-deps scripts/install-deps.sh
phase build scripts/build.sh
status=0
phase "tests (LibTorch 1.13)" suite "$@" || status=$?
if [ "${ACCEL_SANITIZER_TESTS:-1}" != 0 ]; then
  phase sanitizers scripts/test-sanitizers.sh || status=$?
fi
if [ "${ACCEL_TORCH2_TESTS:-1}" != 0 ]; then
  phase "LibTorch 2.x" scripts/test-torch2.sh || status=$?
fi
printf 'test.sh: wall time per phase\n%s  %-22s %5d s\n' "$summary" total "$SECONDS"
exit "$status"
