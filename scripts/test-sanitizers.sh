#!/usr/bin/env bash
# The C ABI tests (tests/capi) under AddressSanitizer and UndefinedBehaviorSanitizer
# (fatal): a separate, small build of the library and those programs only, in
# ./build-asan. Clang, because GCC's UBSan does not check enum values passed by
# value (a C caller may pass any int where the C ABI takes an enum); clang's
# OpenMP runtime is libomp (scripts/install-deps.sh). The libFuzzer targets are
# sanitized in the main build already.
# -O0: a sanitized compile of the library takes 45% less time than at -O1 (22.4 s
# against 12.6 s for sharding/full_shard.cpp), and these tests run seconds either way.
# scripts/test.sh runs this after the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O0 -g1" \
  -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DACCEL_SANITIZE=address,undefined -DACCEL_TESTS_CAPI_ONLY=ON \
  -DACCEL_BUILD_EXAMPLES=OFF -DACCEL_BUILD_BINDINGS=OFF -DACCEL_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j "${ACCEL_BUILD_JOBS:-2}" --target capi_tests
cd build-asan
exec ctest --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" -R '^capi_' "$@"
