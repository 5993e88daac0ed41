#!/usr/bin/env bash
# Two machines made of network namespaces joined by a veth pair:
#   2 nodes x 2 processes (accel launch --nnodes 2 in each namespace) train to
#   the same parameters, bitwise, as 4 processes on one node; and
#   a missing node (either one) makes the ranks that came fail with a
#   rendezvous timeout message within the configured timeout; the first to
#   fail is reported and the launcher stops the others; and
#   HYBRID_SHARD (sharded within each node, replicated across the two) gives
#   NO_SHARD's losses and parameters (tests/dist/dist_full_shard.cpp); and
#   tensor parallelism inside each node with data parallelism across the two
#   (tp 2 x dp_replicate 2) trains as one process does
#   (tests/dist/dist_tensor_parallel.cpp), its groups where they belong, and so
#   does context parallelism inside each node (cp 2 x dp_replicate 2).
# Needs root and `ip netns`; exits 77 (skipped, with the reason) otherwise.
# Usage: run_multinode_netns.sh ACCEL PROGRAM WORKDIR DIST_FULL_SHARD DIST_TENSOR_PARALLEL
set -euo pipefail
accel=$1 program=$2 work=$3 full_shard=$4 tensor_parallel=$5
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "the ip command (iproute2) is not installed"

# Unique names: several runs may share the machine. Interface names stay < 16 characters.
ns0=accel-$$-0 ns1=accel-$$-1 veth0=av$$a veth1=av$$b
cleanup() {
  jobs -p | xargs -r kill -9 2>/dev/null || true
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true  # deleting a namespace removes its end of the veth pair
}
trap cleanup EXIT
ip netns add "$ns0" 2>/dev/null || skip "cannot create network namespaces here (ip netns add failed)"
ip netns add "$ns1"
ip link add "$veth0" type veth peer name "$veth1"
ip link set "$veth0" netns "$ns0"
ip link set "$veth1" netns "$ns1"
ip -n "$ns0" addr add 10.233.0.1/24 dev "$veth0"
ip -n "$ns1" addr add 10.233.0.2/24 dev "$veth1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$veth0" up
ip -n "$ns1" link set "$veth1" up

rm -rf "$work" && mkdir -p "$work"
steps=8
"$accel" launch --nproc_per_node 4 --master_port 0 "$program" "$work/single" "$work/single.safetensors" $steps 4 \
  >"$work/single.log" 2>&1 || { cat "$work/single.log" >&2; echo "FAIL: the single-node run failed" >&2; exit 1; }

node() {  # node NAMESPACE RANK ARGS...: one machine's launcher
  local ns=$1 rank=$2
  shift 2
  ip netns exec "$ns" "$accel" launch --nnodes 2 --node_rank "$rank" --nproc_per_node 2 \
    --master_addr 10.233.0.1 --master_port 29555 "$@"
}
node "$ns0" 0 "$program" "$work/multi" "$work/multi.safetensors" $steps 4 >"$work/node0.log" 2>&1 & n0=$!
node "$ns1" 1 "$program" "$work/multi" "$work/multi.safetensors" $steps 4 >"$work/node1.log" 2>&1 & n1=$!
status=0
wait $n0 || status=1
wait $n1 || status=1
if [ $status -ne 0 ]; then
  cat "$work/node0.log" "$work/node1.log" >&2
  echo "FAIL: the 2-node run failed" >&2
  exit 1
fi
cmp "$work/single.safetensors" "$work/multi.safetensors"
echo "2 nodes x 2 processes over a veth pair: bitwise equal to 4 processes on one node"

# HYBRID_SHARD across the two nodes against NO_SHARD on one.
# (lr 0.01 and f64: see tests/dist/CMakeLists.txt on the order of HYBRID_SHARD's sums.)
"$accel" launch --nproc_per_node 4 --master_port 0 "$full_shard" train sgd lr 0.01 f64 record "$work/hybrid_ref" \
  >"$work/hybrid_ref.log" 2>&1 || { cat "$work/hybrid_ref.log" >&2; echo "FAIL: the NO_SHARD run failed" >&2; exit 1; }
node "$ns0" 0 "$full_shard" train sgd lr 0.01 f64 hybrid compare "$work/hybrid_ref" >"$work/hybrid0.log" 2>&1 & n0=$!
node "$ns1" 1 "$full_shard" train sgd lr 0.01 f64 hybrid compare "$work/hybrid_ref" >"$work/hybrid1.log" 2>&1 & n1=$!
status=0
wait $n0 || status=1
wait $n1 || status=1
cat "$work/hybrid0.log" "$work/hybrid1.log"
[ $status -eq 0 ] || { echo "FAIL: HYBRID_SHARD over 2 nodes failed" >&2; exit 1; }
grep -q "HYBRID_SHARD sgd equals NO_SHARD" "$work/hybrid1.log" || { echo "FAIL: no comparison reported" >&2; exit 1; }
echo "HYBRID_SHARD over 2 nodes x 2 processes: equal to NO_SHARD"

# Tensor and context parallelism stay inside each node (ranks 0-1, 2-3:
# torchrun's numbering), data parallelism crosses the veth pair.
mkdir -p "$work/tp"
"$tensor_parallel" record "$work/tp" >"$work/tp_ref.log" 2>&1 ||
  { cat "$work/tp_ref.log" >&2; echo "FAIL: the one-process tensor-parallel reference failed" >&2; exit 1; }
# DIM (tp or cp) of 2 inside each node x dp_replicate 2: the one-process run's
# losses and parameters, and each node's two ranks one group of DIM.
inside_each_node() {
  local dim=$1 rest=$2 line=$3 status=0
  ACCELERATE_LOG_LEVEL=INFO node "$ns0" 0 "--parallelism_config_${dim}_size" 2 --parallelism_config_dp_replicate_size 2 \
    "$tensor_parallel" compare "$work/tp" >"$work/${dim}0.log" 2>&1 & n0=$!
  ACCELERATE_LOG_LEVEL=INFO node "$ns1" 1 "--parallelism_config_${dim}_size" 2 --parallelism_config_dp_replicate_size 2 \
    "$tensor_parallel" compare "$work/tp" >"$work/${dim}1.log" 2>&1 & n1=$!
  wait $n0 || status=1
  wait $n1 || status=1
  cat "$work/${dim}0.log" "$work/${dim}1.log"
  [ $status -eq 0 ] || { echo "FAIL: $dim 2 over 2 nodes failed" >&2; exit 1; }
  grep -q "tensor parallel: $line matches" "$work/${dim}0.log" || { echo "FAIL: no comparison reported" >&2; exit 1; }
  grep -q "rank 1 in mesh/$dim/dp_replicate0.dp_shard0.$rest \[0, 1\]" "$work/${dim}0.log" &&
    grep -q "rank 3 in mesh/$dim/dp_replicate1.dp_shard0.$rest \[2, 3\]" "$work/${dim}1.log" ||
    { echo "FAIL: a $dim group is not one node's ranks" >&2; exit 1; }
  echo "$dim 2 inside each of 2 nodes x dp_replicate 2 across them: equal to one process"
}
inside_each_node tp cp0 "tp 2 x cp 1 x dp 2"
inside_each_node cp tp0 "tp 1 x cp 2 x dp 2"

# Node 1 never comes: node 0's ranks must give up within the 3 s timeout.
start=$(date +%s)
if ACCEL_TEST_TIMEOUT_S=3 node "$ns0" 0 "$program" "$work/missing" "$work/missing.safetensors" $steps 4 \
     >"$work/missing.log" 2>&1; then
  echo "FAIL: node 0 succeeded without node 1" >&2
  exit 1
fi
elapsed=$(( $(date +%s) - start ))
cat "$work/missing.log"
grep -q "rendezvous at 10.233.0.1:29555 failed for rank [01] of 4 .*ranks that did not arrive: \[2, 3\]" "$work/missing.log" \
  || { echo "FAIL: no rank reported a rendezvous timeout" >&2; exit 1; }
grep -Eq "accel launch: rank [01] \(pid [0-9]+ on .*\) exited with code 1" "$work/missing.log" \
  || { echo "FAIL: the launcher did not name the failed rank" >&2; exit 1; }
# Generous against a loaded machine; the point is that it does not hang.
[ $elapsed -le 20 ] || { echo "FAIL: took ${elapsed} s with a 3 s timeout" >&2; exit 1; }
echo "a missing node: rendezvous timeout reported after ${elapsed} s (timeout 3 s)"

# Node 0, the rendezvous host, never comes: node 1's ranks cannot reach the store.
start=$(date +%s)
if ACCEL_TEST_TIMEOUT_S=3 node "$ns1" 1 "$program" "$work/missing1" "$work/missing1.safetensors" $steps 4 \
     >"$work/missing1.log" 2>&1; then
  echo "FAIL: node 1 succeeded without node 0" >&2
  exit 1
fi
elapsed=$(( $(date +%s) - start ))
cat "$work/missing1.log"
grep -q "rendezvous at 10.233.0.1:29555 failed for rank [23] of 4 .*ranks that did not arrive: \[0\] (it hosts the store" \
  "$work/missing1.log" || { echo "FAIL: no rank of node 1 reported a rendezvous timeout" >&2; exit 1; }
[ $elapsed -le 20 ] || { echo "FAIL: took ${elapsed} s with a 3 s timeout" >&2; exit 1; }
echo "a missing main node: rendezvous timeout reported after ${elapsed} s (timeout 3 s)"
