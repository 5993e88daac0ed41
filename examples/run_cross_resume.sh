#!/usr/bin/env bash
# A Java job saves, a Go job resumes it on another number of processes: the
# Java example trains 20 steps of Fashion-MNIST on 2 processes under FULL_SHARD
# and saves (--checkpointing-steps 20); the Go example resumes that directory on
# 3 processes under FULL_SHARD (--resume-from-checkpoint; its shards are cut
# again), trains nothing more (--max-steps 20: the 20 steps are in), drains the
# epoch from where the Java run stood and saves after it (--checkpointing-steps
# epoch). Both directories, put back together by check_reshard.py, must hold the
# same parameters and optimizer state bit for bit.
# Usage: run_cross_resume.sh ACCEL GO_EXAMPLE PYTHON CHECKER WORKDIR JAVA_COMMAND...
set -euo pipefail
accel=$1 go_example=$2 python=$3 checker=$4 work=$5
shift 5
rm -rf "$work" && mkdir -p "$work"
common=(--epochs 1 --max-steps 20 --sharding-strategy FULL_SHARD)
echo "== Java, 2 processes: 20 steps, save"
"$accel" launch --nproc_per_node 2 --master_port 0 "$@" "${common[@]}" \
  --checkpointing-steps 20 --output-dir "$work/java"
echo "== Go, 3 processes: resume, save after the epoch"
"$accel" launch --nproc_per_node 3 --master_port 0 "$go_example" "${common[@]}" \
  --resume-from-checkpoint "$work/java/step_20" --checkpointing-steps epoch --output-dir "$work/go"
"$python" "$checker" "$work/java/step_20" "$work/go/epoch_0"
