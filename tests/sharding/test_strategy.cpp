#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "accel/accelerator.hpp"
#include "sharding/strategy.hpp"

namespace {

using accel::ShardingStrategy;
using accel::detail::resolve_sharding_strategy;

const char* const kVariables[] = {"ACCELERATE_USE_FSDP", "FSDP_SHARDING_STRATEGY", "ACCELERATE_USE_DEEPSPEED",
                                  "ACCELERATE_DEEPSPEED_ZERO_STAGE"};

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
  EXPECT_EQ(accel::parse_sharding_strategy("5"), ShardingStrategy::HybridShard);
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
  EXPECT_NE(error_of(ShardingStrategy::FullShard, accel::ErrorCode::Unsupported).find("FULL_SHARD"),
            std::string::npos);
  EXPECT_NE(error_of(ShardingStrategy::HybridShard, accel::ErrorCode::Unsupported).find("HYBRID_SHARD"),
            std::string::npos);
  EXPECT_NE(error_of(static_cast<ShardingStrategy>(9), accel::ErrorCode::InvalidArgument).find("sharding_strategy 9"),
            std::string::npos);
  setenv("ACCELERATE_USE_FSDP", "true", 1);  // FSDP_SHARDING_STRATEGY unset: FSDP's default, FULL_SHARD
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::Unsupported).find("FSDP_SHARDING_STRATEGY=1: FULL_SHARD"),
            std::string::npos);
  setenv("FSDP_SHARDING_STRATEGY", "ZERO", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::InvalidArgument).find("FSDP_SHARDING_STRATEGY: sharding strategy \"ZERO\""),
            std::string::npos);
  clear();
  setenv("ACCELERATE_USE_DEEPSPEED", "true", 1);
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "3", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::Unsupported).find("ACCELERATE_DEEPSPEED_ZERO_STAGE=3"),
            std::string::npos);
  setenv("ACCELERATE_DEEPSPEED_ZERO_STAGE", "x", 1);
  EXPECT_NE(error_of(std::nullopt, accel::ErrorCode::InvalidArgument).find("ACCELERATE_DEEPSPEED_ZERO_STAGE=\"x\""),
            std::string::npos);
}

TEST_F(ShardingStrategyTest, AcceleratorRefusesFullShardAndReportsTheStrategy) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  options.sharding_strategy = ShardingStrategy::FullShard;
  EXPECT_THROW(accel::Accelerator{options}, accel::Error);
  options.sharding_strategy = ShardingStrategy::ShardOptimizer;
  accel::Accelerator accelerator(options);
  EXPECT_EQ(accelerator.sharding_strategy(), ShardingStrategy::ShardOptimizer);
}

}  // namespace
