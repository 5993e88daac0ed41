#!/usr/bin/env bash
# Context parallelism (bench/tensor_parallel_bench.cpp with length= and batch=):
# the JSON GPT on one sequence of --length tokens a step, on one process (1
# and 2 threads) and cut over cp 2 (2 processes x 1 thread); each run's peak
# RSS per rank (the largest) and tokens/s, with the ratios to the one-process
# runs measured in the same run.
#   bench/context_parallel_bench.sh [--build-dir DIR] [--steps N] [--length L]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build" steps=4 length=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --steps) steps="$2"; shift ;;
    --length) length="$2"; shift ;;
    *) echo "context_parallel_bench.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
grep -m1 'model name' /proc/cpuinfo
echo "cores: $(nproc); one sequence of $length tokens a step, $steps timed steps after 1 warm-up"
work=$(mktemp -d -t accel-cp-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() {  # name, threads, processes, then launch flags
  local name=$1 threads=$2 nproc=$3
  shift 3
  echo "== $name"
  OMP_NUM_THREADS=$threads "$bin/accel" launch --nproc_per_node "$nproc" --master_port 0 "$@" \
    "$bin/tensor_parallel_bench" "$steps" 1 "length=$length" batch=1 2>&1 | grep -E "held|tokens/s|rror" |
    tee "$work/$name"
}
run one_2threads 2 1
run one_1thread 1 1
run cp2 1 2 --parallelism_config_cp_size 2
rate() { sed -n 's/.*: \([0-9]*\) tokens\/s.*/\1/p' "$work/$1"; }
rss() { sed -n 's/.*peak RSS \([0-9.]*\) MiB.*/\1/p' "$work/$1" | sort -n | tail -n 1; }
for name in one_1thread cp2; do
  awk -v n="$name" -v r="$(rate "$name")" -v b="$(rate one_2threads)" -v m="$(rss "$name")" -v bm="$(rss one_2threads)" \
    'BEGIN { printf "%s: %.2fx the tokens/s of one process (2 threads); peak RSS %.1f MiB, %.2fx\n", n, r / b, m, m / bm }'
done
