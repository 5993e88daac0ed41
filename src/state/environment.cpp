#include "state/environment.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "accel/error.hpp"
#include "state/slurm_hostlist.hpp"

namespace accel::detail {

std::optional<std::string> get_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::vector<std::string> split_comma_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    items.push_back(std::move(item));
    start = end + 1;
  }
  return items;
}

bool get_env_flag(const char* name, bool fallback) {
  auto value = get_env(name);
  if (!value) return fallback;
  std::string lower;
  for (char c : *value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"y", "yes", "t", "true", "on", "1"}) {
    if (lower == yes) return true;
  }
  for (const char* no : {"n", "no", "f", "false", "off", "0"}) {
    if (lower == no) return false;
  }
  fail(ErrorCode::InvalidArgument,
       std::string("environment variable ") + name + "=\"" + *value + "\" is not true or false");
}

namespace {

int parse_int_env(const char* name, const std::string& text, int min_value, int max_value) {
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || value < min_value || value > max_value) {
    fail(ErrorCode::InvalidArgument, std::string("environment variable ") + name + "=\"" + text +
                                         "\" is not an integer in [" + std::to_string(min_value) + ", " +
                                         std::to_string(max_value) + "]");
  }
  return static_cast<int>(value);
}

int int_env_or(const char* name, int fallback, int min_value, int max_value) {
  auto text = get_env(name);
  return text ? parse_int_env(name, *text, min_value, max_value) : fallback;
}

}  // namespace

namespace {

constexpr int kMaxInt = std::numeric_limits<int>::max();

// Where the rank and world size come from when the job was not started by a
// torchrun-style launcher: MPI's and Slurm's own variables, so that `mpirun`
// and `srun` can start the processes directly. The first whose world size is
// set wins (docs/launch.md, "Which variables win").
struct Scheme {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr: worked out another way
};

const Scheme kSchemes[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    // An MPI launcher's variables are in the environment of the processes it
    // started and of no other, so they win over Slurm's: `mpirun` inside an
    // sbatch allocation starts its ranks with the batch step's SLURM_PROCID=0.
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MVAPICH2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH (Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    // A task of a job step srun started: SLURM_STEP_NUM_TASKS is srun's. A
    // batch script or an salloc shell has SLURM_NTASKS and SLURM_PROCID=0 too,
    // but it is one process, not a task of a step, so it runs alone.
    {"SLURM", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", nullptr},
};

bool is_slurm(const Scheme& scheme) { return std::string(scheme.name) == "SLURM"; }
bool is_open_mpi(const Scheme& scheme) { return std::string(scheme.name) == "Open MPI"; }

// SLURM's tasks on node `node` from a list such as "2(x3),1": 2 tasks on each
// of nodes 0-2, then 1. nullopt when the text does not parse.
std::optional<int> slurm_tasks_on_node(const std::string& tasks_per_node, int node) {
  size_t at = 0;
  while (at < tasks_per_node.size()) {
    size_t comma = tasks_per_node.find(',', at);
    std::string item = tasks_per_node.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    int tasks = 0, repeat = 1;
    char tail = 0;
    if (std::sscanf(item.c_str(), "%d(x%d%c", &tasks, &repeat, &tail) == 3 && tail == ')') {
    } else if (std::sscanf(item.c_str(), "%d%c", &tasks, &tail) == 1) {
      repeat = 1;
    } else {
      return std::nullopt;
    }
    if (node < repeat) return tasks;
    node -= repeat;
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return std::nullopt;
}

// RANK and WORLD_SIZE set by hand inside a job that srun or an MPI launcher
// started must name the rank and world that launcher gave this process: they
// win, and a copy exported to every task (RANK=0 in each) would make the
// ranks collide or wait for ranks that never come. Under accel launch or
// torchrun (GROUP_RANK set) the scheduler's variables describe the launcher,
// one task per node, and legitimately differ.
void check_torchrun_agrees_with_scheduler(const LaunchEnvironment& env) {
  if (get_env("GROUP_RANK") || get_env("TORCHELASTIC_RUN_ID")) return;
  for (const Scheme& scheme : kSchemes) {
    if (&scheme == &kSchemes[0]) continue;
    auto size_text = get_env(scheme.size);
    if (!size_text) continue;
    int size = parse_int_env(scheme.size, *size_text, 1, kMaxInt);
    bool rank_set = get_env("RANK").has_value();
    int rank = int_env_or(scheme.rank, 0, 0, kMaxInt);
    if (size == env.world_size && (!rank_set || rank == env.rank)) continue;
    std::string ours = "WORLD_SIZE=" + std::to_string(env.world_size);
    std::string theirs = std::string(scheme.size) + "=" + std::to_string(size);
    if (rank_set) {
      ours = "RANK=" + std::to_string(env.rank) + ", " + ours;
      theirs = std::string(scheme.rank) + "=" + std::to_string(rank) + ", " + theirs;
    }
    fail(ErrorCode::InvalidArgument,
         "environment variables disagree: " + ours + " (torchrun's, which win) but " + theirs + " (" + scheme.name +
             "'s, which started this process). Unset RANK and WORLD_SIZE to let " + scheme.name +
             "'s variables decide, or start the ranks with accel launch (a launcher of your own sets GROUP_RANK, "
             "as torchrun does)");
  }
}

// "1426587648.0;tcp://192.0.2.2,10.0.0.2:43365;tcp6://[fd00::2]:47659" (Open
// MPI's OMPI_MCA_orte_hnp_uri, mpirun's own daemon) -> "192.0.2.2".
std::optional<std::string> ompi_hnp_address(const std::string& uri) {
  size_t tcp = uri.find(";tcp://");
  if (tcp == std::string::npos) return std::nullopt;
  size_t start = tcp + 7;
  size_t end = uri.find(';', start);
  std::string hosts_port = uri.substr(start, end == std::string::npos ? std::string::npos : end - start);
  size_t colon = hosts_port.rfind(':');
  if (colon == std::string::npos) return std::nullopt;
  std::string first = hosts_port.substr(0, std::min(colon, hosts_port.find(',')));
  if (first.empty()) return std::nullopt;
  return first;
}

// MASTER_ADDR when the environment does not set it; throws naming what to set.
std::string derive_master_addr(const Scheme& scheme, const LaunchEnvironment& env) {
  std::string why = std::string("environment variable MASTER_ADDR is not set but ") + scheme.size + "=" +
                    std::to_string(env.world_size) + " asks for a process group";
  if (is_slurm(scheme)) {
    // Rank 0 runs on the step's first node (srun's block and cyclic distributions).
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"}) {
      auto nodes = get_env(name);
      if (!nodes) continue;
      auto first = slurm_host_list_first(*nodes);
      require_arg(first.has_value(), std::string("environment variable ") + name + "=\"" + *nodes +
                                         "\" is not a Slurm host list (such as node[01-04,07],gpu3); set "
                                         "MASTER_ADDR to rank 0's host");
      return *first;
    }
    auto launch_node = get_env("SLURM_LAUNCH_NODE_IPADDR");
    require_arg(launch_node.has_value(), why + " (and neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set)");
    return *launch_node;
  }
  require_arg(&scheme != &kSchemes[0], why);
  // Every process on one machine: the rendezvous is local.
  if (env.local_world_size == env.world_size) return "127.0.0.1";
  if (is_open_mpi(scheme)) {
    // Rank 0 on mpirun's machine (where its ranks start, mapped by slot): the
    // address mpirun's daemon gave its ranks.
    auto hnp = get_env("OMPI_MCA_orte_hnp_uri");
    auto address = hnp ? ompi_hnp_address(*hnp) : std::nullopt;
    if (address) {
      auto local = get_env("OMPI_MCA_orte_local_daemon_uri");
      require_arg(env.rank != 0 || (local && *local == *hnp),
                  why + "; rank 0 does not run on mpirun's machine (OMPI_MCA_orte_hnp_uri=\"" + *hnp +
                      "\", this machine's OMPI_MCA_orte_local_daemon_uri=\"" + local.value_or("") +
                      "\"), so its address is unknown: set MASTER_ADDR to rank 0's host and pass it on with "
                      "mpirun -x MASTER_ADDR");
      return *address;
    }
  }
  fail(ErrorCode::InvalidArgument, why + " and the processes run on several machines (" + scheme.local_size + "=" +
                                       std::to_string(env.local_world_size) +
                                       "): set MASTER_ADDR to rank 0's host (mpirun -x MASTER_ADDR=HOST)");
}

// 15000 + the id's last four digits, PyTorch Lightning's convention: the same
// in every task of a job, below Linux's ephemeral ports (32768-60999).
std::optional<std::string> port_from_job_id(const char* name) {
  auto id = get_env(name);
  if (!id) return std::nullopt;
  bool digits = id->find_first_not_of("0123456789") == std::string::npos;
  require_arg(digits,
              std::string("environment variable ") + name + "=\"" + *id + "\" is not a job number; set MASTER_PORT");
  std::string last4 = id->substr(id->size() > 4 ? id->size() - 4 : 0);
  return std::to_string(15000 + std::stoi(last4));
}

}  // namespace

LaunchEnvironment read_launch_environment() {
  LaunchEnvironment env;
  // The first scheme whose world size is set; the torchrun contract always wins.
  const Scheme* scheme = &kSchemes[0];
  for (const Scheme& candidate : kSchemes) {
    if (get_env(candidate.size)) {
      scheme = &candidate;
      break;
    }
  }
  env.source = scheme->name;
  env.world_size = int_env_or(scheme->size, 1, 1, kMaxInt);
  env.rank = int_env_or(scheme->rank, 0, 0, kMaxInt);
  require_arg(env.rank < env.world_size, std::string("environment variable ") + scheme->rank + "=" +
                                             std::to_string(env.rank) + " is not below " + scheme->size + "=" +
                                             std::to_string(env.world_size));
  if (scheme == &kSchemes[0] && get_env("WORLD_SIZE")) check_torchrun_agrees_with_scheduler(env);
  const char* local_size_name = scheme->local_size;
  if (local_size_name != nullptr) {
    env.local_world_size = int_env_or(local_size_name, env.world_size, 1, kMaxInt);
  } else {
    // SLURM: this node's share of SLURM_(STEP_)TASKS_PER_NODE.
    local_size_name = "SLURM_STEP_TASKS_PER_NODE";
    auto per_node = get_env(local_size_name);
    if (!per_node) per_node = get_env(local_size_name = "SLURM_TASKS_PER_NODE");
    int node = int_env_or("SLURM_NODEID", 0, 0, kMaxInt);
    std::optional<int> tasks = per_node ? slurm_tasks_on_node(*per_node, node) : std::nullopt;
    if (per_node && !tasks) {
      fail(ErrorCode::InvalidArgument, std::string("environment variable ") + local_size_name + "=\"" + *per_node +
                                           "\" names no task count for SLURM_NODEID=" + std::to_string(node));
    }
    env.local_world_size = tasks.value_or(env.world_size);
  }
  env.local_rank = int_env_or(scheme->local_rank, env.rank % env.local_world_size, 0, kMaxInt);
  require_arg(env.local_rank < env.local_world_size, std::string("environment variable ") + scheme->local_rank + "=" +
                                                         std::to_string(env.local_rank) + " is not below " +
                                                         local_size_name + "=" + std::to_string(env.local_world_size));
  if (env.distributed()) {
    auto addr = get_env("MASTER_ADDR");
    env.master_addr = addr ? *addr : derive_master_addr(*scheme, env);
    auto port = get_env("MASTER_PORT");
    if (!port && is_slurm(*scheme)) port = port_from_job_id("SLURM_JOB_ID");
    if (!port && is_open_mpi(*scheme)) port = port_from_job_id("OMPI_MCA_ess_base_jobid");
    require_arg(port.has_value(), std::string("environment variable MASTER_PORT is not set but ") + scheme->size + "=" +
                                      std::to_string(env.world_size) + " asks for a process group");
    env.master_port = parse_int_env("MASTER_PORT", *port, 1, 65535);
  }
  return env;
}

}  // namespace accel::detail
