#!/usr/bin/env bash
# The packages as a user gets them, without touching this machine: apt resolves their
# dependencies (apt-get --simulate), and a C program builds with the pkg-config file of
# libaccel-dev unpacked into a scratch root (PKG_CONFIG_SYSROOT_DIR) and runs against
# the libaccel.so.0 of libaccel0; the unpacked `accel --help` runs.
# The binding packages that were built are used the same way: the Python module
# imports and computes, a Java program compiled against /usr/share/java/libaccel.jar
# runs with the JNI library of libaccel-java, and the Go sources are where Go looks.
#   deb_consumer.sh OUT_DIR WORK_DIR CONSUMER_SOURCE_DIR CC LIBDIR VERSION
set -euo pipefail
out=$1 work=$2 src=$3 cc=$4 libdir=$5 version=$6
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work/root"
apt-get install --simulate --no-install-recommends "$out"/*.deb \
  >"$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt cannot install the packages"; }
for deb in "$out"/*.deb; do
  p=$(dpkg-deb -f "$deb" Package)
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

lib=$work/root/usr/$libdir
if ls "$out"/python3-libaccel_*.deb >/dev/null 2>&1; then
  init=$(ls "$work"/root/usr/lib/python3/dist-packages/*/__init__.py)
  module=$(basename "$(dirname "$init")")
  output=$(PYTHONPATH=$work/root/usr/lib/python3/dist-packages LD_LIBRARY_PATH=$lib /usr/bin/python3 -c "
import $module as accel, sys
assert accel.__file__.startswith('$work/root/'), accel.__file__
t = accel.tensor([1.0, 2.0, 3.0])
print('python', accel.version(), float(t.sum().item()))")
  echo "$output"
  [ "$output" = "python ${version%-*} 6.0" ] || fail "python3-libaccel: unexpected output"
fi
if ls "$out"/libaccel-java_*.deb >/dev/null 2>&1; then
  # Installed, the JNI directory is on the JDK's default java.library.path (Debian's JDK).
  java -XshowSettings:properties -version 2>&1 | grep -E "java.library.path.*/usr/$libdir/jni|^ +/usr/$libdir/jni$" >/dev/null ||
    fail "/usr/$libdir/jni is not on this JDK's java.library.path"
  jar=$work/root/usr/share/java/libaccel.jar
  [ -L "$jar" ] && [ -f "$jar" ] || fail "$jar is not a link to the versioned jar"
  mkdir -p "$work/java"
  cat >"$work/java/Consumer.java" <<'JAVA'
import org.libaccel.Accelerator;
import org.libaccel.Tensor;

public class Consumer {
  public static void main(String[] args) {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Tensor t = Tensor.of(new float[] {1, 2, 3});
         Tensor sum = t.sum()) {
      System.out.println("java " + acc.numProcesses() + " " + sum.item());
    }
  }
}
JAVA
  javac -d "$work/java" -cp "$jar" "$work/java/Consumer.java"
  output=$(LD_LIBRARY_PATH=$lib java -Djava.library.path="$lib/jni" -cp "$jar:$work/java" Consumer)
  echo "$output"
  [ "$output" = "java 1 6.0" ] || fail "libaccel-java: unexpected output"
fi
if ls "$out"/golang-libaccel-dev_*.deb >/dev/null 2>&1; then
  # Under /usr/share/gocode/src/<module path>, the path its go.mod names.
  mod=$(find "$work/root/usr/share/gocode/src" -name go.mod -print -quit)
  [ -n "$mod" ] || fail "golang-libaccel-dev: no go.mod under /usr/share/gocode/src"
  module=$(sed -nE 's/^module +([^ ]+).*/\1/p' "$mod")
  [ "$mod" = "$work/root/usr/share/gocode/src/$module/go.mod" ] ||
    fail "golang-libaccel-dev: $mod is not at /usr/share/gocode/src/$module"
  echo "go: $module in ${mod%/go.mod}"
fi
