#!/usr/bin/env bash
# Sharded checkpoints across strategies and world sizes: a checkpoint saved by
# N processes under SOURCE loads on M processes under every strategy, each
# (SOURCE, target) pair at one of the world changes 2->3, 3->2, 4->2, 2->1, 1->2
# (rotating, so each change meets every strategy), and
#  - the 5 steps after the load give the saving run's losses (dist_reshard.cpp),
#  - what the loading run saves right after the load holds, unsharded, the
#    saved parameters and optimizer state bit for bit (check_reshard.py).
# Usage: run_reshard_matrix.sh ACCEL_CLI DIST_RESHARD PYTHON CHECKER WORKDIR SOURCE
set -euo pipefail
accel=$1 program=$2 python=$3 checker=$4 work=$5 source=$6
strategies=(none zero1 zero2 full hybrid)
changes=("2 3" "3 2" "4 2" "2 1" "1 2")
rm -rf "$work" && mkdir -p "$work"
launch() { "$accel" launch --nproc_per_node "$1" --master_port 0 "$program" "${@:2}"; }

for i in "${!strategies[@]}"; do [ "${strategies[$i]}" = "$source" ] && s=$i; done
: "${s:?unknown source strategy $source}"
pairs=()
for t in "${!strategies[@]}"; do
  read -r saved loaded <<<"${changes[$(((s + t) % 5))]}"
  target=${strategies[$t]}
  src=$work/$source-$saved
  if [ ! -d "$src" ]; then
    echo "== $source on $saved processes: save"
    launch "$saved" save "$source" "$src"
  fi
  echo "== $source x$saved -> $target x$loaded"
  launch "$loaded" load "$target" "$src" "$work/$target-$loaded-from-$source-$saved"
  pairs+=("$src/state" "$work/$target-$loaded-from-$source-$saved")
done
# HYBRID_SHARD on two nodes of 2, loaded by HYBRID_SHARD on one node of 4: the
# same strategy and world, shards laid out otherwise (the manifest's layouts tell).
if [ "$source" = hybrid ]; then
  [ -d "$work/hybrid-4" ] || launch 4 save hybrid "$work/hybrid-4"
  echo "== hybrid x4 (two nodes) -> hybrid x4 (one node)"
  launch 4 load hybrid1 "$work/hybrid-4" "$work/hybrid1-4-from-hybrid-4"
  pairs+=("$work/hybrid-4/state" "$work/hybrid1-4-from-hybrid-4")
fi
"$python" "$checker" "${pairs[@]}"
# HYBRID_SHARD on two nodes of 2: accel merge-weights reads one node's shards.
if [ "$source" = hybrid ]; then
  "$accel" merge-weights "$work/hybrid-4/state" "$work/merged"
  "$python" "$checker" --merged "$work/merged/model.safetensors" "$work/hybrid-4/state"
fi
