#!/usr/bin/env bash
# accel launch --max_restarts with a program that resumes from its newest
# checkpoint: rank 1 is killed once mid-training, the launcher restarts the
# group, and the final parameters equal an uninterrupted run's, bitwise.
# Usage: run_restart.sh ACCEL PROGRAM WORKDIR
set -euo pipefail
accel=$1 program=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
run() { "$accel" launch --nproc_per_node 2 --master_port 0 "$@"; }

run "$program" "$work/full" "$work/full.safetensors" 20 5
ACCEL_TEST_CRASH_AT_STEP=12 ACCEL_TEST_CRASH_MARKER="$work/crashed" \
  run --max_restarts 2 "$program" "$work/restarted" "$work/restarted.safetensors" 20 5 >"$work/log" 2>&1 \
  || { echo "FAIL: the restarted job failed:" >&2; cat "$work/log" >&2; exit 1; }
cat "$work/log"
[ -f "$work/crashed" ] || { echo "FAIL: rank 1 never crashed" >&2; exit 1; }
grep -Eq "rank 1 \(pid [0-9]+ on .*\) was killed by signal 9 \(SIGKILL\)" "$work/log" \
  || { echo "FAIL: the crash was not reported" >&2; exit 1; }
grep -q "restarting every rank (restart 1 of 2)" "$work/log" || { echo "FAIL: no restart" >&2; exit 1; }
grep -q "rank 1 of 2: resumed at step 10 from checkpoint_" "$work/log" || { echo "FAIL: did not resume from step 10" >&2; exit 1; }
cmp "$work/full.safetensors" "$work/restarted.safetensors"
echo "killed at step 12, restarted, resumed at step 10: bitwise equal to the uninterrupted run"
