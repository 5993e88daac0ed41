#!/usr/bin/env bash
# What a packager does: clone the repository, run packaging/build-deb.sh (it configures
# and builds what the packages hold), then the package checks and the consumers of
# deb_build.sh and deb_consumer.sh on the result. Slow (a whole build: ccache helps when
# WORK lies under ccache's base_dir), hence opt-in: -DACCEL_TEST_DEB_FRESH_CLONE=ON.
#   deb_fresh_clone.sh SOURCE_DIR WORK CC LIBDIR DEB_VERSION
set -euo pipefail
src=$1 work=$2 cc=$3 libdir=$4 version=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
git clone -q "$src" "$work/src"
# The clone has no .deps (JUnit, Maven plugins): build-deb.sh needs neither.
ACCEL_BUILD_JOBS=${ACCEL_BUILD_JOBS:-2} "$work/src/packaging/build-deb.sh" "$work/src/build" "$work/debs"
# deb_build.sh rebuilds the packages (--no-build) from the clone's build tree and checks them
# against the list docs/packaging.md promises.
"$here/deb_build.sh" "$work/src" "$work/src/build" "$work/debs" "$version" "$libdir"
"$here/deb_consumer.sh" "$work/debs" "$work/consumer" "$here/consumer_c" "$cc" "$libdir" "${version%-*}"
