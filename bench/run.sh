#!/usr/bin/env bash
# Runs the benchmark suite against an existing build (it builds nothing) and
# prints the table that docs/benchmarks.md records. Contestants alternate
# within each repeat; the table shows medians over repeats.
#   bench/run.sh            full run: 5 repeats (~25 min on 2 cores; --workloads tiny,mlp ~8 min)
#   bench/run.sh --quick    1 repeat, short runs (< 2 min)
#   bench/run.sh --smoke    a few steps of every contestant; fails if one prints no result (CTest bench_smoke)
# Options: --build-dir DIR (default: build/ next to bench/), --reps N, --workloads tiny,mlp,...,
#          --no-sync-bench. Environment: PYTHON (default /usr/bin/python3, Debian's python3-torch).
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../build"
mode=full
reps=""
workloads="tiny mlp cnn sync"
sync_bench=1
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --smoke) mode=smoke ;;
    --build-dir) build="$2"; shift ;;
    --reps) reps="$2"; shift ;;
    --workloads) workloads="${2//,/ }"; shift ;;
    --no-sync-bench) sync_bench=0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
bin="$build/bin"
for program in accel accel_bench accel_bench_c torch_bench sync_bench; do
  [ -x "$bin/$program" ] || { echo "run.sh: $bin/$program missing: build first (ninja -C build)" >&2; exit 2; }
done
python="${PYTHON:-/usr/bin/python3}"
# (f) Python Accelerate runs from the test venv (accelerate 0.22 over Debian's torch).
accelerate_python="${ACCELERATE_PYTHON:-$here/../.venv/bin/python}"
have_accelerate=1
if ! "$accelerate_python" -c "import accelerate" 2>/dev/null; then
  have_accelerate=0
  echo "run.sh: SKIPPING the Python Accelerate contestant: '$accelerate_python' cannot import accelerate (scripts/python-env.sh)"
fi
have_torch_py=1
if ! "$python" -c "import torch" 2>/dev/null; then
  have_torch_py=0
  echo "run.sh: SKIPPING the Python PyTorch peer: '$python' cannot import torch (apt-get install python3-torch)"
fi

# Timed steps and warm-up steps per workload, sized for a few seconds per run on
# 2 cores (cnn takes ~2-3 s a step, so it gets few but long steps).
declare -A steps warm
case "$mode" in
  full)  steps=([tiny]=1500 [mlp]=60 [cnn]=2 [sync]=4); warm=([tiny]=5 [mlp]=5 [cnn]=1 [sync]=2); : "${reps:=5}" ;;
  quick) steps=([tiny]=600 [mlp]=20 [cnn]=1 [sync]=2); warm=([tiny]=2 [mlp]=2 [cnn]=1 [sync]=1); : "${reps:=1}"
         # cnn (~2.5 s a step) and sync do not fit in 2 minutes; sync_bench still measures gradient sync
         [ "$workloads" = "tiny mlp cnn sync" ] && workloads="tiny mlp" ;;
  smoke) steps=([tiny]=3 [mlp]=2 [cnn]=1 [sync]=1); warm=([tiny]=1 [mlp]=1 [cnn]=1 [sync]=1); : "${reps:=1}"
         [ "$workloads" = "tiny mlp cnn sync" ] && workloads="tiny" ;;
esac

results="$(mktemp -t accel-bench.XXXXXX)"
log="$(mktemp -t accel-bench-log.XXXXXX)"
trap 'rm -f "$results" "$log"' EXIT
failures=0

# run NPROC CONTESTANT WORKLOAD COMMAND...: threads fixed by process count
# (2 threads for one process, 1 per process for two on the 2-core machine).
run() {
  local nproc="$1" name="$2" workload="$3"; shift 3
  local threads=$(( nproc == 1 ? 2 : 1 ))
  local args=(--workload "$workload" --steps "${steps[$workload]}" --warmup "${warm[$workload]}" --threads "$threads")
  local out
  if [ "$nproc" -eq 1 ]; then
    out="$(OMP_NUM_THREADS=$threads timeout 600 "$@" "${args[@]}" 2>&1)"
  else
    out="$(OMP_NUM_THREADS=$threads timeout 600 "$bin/accel" launch --nproc_per_node "$nproc" --master_port 0 \
           "$@" "${args[@]}" 2>&1)"
  fi
  local lines
  lines="$(printf '%s\n' "$out" | grep -o 'BENCH_RESULT .*' | sed 's/^BENCH_RESULT //')"
  if [ "$(printf '%s' "$lines" | grep -c contestant)" -ne "$nproc" ]; then
    echo "run.sh: FAILED $name $workload x$nproc:" >&2
    printf '%s\n' "$out" | tail -20 >&2
    failures=$((failures + 1))
    return
  fi
  # Accelerate must really run data parallel (MULTI_CPU), not 2 separate single-process runs.
  if [ "$name" = accelerate_py ] && [ "$nproc" -gt 1 ] && ! printf '%s' "$lines" | grep -q '"distributed_type":"MULTI_CPU"'; then
    echo "run.sh: FAILED $name $workload x$nproc: Accelerate did not run MULTI_CPU: $lines" >&2
    failures=$((failures + 1))
    return
  fi
  printf '%s\n' "$lines" >> "$results"
  [ "$mode" = full ] || printf '  %-18s %-5s x%d done\n' "$name" "$workload" "$nproc"
}

# (e) bindings: the same loop through the Python, Java and Go bindings, for
# those the build has (build/python, build/java/accel.jar, a Go toolchain). The
# Go program is built here, once, before anything is timed.
bench_py="$here/bindings/accel_bench.py" bench_java="$here/bindings/AccelBench.java"
bench_go="$build/bin/accel_bench_go"
have_py=0; [ -d "$build/python/accel" ] && "$python" -c "import numpy" 2>/dev/null && have_py=1
have_java=0; [ -f "$build/java/accel.jar" ] && command -v java >/dev/null && have_java=1
have_go=0
go_cmd="$(command -v go || true)"; [ -x /usr/local/go/bin/go ] && go_cmd=/usr/local/go/bin/go
if [ -n "$go_cmd" ] && [ -f "$here/../bindings/go/internal/core/core.go" ]; then
  if (cd "$here/bindings/go" && PKG_CONFIG_PATH="$build/go/pkgconfig" GOFLAGS=-mod=mod GOPROXY=off \
        GOTOOLCHAIN=local GOCACHE="$build/go/cache" GOPATH="$build/go/path" "$go_cmd" build -o "$bench_go" . ); then
    have_go=1
  else
    echo "run.sh: SKIPPING the Go contestant: go build failed"
  fi
fi
run_bindings() {
  local nproc="$1" w="$2"
  [ $have_py = 1 ] && PYTHONPATH="$build/python" run "$nproc" accel_py "$w" "$python" "$bench_py"
  [ $have_java = 1 ] && run "$nproc" accel_java "$w" java -Djava.library.path="$build/java" \
    -cp "$build/java/accel.jar" "$bench_java" --workload-dir "$here/workloads"
  [ $have_go = 1 ] && run "$nproc" accel_go "$w" "$bench_go" --workload-dir "$here/workloads"
  return 0
}

# One contestant of a repeat, by name.
run_contestant() {
  local nproc="$1" name="$2" w="$3"
  case "$name" in
    accel_cpp) run "$nproc" accel_cpp "$w" "$bin/accel_bench" ;;
    accel_c) run "$nproc" accel_c "$w" "$bin/accel_bench_c" ;;
    torch_cpp) run "$nproc" torch_cpp "$w" "$bin/torch_bench" ;;
    torch_py) [ $have_torch_py = 1 ] && run "$nproc" torch_py "$w" "$python" "$here/torch_bench.py" ;;
    torch_py_ddp) [ $have_torch_py = 1 ] && run "$nproc" torch_py_ddp "$w" "$python" "$here/torch_bench.py" ;;
    accelerate_py) [ $have_accelerate = 1 ] && run "$nproc" accelerate_py "$w" "$accelerate_python" "$here/accelerate_bench.py" ;;
    accel_cpp_nosync) run "$nproc" accel_cpp_nosync "$w" "$bin/accel_bench" --no-sync ;;
    bindings) run_bindings "$nproc" "$w" ;;
  esac
  return 0
}

# Runs the contestants starting at a different one each repeat: the first run
# after a workload switch measured up to 8% slow on cnn, and that must not
# always fall on the same contestant.
run_rotated() {
  local nproc="$1" w="$2" r="$3"; shift 3
  local names=("$@") i
  for ((i = 0; i < ${#names[@]}; ++i)); do
    run_contestant "$nproc" "${names[$(( (i + r) % ${#names[@]} ))]}" "$w"
  done
}

echo "libaccel bench: mode=$mode reps=$reps workloads=[$workloads] load: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= reps; ++r)); do
  echo "repeat $r/$reps"
  for w in $workloads; do
    if [ "$w" != sync ]; then   # sync is a 2-process workload
      run_rotated 1 "$w" "$r" accel_cpp accel_c torch_cpp torch_py accelerate_py bindings
    fi
    run_rotated 2 "$w" "$r" accel_cpp accel_c torch_py_ddp accelerate_py accel_cpp_nosync bindings
  done
done

python3 "$here/report.py" "$results"

if [ $sync_bench = 1 ]; then
  echo
  echo "gradient sync vs raw allreduce (2 processes x 1 thread):"
  case "$mode" in
    full) sb=(--reps 9 --sizes 1,16,64,256) ;;
    quick) sb=(--reps 3 --sizes 1,16) ;;
    smoke) sb=(--reps 1 --sizes 1) ;;
  esac
  # Default gradient views, then gradients copied to and from the buckets
  # (gradient_as_bucket_view=false, PyTorch DDP's default) in the full run.
  variants=("")
  [ "$mode" = full ] && variants+=(--gradient-copies)
  for variant in "${variants[@]}"; do
    [ -n "$variant" ] && echo "with $variant:"
    # shellcheck disable=SC2086
    if ! OMP_NUM_THREADS=1 timeout 600 "$bin/accel" launch --nproc_per_node 2 --master_port 0 \
         "$bin/sync_bench" "${sb[@]}" $variant > "$log" 2>&1 || ! grep -q SYNC_RESULT "$log"; then
      echo "run.sh: FAILED sync_bench $variant:" >&2; tail -20 "$log" >&2; failures=$((failures + 1))
    else
      grep '^\[rank 0\]' "$log" | grep -v SYNC_RESULT | sed 's/^\[rank 0\] //'
    fi
  done
fi

if [ $failures -gt 0 ]; then echo "run.sh: $failures run(s) failed" >&2; exit 1; fi
