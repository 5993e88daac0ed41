#include "cli/sharding_config.hpp"

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/config_file.hpp"

namespace accel::cli {

namespace {

// FSDP's ShardingStrategy numbers, as Accelerate 0.22 writes them.
const std::vector<std::string> kFsdpStrategies{"FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD",
                                               "HYBRID_SHARD_ZERO2"};

class Section {
 public:
  Section(std::string path, std::string name, YAML::Node node)
      : path_(std::move(path)), name_(std::move(name)), node_(std::move(node)) {}

  [[noreturn]] void refuse(const std::string& key, const std::string& why) const {
    throw ConfigFileError(path_ + ": key '" + name_ + "." + key + "': " + why);
  }
  std::string warning(const std::string& key, const std::string& why) const {
    return "ignoring key '" + name_ + "." + key + "': " + why;
  }
  std::optional<std::string> text(const std::string& key) const {
    YAML::Node value = node_[key];
    if (!value || value.IsNull()) return std::nullopt;
    if (!value.IsScalar()) refuse(key, "expected a single value");
    return value.Scalar();
  }
  bool flag(const std::string& key) const {
    auto value = text(key);
    if (!value) return false;
    if (*value == "true" || *value == "True") return true;
    if (*value == "false" || *value == "False") return false;
    refuse(key, "expected true or false, got '" + *value + "'");
  }
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& entry : node_) out.push_back(entry.first.Scalar());
    return out;
  }

 private:
  std::string path_, name_;
  YAML::Node node_;
};

std::string fsdp_strategy_number(const Section& in) {
  std::string value = in.text("fsdp_sharding_strategy").value_or("1");  // FSDP's and Accelerate's default
  size_t index = kFsdpStrategies.size();
  for (size_t i = 0; i < kFsdpStrategies.size(); ++i) {
    if (value == kFsdpStrategies[i] || value == std::to_string(i + 1)) index = i;
  }
  if (index == kFsdpStrategies.size()) {
    in.refuse("fsdp_sharding_strategy", "unknown value '" + value +
                                            "' (expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, "
                                            "HYBRID_SHARD_ZERO2 or 1-5)");
  }
  const std::string& name = kFsdpStrategies[index];
  if (name == "HYBRID_SHARD_ZERO2") {
    in.refuse("fsdp_sharding_strategy", value + " (" + name +
                                            ", SHARD_GRAD_OP within a node) is not supported; use HYBRID_SHARD (4), "
                                            "FULL_SHARD (1), SHARD_GRAD_OP (2) or NO_SHARD (3)");
  }
  return std::to_string(index + 1);
}

// A non-negative parameter count, as FSDP_MIN_NUM_PARAMS carries it.
std::string parameter_count(const Section& in, const std::string& key) {
  const std::string value = in.text(key).value_or("0");
  const bool digits = !value.empty() && value.size() < 19 && value.find_first_not_of("0123456789") == std::string::npos;
  if (!digits) in.refuse(key, "'" + value + "' is not a parameter count (a whole number, 0 or more)");
  return value;
}

std::map<std::string, std::string> read_fsdp(const Section& in, std::vector<std::string>& warnings) {
  std::map<std::string, std::string> env{{"ACCELERATE_USE_FSDP", "true"},
                                         {"FSDP_SHARDING_STRATEGY", fsdp_strategy_number(in)}};
  const std::set<std::string> backward_prefetch{"fsdp_backward_prefetch", "fsdp_backward_prefetch_policy"};
  for (const std::string& key : in.keys()) {
    if (key == "fsdp_sharding_strategy") continue;
    if (key == "fsdp_forward_prefetch") {
      env["FSDP_FORWARD_PREFETCH"] = in.flag(key) ? "true" : "false";
    } else if (backward_prefetch.count(key)) {  // fsdp_backward_prefetch(_policy)
      const std::string value = in.text(key).value_or("BACKWARD_PRE");
      if (value != "BACKWARD_PRE" && value != "BACKWARD_POST" && value != "NO_PREFETCH") {
        in.refuse(key, "unknown value '" + value + "' (expected BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH)");
      }
      env["FSDP_BACKWARD_PREFETCH"] = value;
    } else if (key == "fsdp_auto_wrap_policy") {
      // FULL_SHARD's wrap units (docs/sharding.md); Accelerate's names.
      const std::string value = in.text(key).value_or("NO_WRAP");
      if (value == "TRANSFORMER_BASED_WRAP" && !in.text("fsdp_transformer_layer_cls_to_wrap")) {
        in.refuse(key, value +
                           " needs fsdp_transformer_layer_cls_to_wrap (the layer class names, comma-separated; "
                           "libaccel cannot read a model's _no_split_modules)");
      }
      if (value != "SIZE_BASED_WRAP" && value != "NO_WRAP" && value != "TRANSFORMER_BASED_WRAP") {
        in.refuse(key, "unknown value '" + value + "' (expected SIZE_BASED_WRAP, NO_WRAP or TRANSFORMER_BASED_WRAP)");
      }
      env["FSDP_AUTO_WRAP_POLICY"] = value;
    } else if (key == "fsdp_min_num_params") {
      env["FSDP_MIN_NUM_PARAMS"] = parameter_count(in, key);
    } else if (key == "fsdp_transformer_layer_cls_to_wrap") {
      // Read by the accelerator only under TRANSFORMER_BASED_WRAP, as Accelerate does.
      if (auto value = in.text(key)) env["FSDP_TRANSFORMER_CLS_TO_WRAP"] = *value;
    } else if (key == "fsdp_offload_params") {
      // Master weights, gradients and optimizer state of the shards on the CPU (docs/sharding.md).
      const bool on = in.flag(key);
      if (on && env["FSDP_SHARDING_STRATEGY"] == "3") {
        in.refuse(key, "true: offload moves a sharded model's state, and fsdp_sharding_strategy is NO_SHARD (3)");
      }
      if (on) env["FSDP_OFFLOAD_PARAMS"] = "true";
    } else if (key == "fsdp_activation_checkpointing") {
      if (in.flag(key)) {
        if (env["FSDP_SHARDING_STRATEGY"] != "1") {
          in.refuse(key, "true: checkpointing runs per FULL_SHARD wrap unit, and fsdp_sharding_strategy is " +
                             env["FSDP_SHARDING_STRATEGY"] + " (use FULL_SHARD, 1)");
        }
        env["FSDP_ACTIVATION_CHECKPOINTING"] = "true";
      }
    } else if (key == "fsdp_state_dict_type") {
      // What save_state writes for a FULL_SHARD model; save_model is always full.
      auto value = in.text(key).value_or("FULL_STATE_DICT");
      if (value != "FULL_STATE_DICT" && value != "SHARDED_STATE_DICT") {
        in.refuse(key, value + " is not supported (expected FULL_STATE_DICT or SHARDED_STATE_DICT)");
      }
      env["FSDP_STATE_DICT_TYPE"] = value;
    } else if (key == "fsdp_sync_module_states" || key == "fsdp_use_orig_params" ||
               key == "fsdp_cpu_ram_efficient_loading") {
      // What libaccel always does: rank 0's weights are broadcast at prepare,
      // and parameters keep their names and identity.
      in.flag(key);
    } else {
      in.refuse(key, "unknown FSDP setting");
    }
  }
  return env;
}

std::string checked_stage(const Section& in, const std::string& key, const std::string& value) {
  if (value == "0" || value == "1" || value == "2" || value == "3") return value;
  in.refuse(key, "unknown ZeRO stage '" + value + "' (expected 0, 1, 2 or 3)");
}

// An offload device: none or cpu (NVMe is not supported).
const std::string& checked_offload(const Section& in, const std::string& key, const std::string& device) {
  if (device == "nvme") in.refuse(key, "'nvme': offload to NVMe is not supported (use cpu or none)");
  if (device != "none" && device != "cpu")
    in.refuse(key, "unknown device '" + device + "' (expected none, cpu or nvme)");
  return device;
}

// The launcher variable each DeepSpeed offload setting becomes.
const char* offload_variable(const std::string& key) {
  return key.rfind("offload_optimizer", 0) == 0 ? "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE"
                                                : "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE";
}

// A DeepSpeed JSON configuration: zero_optimization.stage, and its offload
// devices into `env`.
std::string stage_from_json(const Section& in, const std::string& file, std::map<std::string, std::string>& env) {
  std::ifstream stream(file);
  if (!stream) in.refuse("deepspeed_config_file", "cannot read " + file);
  nlohmann::json config = nlohmann::json::parse(stream, nullptr, false);
  if (config.is_discarded() || !config.is_object()) in.refuse("deepspeed_config_file", file + " is not a JSON object");
  const std::string where = "deepspeed_config_file " + file + ": zero_optimization";
  auto zero = config.find("zero_optimization");
  if (zero == config.end()) return "0";
  if (!zero->is_object()) in.refuse("deepspeed_config_file", where + " is not an object");
  auto stage = zero->find("stage");
  std::string value = stage == zero->end()         ? "0"
                      : stage->is_number_integer() ? std::to_string(stage->get<int>())
                                                   : stage->dump();
  checked_stage(in, "deepspeed_config_file", value);
  for (const char* offload : {"offload_optimizer", "offload_param"}) {
    auto it = zero->find(offload);
    if (it == zero->end() || !it->is_object()) continue;
    auto device = it->find("device");
    if (device == it->end()) continue;
    if (!device->is_string()) in.refuse("deepspeed_config_file", where + "." + offload + ".device is not a string");
    if (checked_offload(in, "deepspeed_config_file", device->get<std::string>()) == "cpu") {
      env[offload_variable(offload)] = "cpu";
    }
  }
  return value;
}

std::map<std::string, std::string> read_deepspeed(const Section& in, std::vector<std::string>& warnings) {
  std::optional<std::string> stage;
  std::map<std::string, std::string> env;
  for (const std::string& key : in.keys()) {
    if (key == "zero_stage") {
      if (auto value = in.text(key)) stage = checked_stage(in, key, *value);
    } else if (key == "deepspeed_config_file") {
      if (auto file = in.text(key)) stage = stage_from_json(in, *file, env);
    } else if (key == "offload_optimizer_device" || key == "offload_param_device") {
      if (auto device = in.text(key); device && checked_offload(in, key, *device) == "cpu")
        env[offload_variable(key)] = "cpu";
    } else if (key == "zero3_init_flag") {
      if (in.flag(key))
        in.refuse(key, "true: zero.Init is not supported (the model is built whole and sharded at prepare)");
    } else if (key == "zero3_save_16bit_model" || key == "deepspeed_multinode_launcher") {
      if (in.text(key))
        warnings.push_back(in.warning(key,
                                      "no effect: save_model always writes fp32 weights; "
                                      "DeepSpeed's launcher is not used"));
    } else if (key == "gradient_accumulation_steps") {
      auto value = in.text(key);
      if (value && *value != "1") {
        in.refuse(key, *value + ": give it to accel launch --gradient_accumulation_steps or the Accelerator options");
      }
    } else {
      in.refuse(key, "unknown DeepSpeed setting");
    }
  }
  // Accelerate's default when the section names no stage.
  env["ACCELERATE_USE_DEEPSPEED"] = "true";
  env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] = stage.value_or("2");
  // DeepSpeed's own rules: stage 0 has no shards to offload, and only stage 3
  // shards the parameters that offload_param moves.
  for (const char* variable :
       {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE"}) {
    if (env.count(variable) == 0) continue;
    const bool params = std::string(variable).find("PARAM_DEVICE") != std::string::npos;
    const std::string& zero = env["ACCELERATE_DEEPSPEED_ZERO_STAGE"];
    if (zero == "0" || (params && zero != "3")) {
      in.refuse(params ? "offload_param_device" : "offload_optimizer_device",
                "cpu needs zero_stage " + std::string(params ? "3" : "1, 2 or 3") + ", and it is " + zero);
    }
  }
  return env;
}

}  // namespace

std::map<std::string, std::string> read_sharding_config(const std::string& path, const YAML::Node& root,
                                                        const std::string& distributed_type,
                                                        std::vector<std::string>& warnings) {
  const bool fsdp = distributed_type == "FSDP";
  if (!fsdp && distributed_type != "DEEPSPEED") return {};
  const std::string name = fsdp ? "fsdp_config" : "deepspeed_config";
  YAML::Node section = root[name];
  if (section && !section.IsNull() && !section.IsMap()) {
    throw ConfigFileError(path + ": key '" + name + "': expected a mapping of settings");
  }
  Section in(path, name, section && section.IsMap() ? section : YAML::Node(YAML::NodeType::Map));
  return fsdp ? read_fsdp(in, warnings) : read_deepspeed(in, warnings);
}

std::map<std::string, std::string> sharding_env_from_flags(
    bool use_fsdp, const std::map<std::string, std::string>& fsdp_settings, bool use_deepspeed,
    const std::optional<int>& zero_stage, const std::map<std::string, std::string>& deepspeed_settings) {
  if (!fsdp_settings.empty() && !use_fsdp) {
    const std::string flag = "--" + fsdp_settings.begin()->first;
    throw CLI::ValidationError(flag, flag + " needs --use_fsdp");
  }
  if (zero_stage && !use_deepspeed) throw CLI::ValidationError("--zero_stage", "--zero_stage needs --use_deepspeed");
  if (!deepspeed_settings.empty() && !use_deepspeed) {
    const std::string flag = "--" + deepspeed_settings.begin()->first;
    throw CLI::ValidationError(flag, flag + " needs --use_deepspeed");
  }
  if (use_fsdp && use_deepspeed) {
    throw CLI::ValidationError("--use_deepspeed", "--use_fsdp and --use_deepspeed exclude each other");
  }
  // The config-file rules, with the flag's name in the message.
  auto as_flag = [](const std::string& fallback, auto&& read) {
    try {
      return read();
    } catch (const ConfigFileError& error) {
      std::string message = error.what();
      const size_t key = message.find("key '");
      const size_t dot = message.find('.', key), end = message.find('\'', key + 5);
      std::string flag = fallback;
      if (key != std::string::npos && dot != std::string::npos && dot < end)
        flag = "--" + message.substr(dot + 1, end - dot - 1);
      throw CLI::ValidationError(flag, flag + message.substr(message.find(':', key)));
    }
  };
  std::vector<std::string> ignored;
  if (use_fsdp) {
    YAML::Node section(YAML::NodeType::Map);
    for (const auto& [key, value] : fsdp_settings) section[key] = value;
    return as_flag("--use_fsdp", [&] { return read_fsdp(Section("", "fsdp_config", section), ignored); });
  }
  if (use_deepspeed) {
    YAML::Node section(YAML::NodeType::Map);
    for (const auto& [key, value] : deepspeed_settings) section[key] = value;
    if (zero_stage) section["zero_stage"] = std::to_string(*zero_stage);
    return as_flag("--zero_stage", [&] { return read_deepspeed(Section("", "deepspeed_config", section), ignored); });
  }
  return {};
}

}  // namespace accel::cli
