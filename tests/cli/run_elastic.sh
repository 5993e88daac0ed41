#!/usr/bin/env bash
# Elastic jobs (accel launch --rdzv_backend c10d --nnodes MIN:MAX), one rank per
# node, on three "machines": network namespaces joined by a bridge when this
# runs as root with `ip netns`, else three agents on this machine's loopback
# (the same agents, store and messages; only the addresses differ).
#   grow:   2 nodes train; a third arrives, waits, and the job continues on 3
#           from the newest checkpoint, ending bitwise where a 3-process run
#           from that checkpoint ends;
#   shrink: 3 nodes train; one node's agent and rank are killed with SIGKILL;
#           the other two restart on 2 from the newest checkpoint, ending bitwise
#           where a 2-process run from that checkpoint ends;
#   hang:   a rank is stopped (SIGSTOP); the collective timeout and the agents'
#           monitors end the stall, and the job finishes on a new round;
#   pods:   two "pods" with exactly the environment Kubeflow's elastic
#           PyTorchJob gives (PET_*, MASTER_*, WORLD_SIZE, RANK) and no flags
#           train to the parameters of a plain 2-process run.
# Every transition is checked in the agents' logs. ACCEL_TEST_LOOPBACK=1 forces the loopback.
# Usage: run_elastic.sh ACCEL PROGRAM WORKDIR
set -euo pipefail
accel=$1 program=$2 work=$3
rm -rf "$work" && mkdir -p "$work"

pids=()
namespaces=()
cleanup() {
  for pid in "${pids[@]}"; do pkill -KILL -P "$pid" 2>/dev/null || true; kill -9 "$pid" 2>/dev/null || true; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
}
trap cleanup EXIT

if [ -z "${ACCEL_TEST_LOOPBACK:-}" ] && [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null && ip netns add "accel-el-$$-sw" 2>/dev/null; then
  sw=accel-el-$$-sw
  namespaces+=("$sw")
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  for i in 0 1 2; do
    ns=accel-el-$$-$i
    ip netns add "$ns"
    namespaces+=("$ns")
    ip link add "ae$$n$i" type veth peer name "ae$$s$i"
    ip link set "ae$$n$i" netns "$ns"
    ip link set "ae$$s$i" netns "$sw"
    ip -n "$sw" link set "ae$$s$i" master br0 up
    ip -n "$ns" addr add "10.234.0.$((i + 1))/24" dev "ae$$n$i"
    ip -n "$ns" link set "ae$$n$i" up
    ip -n "$ns" link set lo up
  done
  host=10.234.0.1 base=29600
  on_node() { local i=$1; shift; ip netns exec "accel-el-$$-$i" "$@"; }
  echo "three nodes: network namespaces on a bridge, rendezvous on $host"
else
  # Four free ports in a row are likely above a free one picked by the kernel; each phase takes its own.
  host=127.0.0.1 base=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  on_node() { shift; "$@"; }
  echo "three nodes: agents on this machine's loopback (no root or no ip netns), rendezvous on $host"
fi

steps=60 save_every=5
export OMP_NUM_THREADS=1 ACCEL_TEST_KEEP_CHECKPOINTS=1
# Short beats and calls, so each transition takes seconds (torchrun's defaults are 5 s x 3 and 30 s).
agent() {  # agent NODE RUN_ID PROJECT LOG [MIN:MAX]
  local node=$1 id=$2 project=$3 log=$4 nodes=${5:-2:3}
  on_node "$node" env ACCEL_TEST_STEP_DELAY_MS=${ACCEL_TEST_STEP_DELAY_MS:-100} ACCEL_TEST_TIMEOUT_S=${ACCEL_TEST_TIMEOUT_S:-20} \
    "$accel" launch --rdzv_backend c10d --rdzv_endpoint "$endpoint" --rdzv_id "$id" --nnodes "$nodes" \
    --nproc_per_node 1 --max_restarts 3 --monitor_interval 0.5 \
    --rdzv_conf last_call_timeout=1,keep_alive_interval=0.5,keep_alive_max_attempt=3,join_timeout=60 \
    "$program" "$project" "$project.safetensors" $steps $save_every >"$log" 2>&1 &
  pids+=($!)
}
descendants() {  # descendants PID: PID and every process below it
  local all=($1) i=0
  while [ $i -lt ${#all[@]} ]; do
    all+=($(pgrep -P "${all[$i]}" || true))
    i=$((i + 1))
  done
  echo "${all[@]}"
}
kill_tree() {  # kill_tree PID: SIGKILL to PID and every process below it
  kill -9 $(descendants "$1") 2>/dev/null || true
}
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2
  shift 2
  for _ in $(seq $((limit * 10))); do "$@" && return 0; sleep 0.1; done
  echo "FAIL: no $what within $limit s" >&2
  tail -n 30 "$work"/*.log >&2
  exit 1
}
finish() {  # finish PID LOG: the agent must exit 0
  wait "$1" || { echo "FAIL: the agent writing $2 failed:" >&2; cat "$2" >&2; exit 1; }
}
# replay RUN WORLD: a plain accel launch of WORLD processes from the checkpoint
# the grown or shrunk world resumed from; its parameters must equal the run's.
replay() {
  local run=$1 world=$2 line checkpoint
  line=$(grep -ho "rank 0 of $world: resumed at step [0-9]* from checkpoint_[0-9]*" "$work/$run"-*.log | tail -n 1)
  [ -n "$line" ] || { echo "FAIL: no rank resumed in a world of $world ($run)" >&2; cat "$work/$run"-*.log >&2; exit 1; }
  checkpoint=${line##* from }
  mkdir -p "$work/$run-replay/checkpoints"
  cp -r "$work/$run/checkpoints/$checkpoint" "$work/$run-replay/checkpoints/"
  ACCEL_TEST_TIMEOUT_S=60 "$accel" launch --nproc_per_node "$world" --master_port 0 "$program" "$work/$run-replay" \
    "$work/$run-replay.safetensors" $steps $save_every >"$work/$run-replay.out" 2>&1 \
    || { cat "$work/$run-replay.out" >&2; echo "FAIL: the replay of $run failed" >&2; exit 1; }
  cmp "$work/$run.safetensors" "$work/$run-replay.safetensors" \
    || { echo "FAIL: $run's parameters differ from a $world-process run from $checkpoint" >&2; exit 1; }
  echo "$run: $line; bitwise equal to a $world-process run from $checkpoint"
}

# Each phase its own store port: a closed store's port may linger in TIME_WAIT.
endpoint=$host:$base
# --- pods: the environment of an elastic PyTorchJob's workers, no flags.
"$accel" launch --nproc_per_node 2 --master_port 0 "$program" "$work/plain" "$work/plain.safetensors" 20 $save_every \
  >"$work/plain.out" 2>&1 || { cat "$work/plain.out" >&2; echo "FAIL: the plain 2-process run failed" >&2; exit 1; }
pod() {  # pod NODE INDEX
  on_node "$1" env PET_NNODES=2:2 PET_NPROC_PER_NODE=1 PET_RDZV_BACKEND=c10d PET_RDZV_ENDPOINT="$endpoint" \
    PET_RDZV_ID=pytorchjob PET_MAX_RESTARTS=3 PET_MONITOR_INTERVAL=1 \
    MASTER_ADDR="${endpoint%:*}" MASTER_PORT=23456 WORLD_SIZE=2 RANK="$2" \
    "$accel" launch "$program" "$work/pods" "$work/pods.safetensors" 20 $save_every >"$work/pods-$2.log" 2>&1 &
  pids+=($!)
}
pod 0 0; p0=${pids[-1]}
pod 1 1; p1=${pids[-1]}
finish $p0 "$work/pods-0.log"; finish $p1 "$work/pods-1.log"
grep -Eq "rendezvous 'pytorchjob' at $endpoint( \(hosting its store\))? for 2 to 2 node\(s\)" "$work/pods-0.log" \
  || { cat "$work/pods-0.log" >&2; echo "FAIL: the pod did not take the PET_ variables" >&2; exit 1; }
cmp "$work/plain.safetensors" "$work/pods.safetensors" \
  || { echo "FAIL: the pods' parameters differ from a plain 2-process run" >&2; exit 1; }
echo "pods: PyTorchJob's environment alone, bitwise equal to a plain 2-process run"

endpoint=$host:$((base + 1))
# --- grow: nodes 0 and 1 form a round of 2; node 2 arrives later.
agent 0 grow "$work/grow" "$work/grow-0.log"; a0=${pids[-1]}
agent 1 grow "$work/grow" "$work/grow-1.log"; a1=${pids[-1]}
wait_for 60 "checkpoint of the 2-node round" test -d "$work/grow/checkpoints/checkpoint_1"
grep -q "round 0 (start): 2 node(s), world size 2" "$work/grow-0.log"
agent 2 grow "$work/grow" "$work/grow-2.log"; a2=${pids[-1]}
finish $a0 "$work/grow-0.log"; finish $a1 "$work/grow-1.log"; finish $a2 "$work/grow-2.log"
grep -h "accel launch \[" "$work"/grow-*.log
# The first to notice sees node 2 waiting; the other may see that one leave first.
grep -q "wait to join; stopping the ranks of this node to rendezvous again" "$work"/grow-[01].log \
  || { echo "FAIL: no node saw node 2 waiting" >&2; exit 1; }
grep -Eq "round 1 \(membership changed\): 3 node\(s\), world size 3" "$work/grow-0.log" \
  || { echo "FAIL: no round of 3 nodes" >&2; exit 1; }
replay grow 3

endpoint=$host:$((base + 2))
# --- shrink: three nodes; node 2's agent and rank die with SIGKILL mid-run.
agent 0 shrink "$work/shrink" "$work/shrink-0.log"; a0=${pids[-1]}
agent 1 shrink "$work/shrink" "$work/shrink-1.log"; a1=${pids[-1]}
agent 2 shrink "$work/shrink" "$work/shrink-2.log"; a2=${pids[-1]}
wait_for 60 "checkpoint of the 3-node round" test -d "$work/shrink/checkpoints/checkpoint_1"
killed_at=$(date +%s.%N)
kill_tree "$a2"  # the node's agent, its rank and its rendezvous helper, at once
wait "$a2" 2>/dev/null || true
wait_for 60 "rank resuming on 2 nodes" grep -q "rank 0 of 2: resumed" "$work/shrink-0.log" "$work/shrink-1.log"
resumed_after=$(awk -v t0="$killed_at" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
finish $a0 "$work/shrink-0.log"; finish $a1 "$work/shrink-1.log"
grep -h "accel launch \[" "$work"/shrink-[01].log
grep -q "sent no heartbeat for [0-9.]* s: removed from the rendezvous" "$work/shrink-0.log" "$work/shrink-1.log" \
  || { echo "FAIL: the lost node was not reported" >&2; exit 1; }
# Their monitors see the node gone, or their ranks fail first in a collective with it.
grep -Eq "round [0-9]+ \((membership changed|restart 1 of 3 after a failed rank)\): 2 node\(s\), world size 2" \
  "$work/shrink-0.log" \
  || { echo "FAIL: no round of 2 nodes after the loss" >&2; exit 1; }
# Within 2 x the collective timeout (20 s): generous against a loaded machine, and no hang.
awk -v t="$resumed_after" 'BEGIN { exit !(t < 40) }' || { echo "FAIL: resumed ${resumed_after} s after the kill" >&2; exit 1; }
echo "shrink: the survivors resumed ${resumed_after} s after the kill"
replay shrink 2

endpoint=$host:$((base + 3))
# --- hang: two nodes (2:2); node 1's rank is stopped. Node 0's rank times out in
# its collective (5 s) and fails; node 0 leaves the round and rejoins; node 1's
# monitor sees it go and stops its stopped rank (SIGCONT after SIGTERM); both restart.
ACCEL_TEST_TIMEOUT_S=5 agent 0 hang "$work/hang" "$work/hang-0.log" 2:2; a0=${pids[-1]}
ACCEL_TEST_TIMEOUT_S=5 agent 1 hang "$work/hang" "$work/hang-1.log" 2:2; a1=${pids[-1]}
wait_for 60 "checkpoint of the 2-node round" test -d "$work/hang/checkpoints/checkpoint_1"
rank=
for pid in $(descendants "$a1"); do
  [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$program")" ] && rank=$pid && break
done
[ -n "$rank" ] || { echo "FAIL: no rank process under node 1's agent" >&2; exit 1; }
stopped_at=$(date +%s.%N)
kill -STOP "$rank"
wait_for 60 "restart after the hang" grep -q "rank 0 of 2: resumed" "$work/hang-0.log" "$work/hang-1.log"
recovered_after=$(awk -v t0="$stopped_at" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
finish $a0 "$work/hang-0.log"; finish $a1 "$work/hang-1.log"
grep -h "accel launch \[" "$work"/hang-*.log
grep -Eq "accel launch: rank 0 \(pid [0-9]+ on .*\) exited with code 1" "$work/hang-0.log" \
  || { echo "FAIL: node 0 did not report its failed rank" >&2; exit 1; }
# Node 1's monitor sees node 0 leave the round (or already waiting for the next).
grep -Eq "(left round 0|wait to join); stopping the ranks of this node to rendezvous again" "$work/hang-1.log" \
  || { echo "FAIL: node 1's monitor did not stop its stopped rank" >&2; exit 1; }
grep -q "collective .* failed on rank 0 (timeout 5000 ms).*ranks that did not arrive: \[1\]" "$work/hang-0.log" \
  || { echo "FAIL: the timed-out collective, its rank and the missing rank were not named" >&2; exit 1; }
# Collective timeout (5 s) + monitor interval (0.5 s) + rendezvous and restart, with room for a loaded machine.
awk -v t="$recovered_after" 'BEGIN { exit !(t < 30) }' || { echo "FAIL: recovered ${recovered_after} s after SIGSTOP" >&2; exit 1; }
echo "hang: a stopped rank was detected and the job restarted ${recovered_after} s after SIGSTOP"
