#include "cli/config_file.hpp"
#include "cli/sharding_config.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace accel::cli {

namespace {

// Values of distributed_type and compute_environment that would make the job
// something other than data-parallel processes: refused rather than ignored.
const std::map<std::string, std::string> kRefusedDistributedTypes{
    {"MEGATRON_LM", "Megatron-LM"},
    {"XLA", "TPUs (XLA)"},
    {"TPU", "TPUs (XLA)"},
    {"MULTI_XPU", "Intel XPUs"},
    {"MULTI_NPU", "Ascend NPUs"},
    {"MULTI_MLU", "Cambricon MLUs"},
    {"MULTI_MUSA", "Moore Threads MUSA devices"},
};

class Reader {
 public:
  Reader(std::string path, YAML::Node root) : path_(std::move(path)), root_(std::move(root)) {}

  [[noreturn]] void refuse(const std::string& key, const std::string& why) const {
    throw ConfigFileError(path_ + ": key '" + key + "': " + why);
  }

  bool has(const std::string& key) const { return root_[key] && !root_[key].IsNull(); }

  template <typename T>
  std::optional<T> get(const std::string& key, const char* expected) const {
    if (!has(key)) return std::nullopt;
    YAML::Node node = root_[key];
    try {
      if (!node.IsScalar()) throw YAML::Exception(node.Mark(), "not a scalar");
      return node.as<T>();
    } catch (const YAML::Exception&) {
      refuse(key, std::string("expected ") + expected + ", got " + describe(node));
    }
  }

  // A mapping such as deepspeed_config: present and non-empty.
  bool non_empty(const std::string& key) const {
    if (!has(key)) return false;
    YAML::Node node = root_[key];
    return !(node.IsMap() || node.IsSequence()) || node.size() > 0;
  }

  static std::string describe(const YAML::Node& node) {
    if (node.IsScalar()) return "'" + node.Scalar() + "'";
    return node.IsMap() ? "a mapping" : node.IsSequence() ? "a list" : "nothing";
  }

 private:
  std::string path_;
  YAML::Node root_;
};

void read_honoured(const Reader& in, ConfigValues& values) {
  values.compute_environment = in.get<std::string>("compute_environment", "a string");
  if (values.compute_environment && *values.compute_environment != "LOCAL_MACHINE") {
    in.refuse("compute_environment",
              *values.compute_environment + " is not supported: accel launches on this machine (LOCAL_MACHINE) only");
  }
  values.distributed_type = in.get<std::string>("distributed_type", "a string");
  if (values.distributed_type) {
    const std::string& type = *values.distributed_type;
    if (auto refused = kRefusedDistributedTypes.find(type); refused != kRefusedDistributedTypes.end()) {
      in.refuse("distributed_type", type + " (" + refused->second +
                                        ") is not supported: accel runs data-parallel processes "
                                        "(NO, MULTI_CPU, MULTI_GPU, or sharded: FSDP, DEEPSPEED)");
    }
    // FSDP and DEEPSPEED run as sharded data parallel (read_sharding_config).
    if (type != "NO" && type != "MULTI_CPU" && type != "MULTI_GPU" && type != "FSDP" && type != "DEEPSPEED") {
      in.refuse("distributed_type",
                "unknown value '" + type + "' (expected NO, MULTI_CPU, MULTI_GPU, FSDP or DEEPSPEED)");
    }
  }
  values.mixed_precision = in.get<std::string>("mixed_precision", "no, fp16 or bf16");
  if (values.mixed_precision) {
    const std::string& precision = *values.mixed_precision;
    // PyYAML writes 'no' quoted, but a hand-written file may say false.
    if (precision == "false") values.mixed_precision = "no";
    if (precision == "fp8") in.refuse("mixed_precision", "fp8 is not supported (use no, fp16 or bf16)");
    if (*values.mixed_precision != "no" && precision != "fp16" && precision != "bf16") {
      in.refuse("mixed_precision", "unknown value '" + precision + "' (expected no, fp16 or bf16)");
    }
  }
  values.use_cpu = in.get<bool>("use_cpu", "true or false");
  values.num_processes = in.get<int>("num_processes", "an integer");
  if (values.num_processes == -1) values.num_processes.reset();
  if (values.num_processes && *values.num_processes < 1) {
    in.refuse("num_processes", "must be at least 1, got " + std::to_string(*values.num_processes));
  }
  values.num_machines = in.get<int>("num_machines", "an integer");
  if (values.num_machines && *values.num_machines < 1) {
    in.refuse("num_machines", "must be at least 1, got " + std::to_string(*values.num_machines));
  }
  values.machine_rank = in.get<int>("machine_rank", "an integer");
  if (values.machine_rank && *values.machine_rank < 0) {
    in.refuse("machine_rank", "must be at least 0, got " + std::to_string(*values.machine_rank));
  }
  values.main_process_ip = in.get<std::string>("main_process_ip", "an address");
  values.main_process_port = in.get<int>("main_process_port", "a port number");
  if (values.main_process_port && (*values.main_process_port < 0 || *values.main_process_port > 65535)) {
    in.refuse("main_process_port", "must be in [0, 65535], got " + std::to_string(*values.main_process_port));
  }
  values.gpu_ids = in.get<std::string>("gpu_ids", "all or a list such as 0,1");
  // Checked where it is used (launch_settings.cpp), naming the supported backends.
  values.rdzv_backend = in.get<std::string>("rdzv_backend", "static or c10d");
}

// Keys accel has no use for. Each is accepted silently at the value Accelerate
// writes when the feature is off, and otherwise named in a warning.
void read_ignored(const Reader& in, const ConfigValues& values, std::vector<std::string>& warnings) {
  auto warn = [&](const std::string& key, const std::string& why) {
    warnings.push_back("ignoring key '" + key + "': " + why);
  };
  for (const char* key : {"debug", "enable_cpu_affinity", "tpu_use_cluster", "tpu_use_sudo"}) {
    if (in.get<bool>(key, "true or false").value_or(false)) warn(key, "not supported by accel");
  }
  if (auto downcast = in.get<std::string>("downcast_bf16", "no or a bool")) {
    if (*downcast != "no" && *downcast != "false") warn("downcast_bf16", "TPU only");
  }
  if (auto function = in.get<std::string>("main_training_function", "a string"); function && *function != "main") {
    warn("main_training_function", "only used by Python notebook launchers");
  }
  for (const char* key : {"tpu_name", "tpu_zone", "tpu_env", "tpu_vm", "command_file", "commands"}) {
    if (in.non_empty(key)) warn(key, "TPU only");
  }
  const std::string type = values.distributed_type.value_or("NO");
  for (const char* key : {"deepspeed_config", "fsdp_config", "megatron_lm_config", "ipex_config", "mpirun_config"}) {
    const bool read = (type == "FSDP" && std::string(key) == "fsdp_config") ||
                      (type == "DEEPSPEED" && std::string(key) == "deepspeed_config");
    if (!read && in.non_empty(key)) {
      warn(key, "not used: distributed_type is " + type + " (FSDP and DEEPSPEED read their section)");
    }
  }
  if (in.non_empty("dynamo_config")) warn("dynamo_config", "torch.compile (dynamo) is not supported by accel");
}

const std::set<std::string> kKnownKeys{"compute_environment",
                                       "distributed_type",
                                       "mixed_precision",
                                       "use_cpu",
                                       "num_processes",
                                       "num_machines",
                                       "machine_rank",
                                       "main_process_ip",
                                       "main_process_port",
                                       "gpu_ids",
                                       "debug",
                                       "enable_cpu_affinity",
                                       "tpu_use_cluster",
                                       "tpu_use_sudo",
                                       "downcast_bf16",
                                       "rdzv_backend",
                                       "main_training_function",
                                       "same_network",
                                       "tpu_name",
                                       "tpu_zone",
                                       "tpu_env",
                                       "tpu_vm",
                                       "command_file",
                                       "commands",
                                       "deepspeed_config",
                                       "fsdp_config",
                                       "megatron_lm_config",
                                       "ipex_config",
                                       "mpirun_config",
                                       "dynamo_config",
                                       "parallelism_config"};

// Accelerate's parallelism_config section (`accelerate config`'s keys):
// parallelism_config_{dp_replicate,dp_shard,tp,cp}_size, each a positive
// integer, as the variables the ranks read (docs/parallelism.md);
// cp_comm_strategy "allgather", the one built. Other keys (sp_*) tune what
// accel does not build: warned about.
std::map<std::string, std::string> read_parallelism_config(const std::string& path, const YAML::Node& root,
                                                           std::vector<std::string>& warnings) {
  std::map<std::string, std::string> env;
  const YAML::Node section = root["parallelism_config"];
  if (!section || section.IsNull()) return env;
  if (!section.IsMap()) {
    throw ConfigFileError(path + ": key 'parallelism_config': expected a mapping, got " + Reader::describe(section));
  }
  Reader in(path, section);
  for (const auto& entry : section) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : std::string();
    const std::string prefix = "parallelism_config_", suffix = "_size";
    const bool size = key.rfind(prefix, 0) == 0 && key.size() > prefix.size() + suffix.size() &&
                      key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
    const std::string dim = size ? key.substr(prefix.size(), key.size() - prefix.size() - suffix.size()) : "";
    if (key == "parallelism_config_cp_comm_strategy") {
      const std::optional<std::string> strategy = in.get<std::string>(key, "a string");
      if (strategy && *strategy != "allgather")
        in.refuse(key, "\"" + *strategy +
                           "\" is not built: context parallelism all-gathers the keys and values "
                           "(\"allgather\")");
      continue;
    }
    if (dim != "dp_replicate" && dim != "dp_shard" && dim != "tp" && dim != "cp") {
      warnings.push_back("ignoring parallelism_config key '" + key + "' (accel reads the four *_size keys)");
      continue;
    }
    const std::optional<int> value = in.get<int>(key, "a positive integer");
    if (!value) continue;
    if (*value < 1) in.refuse(key, "expected a positive integer, got " + std::to_string(*value));
    std::string name = "PARALLELISM_CONFIG_" + dim + "_SIZE";
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::toupper(c); });
    env[name] = std::to_string(*value);
  }
  if (!env.empty()) env["ACCELERATE_USE_PARALLELISM_CONFIG"] = "true";
  return env;
}

// A string as PyYAML (YAML 1.1) reads it back as a string: quoted when it
// would otherwise read as a boolean, null or number (NO, yes, off, 0, 1.5, ...).
struct Text {
  const std::string& value;
};
YAML::Emitter& operator<<(YAML::Emitter& out, Text text) {
  std::string lower;
  for (char c : text.value) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::set<std::string> special{"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", ""};
  bool numeric = !text.value.empty() && text.value.find_first_not_of("0123456789+-.eE_") == std::string::npos;
  if (special.count(lower) || numeric) out << YAML::SingleQuoted;
  return out << text.value;
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

std::optional<std::string> default_config_path(const EnvLookup& env) {
  const std::string tail = "accelerate/default_config.yaml";
  if (auto hf_home = env("HF_HOME")) return *hf_home + "/" + tail;
  if (auto cache = env("XDG_CACHE_HOME")) return *cache + "/huggingface/" + tail;
  if (auto home = env("HOME")) return *home + "/.cache/huggingface/" + tail;
  return std::nullopt;
}

ConfigFile load_config_file(const std::string& path) {
  std::ifstream stream(path);
  if (!stream) throw ConfigFileError("cannot read config file " + path);
  YAML::Node root;
  try {
    root = YAML::Load(stream);
  } catch (const YAML::DeepRecursion& error) {
    // yaml-cpp's parser recurses once per level and stops itself at a fixed
    // depth (the document counts as one), but its message only says "bad file"
    // and its mark points at the start of the document.
    throw ConfigFileError(path + ": not valid YAML: nested more than " + std::to_string(error.depth() - 1) +
                          " levels deep, yaml-cpp's limit");
  } catch (const YAML::Exception& error) {
    throw ConfigFileError(path + ": not valid YAML: " + error.what());
  }
  ConfigFile file{path, {}, {}};
  if (root.IsNull()) return file;  // an empty file: nothing set
  if (!root.IsMap()) throw ConfigFileError(path + ": expected a mapping of settings, got " + Reader::describe(root));
  Reader in(path, root);
  read_honoured(in, file.values);
  read_ignored(in, file.values, file.warnings);
  file.values.sharding_env =
      read_sharding_config(path, root, file.values.distributed_type.value_or("NO"), file.warnings);
  file.values.parallelism_env = read_parallelism_config(path, root, file.warnings);
  for (const auto& entry : root) {
    // A key such as [1] or {a: 1} is valid YAML but no setting.
    if (!entry.first.IsScalar()) {
      throw ConfigFileError(path + ": a key at line " + std::to_string(entry.first.Mark().line + 1) + " is " +
                            Reader::describe(entry.first) + ", not a setting name");
    }
    std::string key = entry.first.Scalar();
    // Refusing would break files from newer Accelerate releases; naming it is enough.
    if (!kKnownKeys.count(key)) file.warnings.push_back("ignoring unknown key '" + key + "'");
  }
  return file;
}

void write_config_file(const std::string& path, const ConfigValues& values) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  // Sorted, as PyYAML's safe_dump writes them.
  const std::string no = "no";
  out << YAML::Key << "compute_environment" << YAML::Value
      << Text{values.compute_environment.value_or("LOCAL_MACHINE")};
  out << YAML::Key << "debug" << YAML::Value << false;
  out << YAML::Key << "distributed_type" << YAML::Value << Text{values.distributed_type.value_or("NO")};
  out << YAML::Key << "downcast_bf16" << YAML::Value << Text{no};
  out << YAML::Key << "enable_cpu_affinity" << YAML::Value << false;
  out << YAML::Key << "gpu_ids" << YAML::Value << Text{values.gpu_ids.value_or("all")};
  out << YAML::Key << "machine_rank" << YAML::Value << values.machine_rank.value_or(0);
  if (values.main_process_ip) out << YAML::Key << "main_process_ip" << YAML::Value << Text{*values.main_process_ip};
  if (values.main_process_port) out << YAML::Key << "main_process_port" << YAML::Value << *values.main_process_port;
  out << YAML::Key << "main_training_function" << YAML::Value << "main";
  out << YAML::Key << "mixed_precision" << YAML::Value << Text{values.mixed_precision.value_or("no")};
  out << YAML::Key << "num_machines" << YAML::Value << values.num_machines.value_or(1);
  out << YAML::Key << "num_processes" << YAML::Value << values.num_processes.value_or(1);
  out << YAML::Key << "rdzv_backend" << YAML::Value << "static";
  out << YAML::Key << "same_network" << YAML::Value << true;
  out << YAML::Key << "tpu_env" << YAML::Value << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
  out << YAML::Key << "tpu_use_cluster" << YAML::Value << false;
  out << YAML::Key << "tpu_use_sudo" << YAML::Value << false;
  out << YAML::Key << "use_cpu" << YAML::Value << values.use_cpu.value_or(false);
  out << YAML::EndMap;

  std::error_code ignored;
  std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ignored);
  std::ofstream file(path, std::ios::trunc);
  file << out.c_str() << '\n';
  if (!file.flush()) throw ConfigFileError("cannot write config file " + path);
}

}  // namespace accel::cli
