#!/bin/sh
# The docs/benchmarks.md memory table: bytes of parameters, gradients and AdamW
# state held per process after two steps of a sequential spec (default: the
# 67M-parameter sync workload), per sharding strategy, at NPROC processes
# (default 2), with the ratio to replicated (NO_SHARD).
#   scripts/memory_table.sh BUILD_DIR [SPEC] [NPROC]
set -eu
build=${1:?usage: memory_table.sh BUILD_DIR [SPEC] [NPROC]}
spec=${2:-$(dirname "$0")/../bench/workloads/sync.json}
nproc=${3:-2}
echo "| strategy | processes | parameters MiB | gradients MiB | optimizer MiB | total MiB | ratio |"
echo "|---|---|---|---|---|---|---|"
for strategy in none zero1 zero2 full; do
  OMP_NUM_THREADS=1 "$build/bin/accel" launch --nproc_per_node "$nproc" --master_port 0 \
    "$build/tests/dist/dist_full_shard" memory "$spec" "$strategy" 2>/dev/null | sed -n 's/^\[rank 0\] //p' | grep '^|'
done
