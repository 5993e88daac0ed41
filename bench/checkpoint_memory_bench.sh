#!/usr/bin/env bash
# Peak RSS of sharded checkpoints against the training steps' peak, per process
# (bench/checkpoint_memory_bench.cpp), on the sync workload (67M parameters):
# FULL_SHARD on 2 processes saving libaccel's form and PyTorch's distributed
# checkpoint (FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT), resuming each in fresh
# processes on 2, and on 3 (cut again); and save_model's full model.safetensors. The reference at each world size is the
# highest training peak of a run that only trains. Prints each process's line;
# the highest ratio is the figure.
#   bench/checkpoint_memory_bench.sh [--build-dir DIR] [--workload sync]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" workload=sync
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --workload) workload="$2"; shift ;;
    *) echo "checkpoint_memory_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
work=$(mktemp -d -t accel-checkpoint-memory.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {  # nproc state-dict-type mode dir [reference MiB]
  FSDP_STATE_DICT_TYPE=$2 ACCELERATE_USE_FSDP=true FSDP_SHARDING_STRATEGY=FULL_SHARD OMP_NUM_THREADS=1 \
    "$bin/accel" launch --nproc_per_node "$1" --master_port 0 "$bin/checkpoint_memory_bench" \
    "$here/workloads/$workload.json" "$3" "$4" ${5:-} 2>&1 | grep -E "peak|rror"
}
grep -m1 'model name' /proc/cpuinfo
declare -A reference
for n in 2 3; do
  out=$(run "$n" FULL_STATE_DICT train -)
  echo "$out"
  reference[$n]=$(echo "$out" | sed -n 's/.*training peak \([0-9.]*\) MiB.*/\1/p' | sort -g | tail -1)
done
for type in FULL_STATE_DICT SHARDED_STATE_DICT; do
  echo "== $type (libaccel's form for FULL_STATE_DICT, PyTorch's DCP for SHARDED_STATE_DICT)"
  run 2 "$type" save "$work/$type" "${reference[2]}"
  run 2 "$type" load "$work/$type" "${reference[2]}"
  run 3 "$type" load "$work/$type" "${reference[3]}"
done
echo "== save_model (the full model.safetensors, streamed one unit at a time)"
run 2 FULL_STATE_DICT save_model "$work/model" "${reference[2]}"
