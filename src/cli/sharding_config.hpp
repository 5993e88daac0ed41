// Accelerate's fsdp_config and deepspeed_config sections of a configuration
// file, mapped onto libaccel's sharding strategies (docs/sharding.md).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace accel::cli {

// For distributed_type FSDP (fsdp_config) or DEEPSPEED (deepspeed_config, and
// the JSON file its deepspeed_config_file names): the variables Accelerate's
// launcher gives the ranks, which the library reads (ACCELERATE_USE_FSDP +
// FSDP_SHARDING_STRATEGY as FSDP's number, or ACCELERATE_USE_DEEPSPEED +
// ACCELERATE_DEEPSPEED_ZERO_STAGE). Empty for other distributed types.
// Throws ConfigFileError naming the file and key for a value libaccel cannot
// honour (FULL_SHARD, HYBRID_SHARD, ZeRO stage 3, offload, sharded state
// dicts, activation checkpointing) and for unknown keys in those sections;
// keys with no effect without parameter sharding (wrap policies, prefetch)
// become warnings naming them.
std::map<std::string, std::string> read_sharding_config(const std::string& path, const YAML::Node& root,
                                                        const std::string& distributed_type,
                                                        std::vector<std::string>& warnings);

// The same variables from accel launch's flags (--use_fsdp with
// --fsdp_sharding_strategy, --use_deepspeed with --zero_stage); empty when
// none is given. Throws CLI::ValidationError naming the flag for a value it
// cannot honour, a strategy without its --use_ flag, or both --use_ flags.
// fsdp_settings / deepspeed_settings: the --fsdp_* and DeepSpeed flags given,
// under their fsdp_config / deepspeed_config key names.
std::map<std::string, std::string> sharding_env_from_flags(
    bool use_fsdp, const std::map<std::string, std::string>& fsdp_settings, bool use_deepspeed,
    const std::optional<int>& zero_stage, const std::map<std::string, std::string>& deepspeed_settings = {});

}  // namespace accel::cli
