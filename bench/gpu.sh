#!/usr/bin/env bash
# The single-GPU comparison (issue: performance, "GPU"): libaccel's C++ API
# against Python Accelerate and a plain PyTorch loop on the same card, MLP and
# CNN, fp32 and bf16. Contestants alternate within each repeat; the table
# (bench/gpu_report.py) shows medians. Builds nothing: run scripts/build-cuda.sh first.
#   bench/gpu.sh [--build-dir build-cuda] [--reps 3] [--log FILE]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build-cuda"
reps=3
log=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --reps) reps="$2"; shift ;;
    --log) log="$2"; shift ;;
    *) echo "gpu.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
python="${PYTHON:-python3}"
[ -x "$build/bin/accel_bench" ] || { echo "gpu.sh: $build/bin/accel_bench missing: run scripts/build-cuda.sh" >&2; exit 2; }
"$python" -c "import torch, accelerate; assert torch.cuda.is_available()" ||
  { echo "gpu.sh: needs a GPU and Python torch + accelerate" >&2; exit 2; }
results=$(mktemp)
trap 'rm -f "$results"' EXIT
steps_for() { case "$1" in mlp) echo 3000 ;; cnn) echo 1000 ;; esac; }

for rep in $(seq "$reps"); do
  for workload in mlp cnn; do
    for precision in no bf16; do
      args=(--workload "$workload" --steps "$(steps_for "$workload")" --warmup 50 --mixed-precision "$precision")
      "$build/bin/accel_bench" "${args[@]}"
      "$python" "$here/torch_bench.py" --device cuda "${args[@]}"
      "$python" "$here/accelerate_bench.py" "${args[@]}"
    done
  done 2>&1 | tee -a "${log:-/dev/null}" | grep '^BENCH_RESULT ' | sed 's/^BENCH_RESULT //' >>"$results"
  echo "gpu.sh: repeat $rep of $reps done" >&2
done
"$python" -c "import torch; print('GPU:', torch.cuda.get_device_name(0), '| torch', torch.__version__)"
"$python" "$here/gpu_report.py" "$results"
