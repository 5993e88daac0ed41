#!/usr/bin/env bash
# The LM bench: tokens/s and peak RSS (VmHWM) training transformers' GPT-2
# (bench/lm/lm_model.py: 6 layers, n_embd 256, 4 heads, seq 128, vocab 256,
# batch 8 per process, AdamW, dropout 0) with
#   accel_c     libaccel from C over the TorchScript export (bench/lm/lm_bench_c.c)
#   accelerate  Python Accelerate 0.22 on the same HF model (bench/lm/lm_bench.py)
#   torch       a plain PyTorch loop (torch_ddp: DDP over Gloo at 2 processes)
# at 1 process x 2 threads and 2 processes x 1 thread. Contestants alternate
# within each round (starting at a different one each round); the table shows
# medians and the min-max spread over rounds, and ratios against Accelerate.
#   bench/lm_bench.sh [--build-dir DIR] [--rounds N] [--steps N] [--warmup N]
# Needs build/bin/lm_bench_c (-DACCEL_BUILD_BENCH=ON) and a Python with torch,
# transformers 4.49 and accelerate 0.22 (PYTHON, default .venv/bin/python).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" rounds=3 steps=20 warmup=3
python="${PYTHON:-$here/../.venv/bin/python}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --warmup) warmup="$2"; shift ;;
    *) echo "lm_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bench_c="${LM_BENCH_C:-$build/bin/lm_bench_c}"
for program in "$build/bin/accel" "$bench_c"; do
  [ -x "$program" ] || { echo "lm_bench.sh: $program missing: build with -DACCEL_BUILD_BENCH=ON" >&2; exit 2; }
done
work="$(mktemp -d -t accel-lm-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$python" "$here/lm/lm_model.py" "$work" || { echo "lm_bench.sh: exporting the model failed" >&2; exit 1; }
results="$work/results"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"

run() {  # run NPROC CONTESTANT COMMAND...
  local nproc="$1" name="$2"; shift 2
  local threads=$(( nproc == 1 ? 2 : 1 )) out
  local args=(--steps "$steps" --warmup "$warmup" --threads "$threads")
  if [ "$nproc" -eq 1 ]; then
    out="$(OMP_NUM_THREADS=$threads timeout 900 "$@" "${args[@]}" 2>&1)"
  else
    out="$(OMP_NUM_THREADS=$threads timeout 900 "$build/bin/accel" launch --nproc_per_node "$nproc" \
           --master_port 0 "$@" "${args[@]}" 2>&1)"
  fi
  local lines
  lines="$(printf '%s\n' "$out" | grep -o 'BENCH_RESULT .*' | sed 's/^BENCH_RESULT //')"
  if [ "$(printf '%s' "$lines" | grep -c contestant)" -ne "$nproc" ]; then
    echo "lm_bench.sh: FAILED $name x$nproc:" >&2; printf '%s\n' "$out" | tail -15 >&2; return 1
  fi
  printf '%s\n' "$lines" | sed "s/^{/{\"round\":$round,\"load\":$(cut -d' ' -f1 /proc/loadavg),/" >> "$results"
  echo "  round $round x$nproc $name: $(printf '%s\n' "$lines" | head -1 | grep -o '"tokens_per_s":[0-9.]*')"
}

contestants=(accel_c accelerate torch)
for ((round = 0; round < rounds; ++round)); do
  for nproc in 1 2; do
    for ((i = 0; i < ${#contestants[@]}; ++i)); do
      name="${contestants[$(( (i + round) % ${#contestants[@]} ))]}"
      case "$name" in
        accel_c) run "$nproc" accel_c "$bench_c" "$work/model.pt" ;;
        *) run "$nproc" "$name" "$python" "$here/lm/lm_bench.py" "$name" ;;
      esac
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$python" "$here/lm/lm_report.py" "$results"
