#!/usr/bin/env bash
# Runs an example for 100 training steps on 2 processes under `accel launch` and
# records rank 0's "step 100: loss L" line in OUT. With a REFERENCE file (the C
# example's OUT), checks that L equals the reference's to 1e-5: every language
# drives the same library calls with the same seed, so the numbers must agree.
# Usage: run_same_loss.sh ACCEL OUT REFERENCE|- PROGRAM [ARGS...]
set -uo pipefail
accel=$1 out=$2 reference=$3
shift 3
output=$("$accel" launch --nproc_per_node 2 --master_port 0 "$@" --epochs 1 --max-steps 100 2>&1)
status=$?
echo "$output"
[ $status -eq 0 ] || { echo "the example exited with $status"; exit 1; }
loss=$(echo "$output" | sed -nE 's/^\[rank 0\] step 100: loss ([0-9.]+)$/\1/p')
[ -n "$loss" ] || { echo "no 'step 100: loss' line from rank 0"; exit 1; }
echo "$loss" > "$out"
[ "$reference" = "-" ] && exit 0
expected=$(cat "$reference") || { echo "no reference loss in $reference"; exit 1; }
if awk -v a="$loss" -v b="$expected" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5) }'; then
  echo "step 100 loss $loss equals the C example's $expected"
else
  echo "step 100 loss $loss differs from the C example's $expected"
  exit 1
fi
