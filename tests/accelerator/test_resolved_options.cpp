#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "accel/accelerator.hpp"
#include "accelerator/resolved_options.hpp"
#include "sharding/strategy.hpp"

namespace {

using accel::ShardingStrategy;
using accel::detail::resolve_sharding_strategy;

const char* const kVariables[] = {"ACCELERATE_USE_FSDP",          "FSDP_SHARDING_STRATEGY",
                                  "ACCELERATE_USE_DEEPSPEED",     "ACCELERATE_DEEPSPEED_ZERO_STAGE",
                                  "FSDP_AUTO_WRAP_POLICY",        "FSDP_MIN_NUM_PARAMS",
                                  "FSDP_TRANSFORMER_CLS_TO_WRAP", "FSDP_BACKWARD_PREFETCH"};

class ShardingStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kVariables) unsetenv(name);
  }
};

std::string error_of(const std::optional<ShardingStrategy>& option, accel::ErrorCode code) {
  try {
    resolve_sharding_strategy(option);
  } catch (const accel::Error& error) {
    EXPECT_EQ(error.code(), code) << error.what();
    return error.what();
  }
  return "no error";
}

TEST_F(ShardingStrategyTest, ParsesNamesAndFsdpNumbers) {
  EXPECT_EQ(accel::parse_sharding_strategy("SHARD_GRAD_OP"), ShardingStrategy::ShardGradOp);
  EXPECT_EQ(accel::parse_sharding_strategy("2"), ShardingStrategy::ShardGradOp);
  EXPECT_EQ(accel::parse_sharding_strategy("3"), ShardingStrategy::NoShard);
  EXPECT_EQ(accel::parse_sharding_strategy("1"), ShardingStrategy::FullShard);
  EXPECT_EQ(accel::parse_sharding_strategy("4"), ShardingStrategy::HybridShard);
  EXPECT_EQ(accel::parse_sharding_strategy("HYBRID_SHARD"), ShardingStrategy::HybridShard);
  EXPECT_EQ(accel::parse_sharding_strategy("SHARD_OPTIMIZER"), ShardingStrategy::ShardOptimizer);
  EXPECT_THROW(accel::parse_sharding_strategy("6"), accel::Error);
  EXPECT_STREQ(accel::to_string(ShardingStrategy::ShardGradOp), "SHARD_GRAD_OP");
}

TEST_F(ShardingStrategyTest, OptionWinsOverTheEnvironment) {
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  setenv("FSDP_SHARDING_STRATEGY", "2", 1);
  EXPECT_EQ(resolve_sharding_strategy(ShardingStrategy::NoShard), ShardingStrategy::NoShard);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::ShardGradOp);
}

TEST_F(ShardingStrategyTest, ReadsAccelerateLauncherVariables) {
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::NoShard);
  setenv("FSDP_SHARDING_STRATEGY", "2", 1);  // without ACCELERATE_USE_FSDP: not FSDP
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::NoShard);
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  setenv("FSDP_SHARDING_STRATEGY", "NO_SHARD", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::NoShard);
  clear();
  setenv("ACCELERATE_USE_DEEPSPEED", "true", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::ShardGradOp);  // Accelerate's default stage 2
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "1", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::ShardOptimizer);
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "0", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::NoShard);
}

TEST_F(ShardingStrategyTest, RefusesWhatIsNotImplementedNamingIt) {
  EXPECT_NE(error_of(static_cast<ShardingStrategy>(9), accel::ErrorCode::InvalidArgument).find("sharding_strategy 9"),
            std::string::npos);
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  setenv("FSDP_SHARDING_STRATEGY", "4", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::HybridShard);
  // FSDP's 5: SHARD_GRAD_OP within a node, which libaccel does not run.
  setenv("FSDP_SHARDING_STRATEGY", "5", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::Unsupported)
                .find("FSDP_SHARDING_STRATEGY: sharding strategy \"5\" (HYBRID_SHARD_ZERO2"),
            std::string::npos);
  setenv("FSDP_SHARDING_STRATEGY", "ZERO", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::InvalidArgument)
                .find("FSDP_SHARDING_STRATEGY: sharding strategy \"ZERO\""),
            std::string::npos);
  clear();
  setenv("ACCELERATE_USE_DEEPSPEED", "true", 1);
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "x", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::InvalidArgument).find("ACCELERATE_DEEPSPEED_ZERO_STAGE=\"x\""),
            std::string::npos);
}

// FULL_SHARD (1, FSDP's default) and ZeRO stage 3 from the launcher's variables.
TEST_F(ShardingStrategyTest, FullShardFromTheEnvironment) {
  setenv("ACCELERATE_USE_FSDP", "true", 1);  // FSDP_SHARDING_STRATEGY unset: FSDP's default
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::FullShard);
  clear();
  setenv("ACCELERATE_USE_DEEPSPEED", "true", 1);
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3", 1);
  EXPECT_EQ(resolve_sharding_strategy(std::nullopt), ShardingStrategy::FullShard);
}

// Wrap units: Accelerate's FSDP_AUTO_WRAP_POLICY / FSDP_MIN_NUM_PARAMS.
TEST_F(ShardingStrategyTest, MinNumParamsFromOptionAndEnvironment) {
  using accel::detail::kOneUnit;
  using accel::detail::resolve_min_num_params;
  EXPECT_EQ(resolve_min_num_params(std::nullopt), 0);  // not FSDP: one unit per layer
  EXPECT_EQ(resolve_min_num_params(int64_t{500}), 500);
  EXPECT_THROW(resolve_min_num_params(int64_t{-1}), accel::Error);
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  EXPECT_EQ(resolve_min_num_params(std::nullopt), kOneUnit);  // NO_WRAP, Accelerate's default: the root only
  setenv("FSDP_AUTO_WRAP_POLICY", "SIZE_BASED_WRAP", 1);
  EXPECT_EQ(resolve_min_num_params(std::nullopt), kOneUnit);  // minimum 0: no policy in Accelerate either
  setenv("FSDP_MIN_NUM_PARAMS", "2000", 1);
  EXPECT_EQ(resolve_min_num_params(std::nullopt), 2000);
  EXPECT_EQ(resolve_min_num_params(int64_t{0}), 0);  // the option wins
  setenv("FSDP_MIN_NUM_PARAMS", "lots", 1);
  try {
    resolve_min_num_params(std::nullopt);
    ADD_FAILURE() << "FSDP_MIN_NUM_PARAMS=lots was accepted";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find("FSDP_MIN_NUM_PARAMS=\"lots\""), std::string::npos) << e.what();
  }
  setenv("FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP", 1);
  EXPECT_EQ(resolve_min_num_params(std::nullopt), 0);  // the units come from the class names
  setenv("FSDP_AUTO_WRAP_POLICY", "BY_MOOD", 1);
  try {
    resolve_min_num_params(std::nullopt);
    ADD_FAILURE() << "FSDP_AUTO_WRAP_POLICY=BY_MOOD was accepted";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("BY_MOOD"), std::string::npos) << e.what();
  }
}

// transformer_auto_wrap_policy's names: the option, else FSDP_TRANSFORMER_CLS_TO_WRAP
// under TRANSFORMER_BASED_WRAP only.
TEST_F(ShardingStrategyTest, WrapClassesFromOptionAndEnvironment) {
  using accel::detail::resolve_wrap_classes;
  using Names = std::vector<std::string>;
  EXPECT_TRUE(resolve_wrap_classes(std::nullopt).empty());
  EXPECT_EQ(resolve_wrap_classes(Names{"GPT2Block"}), Names{"GPT2Block"});
  EXPECT_THROW(resolve_wrap_classes(Names{"GPT2Block", ""}), accel::Error);
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  setenv("FSDP_TRANSFORMER_CLS_TO_WRAP", "GPT2Block, BertLayer", 1);
  EXPECT_TRUE(resolve_wrap_classes(std::nullopt).empty());  // NO_WRAP: the variable is not read
  setenv("FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP", 1);
  EXPECT_EQ(resolve_wrap_classes(std::nullopt), (Names{"GPT2Block", "BertLayer"}));
  EXPECT_EQ(resolve_wrap_classes(Names{"transformer.h.0"}), Names{"transformer.h.0"});  // the option wins
  setenv("FSDP_TRANSFORMER_CLS_TO_WRAP", "GPT2Block,,BertLayer", 1);
  try {
    resolve_wrap_classes(std::nullopt);
    ADD_FAILURE() << "an empty class name was accepted";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("GPT2Block,,BertLayer"), std::string::npos) << e.what();
  }
  unsetenv("FSDP_TRANSFORMER_CLS_TO_WRAP");
  EXPECT_THROW(resolve_wrap_classes(std::nullopt), accel::Error);  // Accelerate would read _no_split_modules
}

TEST_F(ShardingStrategyTest, AcceleratorReportsTheStrategy) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.sharding_strategy = ShardingStrategy::HybridShard;  // one process: nothing to shard yet
  EXPECT_EQ(accel::Accelerator{options}.sharding_strategy(), ShardingStrategy::HybridShard);
  options.sharding_strategy = ShardingStrategy::FullShard;
  EXPECT_EQ(accel::Accelerator{options}.sharding_strategy(), ShardingStrategy::FullShard);
  options.sharding_strategy = ShardingStrategy::ShardOptimizer;
  accel::Accelerator accelerator(options);
  EXPECT_EQ(accelerator.sharding_strategy(), ShardingStrategy::ShardOptimizer);
}

}  // namespace

// FSDP's backward prefetch: on by default (FSDP's BACKWARD_PRE), off for NO_PREFETCH.
TEST_F(ShardingStrategyTest, BackwardPrefetchFromOptionAndEnvironment) {
  using accel::detail::resolve_backward_prefetch;
  EXPECT_TRUE(resolve_backward_prefetch(std::nullopt));
  EXPECT_FALSE(resolve_backward_prefetch(false));
  setenv("FSDP_BACKWARD_PREFETCH", "NO_PREFETCH", 1);
  EXPECT_TRUE(resolve_backward_prefetch(std::nullopt));  // read under ACCELERATE_USE_FSDP only
  setenv("ACCELERATE_USE_FSDP", "true", 1);
  EXPECT_FALSE(resolve_backward_prefetch(std::nullopt));
  EXPECT_TRUE(resolve_backward_prefetch(true));
  setenv("FSDP_BACKWARD_PREFETCH", "BACKWARD_POST", 1);
  EXPECT_TRUE(resolve_backward_prefetch(std::nullopt));
  setenv("FSDP_BACKWARD_PREFETCH", "SOMETIMES", 1);
  try {
    resolve_backward_prefetch(std::nullopt);
    ADD_FAILURE() << "FSDP_BACKWARD_PREFETCH=SOMETIMES was accepted";
  } catch (const accel::Error& e) {
    EXPECT_NE(std::string(e.what()).find("SOMETIMES"), std::string::npos) << e.what();
  }
}
