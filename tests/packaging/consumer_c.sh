#!/usr/bin/env bash
# Builds consumer_c/main.c out of tree with `pkg-config --cflags --libs accel` against
# the staging prefix, as a user of an installed libaccel would, and runs it.
#   consumer_c.sh STAGE LIBDIR SOURCE_DIR WORK_DIR CC VERSION
set -euo pipefail
stage=$1 libdir=$2 src=$3 work=$4 cc=$5 version=$6
fail() { echo "FAIL: $*" >&2; exit 1; }

export PKG_CONFIG_PATH=$stage/$libdir/pkgconfig
flags=$(pkg-config --cflags --libs accel)
echo "pkg-config --cflags --libs accel: $flags"
pc_libdir=$(pkg-config --variable=libdir accel)
[ "$pc_libdir" = "$stage/$libdir" ] || fail "accel.pc's libdir is $pc_libdir, not $stage/$libdir"
[ "$(pkg-config --modversion accel)" = "$version" ] || fail "accel.pc's version is not $version"

rm -rf "$work" && mkdir -p "$work"
# The header is C99; the rpath only spares the test an LD_LIBRARY_PATH.
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$src/main.c" -o "$work/consumer_c" $flags \
  -Wl,-rpath,"$pc_libdir"
env -u LD_LIBRARY_PATH ldd "$work/consumer_c" | grep -F "libaccel.so.0 => $stage/" >/dev/null ||
  fail "consumer_c does not load libaccel from $stage"
out=$(env -u LD_LIBRARY_PATH "$work/consumer_c")
echo "$out"
[ "$out" = "libaccel $version, 1 process(es), sum 21" ] || fail "unexpected output"
