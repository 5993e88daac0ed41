#!/bin/sh
# accel launch --enable_cpu_affinity: each local rank runs on its own share of
# the launcher's CPUs (disjoint, as many each); without the flag every rank may
# use all of them. Usage: run_cpu_affinity.sh ACCEL_CLI
set -eu
accel="$1"
cpus() {  # the Cpus_allowed_list each rank prints, "rank list" per line, sorted by rank
  "$accel" launch --nproc_per_node 2 --master_port 0 "$@" sh -c 'grep Cpus_allowed_list /proc/self/status' |
    sed -n 's/^\[rank \([0-9]*\)\] Cpus_allowed_list:[[:space:]]*/\1 /p' | sort
}
launcher="$(grep Cpus_allowed_list /proc/self/status | sed 's/.*:[[:space:]]*//')"
plain="$(cpus)"
pinned="$(cpus --enable_cpu_affinity)"
echo "launcher: $launcher"; echo "without the flag:"; echo "$plain"; echo "with --enable_cpu_affinity:"; echo "$pinned"
[ "$(echo "$plain" | wc -l)" -eq 2 ] && [ "$(echo "$pinned" | wc -l)" -eq 2 ] || { echo "FAIL: expected 2 ranks"; exit 1; }
for list in $(echo "$plain" | cut -d' ' -f2); do
  [ "$list" = "$launcher" ] || { echo "FAIL: without the flag a rank got $list, not $launcher"; exit 1; }
done
rank0="$(echo "$pinned" | sed -n 1p | cut -d' ' -f2)"; rank1="$(echo "$pinned" | sed -n 2p | cut -d' ' -f2)"
if [ "$(nproc)" -ge 2 ]; then
  [ "$rank0" != "$rank1" ] || { echo "FAIL: both ranks pinned to $rank0"; exit 1; }
  [ "$rank0" != "$launcher" ] || { echo "FAIL: rank 0 not pinned ($rank0)"; exit 1; }
fi
echo "ok: ranks pinned to $rank0 and $rank1"
