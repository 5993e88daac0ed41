#!/usr/bin/env bash
# accel launch runs Python as torchrun and `accelerate launch` do: a .py script
# with the active virtual environment's python (2 ranks through the Python
# binding), -m with a module, --no_python as is; a missing script is named.
# Usage: run_python_launch.sh ACCEL VENV WORKDIR   (PYTHONPATH finds accel)
set -euo pipefail
accel=$1 venv=$2 work=$3
rm -rf "$work" && mkdir -p "$work/pkg"
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$work/train.py" <<'PY'
import sys
import accel
acc = accel.Accelerator(cpu=True)
ranks = acc.gather(accel.tensor([float(acc.process_index)])).numpy().tolist()
print(f"script {acc.process_index}/{acc.num_processes} prefix={sys.prefix} args={sys.argv[1:]} ranks={ranks}")
PY
out=$(cd "$work" && VIRTUAL_ENV="$venv" "$accel" launch --nproc_per_node 2 --master_port 0 train.py --lr 0.1 2>&1) \
  || fail "the script failed: $out"
echo "$out"
for rank in 0 1; do
  grep -qF "[rank $rank] script $rank/2 prefix=$venv args=['--lr', '0.1'] ranks=[0.0, 1.0]" <<<"$out" \
    || fail "rank $rank did not run train.py with $venv/bin/python"
done

cat >"$work/pkg/__init__.py" </dev/null
cat >"$work/pkg/main.py" <<'PY'
import sys
import accel
acc = accel.Accelerator(cpu=True)
print(f"module {__name__} {acc.process_index}/{acc.num_processes} args={sys.argv[1:]}")
PY
out=$(cd "$work" && VIRTUAL_ENV="$venv" "$accel" launch --nproc_per_node 2 --master_port 0 -m pkg.main x 2>&1) \
  || fail "the module failed: $out"
echo "$out"
for rank in 0 1; do
  grep -qF "[rank $rank] module __main__ $rank/2 args=['x']" <<<"$out" || fail "rank $rank did not run -m pkg.main"
done

# Shell, not Python: only --no_python runs it as it is.
printf '#!/bin/sh\necho "as is $RANK $1"\n' >"$work/tool.py" && chmod +x "$work/tool.py"
out=$("$accel" launch --nproc_per_node 2 --no_python "$work/tool.py" y 2>&1) || fail "--no_python failed: $out"
echo "$out"
grep -qF "[rank 0] as is 0 y" <<<"$out" && grep -qF "[rank 1] as is 1 y" <<<"$out" || fail "--no_python did not run tool.py"

status=0
out=$("$accel" launch --nproc_per_node 2 "$work/missing.py" 2>&1) || status=$?
echo "$out"
[ "$status" -eq 2 ] || fail "a missing script exited $status, not 2 (usage error)"
grep -qF "Python script $work/missing.py is not a file" <<<"$out" || fail "the missing script is not named"
echo "PASS"
