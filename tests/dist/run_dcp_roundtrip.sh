#!/usr/bin/env bash
# PyTorch FSDP's distributed checkpoint (Accelerate's SHARDED_STATE_DICT layout),
# both ways. Written by 2 processes of PyTorch 2.x (fsdp_dcp.py), loaded by
# libaccel on other worlds and strategies: the 5 steps after the load continue
# PyTorch's losses (dist_reshard.cpp load-accelerate). Written by libaccel
# (2 processes, FULL_SHARD, FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT), loaded by
# PyTorch FSDP on 2 processes and by plain torch.distributed.checkpoint
# (fsdp_dcp.py load), and by libaccel under other strategies and worlds: each
# continues libaccel's losses.
# Usage: run_dcp_roundtrip.sh ACCEL_CLI DIST_RESHARD TORCH2_PYTHON SCRIPT WORKDIR
set -euo pipefail
accel=$1 program=$2 python=$3 script=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
# torchrun on a port free right now (a port picked once could be taken by another test meanwhile).
# Once more on another port when the picked one was taken in between (EADDRINUSE).
torchrun() {
  local port status attempt
  for attempt in 1 2; do
    status=0
    port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 \
      --master_port "$port" "$script" "$@" >"$work/torchrun.log" 2>&1 || status=$?
    grep -v '^W[0-9]' "$work/torchrun.log" || true  # torchrun's OMP_NUM_THREADS banner
    [ "$status" -ne 0 ] && grep -qi "address already in use" "$work/torchrun.log" || break
    echo "port $port was taken; again on another"
  done
  return "$status"
}
torchrun "$work"
[ -f "$work/losses" ] || { echo "PyTorch wrote no checkpoint"; exit 1; }
for run in "3 full" "2 zero2" "1 none" "4 hybrid"; do
  read -r n strategy <<<"$run"
  echo "== PyTorch FSDP x2 -> $strategy x$n"
  "$accel" launch --nproc_per_node "$n" --master_port 0 "$program" load-accelerate "$strategy" "$work"
done
ours=$work/libaccel
echo "== libaccel FULL_SHARD x2, SHARDED_STATE_DICT -> PyTorch FSDP x2"
FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT "$accel" launch --nproc_per_node 2 --master_port 0 "$program" save full "$ours"
ls "$ours/state/pytorch_model_fsdp_0" "$ours/state/optimizer_0"
torchrun load "$ours"
for run in "3 zero1" "1 none"; do
  read -r n strategy <<<"$run"
  echo "== libaccel FULL_SHARD x2, SHARDED_STATE_DICT -> $strategy x$n"
  "$accel" launch --nproc_per_node "$n" --master_port 0 "$program" load-accelerate "$strategy" "$ours"
done
