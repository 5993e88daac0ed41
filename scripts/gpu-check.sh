#!/usr/bin/env bash
# The GPU session's checks, in one call on the device machine (docs/gpu.md):
#   run(command="bash scripts/gpu-check.sh", carry=[".deps/usr", ".lm"], timeout_s=480)
# after scripts/gpu-prepare.sh here. Builds the library, the Cuda* tests and the
# LM bench against the machine's pip torch (about 80 s on 16 cores), runs the
# tests, then the LM bench against Python Accelerate (about 4 minutes).
# Then, with GPU_CHECK_UNIT_TESTS=1 (the default), the CPU unit tests of this
# CUDA build (accel_unit_tests with ACCELERATE_USE_CPU=1; about 2 minutes).
# Logs go to $OUT (the device tool brings them back). GPU_CHECK_BENCH=0 skips
# the bench; LM_ROUNDS / LM_STEPS / LM_TIMEOUT size it. GPU_CHECK_CTEST=REGEX
# then builds the launcher and the dist_* programs and runs those CTest tests
# on the CPU (Gloo) of this CUDA build (ACCELERATE_USE_CPU=1).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
{ nvidia-smi -L; nproc
  python3 -c "import torch, transformers, accelerate; print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__)"
} 2>&1 | tee "$OUT/info.txt"
deps=$PWD/.deps/usr
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$(date +%s)
ACCEL_BUILD_TARGETS="accel accel_cuda_tests lm_bench_c" DEPS_PREFIX=$deps \
  scripts/build-cuda.sh -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1
status=$?
echo "build: exit $status in $(( $(date +%s) - start )) s" | tee -a "$OUT/info.txt"
if [ $status -ne 0 ]; then grep -B3 -A15 -m6 -E "error|Error" "$OUT/build.log" | head -120; exit 1; fi
timeout 150 build-cuda/tests/accel_cuda_tests 2>&1 | tee "$OUT/cuda_tests.log" | tail -45
if [ "${GPU_CHECK_BENCH:-1}" = 1 ]; then
  timeout 60 build-cuda/bin/lm_bench_c .lm/model.pt --steps 20 --warmup 5 --gpu 1 2>&1 | tail -3
  [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "gpu-check: lm_bench_c failed"; exit 1; }
  timeout "${LM_TIMEOUT:-300}" bench/lm_gpu.sh --model .lm/model.pt --rounds "${LM_ROUNDS:-2}" --steps "${LM_STEPS:-300}" 2>&1 |
    tee "$OUT/lm_gpu.log" | tail -25
fi
[ "${GPU_CHECK_UNIT_TESTS:-1}" = 1 ] || exit 0
start=$(date +%s)
ACCEL_BUILD_TARGETS="accel_unit_tests" DEPS_PREFIX=$deps \
  scripts/build-cuda.sh -DCMAKE_BUILD_TYPE=Release >"$OUT/build_unit_tests.log" 2>&1 ||
  { grep -B3 -A15 -m6 -E "error|Error" "$OUT/build_unit_tests.log" | head -60; exit 1; }
echo "unit tests build: $(( $(date +%s) - start )) s" | tee -a "$OUT/info.txt"
(cd build-cuda/tests && ACCELERATE_USE_CPU=1 OMP_NUM_THREADS=2 timeout 240 ./accel_unit_tests --gtest_brief=1) \
  >"$OUT/unit_tests.log" 2>&1
echo "unit tests: exit $?" | tee -a "$OUT/info.txt"
grep -E "FAILED|PASSED|tests ran" "$OUT/unit_tests.log" | tail -15
[ -n "${GPU_CHECK_CTEST:-}" ] || exit 0
ACCEL_BUILD_TARGETS="accel_cli accel_selftest dist_tensor_parallel dist_tensor_parallel_c dist_script_tensor_parallel dist_gradients dist_full_shard" DEPS_PREFIX=$deps \
  scripts/build-cuda.sh -DCMAKE_BUILD_TYPE=Release >"$OUT/build_dist.log" 2>&1 ||
  { grep -B3 -A15 -m6 -E "error|Error" "$OUT/build_dist.log" | head -60; exit 1; }
(cd build-cuda && ACCELERATE_USE_CPU=1 timeout 300 ctest -j4 -R "$GPU_CHECK_CTEST" --output-on-failure) >"$OUT/ctest.log" 2>&1
echo "ctest $GPU_CHECK_CTEST: exit $?" | tee -a "$OUT/info.txt"
tail -15 "$OUT/ctest.log"
