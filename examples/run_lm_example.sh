#!/usr/bin/env bash
# Runs a language-model example under `accel launch` and checks what it prints:
# the held-out perplexity after the last epoch is finite and below the initial
# one, the training loss of the last "step" line is below the first one, a
# sample was printed, only rank 0 printed them, and every rank that printed a
# parameter checksum printed the same one.
# Usage: run_lm_example.sh ACCEL NPROC PROGRAM [ARGS...]
set -uo pipefail
accel=$1 nproc=$2
shift 2
output=$("$accel" launch --nproc_per_node "$nproc" --master_port 0 "$@")
status=$?
echo "$output"
fail() { echo "FAIL: $*"; exit 1; }
[ $status -eq 0 ] || fail "the example exited with $status"
number='[0-9]+(\.[0-9]+)?'
initial=$(echo "$output" | sed -nE "s/^\[rank 0\] initial perplexity ($number)$/\1/p" | head -n 1)
last=$(echo "$output" | grep -E "^\[rank 0\] epoch [0-9]+: loss $number, perplexity $number$" | tail -n 1 |
       sed -E 's/.*perplexity //')
[ -n "$initial" ] || fail "no initial perplexity line from rank 0"
[ -n "$last" ] || fail "no epoch line with a finite perplexity from rank 0"
awk -v a="$last" -v b="$initial" 'BEGIN { exit !(a < b) }' || fail "perplexity $initial -> $last did not fall"
losses=$(echo "$output" | sed -nE "s/^\[rank 0\] step [0-9]+: loss ($number)$/\1/p")
[ "$(echo "$losses" | grep -c .)" -ge 2 ] || fail "fewer than 2 step lines"
awk -v a="$(echo "$losses" | tail -n 1)" -v b="$(echo "$losses" | head -n 1)" 'BEGIN { exit !(a < b) }' ||
  fail "the training loss did not fall: $(echo $losses)"
echo "$output" | grep -qE '^\[rank 0\] sample: ".{5,}"$' || fail "no sample from rank 0"
echo "$output" | grep -qE '^\[rank [1-9][0-9]*\] (epoch|sample|step)' &&
  fail "a rank other than 0 printed: print() must be main-process only"
checksums=$(echo "$output" | sed -nE 's/^\[rank [0-9]+\] rank [0-9]+: parameter checksum ([^,]+),.*/\1/p' | sort -u)
if [ -n "$checksums" ]; then
  [ "$(echo "$output" | grep -c 'parameter checksum')" -eq "$nproc" ] || fail "not every rank printed its checksum"
  [ "$(echo "$checksums" | wc -l)" -eq 1 ] || fail "the ranks' parameters differ: $(echo $checksums)"
fi
echo "perplexity $initial -> $last, loss $(echo "$losses" | head -n 1) -> $(echo "$losses" | tail -n 1): ok"
