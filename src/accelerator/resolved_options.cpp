#include "accelerator/resolved_options.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <sstream>

#include "accelerator/parallelism.hpp"
#include "accel/error.hpp"
#include "sharding/strategy.hpp"
#include "state/environment.hpp"

namespace accel {
namespace detail {

namespace {

ShardingStrategy from_zero_stage(const std::string& text) {
  if (text == "0") return ShardingStrategy::NoShard;
  if (text == "1") return ShardingStrategy::ShardOptimizer;
  if (text == "2") return ShardingStrategy::ShardGradOp;
  if (text == "3") return ShardingStrategy::FullShard;
  fail(ErrorCode::InvalidArgument,
       "environment variable ACCELERATE_DEEPSPEED_ZERO_STAGE=\"" + text + "\" is not a ZeRO stage (0, 1, 2 or 3)");
}

}  // namespace

ShardingStrategy resolve_sharding_strategy(const std::optional<ShardingStrategy>& option) {
  ShardingStrategy strategy = ShardingStrategy::NoShard;
  if (option) {
    strategy = *option;
    require_arg(static_cast<int>(strategy) >= 0 && static_cast<int>(strategy) <= 4,
                "sharding_strategy " + std::to_string(static_cast<int>(strategy)) + " is not a ShardingStrategy value");
  } else if (get_env_flag("ACCELERATE_USE_FSDP", false)) {
    std::string text = get_env("FSDP_SHARDING_STRATEGY").value_or("1");
    try {
      strategy = parse_sharding_strategy(text);
    } catch (const Error& error) {
      fail(error.code(), std::string("environment variable FSDP_SHARDING_STRATEGY: ") + error.what());
    }
  } else if (get_env_flag("ACCELERATE_USE_DEEPSPEED", false)) {
    strategy = from_zero_stage(get_env("ACCELERATE_DEEPSPEED_ZERO_STAGE").value_or("2"));
  }
  return strategy;
}

int64_t resolve_min_num_params(const std::optional<int64_t>& option) {
  if (option) {
    require_arg(*option >= 0, "fsdp_min_num_params must be 0 or more, got " + std::to_string(*option));
    return *option;
  }
  if (!get_env_flag("ACCELERATE_USE_FSDP", false)) return 0;
  // Accelerate 0.22's FullyShardedDataParallelPlugin: NO_WRAP (its default),
  // or SIZE_BASED_WRAP with FSDP_MIN_NUM_PARAMS 0, wraps nothing but the root:
  // the whole model is one unit.
  const std::string policy = get_env("FSDP_AUTO_WRAP_POLICY").value_or("NO_WRAP");
  if (policy == "NO_WRAP") return kOneUnit;
  if (policy == "TRANSFORMER_BASED_WRAP") return 0;  // the units come from resolve_wrap_classes
  require_arg(policy == "SIZE_BASED_WRAP", "environment variable FSDP_AUTO_WRAP_POLICY=\"" + policy +
                                               "\" is not a policy (expected NO_WRAP, SIZE_BASED_WRAP or "
                                               "TRANSFORMER_BASED_WRAP)");
  const std::string text = get_env("FSDP_MIN_NUM_PARAMS").value_or("0");
  int64_t value = -1;
  try {
    size_t used = 0;
    value = std::stoll(text, &used);
    if (used != text.size()) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  require_arg(value >= 0, "environment variable FSDP_MIN_NUM_PARAMS=\"" + text + "\" is not a parameter count");
  return value == 0 ? kOneUnit : value;
}

std::vector<std::string> resolve_wrap_classes(const std::optional<std::vector<std::string>>& option) {
  if (option) {
    for (const auto& name : *option) {
      require_arg(!name.empty(), "fsdp_transformer_layer_cls_to_wrap: a class name is empty");
    }
    return *option;
  }
  if (!get_env_flag("ACCELERATE_USE_FSDP", false) ||
      get_env("FSDP_AUTO_WRAP_POLICY").value_or("NO_WRAP") != "TRANSFORMER_BASED_WRAP") {
    return {};
  }
  const std::string text = get_env("FSDP_TRANSFORMER_CLS_TO_WRAP").value_or("");
  std::vector<std::string> names = split_comma_list(text);
  for (const auto& name : names) {
    require_arg(!name.empty(), "environment variable FSDP_TRANSFORMER_CLS_TO_WRAP=\"" + text +
                                   "\": TRANSFORMER_BASED_WRAP needs the layer class names, comma-separated "
                                   "(libaccel cannot read a model's _no_split_modules)");
  }
  return names;
}

bool resolve_backward_prefetch(const std::optional<bool>& option) {
  if (option) return *option;
  if (!get_env_flag("ACCELERATE_USE_FSDP", false)) return true;
  const std::string value = get_env("FSDP_BACKWARD_PREFETCH").value_or("BACKWARD_PRE");
  require_arg(value == "BACKWARD_PRE" || value == "BACKWARD_POST" || value == "NO_PREFETCH",
              "environment variable FSDP_BACKWARD_PREFETCH=\"" + value +
                  "\" is not BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH");
  return value != "NO_PREFETCH";
}

bool resolve_activation_checkpointing(const std::optional<bool>& option, ShardingStrategy strategy) {
  const bool on =
      option ? *option
             : get_env_flag("ACCELERATE_USE_FSDP", false) && get_env_flag("FSDP_ACTIVATION_CHECKPOINTING", false);
  require(!on || shards_parameters(strategy), ErrorCode::Unsupported,
          std::string("fsdp_activation_checkpointing: checkpointing runs per FULL_SHARD wrap unit, but the "
                      "sharding_strategy is ") +
              to_string(strategy));
  return on;
}

namespace {

// A DeepSpeed offload device as Accelerate's launcher writes it.
bool offloads_to_cpu(const char* variable) {
  const std::string device = get_env(variable).value_or("none");
  if (device == "nvme") {
    fail(ErrorCode::Unsupported, std::string("environment variable ") + variable +
                                     "=\"nvme\": offload to NVMe is not supported (use cpu or none)");
  }
  require_arg(device == "none" || device == "cpu",
              std::string("environment variable ") + variable + "=\"" + device + "\" is not none, cpu or nvme");
  return device == "cpu";
}

}  // namespace

bool resolve_cpu_offload(const std::optional<bool>& option, ShardingStrategy strategy) {
  bool on = false;
  std::string source = "cpu_offload";
  if (option) {
    on = *option;
  } else if (get_env_flag("ACCELERATE_USE_FSDP", false)) {
    on = get_env_flag("FSDP_OFFLOAD_PARAMS", false);
    source = "FSDP_OFFLOAD_PARAMS";
  } else if (get_env_flag("ACCELERATE_USE_DEEPSPEED", false)) {
    const bool optimizer = offloads_to_cpu("ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE");
    const bool params = offloads_to_cpu("ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE");
    on = optimizer || params;
    source = optimizer ? "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE" : "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE";
  }
  require(!on || strategy != ShardingStrategy::NoShard, ErrorCode::Unsupported,
          source +
              ": CPU offload moves a sharded model's master weights, gradients and optimizer state, but the "
              "sharding_strategy is NO_SHARD (choose SHARD_OPTIMIZER, SHARD_GRAD_OP, FULL_SHARD or HYBRID_SHARD)");
  return on;
}

namespace {

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// Checked whatever the precision, so a bad value is named when it is given,
// not when a later run switches to fp16 (GradScaler checks again for itself).
void check_scaler_options(const AcceleratorOptions& o) {
  require_arg(std::isfinite(o.scaler_init_scale) && o.scaler_init_scale > 0,
              "scaler_init_scale must be positive and finite, got " + number(o.scaler_init_scale));
  require_arg(std::isfinite(o.scaler_growth_factor) && o.scaler_growth_factor > 1,
              "scaler_growth_factor must be > 1 and finite, got " + number(o.scaler_growth_factor));
  require_arg(o.scaler_backoff_factor > 0 && o.scaler_backoff_factor < 1,
              "scaler_backoff_factor must be in (0, 1), got " + number(o.scaler_backoff_factor));
  require_arg(o.scaler_growth_interval > 0,
              "scaler_growth_interval must be positive, got " + std::to_string(o.scaler_growth_interval));
}

// The launcher's value wins over the code's, as Accelerate's
// parse_choice_from_env does, so one script runs with any accumulation.
int64_t resolve_accumulation_steps(const std::optional<int64_t>& option) {
  int64_t steps = option.value_or(1);
  require_arg(steps >= 1, "gradient_accumulation_steps must be >= 1, got " + std::to_string(steps));
  if (auto from_env = get_env("ACCELERATE_GRADIENT_ACCUMULATION_STEPS")) {
    char* end = nullptr;
    errno = 0;
    steps = std::strtoll(from_env->c_str(), &end, 10);
    require_arg(end != from_env->c_str() && *end == '\0' && errno == 0,
                "environment variable ACCELERATE_GRADIENT_ACCUMULATION_STEPS=\"" + *from_env + "\" is not an integer");
    require_arg(steps >= 1,
                "environment variable ACCELERATE_GRADIENT_ACCUMULATION_STEPS=\"" + *from_env + "\" must be >= 1");
  }
  return steps;
}

// InitProcessGroupKwargs' backend: the names torch.distributed knows, of
// which libaccel runs the device's own (Gloo on the CPU, NCCL on CUDA).
std::string resolve_backend(const std::string& backend) {
  if (backend.empty() || backend == "gloo" || backend == "nccl") return backend;
  if (backend == "mpi" || backend == "ccl" || backend == "xccl" || backend == "hccl" || backend == "ucc" ||
      backend == "cncl" || backend == "mccl" || backend == "smddp" || backend == "xla") {
    fail(ErrorCode::Unsupported,
         "backend \"" + backend + "\" is not built into libaccel (it runs gloo on the CPU and nccl on CUDA)");
  }
  fail(ErrorCode::InvalidArgument, "backend \"" + backend.substr(0, 60) + "\" is not one of gloo, nccl");
}

// InitProcessGroupKwargs' init_method: env:// (the launcher's MASTER_ADDR and
// MASTER_PORT) or tcp://HOST:PORT, torch.distributed's two store-based forms.
void resolve_init_method(const std::string& method, ResolvedOptions& r) {
  if (method.empty() || method == "env://") return;
  const std::string shown = "init_method \"" + method.substr(0, 80) + "\"";
  const std::string tcp = "tcp://";
  if (method.compare(0, 7, "file://") == 0) {
    fail(ErrorCode::Unsupported, shown + ": a shared-file rendezvous is not supported (use env:// or tcp://HOST:PORT)");
  }
  require_arg(method.compare(0, tcp.size(), tcp) == 0, shown + " is not env:// or tcp://HOST:PORT");
  const std::string address = method.substr(tcp.size());
  const size_t colon = address.rfind(':');
  require_arg(colon != std::string::npos && colon > 0, shown + ": no HOST:PORT after tcp://");
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port = address.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const long value = port.empty() ? -1 : std::strtol(port.c_str(), &end, 10);
  require_arg(!port.empty() && end != nullptr && *end == '\0' && errno == 0 && value > 0 && value < 65536,
              shown + ": the port \"" + port.substr(0, 20) + "\" is not a number from 1 to 65535");
  r.store_host = host;
  r.store_port = static_cast<int>(value);
}

}  // namespace

ResolvedOptions resolve_options(const AcceleratorOptions& options) {
  ResolvedOptions r;
  r.given = options;
  require_arg(options.timeout.count() > 0,
              "timeout must be positive, got " + std::to_string(options.timeout.count()) + " ms");
  require_arg(options.bucket_cap_mb > 0,
              "bucket_cap_mb must be positive, got " + std::to_string(options.bucket_cap_mb));
  require_arg(options.first_bucket_cap_mb > 0,
              "first_bucket_cap_mb must be positive, got " + std::to_string(options.first_bucket_cap_mb));
  require_arg(
      options.comm_hook == CommHook::None || options.comm_hook == CommHook::Fp16 || options.comm_hook == CommHook::Bf16,
      "comm_hook " + std::to_string(static_cast<int>(options.comm_hook)) + " is not a CommHook value");
  check_scaler_options(options);
  r.sharding_strategy = resolve_sharding_strategy(options.sharding_strategy);
  r.fsdp_min_num_params = resolve_min_num_params(options.fsdp_min_num_params);
  r.fsdp_wrap_classes = resolve_wrap_classes(options.fsdp_transformer_layer_cls_to_wrap);
  r.fsdp_backward_prefetch = resolve_backward_prefetch(options.fsdp_backward_prefetch);
  r.fsdp_forward_prefetch = options.fsdp_forward_prefetch.value_or(get_env_flag("ACCELERATE_USE_FSDP", false) &&
                                                                   get_env_flag("FSDP_FORWARD_PREFETCH", false));
  r.fsdp_activation_checkpointing =
      resolve_activation_checkpointing(options.fsdp_activation_checkpointing, r.sharding_strategy);
  r.cpu_offload = resolve_cpu_offload(options.cpu_offload, r.sharding_strategy);
  require(options.comm_hook == CommHook::None ||
              (r.sharding_strategy != ShardingStrategy::ShardGradOp && !shards_parameters(r.sharding_strategy)),
          ErrorCode::Unsupported,
          std::string("comm_hook with sharding_strategy ") + to_string(r.sharding_strategy) +
              ": the gradient reduce-scatter sends float32 only");
  r.debug_mode = get_env_flag("ACCELERATE_DEBUG_MODE", false);
  r.parallelism = resolve_parallelism(options.parallelism_config);
  if (options.fsdp_state_dict_type) {
    const std::string& type = *options.fsdp_state_dict_type;
    require_arg(type == "FULL_STATE_DICT" || type == "SHARDED_STATE_DICT",
                "fsdp_state_dict_type \"" + type.substr(0, 60) + "\" is not FULL_STATE_DICT or SHARDED_STATE_DICT");
    r.sharded_state_dict = type == "SHARDED_STATE_DICT";
  } else if (auto type = get_env("FSDP_STATE_DICT_TYPE")) {
    require_arg(*type == "FULL_STATE_DICT" || *type == "SHARDED_STATE_DICT",
                "environment variable FSDP_STATE_DICT_TYPE=\"" + type->substr(0, 60) +
                    "\" is not FULL_STATE_DICT or SHARDED_STATE_DICT");
    r.sharded_state_dict = *type == "SHARDED_STATE_DICT";
  }
  if (options.mixed_precision) {
    r.mixed_precision = *options.mixed_precision;
  } else if (auto from_env = get_env("ACCELERATE_MIXED_PRECISION")) {
    r.mixed_precision = parse_mixed_precision(*from_env);
  }
  r.use_cpu = options.cpu || get_env_flag("ACCELERATE_USE_CPU", false);
  r.rng_types = parse_rng_types(options.rng_types.value_or(std::vector<std::string>{"generator"}));
  r.backend = resolve_backend(options.backend);
  resolve_init_method(options.init_method, r);
  r.gradient_accumulation_steps = resolve_accumulation_steps(options.gradient_accumulation_steps);
  return r;
}

}  // namespace detail
}  // namespace accel
