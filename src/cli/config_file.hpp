// Accelerate's configuration file (default_config.yaml): where it lives, what
// of it accel honours, and writing one that Accelerate reads back.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace accel::cli {

// Looks up an environment variable; nullopt when unset or empty. Injected so
// that resolution can be tested without touching the process environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// A configuration file accel cannot honour: unreadable, not YAML, or a setting
// that would change what the job does (DeepSpeed, TPU, ...). The message names
// the file and the key.
class ConfigFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The settings of a configuration file that accel honours; unset when absent.
struct ConfigValues {
  std::optional<std::string> compute_environment;  // LOCAL_MACHINE
  std::optional<std::string> distributed_type;     // NO, MULTI_CPU or MULTI_GPU
  std::optional<std::string> mixed_precision;      // no, fp16 or bf16
  std::optional<bool> use_cpu;
  std::optional<int> num_processes;  // the total over all machines; -1 (Accelerate's "unset") reads as unset
  std::optional<int> num_machines;
  std::optional<int> machine_rank;
  std::optional<std::string> main_process_ip;
  std::optional<int> main_process_port;
  std::optional<std::string> gpu_ids;       // "all" or "0,1,..."
  std::optional<std::string> rdzv_backend;  // static or c10d
  // distributed_type FSDP / DEEPSPEED: the variables that carry the sharding
  // strategy to the ranks (src/cli/sharding_config.hpp); else empty.
  std::map<std::string, std::string> sharding_env;
  // parallelism_config's sizes as Accelerate's variables
  // (ACCELERATE_USE_PARALLELISM_CONFIG, PARALLELISM_CONFIG_*_SIZE); else empty.
  std::map<std::string, std::string> parallelism_env;
};

struct ConfigFile {
  std::string path;
  ConfigValues values;
  // One line per key that was ignored, naming it: unknown keys and settings
  // that only tune something accel does not have (TPU, torch.compile, ...).
  std::vector<std::string> warnings;
};

// Where Accelerate looks without --config_file: $HF_HOME/accelerate/default_config.yaml,
// else $XDG_CACHE_HOME/huggingface/accelerate/..., else ~/.cache/huggingface/accelerate/...
// nullopt when neither HF_HOME, XDG_CACHE_HOME nor HOME is set.
std::optional<std::string> default_config_path(const EnvLookup& env);

// Reads a configuration file written by `accelerate config` or `accel config`.
// Throws ConfigFileError for an unreadable or malformed file, a value of the
// wrong type, and settings accel cannot honour (distributed_type MEGATRON_LM,
// XLA, ..., compute_environment AMAZON_SAGEMAKER, mixed_precision fp8, and
// the fsdp_config / deepspeed_config values read_sharding_config refuses). Unknown keys and ignorable settings become
// warnings.
ConfigFile load_config_file(const std::string& path);

// Writes `values` as YAML with every key Accelerate's own questionnaire writes,
// so `accelerate launch` reads the file too. Creates missing parent folders.
// Throws ConfigFileError when the file cannot be written.
void write_config_file(const std::string& path, const ConfigValues& values);

}  // namespace accel::cli
