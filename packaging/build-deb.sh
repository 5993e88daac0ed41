#!/usr/bin/env bash
# Builds the Debian packages with CPack (packaging/cpack.cmake, packaging/bindings.cmake):
# libaccel0, libaccel-dev, golang-libaccel-dev (the Go module's committed sources), and
# python3-libaccel, libaccel-java where configure found their toolchains.
#   packaging/build-deb.sh [--no-build] [BUILD_DIR [OUT_DIR]]
# BUILD_DIR defaults to ./build (configured if needed), OUT_DIR to BUILD_DIR/packages.
# --no-build packages what BUILD_DIR already holds (the test suite uses it).
# Install the result with: apt install ./OUT_DIR/libaccel*.deb
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_first=1
if [ "${1:-}" = "--no-build" ]; then build_first=0; shift; fi
build=$(realpath -m "${1:-$root/build}")
out=$(realpath -m "${2:-$build/packages}")

if [ "$build_first" = 1 ]; then
  [ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  # Only what the packages hold: the library, the command and the LibTorch
  # probe it runs (accel-selftest; the runtime component installs it too).
  targets=(accel accel_cli accel_selftest)
  # The bindings' libraries and jar, where configure found their toolchains (the Go
  # package needs no build: its sources, SWIG's output included, are committed).
  available=$(cmake --build "$build" --target help)
  for t in accel_python accel_jni accel_java; do
    if grep -E "^(\.\.\. )?$t(:|$)" <<<"$available" >/dev/null; then targets+=("$t"); fi
  done
  cmake --build "$build" --target "${targets[@]}" -j "${ACCEL_BUILD_JOBS:-2}"
fi
[ -f "$build/CPackConfig.cmake" ] || { echo "build-deb.sh: $build is not a configured libaccel build" >&2; exit 1; }

mkdir -p "$out"
# CPack stages each component under OUT_DIR/_CPack_Packages, then writes the .debs to OUT_DIR.
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$out"
rm -rf "$out/_CPack_Packages"
ls -1 "$out"/*.deb
