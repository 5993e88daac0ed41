#!/usr/bin/env bash
# kill -9 during save_state, for real: for each of total_limit=1, total_limit=2
# and a fixed directory, a 2-process job that saves after every step is killed
# (one random rank, SIGKILL) at N random moments; each restart must resume from
# the newest committed checkpoint with exactly the reference run's parameters
# at that step, and the last one finishes like an uninterrupted run. Then
# deterministic kills: after the optimizer file, after the manifest and right
# after the commit of the first save (before pruning), each followed by a restart.
# Usage: run_fault_injection.sh ACCEL PROGRAM WORKDIR N
set -euo pipefail
accel=$1 program=$2 work=$3 kills=$4
steps=4000  # more than 20 restarts can reach on a fast machine
seed=${ACCEL_FAULT_SEED:-$(date +%s)}
RANDOM=$seed
echo "fault injection: seed $seed (ACCEL_FAULT_SEED=$seed reproduces the kill moments)"
rm -rf "$work" && mkdir -p "$work"
launch() { "$accel" launch --nproc_per_node 2 --master_port 0 "$@"; }

launch "$program" reference "$work/reference" "$steps" >"$work/reference.log" 2>&1 \
  || { cat "$work/reference.log"; echo "FAIL: the reference run failed" >&2; exit 1; }
reference=$work/reference/fingerprints

# Restart after a crash: must succeed and say where it resumed (or start afresh
# when nothing was committed, which the program checks).
recover() {
  local mode=$1 dir=$2 what=$3
  if ! launch "$program" "$mode" "$dir" "$steps" "$reference" 3 >"$dir.recover.log" 2>&1; then
    cat "$dir"*.log >&2
    echo "FAIL: $mode, $what: the restart did not recover" >&2
    exit 1
  fi
  grep -ho "resumed at step [0-9]* (last committed [0-9-]*)" "$dir.recover.log" | head -n 1 || echo "started afresh"
}

for mode in limit1 limit2 fixed; do
  # One job per mode, killed again and again: every start after the first is a
  # restart that resumes from what the last kill left and checks it.
  dir=$work/$mode
  mkdir -p "$dir"
  resumed=0
  for ((i = 1; i <= kills; ++i)); do
    rm -f "$dir"/pid_*
    launch "$program" "$mode" "$dir" "$steps" "$reference" >"$dir.$i.log" 2>&1 &
    job=$!
    for _ in $(seq 300); do [ -f "$dir/pid_0" ] && [ -f "$dir/pid_1" ] && break; sleep 0.05; done
    [ -f "$dir/pid_0" ] && [ -f "$dir/pid_1" ] || { cat "$dir.$i.log"; echo "FAIL: $mode start $i did not get going" >&2; exit 1; }
    victim=$((RANDOM % 2))
    sleep "0.$(printf '%03d' $((RANDOM % 500 + 10)))"
    kill -9 "$(cat "$dir/pid_$victim")" 2>/dev/null || true
    if wait "$job"; then echo "FAIL: $mode: the job finished before kill $i; lengthen it" >&2; exit 1; fi
    where=$(grep -ho "resumed at step [0-9]* (last committed [0-9-]*)" "$dir.$i.log" | head -n 1 || echo "started afresh")
    grep -q "checkpoint_fault: FAIL" "$dir.$i.log" && { cat "$dir.$i.log" >&2; exit 1; }
    case "$where" in resumed*) resumed=$((resumed + 1)) ;; esac
    echo "$mode start $i: $where; killed rank $victim"
  done
  rm -f "$dir"/pid_*
  echo "$mode after the last kill: $(recover "$mode" "$dir" "after kill $kills")"
  [ "$resumed" -gt 0 ] || { echo "FAIL: $mode: no restart found a committed checkpoint" >&2; exit 1; }
  for point in optimizer.bin manifest.json commit; do
    dir=$work/$mode-at-$point
    mkdir -p "$dir"
    if ACCEL_TEST_KILL_DURING_SAVE=$point launch "$program" "$mode" "$dir" "$steps" "$reference" >"$dir.log" 2>&1; then
      echo "FAIL: $mode: the kill after $point did not happen" >&2
      exit 1
    fi
    rm -f "$dir"/pid_*
    echo "$mode killed after $point in the first save: $(recover "$mode" "$dir" "kill after $point")"
  done
done
echo "every restart resumed from the newest committed checkpoint and finished like the reference run"
