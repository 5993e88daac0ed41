#!/usr/bin/env bash
# End-to-end behaviour of `accel launch` with real processes.
# Usage: test_launch.sh /path/to/accel
set -u
ACCEL=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $what" >&2; fi
}

# 1. The environment contract and rank-prefixed output.
"$ACCEL" launch --nproc_per_node 2 --master_port 0 sh -c \
  'echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE addr=$MASTER_ADDR port=$MASTER_PORT"; echo "to stderr" >&2' \
  >"$work/out" 2>"$work/err"
check "exit 0 when every rank succeeds" test $? -eq 0
check "rank 0 sees the contract" grep -qE '^\[rank 0\] rank=0 world=2 local=0/2 addr=127.0.0.1 port=[1-9][0-9]*$' "$work/out"
check "rank 1 sees the contract" grep -qE '^\[rank 1\] rank=1 world=2 local=1/2 addr=127.0.0.1 port=[1-9][0-9]*$' "$work/out"
check "both ranks got the same free port" test "$(grep -o 'port=[0-9]*' "$work/out" | sort -u | wc -l)" -eq 1
check "stderr is prefixed too" grep -q '^\[rank 1\] to stderr$' "$work/err"

# 2. A failing rank stops the others promptly and is named.
start=$(date +%s)
"$ACCEL" launch --nproc_per_node 2 --master_port 0 sh -c 'if [ "$RANK" = 1 ]; then exit 3; fi; sleep 60' \
  >"$work/out" 2>"$work/err"
status=$?
elapsed=$(( $(date +%s) - start ))
check "non-zero exit when a rank fails (got $status)" test "$status" -eq 3
check "failure reported within 10 s (took $elapsed s)" test "$elapsed" -lt 10
check "the failing rank and its code are named" grep -q 'rank 1 (pid [0-9]*) exited with code 3' "$work/err"

# 3. A rank killed by a signal is named with the signal.
"$ACCEL" launch --nproc_per_node 2 --master_port 0 sh -c 'if [ "$RANK" = 0 ]; then kill -9 $$; fi; sleep 60' \
  >"$work/out" 2>"$work/err"
status=$?
check "killed rank gives 128+9 (got $status)" test "$status" -eq 137
check "the signal is named" grep -q 'rank 0 (pid [0-9]*) was killed by signal 9 (SIGKILL)' "$work/err"

# 4. SIGINT to the launcher stops every rank; none is left behind.
"$ACCEL" launch --nproc_per_node 2 --master_port 0 sh -c "echo \$\$ > $work/pid.\$RANK; sleep 60" \
  >"$work/out" 2>"$work/err" &
launcher=$!
for _ in $(seq 50); do [ -f "$work/pid.0" ] && [ -f "$work/pid.1" ] && break; sleep 0.1; done
kill -INT "$launcher"
wait "$launcher"
status=$?
check "SIGINT gives exit 130 (got $status)" test "$status" -eq 130
sleep 0.5
for r in 0 1; do
  check "rank $r is gone after SIGINT" sh -c "! kill -0 \$(cat $work/pid.$r) 2>/dev/null"
done

# 5. Usage errors.
"$ACCEL" launch --help >"$work/out" 2>&1
check "--help exits 0" test $? -eq 0
check "--help lists --nproc_per_node" grep -q -- '--nproc_per_node' "$work/out"
"$ACCEL" launch --bogus prog >"$work/out" 2>&1
check "an unknown flag exits 2" test $? -eq 2
check "the unknown flag is named, with the usage" sh -c "grep -q -- '--bogus' $work/out && grep -q 'usage: accel launch' $work/out"
"$ACCEL" launch --nproc_per_node 0 prog >"$work/out" 2>&1
check "a bad value exits 2" test $? -eq 2

# 6. A program that does not exist.
"$ACCEL" launch --nproc_per_node 1 /nonexistent/program >"$work/out" 2>"$work/err"
check "a missing program fails with 127 (got $?)" test $? -ne 0
check "and is named" grep -q 'cannot run /nonexistent/program' "$work/err"

echo "test_launch: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
