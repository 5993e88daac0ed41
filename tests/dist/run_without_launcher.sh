#!/usr/bin/env bash
# Two processes started without `accel launch`, the way mpirun or srun would:
# each gets only its scheduler's variables (Open MPI's OMPI_COMM_WORLD_* or
# SLURM's SLURM_*), no RANK or WORLD_SIZE, and runs PROGRAM's collectives.
# Usage: run_without_launcher.sh ompi|slurm PROGRAM
set -euo pipefail
scheme=$1 program=$2
# A port reserved on loopback (tests/support/reserve_port.py); both processes are given the same one.
port=$(python3 "$(dirname "$0")/../support/reserve_port.py")

rank_env() {  # rank_env RANK: the variables of that rank under $scheme
  case $scheme in
    ompi) echo "OMPI_COMM_WORLD_RANK=$1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=$1" \
               "OMPI_COMM_WORLD_LOCAL_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port" ;;
    # What srun gives a task of a step (tests/dist/run_under_slurm.sh runs a
    # real one). No MASTER_ADDR: derived from the node list.
    slurm) echo "SLURM_PROCID=$1 SLURM_NTASKS=2 SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=$1 SLURM_NODEID=0" \
                "SLURM_STEP_TASKS_PER_NODE=2 SLURM_STEP_NODELIST=localhost SLURM_JOB_ID=1 MASTER_PORT=$port" ;;
    *) echo "unknown scheme $scheme" >&2; exit 2 ;;
  esac
}

pids=()
for rank in 0 1; do
  # env -u: the torchrun contract must not leak in from the test's environment.
  # shellcheck disable=SC2046
  env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u LOCAL_WORLD_SIZE $(rank_env $rank) "$program" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
[ $status -eq 0 ] || { echo "FAIL: a process exited with $status" >&2; exit 1; }
echo "2 processes started with $scheme variables only: collectives passed"
