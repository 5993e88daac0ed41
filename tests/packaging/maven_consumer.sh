#!/usr/bin/env bash
# The Maven artifact as a Java user gets it: install org.libaccel:libaccel (jar, sources,
# javadoc) into a fresh local repository that holds only Maven's plugins, build the
# user's project tests/packaging/consumer_java offline against it, and run it on 2
# processes under `accel launch` with nothing but the dependency's jar on the class path:
# no -Djava.library.path, no LD_LIBRARY_PATH (the jar's bundled JNI library loads).
#   maven_consumer.sh PLUGIN_REPO WORK POM JAR SOURCES JAVADOC VERSION ACCEL_CLI JAVA SRC_DIR INSTALL_SH
set -euo pipefail
plugins=$1 work=$2 pom=$3 jar=$4 sources=$5 javadoc=$6 version=$7 accel=$8 java=$9 src=${10} install=${11}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -d "$plugins/org/apache/maven/plugins/maven-install-plugin" ] ||
  fail "$plugins has no Maven plugins: run scripts/java-deps.sh"

rm -rf "$work" && mkdir -p "$work"
cp -r "$plugins" "$work/repo"
rm -rf "$work/repo/org/libaccel/libaccel"
"$install" "$work/repo" "$pom" "$jar" "$sources" "$javadoc"
dir=$work/repo/org/libaccel/libaccel/$version
for f in "libaccel-$version.jar" "libaccel-$version-sources.jar" "libaccel-$version-javadoc.jar" "libaccel-$version.pom"; do
  [ -f "$dir/$f" ] || fail "the repository lacks $f: $(ls "$dir")"
done
listing=$(unzip -l "$dir/libaccel-$version.jar")
for f in META-INF/native/linux-x86_64/libaccel_jni.so META-INF/native/linux-x86_64/libaccel.so.0 \
         org/libaccel/Accelerator.class; do
  grep -F "$f" <<<"$listing" >/dev/null || fail "the jar lacks $f"
done
unzip -p "$dir/libaccel-$version.jar" META-INF/MANIFEST.MF | tr -d '\r' | grep -x 'Automatic-Module-Name: org.libaccel' >/dev/null ||
  fail "the jar's manifest has no Automatic-Module-Name"
unzip -l "$dir/libaccel-$version-javadoc.jar" | grep -F org/libaccel/Accelerator.html >/dev/null || fail "no javadoc"

cp -r "$src" "$work/project"
cd "$work/project"
mvn -o -B -q -Dmaven.repo.local="$work/repo" -Dlibaccel.version="$version" \
  compile dependency:build-classpath -Dmdep.outputFile=classpath.txt
classpath=target/classes:$(cat classpath.txt)
grep -F "org/libaccel/libaccel/$version/libaccel-$version.jar" classpath.txt >/dev/null ||
  fail "the class path does not come from the repository: $(cat classpath.txt)"
unset LD_LIBRARY_PATH
output=$("$accel" launch --num_processes 2 "$java" -cp "$classpath" example.TrainTwoProcesses 2>&1) ||
  { echo "$output"; fail "the consumer failed"; }
echo "$output"
grep -E "final loss [0-9.]+ on 2 processes" <<<"$output" >/dev/null || fail "no final loss line"
