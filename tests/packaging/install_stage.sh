#!/usr/bin/env bash
# `cmake --install` into a fresh staging prefix, then checks what landed there: the
# SONAME and link chain, headers, accel.pc, the CMake package, and that the installed
# `accel` runs without LD_LIBRARY_PATH, finding libaccel (if it links it) in the prefix.
#   install_stage.sh BUILD_DIR STAGE LIBDIR BINDIR
set -euo pipefail
build=$1 stage=$2 libdir=$3 bindir=$4
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$stage"
cmake --install "$build" --prefix "$stage" >/dev/null
lib=$stage/$libdir

for f in include/accel/accel.h include/accel/accel.hpp include/accel/accelerator.hpp \
         "$libdir/libaccel.so.0" "$libdir/pkgconfig/accel.pc" "$libdir/cmake/accel/accelConfig.cmake" \
         "$libdir/cmake/accel/accelConfigVersion.cmake" "$libdir/cmake/accel/accelTargets.cmake" \
         "$bindir/accel" libexec/accel/accel-selftest; do
  [ -e "$stage/$f" ] || fail "$f was not installed"
done
[ "$(readlink "$lib/libaccel.so")" = libaccel.so.0 ] || fail "libaccel.so does not point to libaccel.so.0"
soname=$(readelf -d "$lib/libaccel.so.0" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libaccel.so.0 ] || fail "SONAME is '$soname', not libaccel.so.0"
grep -qx "prefix=$stage" "$lib/pkgconfig/accel.pc" || fail "accel.pc does not name the prefix $stage"

# Installed files must not point back into the build tree.
for f in "$lib/libaccel.so.0" "$stage/$bindir/accel"; do
  if readelf -d "$f" | grep -E 'R(UN)?PATH' | grep -F "$build" >/dev/null; then
    fail "$f keeps the build tree in its RPATH: $(readelf -d "$f" | grep -E 'R(UN)?PATH')"
  fi
done
readelf -d "$stage/$bindir/accel" | grep -E 'R(UN)?PATH' | grep -F '$ORIGIN/' >/dev/null ||
  fail "the installed accel has no \$ORIGIN-relative RPATH"

help=$(env -u LD_LIBRARY_PATH "$stage/$bindir/accel" --help) || fail "the installed accel --help failed"
grep -q launch <<<"$help" || fail "accel --help does not mention launch: $help"
if readelf -d "$stage/$bindir/accel" | grep 'NEEDED.*libaccel\.so\.0' >/dev/null; then
  env -u LD_LIBRARY_PATH ldd "$stage/$bindir/accel" | grep -F "libaccel.so.0 => $stage/" >/dev/null ||
    fail "the installed accel does not load libaccel from $stage"
fi
# accel env finds accel-selftest in ../libexec/accel and it loads libaccel from the prefix.
env_report=$(env -u LD_LIBRARY_PATH "$stage/$bindir/accel" env) || fail "the installed accel env failed"
grep -q '^- LibTorch: [0-9]' <<<"$env_report" || fail "accel env did not reach accel-selftest: $env_report"
echo "installed into $stage"
