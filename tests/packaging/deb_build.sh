#!/usr/bin/env bash
# Builds the Debian packages from the build tree (packaging/build-deb.sh) and checks that
# they are the ones docs/packaging.md promises (its package table), then their contents
# and dependencies with dpkg-deb.
#   deb_build.sh SOURCE_DIR BUILD_DIR OUT_DIR DEB_VERSION LIBDIR
# A promised package may be missing only when BUILD_DIR/packaging/skipped-packages.txt
# (packaging/bindings.cmake) names it with the toolchain configure did not find.
set -euo pipefail
root=$1 build=$2 out=$3 version=$4 libdir=$5
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$out"
"$root/packaging/build-deb.sh" --no-build "$build" "$out"
arch=$(dpkg --print-architecture)

# The table's rows start "| `package` (section ...": the list README and the docs promise.
promised=$(sed -nE 's/^\| `([a-z0-9.+-]+)` \(section .*/\1/p' "$root/docs/packaging.md" | sort)
[ "$(wc -l <<<"$promised")" -ge 2 ] || fail "no package table found in $root/docs/packaging.md"
skipped=""
if [ -s "$build/packaging/skipped-packages.txt" ]; then
  while read -r pkg why; do
    echo "not built here: $pkg ($why)"
    skipped+="$pkg"$'\n'
  done <"$build/packaging/skipped-packages.txt"
fi
expected=$(comm -23 <(echo "$promised") <(printf '%s' "$skipped" | sort))
built=$(for deb in "$out"/*.deb; do dpkg-deb -f "$deb" Package; done | sort)
missing=$(comm -23 <(echo "$expected") <(echo "$built"))
extra=$(comm -13 <(echo "$promised") <(echo "$built"))
[ -z "$missing" ] || fail "promised in docs/packaging.md but not built: $(echo $missing)"
[ -z "$extra" ] || fail "built but not in docs/packaging.md's table: $(echo $extra)"
echo "packages: $(echo $built)"
bindings=($(comm -23 <(echo "$built") <(printf 'libaccel-dev\nlibaccel0\n')))
runtime=$out/libaccel0_${version}_$arch.deb
dev=$out/libaccel-dev_${version}_$arch.deb
[ -f "$runtime" ] && [ -f "$dev" ] || fail "expected $runtime and $dev; got: $(ls "$out")"

has() {  # has DEB PATH...: every path is in the package
  local deb=$1 listing; shift
  listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
  for p in "$@"; do grep -qx "./$p" <<<"$listing" || fail "$(basename "$deb") lacks /$p"; done
}
lacks() {  # lacks DEB REGEX: no path matches
  if dpkg-deb -c "$1" | awk '{print $6}' | grep -E "$2" >/dev/null; then fail "$(basename "$1") holds $2"; fi
}
has "$runtime" "usr/$libdir/libaccel.so.0" usr/bin/accel usr/libexec/accel/accel-selftest usr/share/doc/libaccel0/copyright \
  usr/share/doc/libaccel0/changelog.Debian.gz
lacks "$runtime" '^\./usr/include/|libaccel\.so$|\.pc$|\.cmake$'
has "$dev" usr/include/accel/accel.h usr/include/accel/accel.hpp "usr/$libdir/libaccel.so" \
  "usr/$libdir/pkgconfig/accel.pc" "usr/$libdir/cmake/accel/accelConfig.cmake" \
  "usr/$libdir/cmake/accel/accelTargets.cmake" usr/share/doc/libaccel-dev/copyright
lacks "$dev" 'libaccel\.so\.0|/bin/'

runtime_depends=$(dpkg-deb -f "$runtime" Depends)
dev_depends=$(dpkg-deb -f "$dev" Depends)
echo "libaccel0 Depends: $runtime_depends"
echo "libaccel-dev Depends: $dev_depends"
for d in 'libtorch[0-9.]+ ' libopenblas0-openmp 'libc6 '; do
  grep -qE "(^|, )$d" <<<"$runtime_depends" || fail "libaccel0 does not depend on $d"
done
grep -qF "libaccel0 (= $version)" <<<"$dev_depends" || fail "libaccel-dev does not depend on libaccel0 (= $version)"
grep -qE '(^|, )libtorch-dev($|,)' <<<"$dev_depends" || fail "libaccel-dev does not depend on libtorch-dev"
dpkg-deb --ctrl-tarfile "$runtime" | tar -xO ./shlibs | grep -x "libaccel 0 libaccel0 (>= $version)" >/dev/null ||
  fail "libaccel0 has no shlibs entry for libaccel.so.0"
dpkg-deb --ctrl-tarfile "$runtime" | tar -xO ./triggers | grep -x "activate-noawait ldconfig" >/dev/null ||
  fail "libaccel0 does not activate the ldconfig trigger"

for pkg in ${bindings[@]+"${bindings[@]}"}; do
  case $pkg in
    python3-libaccel)
      deb=$out/python3-libaccel_${version}_$arch.deb
      [ -f "$deb" ] || fail "no $deb"
      dpkg-deb -c "$deb" | awk '{print $6}' | grep -E '^\./usr/lib/python3/dist-packages/[a-z_]+/_core\.so$' >/dev/null ||
        fail "python3-libaccel has no SWIG module in /usr/lib/python3/dist-packages"
      has "$deb" usr/share/doc/python3-libaccel/copyright
      grep -qF "libaccel0 (= $version)" <<<"$(dpkg-deb -f "$deb" Depends)" || fail "python3-libaccel does not depend on libaccel0" ;;
    libaccel-java)
      deb=$out/libaccel-java_${version}_$arch.deb
      [ -f "$deb" ] || fail "no $deb"
      has "$deb" usr/share/java/libaccel.jar "usr/share/java/libaccel-${version%-*}.jar" "usr/$libdir/jni/libaccel_jni.so" \
        usr/share/doc/libaccel-java/copyright
      grep -qF "libaccel0 (= $version)" <<<"$(dpkg-deb -f "$deb" Depends)" || fail "libaccel-java does not depend on libaccel0" ;;
    golang-libaccel-dev)
      deb=$out/golang-libaccel-dev_${version}_all.deb
      [ -f "$deb" ] || fail "no $deb"
      module=$(sed -nE 's/^module +([^ ]+).*/\1/p' "$root/bindings/go/go.mod")
      go=usr/share/gocode/src/$module
      has "$deb" $go/go.mod $go/accel/accelerator.go $go/internal/core/core.go $go/internal/core/core_wrap.cxx \
        $go/internal/core/accel_bridge.hpp $go/internal/core/cgoflags.go usr/share/doc/golang-libaccel-dev/copyright
      lacks "$deb" '_test\.go$'
      grep -qE '(^|, )libaccel-dev \(>= ' <<<"$(dpkg-deb -f "$deb" Depends)" || fail "golang-libaccel-dev does not depend on libaccel-dev" ;;
    *) fail "unknown binding package $pkg" ;;
  esac
  echo "$pkg: ok"
done
