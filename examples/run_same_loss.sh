#!/usr/bin/env bash
# Runs an example for 100 training steps on 2 processes under `accel launch` and
# records rank 0's "step 100: loss L" line in OUT. With a REFERENCE file (the C
# example's OUT), checks that L equals the reference's to 1e-5: every language
# drives the same library calls with the same seed, so the numbers must agree.
# With ACCEL_SAME_LOSS_ELASTIC=1 the 2 processes are 2 elastic agents of one rank
# each (--rdzv_backend c10d on the loopback), as on two machines.
# Usage: run_same_loss.sh ACCEL OUT REFERENCE|- PROGRAM [ARGS...]
set -uo pipefail
accel=$1 out=$2 reference=$3
shift 3
if [ "${ACCEL_SAME_LOSS_ELASTIC:-0}" = 1 ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  logs=$(mktemp -d)
  for node in 0 1; do
    "$accel" launch --rdzv_backend c10d --rdzv_endpoint "127.0.0.1:$port" --rdzv_id same-loss --nnodes 2 \
      --nproc_per_node 1 "$@" --epochs 1 --max-steps 100 >"$logs/$node" 2>&1 &
  done
  status=0
  for job in $(jobs -p); do wait "$job" || status=1; done
  output=$(cat "$logs/0" "$logs/1")
  rm -rf "$logs"
else
  output=$("$accel" launch --nproc_per_node 2 --master_port 0 "$@" --epochs 1 --max-steps 100 2>&1)
  status=$?
fi
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
