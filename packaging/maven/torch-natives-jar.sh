#!/usr/bin/env bash
# Builds the classifier jar org.libaccel:libaccel:V:linux-x86_64-torch: the plain Maven jar's
# classes and JNI library with, instead of its libaccel.so.0, a libaccel.so.0 built against
# the LibTorch inside PyPI's torch wheel (the LibTorch 2.x configuration, build-torch2) and
# every library that one needs but glibc's, libstdc++'s and zlib (the libraries manylinux
# lets every Linux provide): LibTorch's CPU libraries and the two CUDA runtime libraries
# libtorch_cpu.so names, and the system libraries libaccel links (libcurl and its own,
# protobuf, xxhash, sqlite). So a Java user needs Maven and a JDK, nothing from apt.
#
# The JNI library is the plain jar's: it calls libaccel only through the C ABI
# (include/accel/accel.h), which both LibTorch configurations export alike
# (packaging_abi_unchanged), and finds libaccel.so.0 by its SONAME.
#
# META-INF/native/<platform>/libraries.txt lists the files, dependencies before their users,
# with their sizes and a digest of them all: org.libaccel.NativeLibrary extracts them once into
# a cache directory named by the digest and loads them in that order.
#   torch-natives-jar.sh PLAIN_JAR LIBACCEL_SO OUT_JAR
# libaccel.so.0's RUNPATH, which names the build tree's torch, becomes $ORIGIN through
# origin-runpath.cmake, as the JNI library's does in bindings/java/maven.cmake.
set -euo pipefail
plain_jar=$1 libaccel=$2 out=$3
platform=linux-x86_64
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$plain_jar" ] || { echo "torch-natives-jar: no plain jar $plain_jar" >&2; exit 1; }
[ -f "$libaccel" ] || { echo "torch-natives-jar: no library $libaccel" >&2; exit 1; }
plain_jar=$(realpath "$plain_jar") libaccel=$(realpath "$libaccel") out=$(realpath -m "$out")
# What libaccel reaches through its RUNPATH must be a LibTorch 2.x (torch's own libc10.so,
# not Debian's libc10.so.1.13).
resolved=$(ldd "$libaccel")
if grep -E 'not found' <<<"$resolved" >/dev/null; then
  echo "torch-natives-jar: $libaccel has unresolved libraries:" >&2; grep 'not found' <<<"$resolved" >&2; exit 1
fi
grep -E '^\s*libtorch_cpu\.so => ' <<<"$resolved" >/dev/null ||
  { echo "torch-natives-jar: $libaccel does not link the torch wheel's libtorch_cpu.so" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/torch-natives-jar.XXXXXX")
trap 'rm -rf "$work"' EXIT
tree=$work/tree natives=$work/tree/META-INF/native/$platform
mkdir -p "$tree"
(cd "$tree" && unzip -q "$plain_jar")
[ -f "$natives/libaccel_jni.so" ] || { echo "torch-natives-jar: $plain_jar bundles no libaccel_jni.so" >&2; exit 1; }
mv "$tree/META-INF/MANIFEST.MF" "$work/MANIFEST.MF"
rm -f "$natives/libaccel.so.0"

# The libraries every Linux has (manylinux's policy): never bundled, the process's own are used.
system='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|librt\.so\.1|libpthread\.so\.0|libresolv\.so\.2|libutil\.so\.1|libnsl\.so\.1|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libz\.so\.1|linux-vdso\.so\.1)$'
declare -A path_of
while read -r name arrow path _; do
  [ "$arrow" = "=>" ] && [ -n "$path" ] || continue
  grep -Eq "$system" <<<"$name" && continue
  path_of[$name]=$(realpath "$path")
done <<<"$resolved"

# Dependencies first: depth-first over each library's NEEDED entries, written after them.
declare -A placed
order=()
place() {
  local name=$1 path=$2 dep
  [ -n "${placed[$name]:-}" ] && return
  placed[$name]=visiting
  for dep in $(readelf -d "$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [ -n "${path_of[$dep]:-}" ] && [ "${placed[$dep]:-}" != visiting ] && place "$dep" "${path_of[$dep]}"
  done
  placed[$name]=done
  order+=("$name")
}
place libaccel.so.0 "$libaccel"
for name in "${!path_of[@]}"; do place "$name" "${path_of[$name]}"; done

for name in "${order[@]}"; do
  if [ "$name" = libaccel.so.0 ]; then
    strip --strip-unneeded -o "$natives/$name" "$libaccel"
    cmake -DFILE="$natives/$name" -P "$here/origin-runpath.cmake" >/dev/null
  else
    cp "${path_of[$name]}" "$natives/$name"
  fi
done
order+=(libaccel_jni.so)

{
  echo "# libaccel's native libraries for $platform, dependencies first (org.libaccel.NativeLibrary)"
  echo "digest $(cd "$natives" && for f in "${order[@]}"; do printf '%s ' "$f"; sha256sum <"$f"; done | sha256sum | cut -c1-64)"
  for f in "${order[@]}"; do echo "$(stat -c %s "$natives/$f") $f"; done
} >"$natives/libraries.txt"

mkdir -p "$(dirname "$out")"
rm -f "$out"
"${JAR:-jar}" --create --file "$out" --manifest "$work/MANIFEST.MF" -C "$tree" .
echo "torch-natives-jar: $(basename "$out"): ${#order[@]} libraries, $(( $(stat -c %s "$out") / 1048576 )) MiB"
