#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "cli/launch_options.hpp"

namespace {

accel::cli::LaunchConfig parse(std::vector<std::string> args) {
  CLI::App app;
  accel::cli::LaunchConfig config;
  accel::cli::add_launch_options(app, config);
  std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
  app.parse(args);
  accel::cli::take_program(app, config);
  accel::cli::validate(config);
  return config;
}

TEST(LaunchOptions, ProgramArgumentsAreNotParsedByTheLauncher) {
  auto config = parse({"--nproc_per_node", "3", "--master_port", "0", "train", "--epochs", "2", "-v"});
  EXPECT_EQ(config.nproc_per_node, 3);
  EXPECT_EQ(config.master_port, 0);
  EXPECT_EQ(config.program, "train");
  EXPECT_EQ(config.program_args, (std::vector<std::string>{"--epochs", "2", "-v"}));
}

TEST(LaunchOptions, Defaults) {
  auto config = parse({"prog"});
  EXPECT_EQ(config.nproc_per_node, 1);
  EXPECT_EQ(config.master_addr, "127.0.0.1");
  EXPECT_EQ(config.master_port, 29500);
  EXPECT_EQ(config.world_size(), 1);
}

TEST(LaunchOptions, RejectsBadValues) {
  EXPECT_THROW(parse({"--nproc_per_node", "0", "prog"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--master_port", "70000", "prog"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--nnodes", "2", "--node_rank", "2", "--master_port", "1234", "prog"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--nnodes", "2", "--master_port", "0", "prog"}), CLI::ValidationError);
  EXPECT_THROW(parse({"--bogus", "prog"}), CLI::ExtrasError);
  EXPECT_THROW(parse({}), CLI::RequiredError);
}

TEST(LaunchOptions, RankEnvironmentFollowsTorchrun) {
  auto config = parse({"--nproc_per_node", "2", "--nnodes", "2", "--node_rank", "1", "--master_addr", "10.1.1.1",
                       "--master_port", "4000", "prog"});
  auto env = accel::cli::rank_environment(config, 1);
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["GROUP_RANK"], "1");
  EXPECT_EQ(env["MASTER_ADDR"], "10.1.1.1");
  EXPECT_EQ(env["MASTER_PORT"], "4000");
}

TEST(LaunchOptions, PicksAFreePort) {
  int port = accel::cli::pick_free_port("127.0.0.1");
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

}  // namespace
