#!/usr/bin/env bash
# The LM bench on one GPU (issue: real models, "On a lent GPU"): tokens/s of
# lm_model.py's GPT-2 (6 layers, n_embd 256, seq 128, batch 8, AdamW) trained by
#   accel_c            libaccel from C over the TorchScript export (lm_bench_c --gpu 1)
#   accel_c_optimized  with --with-optimized: the same with ACCEL_TORCHSCRIPT_OPTIMIZE=1 (the
#                      graph executor's optimisations; measured 15% slower, docs/benchmarks.md)
#   accelerate         Python Accelerate on the same Hugging Face model, its default attention
#   accelerate_eager   the same with attn_implementation="eager", the attention the export traced
#   torch              a plain PyTorch loop (bf16 through torch.autocast)
# in fp32 and bf16, one process, batches already on the GPU. Contestants
# alternate within each round; the table shows medians, ratios to Accelerate and model FLOPs
# utilisation against the card's measured matmul peak (lm/gpu_peak.py).
#   bench/lm_gpu.sh [--build-dir build-cuda] [--model model.pt] [--rounds 2] [--steps 300] [--warmup 30]
#                   [--with-optimized]
# --model: a TorchScript export made by lm_model.py (default: exported here with $PYTHON).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build-cuda" model="" rounds=2 steps=300 warmup=30 with_optimized=0
python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --model) model="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --warmup) warmup="$2"; shift ;;
    --with-optimized) with_optimized=1 ;;
    *) echo "lm_gpu.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bench_c="$build/bin/lm_bench_c"
[ -x "$bench_c" ] || { echo "lm_gpu.sh: $bench_c missing: run scripts/build-cuda.sh" >&2; exit 2; }
work="$(mktemp -d -t accel-lm-gpu.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
if [ -z "$model" ]; then
  "$python" "$here/lm/lm_model.py" "$work" || { echo "lm_gpu.sh: exporting the model failed" >&2; exit 1; }
  model="$work/model.pt"
fi
results="$work/results"
for round in $(seq "$rounds"); do
  for precision in no bf16; do
    common=(--steps "$steps" --warmup "$warmup" --gpu 1 --mixed-precision "$precision")
    "$bench_c" "$model" "${common[@]}"
    if [ "$with_optimized" = 1 ]; then
      ACCEL_TORCHSCRIPT_OPTIMIZE=1 "$bench_c" "$model" "${common[@]}" |
        sed 's/"contestant":"accel_c"/"contestant":"accel_c_optimized"/'
    fi
    "$python" "$here/lm/lm_bench.py" accelerate "${common[@]}"
    "$python" "$here/lm/lm_bench.py" accelerate --attn eager "${common[@]}"
    "$python" "$here/lm/lm_bench.py" torch "${common[@]}"
  done 2>&1 | grep '^BENCH_RESULT ' | sed 's/^BENCH_RESULT //' | tee -a "$results"  # seen as they come
  echo "lm_gpu.sh: round $round of $rounds done" >&2
done
"$python" "$here/lm/gpu_peak.py" >"$work/peak" || { echo "lm_gpu.sh: measuring the GPU's peak failed" >&2; exit 1; }
cat "$work/peak"
PYTHONPATH="$here/lm" "$python" - "$results" "$work/peak" <<'PY'
import collections, json, statistics, sys
from lm_shapes import flops_per_token
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs[(r["precision"], r["contestant"])].append(r["tokens_per_s"])
peak = json.loads(open(sys.argv[2]).read())
peak_flops = {"no": peak["fp32_tflops"] * 1e12, "bf16": peak["bf16_tflops"] * 1e12}
print(f"GPU: {peak['gpu']} | torch {peak['torch']} | measured peak fp32 {peak['fp32_tflops']} TFLOP/s (TF32 off), "
      f"bf16 {peak['bf16_tflops']} TFLOP/s | {flops_per_token() / 1e6:.1f} MFLOP per trained token")
print("| precision | contestant | tokens/s (median, min-max) | MFU | libaccel vs this | runs |")
print("|---|---|---|---|---|---|")
for (precision, name), tps in sorted(runs.items()):
    ours = runs.get((precision, "accel_c"))
    ratio = f"{statistics.median(ours) / statistics.median(tps):.2f}x" if ours and name != "accel_c" else "-"
    mfu = statistics.median(tps) * flops_per_token() / peak_flops[precision]
    print(f"| {'fp32' if precision == 'no' else precision} | {name} | {statistics.median(tps):.0f} "
          f"({min(tps):.0f}-{max(tps):.0f}) | {100 * mfu:.2f}% | {ratio} | {len(tps)} |")
PY
