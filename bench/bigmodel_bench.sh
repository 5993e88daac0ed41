#!/usr/bin/env bash
# Offloaded inference against Python Accelerate's load_checkpoint_and_dispatch (issue 22):
# a GPT-style JSON model (default 8 blocks of width 512, 102 MB fp32) loaded empty and
# dispatched with device_map="auto" under a CPU budget of 1/4 and 1/2 of the model (the rest
# on disk) and with no budget limit, then greedy generation without a KV cache.
# Contestants (bench/bigmodel/bigmodel_bench.py): libaccel's Python binding and Python
# Accelerate 0.22 on the model's torch.nn twin, each in its own process, alternating each
# round. Prints medians and min-max of tokens/s, load time and peak RSS (VmHWM), ratios to
# Accelerate, and fails if the two generate different tokens or place modules differently.
#   bench/bigmodel_bench.sh [--build-dir DIR] [--rounds N] [--tokens K] [--quick]
# Needs build/python (the Python binding) and .venv (accelerate 0.22). ~3 min for 3 rounds.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" rounds=3 tokens=16 layers=8 width=512
python="${PYTHON:-$here/../.venv/bin/python}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --tokens) tokens="$2"; shift ;;
    --quick) rounds=1 tokens=4 layers=8 width=256 ;;
    *) echo "bigmodel_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -d "$build/python/accel" ] || { echo "bigmodel_bench.sh: $build/python missing: build first" >&2; exit 2; }
"$python" -c "import accelerate" 2>/dev/null || { echo "bigmodel_bench.sh: $python cannot import accelerate" >&2; exit 2; }
work="$(mktemp -d -t accel-bigmodel-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export PYTHONPATH="$build/python" OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
bench="$here/bigmodel/bigmodel_bench.py"
"$python" "$bench" --make-checkpoint "$work/checkpoint" --layers "$layers" --width "$width" || exit 1
bytes=$(stat -c %s "$work/checkpoint/model.safetensors")
echo "model: $((bytes / 1000000)) MB; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
results="$work/results"
for ((r = 0; r < rounds; ++r)); do
  for budget in $((bytes / 4)) $((bytes / 2)) $((bytes * 4)); do
    order=(accel accelerate); [ $((r % 2)) = 1 ] && order=(accelerate accel)
    for c in "${order[@]}"; do
      rm -rf "$work/offload_$c"
      line="$("$python" "$bench" --contestant "$c" --work "$work" --budget "$budget" --tokens "$tokens" \
              --layers "$layers" --width "$width" 2>/dev/null | grep -o 'BENCH_RESULT .*' | sed 's/^BENCH_RESULT //')"
      [ -n "$line" ] || { echo "bigmodel_bench.sh: FAILED $c budget $budget" >&2; exit 1; }
      echo "$line" | sed "s/^{/{\"budget\":$budget,\"model_bytes\":$bytes,/" >> "$results"
      echo "  round $r budget $budget $c: $(echo "$line" | grep -o '"tokens_per_s":[0-9.]*')"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = True
print("| CPU budget | contestant | tokens/s (median, min-max) | vs Accelerate | load s | peak RSS MB | RSS after imports MB | vs Accelerate (peak) | map keys on disk |")
print("|---|---|---|---|---|---|---|---|---|")
for budget in dict.fromkeys(r["budget"] for r in rows):
    sel = {c: [r for r in rows if r["budget"] == budget and r["contestant"] == c] for c in ("accel", "accelerate")}
    ref = {k: statistics.median(x[k] for x in sel["accelerate"]) for k in ("tokens_per_s", "peak_rss_mb")}
    toks = {json.dumps(x["tokens"]) for c in sel for x in sel[c]}
    maps = {json.dumps(x["device_map"], sort_keys=True) for c in sel for x in sel[c]}
    if len(toks) != 1 or len(maps) != 1:
        ok = False
        print(f"budget {budget}: the contestants differ: tokens {toks}, maps {maps}", file=sys.stderr)
    share = budget / rows[0]["model_bytes"]
    label = "none (all in RAM)" if share > 1 else f"{budget / 1e6:.0f} MB ({share:.2f} of the model)"
    for c, name in (("accel", "libaccel (Python)"), ("accelerate", "Accelerate 0.22")):
        tps = [x["tokens_per_s"] for x in sel[c]]
        med = statistics.median(tps)
        peak = statistics.median(x["peak_rss_mb"] for x in sel[c])
        disk = sum(1 for v in sel[c][0]["device_map"].values() if v == "disk")
        print(f"| {label} | {name} | {med:.2f} ({min(tps):.2f}-{max(tps):.2f}) | {med / ref['tokens_per_s']:.2f}x | "
              f"{statistics.median(x['load_s'] for x in sel[c]):.2f} | {peak:.0f} | "
              f"{statistics.median(x['baseline_rss_mb'] for x in sel[c]):.0f} | {peak / ref['peak_rss_mb']:.2f}x | "
              f"{disk} |")
sys.exit(0 if ok else 1)
EOF
