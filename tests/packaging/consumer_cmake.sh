#!/usr/bin/env bash
# Configures, builds and runs consumer_cmake/, an out-of-tree project that does
# find_package(accel) with CMAKE_PREFIX_PATH=<staging prefix> and links accel::accel.
#   consumer_cmake.sh STAGE LIBDIR SOURCE_DIR WORK_DIR GENERATOR CXX VERSION
set -euo pipefail
stage=$1 libdir=$2 src=$3 work=$4 generator=$5 cxx=$6 version=$7
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
# No build type: no optimisation, the quickest compile of a file that includes ATen.
cmake -S "$src" -B "$work" -G "$generator" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$stage" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >/dev/null
found=$(sed -n 's/^accel_DIR:PATH=//p' "$work/CMakeCache.txt")
[ "$found" = "$stage/$libdir/cmake/accel" ] || fail "find_package(accel) found '$found', not the staging prefix"
cmake --build "$work"
env -u LD_LIBRARY_PATH ldd "$work/consumer" | grep -F "libaccel.so.0 => $stage/" >/dev/null ||
  fail "consumer does not load libaccel from $stage"
out=$(env -u LD_LIBRARY_PATH "$work/consumer")
echo "$out"
[ "$out" = "libaccel $version, 1 process(es), device cpu, sum 21" ] || fail "unexpected output"
