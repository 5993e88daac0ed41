#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "accel/error.hpp"
#include "state/environment.hpp"
#include "state/slurm_hostlist.hpp"

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
                             "GROUP_RANK",
                             "TORCHELASTIC_RUN_ID",
                             "OMPI_MCA_orte_hnp_uri",
                             "OMPI_MCA_orte_local_daemon_uri",
                             "OMPI_MCA_ess_base_jobid",
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

// mpirun accel launch: the launcher's ranks carry mpirun's variables too.
TEST_F(EnvironmentTest, TheTorchrunContractWinsOverMpi) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("GROUP_RANK", "1", 1);
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
  setenv("SLURM_STEP_NUM_TASKS", "5", 1);
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
  EXPECT_EQ(env.master_port, 18456);  // 15000 + the job id's last four digits (Lightning's)

  // The step's own counts and nodes come first; explicit MASTER_* win.
  setenv("SLURM_STEP_NUM_TASKS", "6", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x3)", 1);
  setenv("SLURM_STEP_NODELIST", "rack1-node[003-005]", 1);
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_LOCALID", "1", 1);
  env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.world_size, 6);
  EXPECT_EQ(env.local_world_size, 2);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "rack1-node003");
  setenv("MASTER_ADDR", "10.1.2.3", 1);
  setenv("MASTER_PORT", "5555", 1);
  env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.master_addr, "10.1.2.3");
  EXPECT_EQ(env.master_port, 5555);

  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)", 1);  // no entry for node 2
  EXPECT_THAT(error_of(), HasSubstr("SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" names no task count for SLURM_NODEID=2"));
}

TEST_F(EnvironmentTest, ShortJobIdsAndBadOnesForThePort) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  setenv("SLURM_STEP_NODELIST", "n1", 1);
  setenv("SLURM_JOB_ID", "42", 1);
  EXPECT_EQ(accel::detail::read_launch_environment().master_port, 15042);
  setenv("SLURM_JOB_ID", "99999999999999", 1);  // past any integer type: only the digits matter
  EXPECT_EQ(accel::detail::read_launch_environment().master_port, 24999);
  setenv("SLURM_JOB_ID", "12_3", 1);
  EXPECT_THAT(error_of(), HasSubstr("SLURM_JOB_ID=\"12_3\" is not a job number; set MASTER_PORT"));
  unsetenv("SLURM_JOB_ID");
  EXPECT_THAT(error_of(), HasSubstr("MASTER_PORT is not set but SLURM_STEP_NUM_TASKS=2"));
}

TEST_F(EnvironmentTest, AnUnparsableNodeListIsNamed) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  setenv("SLURM_JOB_ID", "7", 1);
  setenv("SLURM_JOB_NODELIST", "good[1-2]", 1);
  setenv("SLURM_STEP_NODELIST", "node[04-01]", 1);
  EXPECT_THAT(error_of(), HasSubstr("SLURM_STEP_NODELIST=\"node[04-01]\" is not a Slurm host list"));
  setenv("SLURM_STEP_NODELIST", "node[01-04", 1);
  EXPECT_THAT(error_of(), HasSubstr("SLURM_STEP_NODELIST=\"node[01-04\" is not a Slurm host list"));
  unsetenv("SLURM_STEP_NODELIST");
  setenv("SLURM_JOB_NODELIST", "a,,b", 1);
  EXPECT_THAT(error_of(), HasSubstr("SLURM_JOB_NODELIST=\"a,,b\" is not a Slurm host list"));
  setenv("MASTER_ADDR", "10.0.0.9", 1);  // not needed then
  EXPECT_EQ(accel::detail::read_launch_environment().master_addr, "10.0.0.9");
}

TEST_F(EnvironmentTest, SlurmWithoutANodeListFallsBackToTheLaunchNode) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  setenv("SLURM_LAUNCH_NODE_IPADDR", "192.168.1.9", 1);
  setenv("MASTER_PORT", "29500", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.master_addr, "192.168.1.9");
  EXPECT_EQ(env.local_world_size, 2);
  unsetenv("SLURM_LAUNCH_NODE_IPADDR");
  EXPECT_THAT(error_of(), HasSubstr("neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set"));
}

// What a batch script or an salloc shell has (checked against a real
// slurmd 22.05): SLURM_NTASKS and SLURM_PROCID=0 but no step. One process.
TEST_F(EnvironmentTest, ABatchScriptIsNotATaskOfAStep) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "2", 1);
  setenv("SLURM_TASKS_PER_NODE", "2", 1);
  setenv("SLURM_JOB_NODELIST", "vm", 1);
  setenv("SLURM_JOB_ID", "2", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "torchrun");
  EXPECT_FALSE(env.distributed());
}

// mpirun inside an sbatch allocation: its ranks carry the batch step's
// SLURM_PROCID=0 (seen with Open MPI 4.1 under slurmd 22.05); MPI's win.
TEST_F(EnvironmentTest, MpirunInsideAnAllocationUsesMpisVariables) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "2", 1);
  setenv("SLURM_STEP_NUM_TASKS", "1", 1);  // as under an orted that srun started
  setenv("SLURM_JOB_ID", "2", 1);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  setenv("OMPI_MCA_ess_base_jobid", "1426587649", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "Open MPI");
  EXPECT_EQ(env.rank, 1);
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.master_addr, "127.0.0.1");
  EXPECT_EQ(env.master_port, 22649);  // from Open MPI's job id, the same in every rank
}

TEST_F(EnvironmentTest, TorchrunVariablesThatDisagreeWithSrunsAreRefused) {
  setenv("SLURM_PROCID", "1", 1);
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  setenv("RANK", "0", 1);  // exported once in the batch script: every task would be rank 0
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  EXPECT_THAT(error_of(), HasSubstr("environment variables disagree: RANK=0, WORLD_SIZE=2 (torchrun's, which win) "
                                    "but SLURM_PROCID=1, SLURM_STEP_NUM_TASKS=2 (SLURM's"));
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "4", 1);
  EXPECT_THAT(error_of(), HasSubstr("RANK=1, WORLD_SIZE=4 (torchrun's, which win) but SLURM_PROCID=1, "
                                    "SLURM_STEP_NUM_TASKS=2"));
  unsetenv("RANK");
  EXPECT_THAT(error_of(), HasSubstr("WORLD_SIZE=4 (torchrun's, which win) but SLURM_STEP_NUM_TASKS=2"));
  // Agreeing copies are fine; the torchrun variables are the source.
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  auto env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.source, "torchrun");
  EXPECT_EQ(env.rank, 1);
  // Under accel launch or torchrun (srun accel launch, one agent per node) the
  // Slurm variables describe the agent: no check.
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "4", 1);
  setenv("GROUP_RANK", "1", 1);
  env = accel::detail::read_launch_environment();
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 4);
}

TEST_F(EnvironmentTest, TorchrunVariablesThatDisagreeWithOpenMpisAreRefused) {
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  EXPECT_THAT(error_of(), HasSubstr("RANK=0, WORLD_SIZE=2 (torchrun's, which win) but OMPI_COMM_WORLD_RANK=1, "
                                    "OMPI_COMM_WORLD_SIZE=2 (Open MPI's"));
  setenv("TORCHELASTIC_RUN_ID", "job", 1);  // torchrun started it
  EXPECT_EQ(accel::detail::read_launch_environment().rank, 0);
}

TEST_F(EnvironmentTest, OpenMpiAcrossMachinesUsesMpirunsAddress) {
  const char* hnp = "1426587648.0;tcp://192.0.2.2,10.0.0.2:43365;tcp6://[fd00::2]:47659";
  setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  setenv("OMPI_MCA_ess_base_jobid", "1426587649", 1);
  EXPECT_THAT(error_of(), HasSubstr("MASTER_ADDR is not set but OMPI_COMM_WORLD_SIZE=4 asks for a process group and "
                                    "the processes run on several machines (OMPI_COMM_WORLD_LOCAL_SIZE=2): set "
                                    "MASTER_ADDR"));
  setenv("OMPI_MCA_orte_hnp_uri", hnp, 1);
  setenv("OMPI_MCA_orte_local_daemon_uri", "1426587648.1;tcp://192.0.2.3:40000", 1);
  EXPECT_EQ(accel::detail::read_launch_environment().master_addr, "192.0.2.2");
  // Rank 0 checks that it runs where mpirun does.
  setenv("OMPI_COMM_WORLD_RANK", "0", 1);
  EXPECT_THAT(error_of(), HasSubstr("rank 0 does not run on mpirun's machine"));
  setenv("OMPI_MCA_orte_local_daemon_uri", hnp, 1);
  EXPECT_EQ(accel::detail::read_launch_environment().master_addr, "192.0.2.2");
  setenv("OMPI_MCA_orte_hnp_uri", "1426587648.0;tcp6://[fd00::2]:47659", 1);  // no IPv4 address
  EXPECT_THAT(error_of(), HasSubstr("run on several machines"));
}

TEST(SlurmHostList, FirstHost) {
  using accel::detail::slurm_host_list_first;
  EXPECT_EQ(slurm_host_list_first("node[03-05,9],gpu1"), "node03");
  EXPECT_EQ(slurm_host_list_first("node[01-04,07]"), "node01");
  EXPECT_EQ(slurm_host_list_first("node[7]"), "node7");
  EXPECT_EQ(slurm_host_list_first("alpha,beta[1-2]"), "alpha");
  EXPECT_EQ(slurm_host_list_first("a[1-2],b3"), "a1");
  EXPECT_EQ(slurm_host_list_first("rack1-node[003-005]"), "rack1-node003");
  EXPECT_EQ(slurm_host_list_first("r[1-2]-n[08-09]"), "r1-n08");
  EXPECT_EQ(slurm_host_list_first("n[0009-0011]"), "n0009");
  EXPECT_EQ(slurm_host_list_first("n[9-10]"), "n9");
  EXPECT_EQ(slurm_host_list_first("single"), "single");
  EXPECT_EQ(slurm_host_list_first("host.example.org"), "host.example.org");
}

TEST(SlurmHostList, UnparsableListsAreNone) {
  using accel::detail::slurm_host_list_first;
  for (const char* bad :
       {"", ",", "a,", ",a", "a,,b", "node[01-04", "node01-04]", "node[]", "node[a-b]", "node[04-01]", "node[10-9]",
        "node[1-2,]", "node[,1]", "node[1--2]", "node[[1]]", "node 1", "node[1-2] ,b", "no;de"}) {
    EXPECT_EQ(slurm_host_list_first(bad), std::nullopt) << bad;
  }
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
