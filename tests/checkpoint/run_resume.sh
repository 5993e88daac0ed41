#!/usr/bin/env bash
# Resume determinism and crash safety with real processes:
#   an uninterrupted run of N steps  ==  k steps, save_state, a fresh process
#   group, load_state, N-k steps  (bitwise, compared file to file);
# and a second save into the same directory killed half-way (SIGKILL after
# optimizer.bin) leaves the first checkpoint intact and loadable.
# Usage: run_resume.sh ACCEL PROGRAM NPROC WORKDIR
set -euo pipefail
accel=$1 program=$2 nproc=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
run() { "$accel" launch --nproc_per_node "$nproc" --master_port 0 "$program" "$@"; }

run full "$work/full.safetensors" 23
run first "$work/ckpt" 11
if ACCEL_TEST_KILL_DURING_SAVE=optimizer.bin run again "$work/ckpt" 16 >"$work/killed.log" 2>&1; then
  echo "FAIL: the save that should have been killed finished" >&2
  exit 1
fi
grep -q "SIGKILL" "$work/killed.log" || { echo "FAIL: no rank was killed:" >&2; cat "$work/killed.log" >&2; exit 1; }
run resume "$work/ckpt" "$work/resumed.safetensors" 23 | tee "$work/resume.log"
grep -q "resumed at step 11" "$work/resume.log" || { echo "FAIL: did not resume from the step-11 checkpoint" >&2; exit 1; }
cmp "$work/full.safetensors" "$work/resumed.safetensors"
echo "resume with $nproc process(es): bitwise equal to the uninterrupted run; interrupted save left the checkpoint intact"
