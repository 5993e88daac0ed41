#!/usr/bin/env bash
# What a Python user does with the wheel, next to the torch they already have:
# build it with `pip wheel` from a copy of the tree that has no build/, repair it
# with auditwheel (the small system libraries bundled, torch's excluded), install
# it into a fresh venv that sees nothing from apt but Python and the user's PyPI
# torch, and train on 2 processes with the venv's `accel launch`, outside the tree.
# Usage: python_wheel.sh REPO WORK_DIR BUILD_PYTHON TORCH_PACKAGE USER_PYTHON
#   BUILD_PYTHON has scikit-build-core and auditwheel (scripts/requirements-test.txt),
#     so the build runs offline (--no-build-isolation); `pip wheel .` with network
#     installs the pinned backend and torch itself.
#   TORCH_PACKAGE: the torch package directory the wheel builds against (the LibTorch
#     2.x configuration's, scripts/torch2-env.sh).
#   USER_PYTHON: a Python whose environment holds PyPI's torch (scripts/torch2-python-env.sh):
#     the user's torch, which the fresh venv sees through a .pth file.
set -euo pipefail
repo=$1 work=$2 build_python=$3 torch_package=$4 user_python=$5
rm -rf "$work" && mkdir -p "$work/src"

# The tracked files (as the working tree has them), as a fresh clone has them.
git -C "$repo" ls-files -z |
  (cd "$repo" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
  tar -C "$repo" --null -T - -cf - | tar -C "$work/src" -xf -
test ! -e "$work/src/build"

# ccache: the copy's build/ is laid out like the tree's build-torch2/, so with paths
# relative to a base directory holding both (the copy lies under the tree's build
# directory) and the build directory out of the key, the LibTorch 2.x build's objects
# are reused, precompiled header included (src/CMakeLists.txt). The torch package is
# reached through the copy's own .deps link, so its include paths relativize alike.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$repo} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
torch_in_copy=$torch_package
relative=$(realpath --relative-to="$repo" "$torch_package")
if [ "${relative%%/*}" != .. ]; then
  ln -s "$repo/${relative%%/*}" "$work/src/${relative%%/*}"
  torch_in_copy=$work/src/$relative
fi
# Each compile's outcome, to show the cache at work (below).
export CCACHE_STATSLOG=$work/ccache-stats.log
# The compilers a plain CMake build picks (scikit-build-core would take Python's
# x86_64-linux-gnu-g++, another command line for ccache).
export CC=${CC:-cc} CXX=${CXX:-c++}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
start=$SECONDS
(cd "$work/src" && env -u PYTHONPATH "$build_python" -m pip wheel -q --disable-pip-version-check \
   --no-build-isolation --no-deps --config-settings=build-dir=build \
   --config-settings=cmake.define.ACCEL_TORCH_WHEEL="$torch_in_copy" -w "$work/dist" .)
wheel=$(ls "$work"/dist/libaccel-*.whl)
echo "built $(basename "$wheel") in $((SECONDS - start)) s"
if command -v ccache >/dev/null && [ -f "$CCACHE_STATSLOG" ]; then
  compiles=$(grep -c '^# ' "$CCACHE_STATSLOG" || true)
  hits=$(grep -Ec '^(direct|preprocessed)_cache_hit$' "$CCACHE_STATSLOG" || true)
  echo "ccache: $hits of $compiles compiles served from the cache"
  # With the tree's LibTorch 2.x build in the same cache (CTest runs this after it), the
  # library's sources, precompiled header included, come from it: at least half of them
  # must, or the cross-tree reuse is broken (an absolute path in cmake_pch.hxx made it
  # 0). Not all: in a tree rebuilt many times, the sources build-torch2 last recompiled
  # incrementally missed (20 to 38 of 155; evicted, or keyed to a precompiled header other
  # than the cached one: not settled); a second copy then gets all 155 from the first.
  # ACCEL_WHEEL_COLD_CACHE=1 (a cache that never saw that build) skips the check.
  if [ "${ACCEL_WHEEL_COLD_CACHE:-0}" != 1 ]; then
    # Paths are as ccache saw them (relative to the build directory): the library's and the
    # programs' sources and the precompiled header lie under a src/; the SWIG wrapper
    # (bindings/python/), which build-torch2 does not build, does not.
    library=$(awk '/^# /{file=$2} /^# / && file ~ /(^|\/)src\//{n++} END{print n+0}' "$CCACHE_STATSLOG")
    library_hits=$(awk '/^# /{file=$2} /^(direct|preprocessed)_cache_hit$/ && file ~ /(^|\/)src\//{n++} END{print n+0}' \
                   "$CCACHE_STATSLOG")
    echo "ccache: $library_hits of $library library compiles from the cache"
    if [ $((2 * library_hits)) -lt "$library" ]; then
      echo "fewer than half of the library's sources came from build-torch2's ccache entries (evicted?" \
           "ccache -s; ACCEL_WHEEL_COLD_CACHE=1 skips this check); missed:" >&2
      awk '/^# /{file=$2} /^cache_miss$/{print "  " file}' "$CCACHE_STATSLOG" | head -20 >&2
      exit 1
    fi
  fi
fi

# auditwheel: the system libraries libaccel links (libcurl and its own, protobuf,
# xxhash, zlib, yaml-cpp) go into the wheel; torch's come from the torch package.
PATH="$(dirname "$build_python"):$PATH" "$build_python" -m auditwheel repair -w "$work/wheelhouse" \
  --exclude libtorch_cpu.so --exclude libc10.so --exclude libgomp.so.1 "$wheel" >"$work/auditwheel.log" 2>&1 ||
  { cat "$work/auditwheel.log" >&2; exit 1; }
wheel=$(ls "$work"/wheelhouse/libaccel-*.whl)
echo "repaired: $(basename "$wheel")"
case $(basename "$wheel") in
  *-manylinux_2_[0-9]*_x86_64.whl) ;;
  *) echo "auditwheel gave no manylinux tag: $(basename "$wheel")" >&2; cat "$work/auditwheel.log" >&2; exit 1 ;;
esac

# What the wheel holds: the extension finds libaccel beside it through $ORIGIN.
mkdir "$work/unpacked" && (cd "$work/unpacked" && python3 -m zipfile -e "$wheel" .)
for f in accel/__init__.py accel/accelerator.py accel/core.py accel/_wheel.py accel/libaccel.so.0 \
         accel/bin/accel accel/bin/accel-selftest; do
  test -f "$work/unpacked/$f" || { echo "wheel lacks $f" >&2; exit 1; }
done
grep -q "^TORCH_VERSION = \"$("$user_python" -c 'import torch; print(torch.__version__.split("+")[0])')\"" \
  "$work/unpacked/accel/_wheel.py" || { echo "the wheel's torch is not the user's" >&2; exit 1; }
grep -q "^Requires-Dist: torch==" "$work"/unpacked/libaccel-*.dist-info/METADATA ||
  { echo "the wheel does not depend on torch==" >&2; exit 1; }
# One copy of the library (a zip has no links), stripped of RelWithDebInfo's debug info.
if ls "$work"/unpacked/accel/libaccel.so.0.* >/dev/null 2>&1; then echo "wheel holds libaccel twice" >&2; exit 1; fi
if readelf -S "$work/unpacked/accel/libaccel.so.0" | grep -F .debug_info >/dev/null; then
  echo "libaccel.so.0 in the wheel is not stripped" >&2; exit 1
fi
ext=$(ls "$work"/unpacked/accel/_core*.so)
# auditwheel writes it as an RPATH, with its libaccel.libs after $ORIGIN.
readelf -d "$ext" | grep -Eq 'R(UN)?PATH.*\[\$ORIGIN' || { readelf -d "$ext" >&2; echo "no RPATH \$ORIGIN" >&2; exit 1; }
for elf in "$work"/unpacked/accel/*.so* "$work"/unpacked/accel/bin/* "$work"/unpacked/libaccel.libs/*; do
  [ -f "$elf" ] || continue
  if readelf -d "$elf" | grep -E 'R(UN)?PATH' | grep -q "$repo\|$work\|/usr"; then
    echo "a RUNPATH of $(basename "$elf") points outside the wheel: $(readelf -d "$elf" | grep -E 'R(UN)?PATH')" >&2
    exit 1
  fi
done
# The libraries are in the wheel, apart from torch's (the torch package) and those
# manylinux lets every Linux provide.
bundled=$(ls "$work/unpacked/libaccel.libs")
echo "bundled: $(echo $bundled)"
for library in libcurl libprotobuf libxxhash libyaml-cpp; do  # zlib is manylinux's own (below)
  echo "$bundled" | grep -q "^$library" || { echo "the wheel does not bundle $library" >&2; exit 1; }
done
if echo "$bundled" | grep -E '^lib(torch|c10|gomp)' >/dev/null; then echo "the wheel bundles torch's libraries" >&2; exit 1; fi

# The libraries the tag lets every Linux provide (auditwheel's policy for it), which may
# come from the system at run time.
tag=$(basename "$wheel" | sed 's/.*-\(manylinux_[0-9_]*\)_x86_64\.whl/\1/')
"$build_python" - "$tag" >"$work/manylinux-libraries.txt" <<'PY'
import json, sys, auditwheel.policy, pathlib
policies = json.loads((pathlib.Path(auditwheel.policy.__file__).parent / "manylinux-policy.json").read_text())
print("\n".join(next(p for p in policies if p["name"] == sys.argv[1])["lib_whitelist"]))
PY

# A fresh venv without Debian's packages; the user's torch (and numpy) is visible
# through a .pth file, as if installed, so pip's resolver finds torch==VERSION
# satisfied and installs nothing else (--no-index: offline). The venv's own old
# setuptools (Python 3.11's ensurepip) would hide the user's, which torch requires.
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" uninstall -q -y --disable-pip-version-check setuptools
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$user_python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/users-torch.pth"
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
rm -rf "$work/src" "$work/unpacked"
mkdir "$work/run" && cd "$work/run"
export -n PYTHONPATH VIRTUAL_ENV LD_LIBRARY_PATH 2>/dev/null || true
unset PYTHONPATH VIRTUAL_ENV LD_LIBRARY_PATH
version=$(sed -n 's/^#define ACCEL_VERSION_\(MAJOR\|MINOR\|PATCH\) \+\([0-9]\+\).*/\2/p' "$repo/include/accel/accel.h" | paste -sd.)
"$work/venv/bin/python" - "$work/venv" "$version" "$work/manylinux-libraries.txt" <<'PY'
import os, subprocess, sys
venv, version, manylinux_list = sys.argv[1:]

def system_libraries():
    """The shared libraries this process mapped from outside the venvs and packages."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if ".so" in line.split()[-1]}
    return {os.path.basename(p).split(".so")[0] for p in paths if "-packages/" not in p}

# What Python and torch map by themselves: the baseline the wheel may not add to.
baseline = set(subprocess.check_output([sys.executable, "-c", f"""
import torch, os
with open('/proc/self/maps') as maps:
    paths = {{line.split()[-1] for line in maps if '.so' in line.split()[-1]}}
print(' '.join(os.path.basename(p).split('.so')[0] for p in paths if '-packages/' not in p))
"""]).decode().split())
import accel
assert accel.__file__.startswith(venv), accel.__file__
assert accel.__version__ == version, (accel.__version__, version)
import torch
assert torch.__version__.split("+")[0] == accel._libtorch.TORCH_VERSION, (torch.__version__, accel._libtorch.TORCH_VERSION)
# fp16 on the CPU, which LibTorch 2.x runs (1.13 refuses it): as Accelerate on torch 2.x,
# the first step's half gradient overflows at scale 65536 and is skipped, the next is
# taken (the arithmetic: tests/precision/test_cpu_fp16.cpp).
import numpy as np
with accel.Accelerator(cpu=True, mixed_precision="fp16") as acc:
    model = accel.Model.from_json('[{"type": "Linear", "in_features": 100, "out_features": 1}]')
    opt = accel.Optimizer(model, "sgd", lr=0.1)
    acc.prepare(model, opt)
    x, y = accel.tensor(np.zeros((1, 100), np.float32)), accel.tensor(np.full((1, 1), 0.75, np.float32))
    skipped = []
    for _ in range(2):
        opt.zero_grad()
        acc.backward(model(x).loss("mse", y))
        opt.step()
        skipped.append(acc.optimizer_step_was_skipped)
    assert skipped == [True, False], skipped
# The tag's own libraries (glibc's, the GCC runtime, zlib...) may come from the system.
with open(manylinux_list) as listed:
    manylinux = {line.strip().split(".so")[0] for line in listed if line.strip()} | {"ld-linux-x86-64"}
added = system_libraries() - baseline - manylinux
assert not added, f"importing accel mapped system libraries the wheel should bundle: {sorted(added)}"
print("accel", accel.__version__, "from", accel.__file__, "on torch", torch.__version__)
PY
"$work/venv/bin/accel" --version
# accel env runs accel-selftest, a program: it reaches torch's LibTorch without `import torch`.
"$work/venv/bin/accel" env | tee "$work/env.log"
grep -q "LibTorch.*$("$user_python" -c 'import torch; print(torch.__version__.split("+")[0])')" "$work/env.log" ||
  { echo "accel env does not report the torch package's LibTorch" >&2; exit 1; }
OMP_NUM_THREADS=1 "$work/venv/bin/accel" launch --num_processes 2 --master_port 0 \
  "$repo/examples/python/train_fashion_mnist.py" --epochs 1 --max-steps 20 | tee "$work/train.log"
grep -Eq 'epoch 1: loss [0-9.]+, test accuracy' "$work/train.log"

# Another torch is refused by name at import, before its LibTorch meets the extension.
mkdir -p "$work/other-torch/torch"
echo '__version__ = "2.0.1"' >"$work/other-torch/torch/__init__.py"
if PYTHONPATH="$work/other-torch" "$work/venv/bin/python" -c 'import accel' 2>"$work/other.log"; then
  echo "accel imported on torch 2.0.1" >&2; exit 1
fi
grep -q "built for torch .*, but torch 2.0.1 is installed.*pip install torch==" "$work/other.log" ||
  { cat "$work/other.log" >&2; exit 1; }
# No torch at all: the message names the one to install.
rm "$site/users-torch.pth"
if "$work/venv/bin/python" -c 'import accel' 2>"$work/missing.log"; then echo "accel imported without torch" >&2; exit 1; fi
grep -q "runs on PyPI's torch .*, which is not installed (pip install torch==" "$work/missing.log" ||
  { cat "$work/missing.log" >&2; exit 1; }
echo "the wheel works next to the user's torch"
