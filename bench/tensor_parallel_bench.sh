#!/usr/bin/env bash
# Tensor parallelism at 4 processes (bench/tensor_parallel_bench.cpp): the
# JSON GPT under plain DDP (dp_replicate 4), tp 2 x dp_replicate 2, tp 4 and
# tp 2 x FULL_SHARD over dp_shard 2, tp 2 x dp_replicate 2 and tp 4 with
# sequence parallelism, and cp 2 x dp_replicate 2 and cp 4 (context
# parallelism); per rank the bytes held against the
# mesh's theory and the peak RSS, per mesh the tokens/s and its ratio to DDP
# measured in the same run.
#   bench/tensor_parallel_bench.sh [--build-dir DIR] [--steps N]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" steps=10
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    *) echo "tensor_parallel_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
grep -m1 'model name' /proc/cpuinfo
echo "cores: $(nproc); 4 processes, OMP_NUM_THREADS=1 each"
run() {  # name, then launch flags; a name ending in _sp adds sequence parallelism
  local name=$1 sp=""
  shift
  case "$name" in *_sp) sp=sp ;; esac
  echo "== $name"
  OMP_NUM_THREADS=1 "$bin/accel" launch --nproc_per_node 4 --master_port 0 "$@" \
    "$bin/tensor_parallel_bench" "$steps" 2 $sp 2>&1 | grep -E "held|tokens/s|rror" | tee "$work/$name"
}
work=$(mktemp -d -t accel-tp-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
run ddp --parallelism_config_dp_replicate_size 4
run tp2_dp2 --parallelism_config_tp_size 2 --parallelism_config_dp_replicate_size 2
run tp4 --parallelism_config_tp_size 4
run tp2_fsdp2 --use_fsdp --fsdp_sharding_strategy FULL_SHARD --parallelism_config_tp_size 2 \
  --parallelism_config_dp_shard_size 2
run tp2_dp2_sp --parallelism_config_tp_size 2 --parallelism_config_dp_replicate_size 2
run tp4_sp --parallelism_config_tp_size 4
run cp2_dp2 --parallelism_config_cp_size 2 --parallelism_config_dp_replicate_size 2
run cp4 --parallelism_config_cp_size 4
rate() { sed -n 's/.*: \([0-9]*\) tokens\/s.*/\1/p' "$work/$1"; }
base=$(rate ddp)
for name in tp2_dp2 tp4 tp2_fsdp2 tp2_dp2_sp tp4_sp cp2_dp2 cp4; do
  awk -v n="$name" -v r="$(rate "$name")" -v b="$base" 'BEGIN { printf "%s: %.2fx the tokens/s of DDP\n", n, r / b }'
done
