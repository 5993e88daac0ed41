#!/usr/bin/env bash
# abi_check.sh fails on what it exists for: with a copy of the headers where a
# field is inserted at the front of accel_accelerator_options (every later field
# moves), it reports the layout change; with a symbol dropped from the record
# standing in for one the library gained, it names the new symbol.
#   abi_check_planted.sh SOURCE_DIR LIBACCEL WORK_DIR C_COMPILER
set -euo pipefail
root=$1 lib=$2 work=$3 cc=$4
check=$root/tests/packaging/abi_check.sh
rm -rf "$work" && mkdir -p "$work/tree/packaging"
cp -r "$root/include" "$work/tree/include" && cp -r "$root/packaging/abi" "$work/tree/packaging/abi"
sed -i '/^typedef struct accel_accelerator_options {$/a\  int planted;' "$work/tree/include/accel/accel.h"
grep -q '^  int planted;' "$work/tree/include/accel/accel.h" || { echo "FAIL: could not plant the field"; exit 1; }
if output=$("$check" "$work/tree" "$lib" "$work/check1" "$cc" 2>&1); then
  echo "$output"; echo "FAIL: a field inserted into accel_accelerator_options passed the ABI check"; exit 1
fi
grep -q "layout of public C types changed" <<<"$output" || { echo "$output"; echo "FAIL: not reported as a layout change"; exit 1; }
cp "$root/include/accel/accel.h" "$work/tree/include/accel/accel.h"
sed -i '/^accel_version$\|^accel_version@/d' "$work/tree/packaging/abi/symbols.txt"
if output=$("$check" "$work/tree" "$lib" "$work/check2" "$cc" 2>&1); then
  echo "$output"; echo "FAIL: an unrecorded symbol passed the ABI check"; exit 1
fi
grep -q "^  accel_version" <<<"$output" || { echo "$output"; echo "FAIL: the unrecorded symbol was not named"; exit 1; }
echo "ok: a moved field and an unrecorded symbol are refused"
