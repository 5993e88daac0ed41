#include <gtest/gtest.h>

#include "cli/suggest.hpp"

namespace {

using accel::cli::closest_name;

TEST(Suggest, TyposFindTheirFlag) {
  const std::vector<std::string> flags = {"--nproc_per_node", "--nnodes",      "--node_rank",
                                          "--num_processes",  "--master_port", "--mixed_precision"};
  EXPECT_EQ(closest_name("--nproc_per_nod", flags), "--nproc_per_node");
  EXPECT_EQ(closest_name("--nprocs_per_node", flags), "--nproc_per_node");
  EXPECT_EQ(closest_name("--master_prot", flags), "--master_port");  // swapped neighbours count once
  EXPECT_EQ(closest_name("--nnode", flags), "--nnodes");
  EXPECT_EQ(closest_name("--mixed-precision", flags), "--mixed_precision");
}

TEST(Suggest, NothingForAFarOrExactName) {
  const std::vector<std::string> commands = {"launch", "config", "env", "test"};
  EXPECT_EQ(closest_name("lanch", commands), "launch");
  EXPECT_EQ(closest_name("tset", commands), "test");
  EXPECT_EQ(closest_name("train", commands), std::nullopt);
  EXPECT_EQ(closest_name("launch", commands), std::nullopt) << "an exact name is not a typo";
  EXPECT_EQ(closest_name("--zzz", {}), std::nullopt);
}

TEST(Suggest, LooksAtTheCommandsFlagsAndSubcommands) {
  CLI::App app;
  int n = 0;
  app.add_option("--nproc_per_node", n);
  app.add_subcommand("config");
  EXPECT_EQ(accel::cli::suggest_for(app, "--nproc_per_nod=2"), "--nproc_per_node");
  EXPECT_EQ(accel::cli::suggest_for(app, "confg"), "config");
}

}  // namespace
