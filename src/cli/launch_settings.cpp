#include "cli/launch_settings.hpp"
#include "cli/sharding_config.hpp"
#include "cli/launch_program.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace accel::cli {

namespace {

// One place a setting may come from: its value there (unset when it says
// nothing) and how --dry_run names the place.
template <typename T>
struct Candidate {
  std::optional<T> value;
  std::string origin;
};

std::string to_text(const std::string& value) { return value; }
std::string to_text(bool value) { return value ? "true" : "false"; }
template <typename T>
std::string to_text(const T& value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// The first candidate that has a value, else `fallback`; records the origin.
template <typename T>
T pick(LaunchConfig& config, const std::string& setting, T fallback, std::initializer_list<Candidate<T>> candidates) {
  for (const auto& candidate : candidates) {
    if (candidate.value) {
      config.origins.emplace_back(setting, to_text(*candidate.value) + "  (" + candidate.origin + ")");
      return *candidate.value;
    }
  }
  config.origins.emplace_back(setting, to_text(fallback) + "  (default)");
  return fallback;
}

class Environment {
 public:
  explicit Environment(const EnvLookup& lookup) : lookup_(lookup) {}

  Candidate<std::string> text(const std::string& name) const { return {lookup_(name), "environment " + name}; }

  Candidate<int> integer(const std::string& name, int minimum, int maximum) const {
    auto found = lookup_(name);
    if (!found) return {std::nullopt, ""};
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(found->c_str(), &end, 10);
    if (errno != 0 || *end != '\0' || end == found->c_str() || value < minimum || value > maximum) {
      throw CLI::ValidationError(name, "environment variable " + name + "=\"" + *found + "\" is not an integer in [" +
                                           std::to_string(minimum) + ", " + std::to_string(maximum) + "]");
    }
    return {static_cast<int>(value), "environment " + name};
  }

  Candidate<double> number(const std::string& name) const {
    auto found = lookup_(name);
    if (!found) return {std::nullopt, ""};
    char* end = nullptr;
    double value = std::strtod(found->c_str(), &end);
    if (*end != '\0' || end == found->c_str() || value < 0) {
      throw CLI::ValidationError(name,
                                 "environment variable " + name + "=\"" + *found + "\" is not a non-negative number");
    }
    return {value, "environment " + name};
  }

  // Accelerate's str_to_bool: y/yes/t/true/on/1 and n/no/f/false/off/0, any case.
  Candidate<bool> flag(const std::string& name) const {
    auto found = lookup_(name);
    if (!found) return {std::nullopt, ""};
    std::string lower = *found;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (const char* yes : {"y", "yes", "t", "true", "on", "1"}) {
      if (lower == yes) return {true, "environment " + name};
    }
    for (const char* no : {"n", "no", "f", "false", "off", "0"}) {
      if (lower == no) return {false, "environment " + name};
    }
    throw CLI::ValidationError(name, "environment variable " + name + "=\"" + *found + "\" is not true or false");
  }

 private:
  const EnvLookup& lookup_;
};

template <typename T>
Candidate<T> from_flag(const std::optional<T>& value, const std::string& flag) {
  return {value, "command line " + flag};
}

template <typename T>
Candidate<T> from_file(const std::optional<T>& value, const std::string& path, const std::string& key) {
  return {value, path + ": " + key};
}

// nproc_per_node from torchrun's per-node count or Accelerate's total.
void resolve_process_count(const LaunchFlags& flags, const Environment& env, const ConfigFile& file,
                           LaunchConfig& config) {
  if (flags.nproc_per_node && flags.num_processes && *flags.num_processes != *flags.nproc_per_node * config.nnodes) {
    throw CLI::ValidationError("--num_processes", std::to_string(*flags.num_processes) +
                                                      " (the total) disagrees with "
                                                      "--nproc_per_node " +
                                                      std::to_string(*flags.nproc_per_node) + " x " +
                                                      std::to_string(config.nnodes) + " node(s)");
  }
  auto total = [&](int processes, const std::string& origin, const std::string& name) {
    if (processes % config.nnodes != 0) {
      throw CLI::ValidationError(name, std::to_string(processes) + " processes (" + origin +
                                           ") cannot be shared evenly by " + std::to_string(config.nnodes) +
                                           " machines");
    }
    config.nproc_per_node = processes / config.nnodes;
    config.origins.emplace_back("nproc_per_node", std::to_string(config.nproc_per_node) + "  (num_processes " +
                                                      std::to_string(processes) + " from " + origin + ", / nnodes)");
  };
  if (flags.nproc_per_node) {
    config.nproc_per_node = pick(config, "nproc_per_node", 1, {from_flag(flags.nproc_per_node, "--nproc_per_node")});
  } else if (flags.num_processes) {
    total(*flags.num_processes, "command line --num_processes", "--num_processes");
  } else if (auto per_node = env.integer("PET_NPROC_PER_NODE", 1, 1 << 20); per_node.value) {
    config.nproc_per_node = pick(config, "nproc_per_node", 1, {per_node});
  } else if (file.values.num_processes) {
    total(*file.values.num_processes, file.path + ": num_processes", "num_processes");
  } else {
    config.nproc_per_node = pick<int>(config, "nproc_per_node", 1, {});
  }
}

// A text setting the launcher parses further, such as --tee's "0:1,1:2":
// the parse error names the flag or variable the text came from.
template <typename Parsed, typename Parse>
std::optional<Parsed> pick_parsed(LaunchConfig& config, const std::string& setting, const std::string& unset,
                                  std::initializer_list<Candidate<std::string>> candidates, Parse parse) {
  for (const auto& candidate : candidates) {
    if (!candidate.value) continue;
    config.origins.emplace_back(setting, *candidate.value + "  (" + candidate.origin + ")");
    try {
      return parse(*candidate.value);
    } catch (const std::invalid_argument& error) {
      throw CLI::ValidationError(candidate.origin, error.what());
    }
  }
  config.origins.emplace_back(setting, unset + "  (default)");
  return std::nullopt;
}

void resolve_output(const LaunchFlags& flags, const Environment& env, LaunchConfig& config) {
  OutputRouting& output = config.output;
  output.log_dir =
      pick<std::string>(config, "log_dir", "", {from_flag(flags.log_dir, "--log_dir"), env.text("PET_LOG_DIR")});
  output.redirects = pick_parsed<StreamChoice>(config, "redirects", "unset",
                                               {from_flag(flags.redirects, "--redirects"), env.text("PET_REDIRECTS")},
                                               StreamChoice::parse);
  output.tee = pick_parsed<StreamChoice>(config, "tee", "unset", {from_flag(flags.tee, "--tee"), env.text("PET_TEE")},
                                         StreamChoice::parse);
  output.local_ranks_filter = pick_parsed<std::vector<int>>(
      config, "local_ranks_filter", "every local rank",
      {from_flag(flags.local_ranks_filter, "--local_ranks_filter"), env.text("PET_LOCAL_RANKS_FILTER")},
      parse_local_ranks);
}

// The c10d rendezvous: where, under which name, and its rdzv_conf. Without
// --rdzv_endpoint, Accelerate's mapping: main_process_ip:main_process_port.
void resolve_elastic(const LaunchFlags& flags, const Environment& env, LaunchConfig& config) {
  ElasticSettings& elastic = config.elastic;
  const std::string fallback = config.master_addr + ":" + std::to_string(config.master_port);
  auto endpoint = pick_parsed<bool>(config, "rdzv_endpoint", fallback + " (master_addr:master_port)",
                                    {from_flag(flags.rdzv_endpoint, "--rdzv_endpoint"), env.text("PET_RDZV_ENDPOINT")},
                                    [&](const std::string& text) {
                                      parse_endpoint(text, elastic);
                                      return true;
                                    });
  if (!endpoint) {
    if (config.master_port == 0) {
      throw CLI::ValidationError("--rdzv_endpoint", "is needed: --master_port 0 gives the rendezvous no port");
    }
    elastic.endpoint_host = config.master_addr;
    elastic.endpoint_port = config.master_port;
  }
  elastic.run_id =
      pick<std::string>(config, "rdzv_id", "none", {from_flag(flags.rdzv_id, "--rdzv_id"), env.text("PET_RDZV_ID")});
  pick_parsed<bool>(config, "rdzv_conf", "torchrun's defaults",
                    {from_flag(flags.rdzv_conf, "--rdzv_conf"), env.text("PET_RDZV_CONF")},
                    [&](const std::string& text) {
                      parse_rdzv_conf(text, elastic);
                      return true;
                    });
}

}  // namespace

std::string active_config_path(const LaunchFlags& flags, const EnvLookup& env) {
  if (flags.config_file) return *flags.config_file;  // load_config_file() says when it is missing
  auto fallback = default_config_path(env);
  std::error_code ignored;
  return fallback && std::filesystem::is_regular_file(*fallback, ignored) ? *fallback : std::string();
}

LaunchConfig resolve_settings(const LaunchFlags& flags, const EnvLookup& lookup, std::vector<std::string>& warnings) {
  Environment env(lookup);
  LaunchConfig config;
  ConfigFile file;
  config.config_file = active_config_path(flags, lookup);
  if (!config.config_file.empty()) {
    file = load_config_file(config.config_file);
    for (const auto& warning : file.warnings) warnings.push_back(file.path + ": " + warning);
  }
  const ConfigValues& values = file.values;
  const std::string& path = file.path;
  config.origins.emplace_back("config_file", config.config_file.empty() ? "none" : config.config_file);

  std::optional<std::string> machines_in_file;
  if (values.num_machines) machines_in_file = std::to_string(*values.num_machines);
  const NodeCount nodes = pick_parsed<NodeCount>(config, "nnodes", "1",
                                                 {from_flag(flags.nnodes, "--nnodes"), env.text("PET_NNODES"),
                                                  from_file(machines_in_file, path, "num_machines")},
                                                 parse_node_count)
                              .value_or(NodeCount{});
  config.nnodes = nodes.max;
  config.elastic.enabled =
      pick_parsed<bool>(config, "rdzv_backend", "static",
                        {from_flag(flags.rdzv_backend, "--rdzv_backend"), env.text("PET_RDZV_BACKEND"),
                         from_file(values.rdzv_backend, path, "rdzv_backend")},
                        is_elastic_backend)
          .value_or(false);
  config.elastic.nodes = nodes;
  if (nodes.is_range() && !config.elastic.enabled) {
    throw CLI::ValidationError("--nnodes", std::to_string(nodes.min) + ":" + std::to_string(nodes.max) +
                                               " (a range of machines) needs --rdzv_backend c10d: the static "
                                               "rendezvous waits for a fixed number");
  }
  if (config.elastic.enabled && flags.node_rank) {
    throw CLI::ValidationError("--node_rank",
                               "has no effect with --rdzv_backend c10d: the rendezvous gives each "
                               "machine its rank");
  }
  if (nodes.is_range() && flags.num_processes) {
    throw CLI::ValidationError("--num_processes", "cannot be shared by a range of machines (--nnodes " +
                                                      std::to_string(nodes.min) + ":" + std::to_string(nodes.max) +
                                                      "); give --nproc_per_node");
  }
  config.node_rank = pick(config, "node_rank", 0,
                          {from_flag(flags.node_rank, "--node_rank"), env.integer("PET_NODE_RANK", 0, 1 << 20),
                           from_file(values.machine_rank, path, "machine_rank")});
  resolve_process_count(flags, env, file, config);
  config.master_addr = pick<std::string>(config, "master_addr", "127.0.0.1",
                                         {from_flag(flags.master_addr, "--master_addr"), env.text("PET_MASTER_ADDR"),
                                          from_file(values.main_process_ip, path, "main_process_ip")});
  config.master_port = pick(config, "master_port", 29500,
                            {from_flag(flags.master_port, "--master_port"), env.integer("PET_MASTER_PORT", 0, 65535),
                             from_file(values.main_process_port, path, "main_process_port")});
  if (config.elastic.enabled) resolve_elastic(flags, env, config);

  auto precision_env = env.text("ACCELERATE_MIXED_PRECISION");
  if (precision_env.value && *precision_env.value != "no" && *precision_env.value != "fp16" &&
      *precision_env.value != "bf16") {
    throw CLI::ValidationError("ACCELERATE_MIXED_PRECISION", "environment variable ACCELERATE_MIXED_PRECISION=\"" +
                                                                 *precision_env.value + "\" is not no, fp16 or bf16");
  }
  config.mixed_precision = pick<std::string>(config, "mixed_precision", "no",
                                             {from_flag(flags.mixed_precision, "--mixed_precision"), precision_env,
                                              from_file(values.mixed_precision, path, "mixed_precision")});
  auto steps_flag = from_flag(flags.gradient_accumulation_steps, "--gradient_accumulation_steps");
  auto steps_env = env.integer("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", 1, 1 << 30);
  if (steps_flag.value || steps_env.value) {
    config.gradient_accumulation_steps = pick(config, "gradient_accumulation_steps", 1, {steps_flag, steps_env});
  } else {
    // Unset stays unset: the program's own choice in code applies, else 1.
    config.origins.emplace_back("gradient_accumulation_steps", "unset  (the program's choice, else 1)");
  }

  std::optional<bool> cpu_from_type;
  if (values.distributed_type == "MULTI_CPU") cpu_from_type = true;
  config.use_cpu =
      pick(config, "use_cpu", false,
           {from_flag(flags.cpu ? std::optional<bool>(true) : std::nullopt, "--cpu"), env.flag("ACCELERATE_USE_CPU"),
            from_file(values.use_cpu, path, "use_cpu"), from_file(cpu_from_type, path, "distributed_type MULTI_CPU")});
  config.debug = flags.debug;
  config.enable_cpu_affinity = flags.enable_cpu_affinity;
  config.gpu_ids = pick<std::string>(
      config, "gpu_ids", "all", {from_flag(flags.gpu_ids, "--gpu_ids"), from_file(values.gpu_ids, path, "gpu_ids")});
  if (config.gpu_ids == "all") config.gpu_ids.reset();
  std::map<std::string, std::string> fsdp_settings;
  for (const auto& [key, value] :
       {std::pair{"fsdp_sharding_strategy", &flags.fsdp_sharding_strategy},
        std::pair{"fsdp_auto_wrap_policy", &flags.fsdp_auto_wrap_policy},
        std::pair{"fsdp_min_num_params", &flags.fsdp_min_num_params},
        std::pair{"fsdp_transformer_layer_cls_to_wrap", &flags.fsdp_transformer_layer_cls_to_wrap}}) {
    if (*value) fsdp_settings[key] = **value;
  }
  for (const auto& [key, value] : flags.fsdp_flags) fsdp_settings[key] = value;
  config.sharding_env = sharding_env_from_flags(flags.use_fsdp, fsdp_settings, flags.use_deepspeed, flags.zero_stage,
                                                flags.deepspeed_flags);
  const bool from_flags = !config.sharding_env.empty();
  if (!from_flags) config.sharding_env = values.sharding_env;
  for (const auto& [name, value] : config.sharding_env) {
    const std::string section = values.distributed_type == "FSDP" ? "fsdp_config" : "deepspeed_config";
    config.origins.emplace_back(name, value + "  (" + (from_flags ? "command line" : path + ": " + section) + ")");
  }
  // The command line's sizes replace the config file's section as a whole.
  if (flags.parallelism_sizes.empty()) {
    for (const auto& [name, value] : values.parallelism_env) {
      config.parallelism_env[name] = value;
      if (name != "ACCELERATE_USE_PARALLELISM_CONFIG") {
        config.origins.emplace_back(name, value + "  (" + path + ": parallelism_config)");
      }
    }
  }
  if (flags.use_parallelism_config || !flags.parallelism_sizes.empty()) {
    config.parallelism_env["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true";
    for (const auto& [dim, size] : flags.parallelism_sizes) {
      std::string name = "PARALLELISM_CONFIG_" + dim + "_SIZE";
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
      config.parallelism_env[name] = std::to_string(size);
      config.origins.emplace_back(name, std::to_string(size) + "  (command line)");
    }
  }
  if (flags.num_cpu_threads_per_process) {
    config.omp_num_threads = static_cast<unsigned>(*flags.num_cpu_threads_per_process);
  }
  config.max_restarts =
      pick(config, "max_restarts", 0,
           {from_flag(flags.max_restarts, "--max_restarts"), env.integer("PET_MAX_RESTARTS", 0, 1 << 20)});
  config.monitor_interval_s =
      pick(config, "monitor_interval", 5.0,
           {from_flag(flags.monitor_interval_s, "--monitor_interval"), env.number("PET_MONITOR_INTERVAL")});
  config.grace_period_s = pick(config, "grace_period", 3.0, {from_flag(flags.grace_period_s, "--grace_period")});
  resolve_output(flags, env, config);
  config.dry_run = flags.dry_run;
  config.quiet = flags.quiet;
  config.role = pick<std::string>(config, "role", "default", {from_flag(flags.role, "--role"), env.text("PET_ROLE")});
  resolve_program(flags, lookup, config);
  return config;
}

}  // namespace accel::cli
