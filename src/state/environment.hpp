// The launcher's environment contract (torchrun's variables), read and validated once.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace accel::detail {

struct LaunchEnvironment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // Whose variables gave the rank: "torchrun" (also accel launch), "Open MPI",
  // "MVAPICH2", "MPICH (Hydra)" or "SLURM".
  std::string source = "torchrun";

  bool distributed() const { return world_size > 1; }
};

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> get_env(const char* name);

// A yes/no variable as Accelerate reads it (y, yes, t, true, on, 1 and their
// opposites, any case); `fallback` when unset. Throws InvalidArgument naming
// the variable for anything else.
bool get_env_flag(const char* name, bool fallback);

// "tensorboard, jsonl" -> {"tensorboard", "jsonl"}: comma-separated items as
// Accelerate's variables and list options carry them, each trimmed of spaces
// and tabs; empty items are kept (callers drop or refuse them).
std::vector<std::string> split_comma_list(const std::string& text);

// Reads RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
// Without WORLD_SIZE, the variables of the first of these that is present:
// Open MPI (OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE), MVAPICH2
// (MV2_COMM_WORLD_*), MPICH's Hydra (PMI_RANK, PMI_SIZE, MPI_LOCALRANKID,
// MPI_LOCALNRANKS), a task of an srun step (SLURM_PROCID, SLURM_STEP_NUM_TASKS,
// SLURM_LOCALID, SLURM_NODEID with SLURM_(STEP_)TASKS_PER_NODE). An MPI
// launcher's variables win over Slurm's: mpirun inside an allocation starts
// its ranks with the allocation's SLURM_PROCID.
// RANK/WORLD_SIZE set without a launcher (no GROUP_RANK) must agree with the
// scheduler's variables when those are present too.
// Without MASTER_ADDR: under Slurm the first host of SLURM_STEP_NODELIST (or
// SLURM_JOB_NODELIST, else SLURM_LAUNCH_NODE_IPADDR); under MPI with every
// process on one machine, 127.0.0.1; under Open MPI across machines, the
// address of mpirun's daemon (rank 0 must run there). Without MASTER_PORT:
// 15000 + the last four digits of SLURM_JOB_ID (Slurm) or of Open MPI's job id
// (OMPI_MCA_ess_base_jobid), the same in every task.
// With none of them the process runs alone. Throws InvalidArgument naming the
// variable and its value when one is malformed or inconsistent.
LaunchEnvironment read_launch_environment();

}  // namespace accel::detail
