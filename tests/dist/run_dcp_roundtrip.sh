#!/usr/bin/env bash
# PyTorch FSDP's distributed checkpoint (Accelerate's SHARDED_STATE_DICT layout),
# written by 2 processes of PyTorch 2.x (fsdp_dcp.py), loaded by libaccel on
# other worlds and strategies; the 5 steps after the load continue PyTorch's
# losses (dist_reshard.cpp load-accelerate).
# Usage: run_dcp_roundtrip.sh ACCEL_CLI DIST_RESHARD TORCH2_PYTHON SCRIPT WORKDIR
set -euo pipefail
accel=$1 program=$2 python=$3 script=$4 work=$5
rm -rf "$work" && mkdir -p "$work"
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
OMP_NUM_THREADS=1 "$python" -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1 --master_port "$port" \
  "$script" "$work" 2>&1 | grep -v '^W[0-9]' || true
[ -f "$work/losses" ] || { echo "PyTorch wrote no checkpoint"; exit 1; }
for run in "3 full" "2 zero2" "1 none" "4 hybrid"; do
  read -r n strategy <<<"$run"
  echo "== PyTorch FSDP x2 -> $strategy x$n"
  "$accel" launch --nproc_per_node "$n" --master_port 0 "$program" load-accelerate "$strategy" "$work"
done
