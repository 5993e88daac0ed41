#!/usr/bin/env bash
# Runs an example training program under `accel launch` and checks its last
# epoch line: "epoch N: loss L, test accuracy A%" with A >= the given minimum.
# Usage: run_example.sh ACCEL NPROC MIN_ACCURACY PROGRAM [ARGS...]
set -uo pipefail
accel=$1 nproc=$2 min_accuracy=$3
shift 3
output=$("$accel" launch --nproc_per_node "$nproc" --master_port 0 "$@")
status=$?
echo "$output"
[ $status -eq 0 ] || { echo "the example exited with $status"; exit 1; }
last=$(echo "$output" | grep -E '^\[rank 0\] epoch [0-9]+: loss [0-9.]+, test accuracy [0-9.]+%$' | tail -n 1)
[ -n "$last" ] || { echo "no epoch line from rank 0"; exit 1; }
accuracy=$(echo "$last" | sed -E 's/.*test accuracy ([0-9.]+)%/\1/')
if awk -v a="$accuracy" -v m="$min_accuracy" 'BEGIN { exit !(a >= m) }'; then
  echo "accuracy $accuracy% >= $min_accuracy%: ok"
else
  echo "accuracy $accuracy% is below $min_accuracy%"
  exit 1
fi
if echo "$output" | grep -q '^\[rank 1\] epoch'; then echo "rank 1 printed: print() must be main-process only"; exit 1; fi
