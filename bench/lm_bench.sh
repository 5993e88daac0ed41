#!/usr/bin/env bash
# The LM bench: tokens/s, peak RSS (VmHWM) and model FLOPs utilisation (MFU)
# training transformers' GPT-2 (bench/lm/lm_model.py: 6 layers, n_embd 256,
# 4 heads, seq 128, vocab 256, batch 8 per process, AdamW, dropout 0) with
#   accel_c          libaccel from C over the TorchScript export (bench/lm/lm_bench_c.c)
#   accel_py         libaccel's Python binding on the same export (bench/lm/lm_bench_accel.py)
#   accelerate_1.15  what a Python user installs today: PyPI's torch 2.15 + Accelerate 1.15 +
#                    transformers 5 (SDPA attention), from bench/lm/peer-python-env.sh
#   accelerate_0.22  Accelerate 0.22 on Debian's torch 1.13 and transformers 4.49 (.venv)
#   torch            a plain PyTorch loop on Debian's torch (DDP over Gloo at 2 processes);
#                    only when named in --contestants
# at 1 process x 2 threads and 2 processes x 1 thread, in fp32 and bf16
# (mixed_precision="bf16"; torch.autocast for the plain loop). Contestants
# alternate within each round (starting at a different one each round).
# Before the runs the bench measures the machine: the CPU, its ISA and the
# best square matmul (fp32 and bf16, 2 threads) under each torch it has
# (bench/lm/machine_peak.py); MFU is tokens/s x FLOPs per token
# (lm_shapes.flops_per_token, 31 MFLOP) over that peak of the run's precision.
#   bench/lm_bench.sh [--build-dir DIR] [--rounds N] [--steps N] [--warmup N]
#                     [--precisions "no bf16"] [--contestants accel_c,accel_py,...]
# Needs build/bin/lm_bench_c and build/python (-DACCEL_BUILD_BENCH=ON), the
# test venv (PYTHON, default .venv/bin/python: torch 1.13, transformers 4.49,
# accelerate 0.22) and the peer's (PEER_PYTHON, default: peer-python-env.sh
# installs it, about 5 GB, once).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" rounds=3 steps=20 warmup=3 precisions="no bf16"
contestants_list="accel_c,accel_py,accelerate_1.15,accelerate_0.22"
python="${PYTHON:-$here/../.venv/bin/python}"
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --warmup) warmup="$2"; shift ;;
    --precisions) precisions="$2"; shift ;;
    --contestants) contestants_list="$2"; shift ;;
    *) echo "lm_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
IFS=, read -r -a contestants <<< "$contestants_list"
for name in "${contestants[@]}"; do
  case "$name" in
    accel_c|accel_py|accelerate_1.15|accelerate_0.22|torch) ;;
    *) echo "lm_bench.sh: unknown contestant '$name' (accel_c, accel_py, accelerate_1.15, accelerate_0.22, torch)" >&2
       exit 2 ;;
  esac
done
peer_python="${PEER_PYTHON:-}"
if [ -z "$peer_python" ]; then
  peer_python="$("$here/lm/peer-python-env.sh")" || { echo "lm_bench.sh: the peer's venv failed" >&2; exit 1; }
fi
bench_c="${LM_BENCH_C:-$build/bin/lm_bench_c}"
for program in "$build/bin/accel" "$bench_c"; do
  [ -x "$program" ] || { echo "lm_bench.sh: $program missing: build with -DACCEL_BUILD_BENCH=ON" >&2; exit 2; }
done
work="$(mktemp -d -t accel-lm-bench.XXXXXX)"
trap 'rm -rf "$work"' EXIT
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$python" "$here/lm/lm_model.py" "$work" || { echo "lm_bench.sh: exporting the model failed" >&2; exit 1; }
results="$work/results" machine="$work/machine"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for py in "$python" "$peer_python"; do  # the machine's peak, as each torch reaches it
  "$py" "$here/lm/machine_peak.py" --threads 2 | tee -a "$machine" || { echo "lm_bench.sh: machine_peak.py failed" >&2; exit 1; }
done

run() {  # run NPROC PRECISION CONTESTANT COMMAND...
  local nproc="$1" precision="$2" name="$3"; shift 3
  local threads=$(( nproc == 1 ? 2 : 1 )) out
  local args=(--steps "$steps" --warmup "$warmup" --threads "$threads" --mixed-precision "$precision")
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
  echo "  round $round x$nproc $precision $name: $(printf '%s\n' "$lines" | head -1 | grep -o '"tokens_per_s":[0-9.]*')"
}

for ((round = 0; round < rounds; ++round)); do
  for precision in $precisions; do
    for nproc in 1 2; do
      for ((i = 0; i < ${#contestants[@]}; ++i)); do
        name="${contestants[$(( (i + round) % ${#contestants[@]} ))]}"
        case "$name" in
          accel_c) run "$nproc" "$precision" "$name" "$bench_c" "$work/model.pt" ;;
          accel_py) PYTHONPATH="$build/python" run "$nproc" "$precision" "$name" "$python" \
                      "$here/lm/lm_bench_accel.py" "$work/model.pt" ;;
          accelerate_1.15) run "$nproc" "$precision" "$name" "$peer_python" "$here/lm/lm_bench.py" accelerate \
                             --label "$name" ;;
          accelerate_0.22) run "$nproc" "$precision" "$name" "$python" "$here/lm/lm_bench.py" accelerate \
                             --label "$name" ;;
          torch) run "$nproc" "$precision" "$name" "$python" "$here/lm/lm_bench.py" torch ;;
        esac
      done
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
"$python" "$here/lm/lm_report.py" "$results" "$machine"
