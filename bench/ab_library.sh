#!/usr/bin/env bash
# Before and after a change that should not move performance (a refactor, a
# reformat): this build's benchmark programs run alternately on this build's
# libaccel.so.0 and on another one of the same ABI (LD_LIBRARY_PATH wins over
# the programs' RUNPATH), and the medians of their rates are compared.
#   bench/ab_library.sh OLD_LIB_DIR [--build-dir DIR] [--rounds N] [--no-lm]
# Workloads: accel_bench tiny and mlp at 1 process x 2 threads and 2 x 1, and
# the LM bench's C program (GPT-2 6x256, bench/lm) at 1 x 2. Prints one line per
# case: median steps/s (or tokens/s) old and new, their ratio, the min-max spread.
# The rounds alternate which library runs first. Check the ABI is the same first
# (tests/packaging/abi_check.sh): a different ABI measures nothing meaningful.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
old="${1:?usage: ab_library.sh OLD_LIB_DIR [--build-dir DIR] [--rounds N] [--no-lm]}"
shift
build="$here/../build" rounds=3 lm=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift ;;
    --rounds) rounds="$2"; shift ;;
    --no-lm) lm=0 ;;
    *) echo "ab_library.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ -e "$old/libaccel.so.0" ] || { echo "ab_library.sh: $old/libaccel.so.0 missing" >&2; exit 2; }
bin="$build/bin" python="${PYTHON:-$here/../.venv/bin/python}"
work="$(mktemp -d -t accel-ab.XXXXXX)"
trap 'rm -rf "$work"' EXIT
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores; old: $old; new: $build/src"

# rate LIB NPROC FIELD COMMAND...: the slowest rank's FIELD from BENCH_RESULT lines.
rate() {
  local lib="$1" nproc="$2" field="$3"; shift 3
  local threads=$(( nproc == 1 ? 2 : 1 )) out env=()
  [ "$lib" = old ] && env=(LD_LIBRARY_PATH="$old")
  if [ "$nproc" -eq 1 ]; then
    out="$(env "${env[@]}" OMP_NUM_THREADS=$threads timeout 900 "$@" --threads "$threads" 2>&1)"
  else
    out="$(env "${env[@]}" OMP_NUM_THREADS=$threads timeout 900 "$bin/accel" launch --nproc_per_node "$nproc" \
           --master_port 0 "$@" --threads "$threads" 2>&1)"
  fi
  printf '%s\n' "$out" | grep -o "\"$field\":[0-9.]*" | cut -d: -f2 | sort -g | head -1
}

compare() {  # compare NAME NPROC FIELD COMMAND...
  local name="$1" nproc="$2" field="$3"; shift 3
  local olds=() news=()
  for ((round = 0; round < rounds; ++round)); do
    for lib in $( ((round % 2)) && echo "new old" || echo "old new"); do
      value="$(rate "$lib" "$nproc" "$field" "$@")"
      [ -n "$value" ] || { echo "ab_library.sh: $name x$nproc on the $lib library printed no result" >&2; return 1; }
      if [ "$lib" = old ]; then olds+=("$value"); else news+=("$value"); fi
    done
  done
  python3 - "$name" "$nproc" "${olds[*]}" "${news[*]}" <<'EOF'
import statistics, sys
name, nproc, olds, news = sys.argv[1], sys.argv[2], [float(v) for v in sys.argv[3].split()], [float(v) for v in sys.argv[4].split()]
o, n = statistics.median(olds), statistics.median(news)
print(f"{name:<10} x{nproc}  old {o:10.2f}  new {n:10.2f}  new/old {n / o:5.3f}  "
      f"(old {min(olds):.2f}-{max(olds):.2f}, new {min(news):.2f}-{max(news):.2f})")
EOF
}

compare tiny 1 steps_per_s "$bin/accel_bench" --workload tiny --steps 1500 --warmup 5
compare tiny 2 steps_per_s "$bin/accel_bench" --workload tiny --steps 1500 --warmup 5
compare mlp 1 steps_per_s "$bin/accel_bench" --workload mlp --steps 60 --warmup 5
compare mlp 2 steps_per_s "$bin/accel_bench" --workload mlp --steps 60 --warmup 5
if [ "$lm" = 1 ] && [ -x "$bin/lm_bench_c" ]; then
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$python" "$here/lm/lm_model.py" "$work" >/dev/null \
    || { echo "ab_library.sh: exporting the LM bench's model failed" >&2; exit 1; }
  compare lm_c 1 tokens_per_s "$bin/lm_bench_c" "$work/model.pt" --steps 20 --warmup 3
fi
