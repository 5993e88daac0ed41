#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "accel/error.hpp"
#include "state/environment.hpp"

namespace {

using ::testing::HasSubstr;

class EnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) {
      unsetenv(name);
    }
  }
  static std::string error_of() {
    try {
      accel::detail::read_launch_environment();
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
      return e.what();
    }
    return "no error";
  }
};

TEST_F(EnvironmentTest, NoVariablesMeansOneProcess) {
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.rank, 0);
  EXPECT_FALSE(env.distributed());
}

TEST_F(EnvironmentTest, ReadsTheTorchrunContract) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "10.0.0.1", 1);
  setenv("MASTER_PORT", "1234", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "10.0.0.1");
  EXPECT_EQ(env.master_port, 1234);
}

TEST_F(EnvironmentTest, BadValuesAreNamed) {
  setenv("WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  EXPECT_THAT(error_of(), HasSubstr("MASTER_ADDR is not set"));
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "70000", 1);
  EXPECT_THAT(error_of(), HasSubstr("MASTER_PORT=\"70000\""));
  setenv("MASTER_PORT", "29500", 1);
  setenv("RANK", "5", 1);
  EXPECT_THAT(error_of(), HasSubstr("RANK=5 is not below WORLD_SIZE=2"));
  setenv("RANK", "x1", 1);
  EXPECT_THAT(error_of(), HasSubstr("RANK=\"x1\""));
}

}  // namespace
