#!/usr/bin/env bash
# Open MPI's mpirun (Debian's openmpi-bin) starts 2 ranks of a C training
# program directly, no accel launch and no MASTER_ADDR/MASTER_PORT: the library
# takes the rank from OMPI_COMM_WORLD_*, the address from "every rank on this
# machine" and the port from Open MPI's job id. The trained parameters must
# equal, bitwise, those of the same program under accel launch --nproc_per_node 2.
# A RANK exported by hand that disagrees with mpirun's is refused, naming both.
# Exits 77 (skipped, with the reason) without mpirun.
# Usage: run_under_mpirun.sh ACCEL PROGRAM WORKDIR
set -euo pipefail
accel=$1 program=$2 work=$3
skip() { echo "SKIPPED: $*"; exit 77; }
command -v mpirun >/dev/null || skip "mpirun is not installed (Debian: apt install openmpi-bin)"
mpirun --version 2>/dev/null | grep -q "Open MPI" || skip "mpirun is not Open MPI's"
# Nothing of an enclosing launcher or scheduler may leak in.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT "${!SLURM_@}" "${!OMPI_@}" "${!PMIX_@}"
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

timeout -k 5 90 "$accel" launch --nproc_per_node 2 --master_port 0 "$program" "$work/launch" >"$work/launch.log" 2>&1 ||
  { cat "$work/launch.log" >&2; fail "the accel launch run failed"; }

mpi=(mpirun --oversubscribe --allow-run-as-root -np 2)
timeout -k 5 120 "${mpi[@]}" "$program" "$work/mpirun" >"$work/mpirun.log" 2>&1 ||
  { cat "$work/mpirun.log" >&2; fail "the mpirun run failed"; }
cat "$work/mpirun.log"
grep -q "rank 1 of 2" "$work/mpirun.log" || fail "mpirun's rank 1 did not run as rank 1 of 2"
cmp "$work/launch/model.safetensors" "$work/mpirun/model.safetensors" ||
  fail "the parameters trained under mpirun differ from accel launch's"
echo "mpirun -np 2: parameters bitwise equal to accel launch --nproc_per_node 2"

# RANK=0 exported to every rank: rank 1 refuses it, naming both values.
port=$(python3 "$(dirname "$0")/../support/reserve_port.py")
if RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -k 5 60 "${mpi[@]}" -x RANK -x WORLD_SIZE \
  "$program" "$work/bad" >"$work/bad.log" 2>&1; then
  cat "$work/bad.log" >&2
  fail "a RANK that disagrees with OMPI_COMM_WORLD_RANK was accepted"
fi
grep -q "RANK=0, WORLD_SIZE=2 (torchrun's, which win) but OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2" \
  "$work/bad.log" || { cat "$work/bad.log" >&2; fail "no error naming RANK=0 and OMPI_COMM_WORLD_RANK=1"; }
echo "RANK=0 exported under mpirun: refused, naming both values"
