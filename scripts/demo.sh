#!/usr/bin/env bash
# The demo: install what it needs, build only what it runs (the library, the
# `accel` command and the C example), then train the C example on Fashion-MNIST
# with 2 processes over Gloo. `scripts/demo.sh lm` trains the C byte-level GPT
# (examples/c/train_gpt_fortunes.c) on Debian's fortunes instead. The tests,
# bindings and benchmarks are built by the test command (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo
program=train_fashion_mnist
[ "${1:-}" = lm ] && program=train_gpt_fortunes
# ccache keyed on paths relative to the tree, as scripts/build.sh does.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
# A tree the test command configured is built as it is; a fresh one is configured
# without tests, bindings and benchmarks (scripts/build.sh turns them on again),
# and with line tables only for debug information (-g1: a fifth less compile
# time than -g; backtraces and perf still name functions and lines).
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCEL_BUILD_TESTS=OFF \
    -DACCEL_BUILD_BINDINGS=OFF -DACCEL_BUILD_BENCH=OFF \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
fi
echo "demo: building the library, the accel command and $program (ninja -j${ACCEL_BUILD_JOBS:-2})" >&2
cmake --build build -j "${ACCEL_BUILD_JOBS:-2}" --target accel_cli "$program"
if [ "${1:-}" = lm ]; then
  shift
  exec build/bin/accel launch --nproc_per_node 2 build/bin/train_gpt_fortunes "$@"
fi
exec build/bin/accel launch --nproc_per_node 2 build/bin/train_fashion_mnist --epochs 2 "$@"
