#!/usr/bin/env bash
# What a user does with the wheel: build it with `pip wheel` from a copy of the
# tree that has no build/, install it into a fresh venv, and train on 2
# processes with the venv's `accel launch`, outside the source tree.
# Usage: wheel_install.sh REPO WORK_DIR BUILD_PYTHON
#   BUILD_PYTHON has scikit-build-core (scripts/requirements-test.txt), so the
#   build runs offline (--no-build-isolation); `pip wheel .` with network
#   fetches the same pinned backend itself.
set -euo pipefail
repo=$1 work=$2 build_python=$3
rm -rf "$work" && mkdir -p "$work/src"

# The tracked files (as the working tree has them), as a fresh clone has them.
git -C "$repo" ls-files -z |
  (cd "$repo" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
  tar -C "$repo" --null -T - -cf - | tar -C "$work/src" -xf -
test ! -e "$work/src/build"

# ccache: the copy's build/ is laid out like the tree's, so with paths relative to
# a base directory holding both (the copy lies under the tree's build/) and the
# build directory out of the key, scripts/build.sh's objects are reused.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$repo} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# The compilers a plain CMake build picks (scikit-build-core would take Python's
# x86_64-linux-gnu-g++, another command line for ccache).
export CC=${CC:-cc} CXX=${CXX:-c++}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
(cd "$work/src" && env -u PYTHONPATH "$build_python" -m pip wheel -q --disable-pip-version-check \
   --no-build-isolation --no-deps --config-settings=build-dir=build -w "$work/dist" .)
wheel=$(ls "$work"/dist/libaccel-*.whl)
echo "built $(basename "$wheel")"

# What the wheel holds: the extension finds libaccel beside it through $ORIGIN.
mkdir "$work/unpacked" && (cd "$work/unpacked" && python3 -m zipfile -e "$wheel" .)
for f in accel/__init__.py accel/accelerator.py accel/core.py accel/libaccel.so.0 accel/bin/accel accel/bin/accel-selftest; do
  test -f "$work/unpacked/$f" || { echo "wheel lacks $f" >&2; exit 1; }
done
# One copy of the library (a zip has no links), stripped of RelWithDebInfo's debug info.
if ls "$work"/unpacked/accel/libaccel.so.0.* >/dev/null 2>&1; then echo "wheel holds libaccel twice" >&2; exit 1; fi
if readelf -S "$work/unpacked/accel/libaccel.so.0" | grep -F .debug_info >/dev/null; then
  echo "libaccel.so.0 in the wheel is not stripped" >&2; exit 1
fi
ext=$(ls "$work"/unpacked/accel/_core*.so)
readelf -d "$ext" | grep -q 'RUNPATH.*\[\$ORIGIN\]' || { readelf -d "$ext" >&2; echo "no RUNPATH \$ORIGIN" >&2; exit 1; }
# As docs/packaging.md says: accel-selftest finds libaccel.so.0 one folder up; accel links none.
readelf -d "$work/unpacked/accel/bin/accel-selftest" | grep -q 'RUNPATH.*\[\$ORIGIN/\.\.\]' ||
  { echo "accel-selftest has no RUNPATH \$ORIGIN/.." >&2; exit 1; }
if readelf -d "$work/unpacked/accel/bin/accel" | grep -E 'R(UN)?PATH' >/dev/null; then
  echo "accel has a RUNPATH, though it links no libaccel" >&2; exit 1
fi
if readelf -d "$work"/unpacked/accel/libaccel.so.0 "$ext" | grep -E 'R(UN)?PATH' | grep -q "$repo\|$work"; then
  echo "a RUNPATH points into the build" >&2; exit 1
fi

# A fresh venv. It sees Debian's packages only for numpy (offline); the wheel
# needs no Python torch: the extension links the system LibTorch.
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
rm -rf "$work/src" "$work/unpacked"
mkdir "$work/run" && cd "$work/run"
export -n PYTHONPATH VIRTUAL_ENV 2>/dev/null || true
unset PYTHONPATH VIRTUAL_ENV
version=$(sed -n 's/^#define ACCEL_VERSION_\(MAJOR\|MINOR\|PATCH\) \+\([0-9]\+\).*/\2/p' "$repo/include/accel/accel.h" | paste -sd.)
"$work/venv/bin/python" - "$work/venv" "$version" <<'PY'
import sys, accel
venv, version = sys.argv[1:]
assert accel.__file__.startswith(venv), accel.__file__
assert accel.__version__ == version, (accel.__version__, version)
assert "torch" not in sys.modules, "the binding imported Python torch"
print("accel", accel.__version__, "from", accel.__file__)
PY
"$work/venv/bin/accel" --version
OMP_NUM_THREADS=1 "$work/venv/bin/accel" launch --num_processes 2 --master_port 0 \
  "$repo/examples/python/train_fashion_mnist.py" --epochs 1 --max-steps 20 | tee "$work/train.log"
grep -Eq 'epoch 1: loss [0-9.]+, test accuracy' "$work/train.log"
