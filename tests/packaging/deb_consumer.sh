#!/usr/bin/env bash
# The packages as a user gets them, without touching this machine: apt resolves their
# dependencies (apt-get --simulate), and a C program builds with the pkg-config file of
# libaccel-dev unpacked into a scratch root (PKG_CONFIG_SYSROOT_DIR) and runs against
# the libaccel.so.0 of libaccel0; the unpacked `accel --help` runs.
#   deb_consumer.sh OUT_DIR WORK_DIR CONSUMER_SOURCE_DIR CC LIBDIR VERSION
set -euo pipefail
out=$1 work=$2 src=$3 cc=$4 libdir=$5 version=$6
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work/root"
apt-get install --simulate --no-install-recommends "$out"/libaccel0_*.deb "$out"/libaccel-dev_*.deb \
  >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt cannot install the packages"; }
for p in libaccel0 libaccel-dev; do
  grep -E "^Inst $p " "$work/apt.log" || { cat "$work/apt.log"; fail "apt would not install $p"; }
done

for deb in "$out"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
export PKG_CONFIG_SYSROOT_DIR=$work/root PKG_CONFIG_LIBDIR=$work/root/usr/$libdir/pkgconfig
flags=$(pkg-config --cflags --libs accel)
echo "pkg-config --cflags --libs accel (sysroot $work/root): $flags"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic "$src/main.c" -o "$work/consumer_c" $flags
output=$(LD_LIBRARY_PATH=$work/root/usr/$libdir "$work/consumer_c")
echo "$output"
[ "$output" = "libaccel $version, 1 process(es), sum 21" ] || fail "unexpected output"
LD_LIBRARY_PATH=$work/root/usr/$libdir "$work/root/usr/bin/accel" --help | grep launch >/dev/null ||
  fail "the packaged accel --help failed"
