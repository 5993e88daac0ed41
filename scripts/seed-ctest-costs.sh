#!/usr/bin/env bash
# seed-ctest-costs.sh BUILD_DIR: gives a build tree without test history the
# per-test times of tests/ctest-costs.txt (CTest's own CTestCostData.txt format:
# name, runs, seconds), so that `ctest -j` starts the longest tests first instead
# of in declaration order, where a 50-second test started last leaves a core idle
# at the end. A tree that has run its tests keeps its own, newer figures. Stale or
# missing names only change the order, never what runs. Refresh the file from a
# full run: merge build*/Testing/Temporary/CTestCostData.txt, keeping the larger time.
set -euo pipefail
cd "$(dirname "$0")/.."
target="$1/Testing/Temporary/CTestCostData.txt"
[ -f "$target" ] || install -D -m 644 tests/ctest-costs.txt "$target"
