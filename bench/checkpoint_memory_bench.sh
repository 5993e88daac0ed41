#!/usr/bin/env bash
# Peak RSS of sharded checkpoints against the training steps' peak, per process
# (bench/checkpoint_memory_bench.cpp), on the sync workload (67M parameters):
# FULL_SHARD on 2 processes saving libaccel's form and PyTorch's distributed
# checkpoint (FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT), loading each on 2, and
# on 3 (cut again). Prints each process's line; the highest ratio is the figure.
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
run() {  # nproc state-dict-type mode dir
  FSDP_STATE_DICT_TYPE=$2 ACCELERATE_USE_FSDP=true FSDP_SHARDING_STRATEGY=FULL_SHARD OMP_NUM_THREADS=1 \
    "$bin/accel" launch --nproc_per_node "$1" --master_port 0 "$bin/checkpoint_memory_bench" \
    "$here/workloads/$workload.json" "$3" "$4" 2>&1 | grep -E "peak|rror"
}
grep -m1 'model name' /proc/cpuinfo
for type in FULL_STATE_DICT SHARDED_STATE_DICT; do
  echo "== $type (libaccel's form for FULL_STATE_DICT, PyTorch's DCP for SHARDED_STATE_DICT)"
  run 2 "$type" save "$work/$type"
  run 2 "$type" load "$work/$type"
  run 3 "$type" load "$work/$type"
done
