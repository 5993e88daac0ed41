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
    for (const char* name : {"RANK",
                             "WORLD_SIZE",
                             "LOCAL_RANK",
                             "LOCAL_WORLD_SIZE",
                             "MASTER_ADDR",
                             "MASTER_PORT",
                             "OMPI_COMM_WORLD_RANK",
                             "OMPI_COMM_WORLD_SIZE",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "PMI_RANK",
                             "PMI_SIZE",
                             "MPI_LOCALRANKID",
                             "MPI_LOCALNRANKS",
                             "SLURM_PROCID",
                             "SLURM_NTASKS",
                             "SLURM_STEP_NUM_TASKS",
                             "SLURM_LOCALID",
                             "SLURM_NODEID",
                             "SLURM_TASKS_PER_NODE",
                             "SLURM_STEP_TASKS_PER_NODE",
                             "SLURM_STEP_NODELIST",
                             "SLURM_JOB_NODELIST",
                             "SLURM_LAUNCH_NODE_IPADDR",
                             "SLURM_JOB_ID",
                             "ACCEL_TEST_FLAG"}) {
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

TEST_F(EnvironmentTest, ReadsOpenMpiWithoutTheTorchrunContract) {
  setenv("OMPI_COMM_WORLD_RANK", "5", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  EXPECT_THAT(error_of(), HasSubstr("MASTER_ADDR is not set but OMPI_COMM_WORLD_SIZE=8"));
  setenv("MASTER_ADDR", "10.0.0.2", 1);
  setenv("MASTER_PORT", "4242", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "Open MPI");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_world_size, 4);
  EXPECT_EQ(env.master_addr, "10.0.0.2");
  EXPECT_EQ(env.master_port, 4242);
}

TEST_F(EnvironmentTest, TheTorchrunContractWinsOverMpi) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "torchrun");
  EXPECT_EQ(env.world_size, 1);
}

TEST_F(EnvironmentTest, ReadsMpichHydraAndDefaultsToLoopbackOnOneMachine) {
  setenv("PMI_RANK", "2", 1);
  setenv("PMI_SIZE", "3", 1);
  setenv("MPI_LOCALRANKID", "2", 1);
  setenv("MPI_LOCALNRANKS", "3", 1);
  EXPECT_THAT(error_of(), HasSubstr("MASTER_PORT is not set but PMI_SIZE=3"));
  setenv("MASTER_PORT", "4000", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "MPICH (Hydra)");
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.master_addr, "127.0.0.1");  // every process is local
  setenv("MPI_LOCALNRANKS", "2", 1);
  EXPECT_THAT(error_of(), HasSubstr("MPI_LOCALRANKID=2 is not below MPI_LOCALNRANKS=2"));
}

TEST_F(EnvironmentTest, ReadsSlurmAndDerivesTheRendezvous) {
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "5", 1);
  setenv("SLURM_LOCALID", "0", 1);
  setenv("SLURM_NODEID", "1", 1);
  setenv("SLURM_TASKS_PER_NODE", "3,2", 1);
  setenv("SLURM_JOB_NODELIST", "gpu[07-08]", 1);
  setenv("SLURM_JOB_ID", "123456", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "SLURM");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 5);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.master_addr, "gpu07");
  EXPECT_EQ(env.master_port, 23456);

  // The step's own counts and nodes come first; explicit MASTER_* win.
  setenv("SLURM_STEP_NUM_TASKS", "6", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3)", 1);
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_LOCALID", "1", 1);
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "5555", 1);
  env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.world_size, 6);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "10.1.2.3");
  EXPECT_EQ(env.master_port, 5555);

  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)", 1);  // no entry for node 2
  EXPECT_THAT(error_of(), HasSubstr("SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" names no task count for SLURM_NODEID=2"));
}

TEST_F(EnvironmentTest, SlurmWithoutANodeListFallsBackToTheLaunchNode) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "2", 1);
  setenv("SLURM_LAUNCH_NODE_IPADDR", "192.168.1.9", 1);
  setenv("MASTER_PORT", "29500", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.master_addr, "192.168.1.9");
  EXPECT_EQ(env.local_world_size, 2);
}

TEST(SlurmHostList, FirstHost) {
  using accel::detail::slurm_first_host;
  EXPECT_EQ(slurm_first_host("node[03-05,9],gpu1"), "node03");
  EXPECT_EQ(slurm_first_host("node[7]"), "node7");
  EXPECT_EQ(slurm_first_host("alpha,beta[1-2]"), "alpha");
  EXPECT_EQ(slurm_first_host("single"), "single");
}

TEST_F(EnvironmentTest, FlagsReadLikeAccelerate) {
  using accel::detail::get_env_flag;
  EXPECT_TRUE(get_env_flag("ACCEL_TEST_FLAG", true));
  for (const char* yes : {"True", "yes", "1", "ON"}) {
    setenv("ACCEL_TEST_FLAG", yes, 1);
    EXPECT_TRUE(get_env_flag("ACCEL_TEST_FLAG", false)) << yes;
  }
  for (const char* no : {"False", "no", "0", "off"}) {
    setenv("ACCEL_TEST_FLAG", no, 1);
    EXPECT_FALSE(get_env_flag("ACCEL_TEST_FLAG", true)) << no;
  }
  setenv("ACCEL_TEST_FLAG", "maybe", 1);
  try {
    get_env_flag("ACCEL_TEST_FLAG", false);
    ADD_FAILURE() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("ACCEL_TEST_FLAG=\"maybe\" is not true or false"));
  }
}

}  // namespace
