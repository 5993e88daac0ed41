#!/usr/bin/env bash
# A real Slurm (Debian's slurm-wlm: slurmctld, slurmd; munge) started by this
# test from a throwaway configuration in a temporary directory: one node (this
# machine; a second slurmd would need its own hostname and address, so a
# network namespace and a resolvable name, and adds nothing the two tasks on
# one node do not already exercise), 2 tasks. A C training program started by
#   srun -N1 -n2 PROGRAM                        (RANK etc. from SLURM_*, MASTER_ADDR
#                                                from SLURM_STEP_NODELIST, port from
#                                                the job id)
#   sbatch with a script calling srun PROGRAM,
#          then srun -n1 accel launch --nproc_per_node 2 PROGRAM (one agent per node),
#          then mpirun -np 2 PROGRAM (MPI's variables win over the batch step's)
# trains to the same parameters, bitwise, as under accel launch --nproc_per_node 2.
# RANK=0 exported to every task is refused naming both values.
# Every daemon it starts is stopped on exit. Needs root (SlurmUser=root);
# exits 77 (skipped, with the reason) without root or the packages.
# Usage: run_under_slurm.sh ACCEL PROGRAM WORKDIR
set -euo pipefail
accel=$1 program=$2 work=$3
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs the tasks, SlurmUser=root)"
for tool in slurmctld slurmd srun sbatch squeue scancel munged; do
  command -v $tool >/dev/null || skip "$tool is not installed (Debian: apt install slurm-wlm munge)"
done
host=$(hostname -s)
getent hosts "$host" >/dev/null || skip "this machine's name $host does not resolve (Slurm's node list names it)"
# Nothing of an enclosing launcher or scheduler may leak in.
unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK MASTER_ADDR MASTER_PORT "${!SLURM_@}" "${!OMPI_@}" "${!PMIX_@}"
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
# The daemons' files: a short path (unix sockets), executable for all (munged's check).
run=$(mktemp -d /tmp/accel-slurm.XXXXXX)
chmod 711 "$run"
pids=() watchdog=
cleanup() {
  set +e
  [ -n "$watchdog" ] && kill -9 "$watchdog" 2>/dev/null  # it ignores SIGTERM
  if [ -f "$run/slurm.conf" ]; then
    SLURM_CONF=$run/slurm.conf timeout 10 scancel --full -u root >/dev/null 2>&1
    for _ in $(seq 20); do  # the steps end before slurmd goes
      [ -z "$(SLURM_CONF=$run/slurm.conf timeout 5 squeue -h 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 "$pid" 2>/dev/null
  done
  wait 2>/dev/null
  rm -rf "$run"
}
trap cleanup EXIT
show_logs() { tail -n 30 "$run"/*.log "$work"/*.out 2>/dev/null >&2 || true; }

dd if=/dev/urandom of="$run/munge.key" bs=1024 count=1 status=none
chmod 400 "$run/munge.key"
munged --foreground --force --key-file="$run/munge.key" --socket="$run/munge.sock" \
  --pid-file="$run/munged.pid" --log-file="$run/munged.log" --seed-file="$run/munged.seed" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 40); do [ -S "$run/munge.sock" ] && break; sleep 0.25; done
[ -S "$run/munge.sock" ] || { show_logs; fail "munged did not start"; }

read -r ctld_port slurmd_port < <(python3 "$(dirname "$0")/../support/reserve_port.py" 2 | paste -sd ' ')
mkdir -p "$run/state" "$run/spool"
# One node of 4 CPUs whatever the machine has (config_overrides), so that 2
# tasks fit on a 2-core machine; no cgroups, no accounting.
cat >"$run/slurm.conf" <<CONF
ClusterName=accel-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$run/munge.sock
StateSaveLocation=$run/state
SlurmdSpoolDir=$run/spool
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=$run/slurmctld.log
SlurmdLogFile=$run/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$run/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$run/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >"$run/slurmd.out.log" 2>&1 &
pids+=($!)
state=
for _ in $(seq 60); do
  state=$(timeout 5 sinfo -h -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { show_logs; fail "the Slurm node did not become idle (state: '$state')"; }
# Should this script be killed outright (SIGKILL: no trap runs), a watchdog
# cancels the jobs and stops the daemons once it is gone.
script=$$
(
  trap '' TERM INT HUP
  while kill -0 $script 2>/dev/null; do sleep 1; done
  timeout 10 scancel --full -u root >/dev/null 2>&1
  sleep 2
  kill "${pids[@]}" 2>/dev/null
  sleep 2
  rm -rf "$run"
) </dev/null >/dev/null 2>&1 &
watchdog=$!
disown "$watchdog"
echo "slurmctld and slurmd up (Slurm $(slurmd -V | awk '{print $2}')), node $host idle"

timeout -k 5 90 "$accel" launch --nproc_per_node 2 --master_port 0 "$program" "$work/launch" >"$work/launch.out" 2>&1 ||
  { cat "$work/launch.out" >&2; fail "the accel launch run failed"; }
same() {  # same NAME: NAME's parameters equal accel launch's
  cmp "$work/launch/model.safetensors" "$work/$1/model.safetensors" ||
    fail "the parameters trained by $1 differ from accel launch's"
}

# 1. srun starts the 2 ranks; nothing but Slurm's variables.
timeout -k 5 90 srun -N1 -n2 --kill-on-bad-exit=1 --time=2 "$program" "$work/srun" >"$work/srun.out" 2>&1 ||
  { show_logs; fail "srun -N1 -n2 failed"; }
grep -q "rank 1 of 2" "$work/srun.out" || { show_logs; fail "srun's task 1 did not run as rank 1 of 2"; }
same srun
echo "srun -N1 -n2: parameters bitwise equal to accel launch --nproc_per_node 2"

# 2. A batch script: srun of the program, srun of accel launch (one agent per
# node, its ranks' RANK differs from the agent's SLURM_PROCID), and mpirun
# (its ranks carry the batch step's SLURM_PROCID=0).
mpirun_line="echo no mpirun"
command -v mpirun >/dev/null && mpirun_line="mpirun --oversubscribe --allow-run-as-root -np 2 $program $work/mpirun"
cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --time=3
set -e
srun --kill-on-bad-exit=1 $program $work/sbatch
srun --ntasks=1 $accel launch --nproc_per_node 2 --master_port 0 $program $work/sbatch_launch
$mpirun_line
JOB
timeout -k 5 180 sbatch --wait --output="$work/sbatch.out" "$work/job.sh" >/dev/null ||
  { show_logs; fail "the sbatch job failed"; }
same sbatch
same sbatch_launch
echo "sbatch, srun PROGRAM: parameters bitwise equal to accel launch"
echo "sbatch, srun accel launch --nproc_per_node 2: parameters bitwise equal to accel launch"
if command -v mpirun >/dev/null; then
  same mpirun
  echo "sbatch, mpirun -np 2 (MPI's variables win over the batch step's): parameters bitwise equal to accel launch"
fi

# 3. RANK=0 exported to every task: task 1 refuses it, naming both values
# (task 0's agree; with MASTER_ADDR set it waits for the rendezvous until srun
# ends it, rather than failing first for want of an address).
port=$(python3 "$(dirname "$0")/../support/reserve_port.py")
if RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -k 5 60 srun -N1 -n2 --kill-on-bad-exit=1 --time=1 \
  "$program" "$work/bad" >"$work/bad.out" 2>&1; then
  fail "a RANK that disagrees with SLURM_PROCID was accepted"
fi
grep -q "RANK=0, WORLD_SIZE=2 (torchrun's, which win) but SLURM_PROCID=1, SLURM_STEP_NUM_TASKS=2" "$work/bad.out" ||
  { cat "$work/bad.out" >&2; fail "no error naming RANK=0 and SLURM_PROCID=1"; }
echo "RANK=0 exported to every srun task: refused, naming both values"
