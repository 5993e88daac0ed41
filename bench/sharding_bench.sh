#!/usr/bin/env bash
# Steps/s and peak RSS per sharding strategy, against replicated data parallel
# (NO_SHARD) measured in the same run: bench/accel_bench (AdamW) under
# `accel launch`, 2 processes x 1 thread by default, the strategy chosen as an
# Accelerate user's launcher would (ACCELERATE_USE_DEEPSPEED + ZERO_STAGE 1/2,
# ACCELERATE_USE_FSDP + FSDP_SHARDING_STRATEGY=FULL_SHARD with units of 1M
# parameters, and FULL_SHARD_NO_WRAP: Accelerate's default policy, the whole
# model one unit). Strategies
# alternate within each round, starting at a different one each round; the
# table shows medians and min-max over rounds.
#   bench/sharding_bench.sh [--build-dir DIR] [--rounds N] [--nproc N] [--workloads mlp,sync] [--quick]
# Targets (issue 19, CPU, 2 processes): ZeRO-1/2 >= 0.9x and FULL_SHARD >= 0.75x
# of NO_SHARD's steps/s. A full run (3 rounds, mlp and sync) takes ~4 min on 2 cores.
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" rounds=3 nproc=2 workloads="mlp sync"
declare -A steps=([tiny]=1000 [mlp]=40 [sync]=8 [cnn]=2) warm=([tiny]=5 [mlp]=3 [sync]=2 [cnn]=1)
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --nproc) nproc="$2"; shift ;;
    --workloads) workloads="${2//,/ }"; shift ;;
    --quick) rounds=1; steps=([tiny]=200 [mlp]=10 [sync]=2 [cnn]=1); warm=([tiny]=2 [mlp]=1 [sync]=1 [cnn]=1) ;;
    *) echo "sharding_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
for program in accel accel_bench; do
  [ -x "$bin/$program" ] || { echo "sharding_bench.sh: $bin/$program missing: build with -DACCEL_BUILD_BENCH=ON" >&2; exit 2; }
done
threads=$(( nproc == 1 ? 2 : 1 ))
results="$(mktemp -t accel-sharding-bench.XXXXXX)"
trap 'rm -f "$results"' EXIT
strategies=(NO_SHARD SHARD_OPTIMIZER SHARD_GRAD_OP FULL_SHARD FULL_SHARD_NO_WRAP)

# The launcher environment of each strategy, as `accel launch` writes it from a config file.
strategy_env() {
  case "$1" in
    NO_SHARD) echo "ACCEL_BENCH_STRATEGY=NO_SHARD" ;;
    SHARD_OPTIMIZER) echo "ACCELERATE_USE_DEEPSPEED=true ACCELERATE_DEEPSPEED_ZERO_STAGE=1" ;;
    SHARD_GRAD_OP) echo "ACCELERATE_USE_DEEPSPEED=true ACCELERATE_DEEPSPEED_ZERO_STAGE=2" ;;
    FULL_SHARD) echo "ACCELERATE_USE_FSDP=true FSDP_SHARDING_STRATEGY=FULL_SHARD FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP FSDP_MIN_NUM_PARAMS=1000000" ;;
    # Accelerate's default policy: the whole model one unit.
    FULL_SHARD_NO_WRAP) echo "ACCELERATE_USE_FSDP=true FSDP_SHARDING_STRATEGY=FULL_SHARD FSDP_AUTO_WRAP_POLICY=NO_WRAP" ;;
  esac
}

echo "sharding bench: rounds=$rounds nproc=$nproc x $threads thread(s) workloads=[$workloads] load: $(cut -d' ' -f1-3 /proc/loadavg)"
failures=0
for ((r = 0; r < rounds; ++r)); do
  for w in $workloads; do
    for ((i = 0; i < ${#strategies[@]}; ++i)); do
      s="${strategies[$(( (i + r) % ${#strategies[@]} ))]}"
      # shellcheck disable=SC2046
      out="$(env $(strategy_env "$s") OMP_NUM_THREADS=$threads timeout 600 "$bin/accel" launch \
             --nproc_per_node "$nproc" --master_port 0 "$bin/accel_bench" --workload "$w" \
             --steps "${steps[$w]}" --warmup "${warm[$w]}" --threads "$threads" 2>&1)"
      lines="$(printf '%s\n' "$out" | grep -o 'BENCH_RESULT .*' | sed 's/^BENCH_RESULT //')"
      if [ "$(printf '%s' "$lines" | grep -c contestant)" -ne "$nproc" ]; then
        echo "sharding_bench.sh: FAILED $s $w:" >&2; printf '%s\n' "$out" | tail -15 >&2
        failures=$((failures + 1)); continue
      fi
      printf '%s\n' "$lines" | sed "s/^{/{\"strategy\":\"$s\",\"round\":$r,/" >> "$results"
      echo "  round $r $w $s: $(printf '%s\n' "$lines" | grep -o '"steps_per_s":[0-9.]*' | head -1)"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$results" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
order = ["NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD", "FULL_SHARD_NO_WRAP"]
target = {"SHARD_OPTIMIZER": 0.9, "SHARD_GRAD_OP": 0.9, "FULL_SHARD": 0.75, "FULL_SHARD_NO_WRAP": 0.75}
print("| workload | strategy | steps/s (median, min-max) | vs NO_SHARD | target | peak RSS MB/process | vs NO_SHARD | rounds |")
print("|---|---|---|---|---|---|---|---|")
for w in dict.fromkeys(r["workload"] for r in rows):
    def runs(s):
        # a run's speed is its slowest rank's; its memory the largest rank's
        by_round = {}
        for r in rows:
            if r["workload"] == w and r["strategy"] == s:
                by_round.setdefault(r["round"], []).append(r)
        return [(min(x["steps_per_s"] for x in v), max(x["peak_rss_mb"] for x in v)) for v in by_round.values()]
    base = runs("NO_SHARD")
    if not base:
        continue
    base_sps = statistics.median(x[0] for x in base)
    base_rss = statistics.median(x[1] for x in base)
    for s in order:
        got = runs(s)
        if not got:
            continue
        sps = [x[0] for x in got]
        rss = statistics.median(x[1] for x in got)
        med = statistics.median(sps)
        print(f"| {w} | {s} | {med:.3f} ({min(sps):.3f}-{max(sps):.3f}) | {med / base_sps:.2f}x | "
              f"{('>= %.2fx' % target[s]) if s in target else '-'} | {rss:.0f} | {rss / base_rss:.2f}x | {len(got)} |")
EOF
[ $failures -eq 0 ] || { echo "sharding_bench.sh: $failures run(s) failed" >&2; exit 1; }
