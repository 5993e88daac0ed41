#!/usr/bin/env bash
# The layering check must catch what it exists for: a copy of src/ with one
# include pointing up (core/ including the Accelerator's state) fails it, naming
# the file and the include; the unmodified copy passes.
set -euo pipefail
check=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cp -r "$src" "$work/src"
python3 "$check" "$work/src" >/dev/null || { echo "FAIL: the unmodified copy of src/ does not pass"; exit 1; }
echo '#include "accelerator/accelerator_state.hpp"' >>"$work/src/core/json.cpp"
if output=$(python3 "$check" "$work/src" 2>&1); then
  echo "FAIL: an upward include from core/ to accelerator/ passed the check"; exit 1
fi
grep -q 'core/json.cpp: includes "accelerator/accelerator_state.hpp", but accelerator/ is above core/' <<<"$output" \
  || { echo "$output"; echo "FAIL: the check failed without naming the planted include"; exit 1; }
mkdir "$work/src/newfolder" && echo '// planted' >"$work/src/newfolder/a.cpp"
sed -i '$d' "$work/src/core/json.cpp"
if output=$(python3 "$check" "$work/src" 2>&1); then
  echo "FAIL: a folder missing from layers.txt passed the check"; exit 1
fi
grep -q "folder newfolder/ is not in" <<<"$output" || { echo "$output"; echo "FAIL: the unlisted folder was not named"; exit 1; }
echo "ok: the planted upward include and the unlisted folder are refused"
