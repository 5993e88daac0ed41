#include "state/environment.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "accel/error.hpp"

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

// Where the rank and world size come from when the job was not started by a
// torchrun-style launcher: MPI's and SLURM's own variables, so that `mpirun`
// and `srun` can start the processes directly.
struct Scheme {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;  // nullptr: worked out another way
};

const Scheme kSchemes[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"MVAPICH2", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
     "MV2_COMM_WORLD_LOCAL_SIZE"},
    {"MPICH (Hydra)", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    // SLURM_STEP_NUM_TASKS is srun's step; SLURM_NTASKS alone is also set in
    // a batch script that runs one process, hence second.
    {"SLURM", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", nullptr},
    {"SLURM", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
};

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

}  // namespace

std::string slurm_first_host(const std::string& node_list) {
  // "node[03-05,9],gpu1" -> "node03": the prefix, then the first number of the range.
  size_t bracket = node_list.find('[');
  size_t comma = node_list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return node_list.substr(0, comma);
  }
  size_t end = node_list.find_first_of("-,]", bracket + 1);
  return node_list.substr(0, bracket) + node_list.substr(bracket + 1, end - bracket - 1);
}

LaunchEnvironment read_launch_environment() {
  constexpr int kMaxInt = std::numeric_limits<int>::max();
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
    require_arg(!per_node || tasks.has_value(), std::string("environment variable ") + local_size_name + "=\"" +
                                                    *per_node +
                                                    "\" names no task count for SLURM_NODEID=" + std::to_string(node));
    env.local_world_size = tasks.value_or(env.world_size);
  }
  env.local_rank = int_env_or(scheme->local_rank, env.rank % env.local_world_size, 0, kMaxInt);
  require_arg(env.local_rank < env.local_world_size, std::string("environment variable ") + scheme->local_rank + "=" +
                                                         std::to_string(env.local_rank) + " is not below " +
                                                         local_size_name + "=" + std::to_string(env.local_world_size));
  if (env.distributed()) {
    bool slurm = std::string(scheme->name) == "SLURM";
    auto addr = get_env("MASTER_ADDR");
    if (!addr && slurm) {
      // Rank 0 runs on the step's first node (srun's block distribution).
      if (auto nodes =
              get_env("SLURM_STEP_NODELIST") ? get_env("SLURM_STEP_NODELIST") : get_env("SLURM_JOB_NODELIST")) {
        addr = slurm_first_host(*nodes);
      } else {
        addr = get_env("SLURM_LAUNCH_NODE_IPADDR");
      }
    }
    // Every process on one machine: the rendezvous is local.
    if (!addr && env.local_world_size == env.world_size && !slurm && scheme != &kSchemes[0]) addr = "127.0.0.1";
    require_arg(addr.has_value(), std::string("environment variable MASTER_ADDR is not set but ") + scheme->size + "=" +
                                      std::to_string(env.world_size) + " asks for a process group");
    env.master_addr = *addr;
    auto port = get_env("MASTER_PORT");
    if (!port && slurm) {
      // Every task of a job derives the same port from the job id.
      if (auto job = get_env("SLURM_JOB_ID")) {
        port = std::to_string(20000 + parse_int_env("SLURM_JOB_ID", *job, 0, kMaxInt) % 10000);
      }
    }
    require_arg(port.has_value(), std::string("environment variable MASTER_PORT is not set but ") + scheme->size + "=" +
                                      std::to_string(env.world_size) + " asks for a process group");
    env.master_port = parse_int_env("MASTER_PORT", *port, 1, 65535);
  }
  return env;
}

}  // namespace accel::detail
