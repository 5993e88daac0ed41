#!/usr/bin/env bash
# The linux-x86_64-torch classifier jar as a Java user gets it: build it as a packager does
# (packaging/maven/torch-natives-jar.sh: the plain jar's classes and JNI library, the LibTorch
# 2.x configuration's libaccel.so.0 and everything that one links but glibc, libstdc++ and
# zlib), install it beside the plain artifact into a fresh local repository, build the user's
# project (tests/packaging/consumer_java) offline with <classifier>linux-x86_64-torch</classifier>,
# and train on 2 processes under `accel launch` with only that jar on the class path.
# The loader's own record (LD_DEBUG=files) must show LibTorch, libaccel and the system
# libraries libaccel links (libcurl, protobuf, xxhash) loaded from the jar's extracted copy,
# none from the machine (Debian's LibTorch is installed here, as are libcurl and the rest);
# the two ranks extract it once, into the cache, and a second run reuses that copy.
#   maven_torch_natives.sh PLUGIN_REPO WORK MAVEN_DIR VERSION LIBACCEL_SO ACCEL_CLI JAVA SRC_DIR REPO_ROOT
set -euo pipefail
plugins=$1 work=$2 maven_dir=$3 version=$4 libaccel=$5 accel=$6 java=$7 src=$8 root=$9
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d "$plugins/org/apache/maven/plugins/maven-install-plugin" ] ||
  fail "$plugins has no Maven plugins: run scripts/java-deps.sh"
base=$maven_dir/libaccel-$version
for f in "$base.jar" "$base.pom" "$base-sources.jar" "$base-javadoc.jar"; do
  [ -f "$f" ] || fail "no $f: the plain Maven artifact comes from a build with the Java binding (build/java/maven)"
done

rm -rf "$work" && mkdir -p "$work"
classifier=linux-x86_64-torch
torch_jar=$work/libaccel-$version-$classifier.jar
start=$SECONDS
"$root/packaging/maven/torch-natives-jar.sh" "$base.jar" "$libaccel" "$torch_jar"
echo "built in $((SECONDS - start)) s"

cp -r "$plugins" "$work/repo"
rm -rf "$work/repo/org/libaccel/libaccel"
"$root/packaging/maven/install.sh" "$work/repo" "$base.pom" "$base.jar" "$base-sources.jar" "$base-javadoc.jar" \
  "$classifier=$torch_jar"
installed=$work/repo/org/libaccel/libaccel/$version/libaccel-$version-$classifier.jar
[ -f "$installed" ] || fail "the repository lacks $(basename "$installed"): $(ls "$(dirname "$installed")")"
listing=$(unzip -l "$installed")
natives=META-INF/native/linux-x86_64
for f in libraries.txt libaccel_jni.so libaccel.so.0 libtorch_cpu.so libc10.so libgomp.so.1 libcurl.so.4 \
         org/libaccel/Accelerator.class; do
  grep -E " ($natives/)?$f\$" <<<"$listing" >/dev/null || fail "the $classifier jar lacks $f"
done
for f in libc.so.6 libstdc++.so.6 libgcc_s.so.1 libz.so.1; do
  grep -E " $natives/${f//+/\\+}\$" <<<"$listing" >/dev/null && fail "the $classifier jar bundles the system's $f"
done
unzip -p "$installed" $natives/libraries.txt >"$work/libraries.txt"
# libaccel_jni.so last, libaccel.so.0 just before it (it needs all the others), libc10 before libtorch_cpu.
tail -1 "$work/libraries.txt" | grep -E '^[0-9]+ libaccel_jni\.so$' >/dev/null || fail "libaccel_jni.so is not loaded last"
tail -2 "$work/libraries.txt" | head -1 | grep -E '^[0-9]+ libaccel\.so\.0$' >/dev/null ||
  fail "libaccel.so.0 is not loaded right before the JNI library"
[ "$(grep -n ' libc10.so$' "$work/libraries.txt" | cut -d: -f1)" -lt "$(grep -n ' libtorch_cpu.so$' "$work/libraries.txt" | cut -d: -f1)" ] ||
  fail "libc10.so is not loaded before libtorch_cpu.so"
# libaccel and the JNI library find what they need beside them, nothing in a build tree; the
# JNI library needs no LibTorch of its own (bindings/CMakeLists.txt: accel_link_c_abi).
mkdir "$work/unpacked" && unzip -q -d "$work/unpacked" "$installed" $natives/libaccel.so.0 $natives/libaccel_jni.so
for f in libaccel.so.0 libaccel_jni.so; do
  readelf -d "$work/unpacked/$natives/$f" | grep -E 'R(UN)?PATH' | grep -F '[$ORIGIN]' >/dev/null ||
    fail "$f's RUNPATH is not \$ORIGIN: $(readelf -d "$work/unpacked/$natives/$f" | grep -E 'R(UN)?PATH')"
done
jni_needs=$(readelf -d "$work/unpacked/$natives/libaccel_jni.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
grep -E 'torch|c10' <<<"$jni_needs" >/dev/null && fail "libaccel_jni.so links LibTorch itself: $(echo $jni_needs)"

cp -r "$src" "$work/project"
cd "$work/project"
mvn -o -B -q -Dmaven.repo.local="$work/repo" -Dlibaccel.version="$version" -Dlibaccel.classifier=$classifier \
  compile dependency:build-classpath -Dmdep.outputFile=classpath.txt
classpath=target/classes:$(cat classpath.txt)
grep -F "libaccel-$version-$classifier.jar" classpath.txt >/dev/null || fail "the class path lacks the $classifier jar: $(cat classpath.txt)"
grep -F "libaccel-$version.jar" classpath.txt >/dev/null && fail "the class path holds the plain jar too: $(cat classpath.txt)"

# LD_DEBUG=files: "calling init: PATH" for every library the loader initialises, one file per process.
cache=$work/cache
run() {
  local tag=$1
  mkdir -p "$work/ld-$tag"
  output=$(env -u LD_LIBRARY_PATH LD_DEBUG=files LD_DEBUG_OUTPUT="$work/ld-$tag/trace" \
           "$accel" launch --num_processes 2 "$java" -Dorg.libaccel.native.cache="$cache" \
           -cp "$classpath" example.TrainTwoProcesses 2>&1) || { echo "$output"; fail "the consumer failed ($tag)"; }
  echo "$output"
  grep -E "final loss [0-9.]+ on 2 processes" <<<"$output" >/dev/null || fail "no final loss line ($tag)"
}
run first
extracted=$(find "$cache" -mindepth 1 -maxdepth 1 -type d)
[ "$(wc -l <<<"$extracted")" = 1 ] || fail "the cache holds other than one extracted copy: $(ls -a "$cache")"
[ -f "$extracted/libtorch_cpu.so" ] || fail "no libtorch_cpu.so in $extracted"
ls -a "$cache" | grep -F .extracting- >/dev/null && fail "a staging directory was left in $cache"
# The JVMs of the ranks (accel launch's own process has no LibTorch): each loaded these from the copy.
inits=$(cat "$work"/ld-first/trace.* | sed -n 's/.*calling init: //p' | sort -u)
for library in libtorch_cpu.so libc10.so libaccel.so.0 libaccel_jni.so libcurl.so.4 libxxhash.so.0 libprotobuf.so; do
  paths=$(grep -E "/${library//./\\.}[.0-9]*\$" <<<"$inits" || true)
  [ -n "$paths" ] || fail "$library was never loaded: $inits"
  grep -v "^$extracted/" <<<"$paths" >/dev/null && fail "$library loaded from outside the jar's copy: $paths"
done
grep -E 'libtorch|libc10' <<<"$inits" | grep -v "^$extracted/" >/dev/null &&
  fail "a LibTorch library from the machine was loaded: $(grep -E 'libtorch|libc10' <<<"$inits")"
before=$(stat -c '%i %Y' "$extracted/libtorch_cpu.so")
run second
[ "$(stat -c '%i %Y' "$extracted/libtorch_cpu.so")" = "$before" ] || fail "the second run extracted the libraries again"
echo "ok: $(grep -c '^[0-9]' "$work/libraries.txt") libraries from the $classifier jar ($(( $(stat -c %s "$installed") / 1048576 )) MiB), extracted once to $extracted"
# Half a gigabyte in three copies (jar, installed jar, extracted): not kept after a pass.
rm -rf "$torch_jar" "$work/repo" "$cache" "$work/unpacked"
