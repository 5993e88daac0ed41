// The CUDA side of the process group: a real ProcessGroupNCCL (one rank, since
// NCCL refuses two ranks on one GPU) carries every collective libaccel issues,
// and an accelerator refuses more local processes than GPUs with a clear error.
// Skipped, with the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "state/c10d_adapter.hpp"
#include "state/process_group.hpp"

namespace {

using ::testing::HasSubstr;

TEST(CudaProcessGroup, NcclCarriesEveryCollective) {
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU"))
    GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): NCCL tests need a GPU";
  ASSERT_TRUE(accel::detail::c10d_adapter::nccl_available()) << "a CUDA LibTorch should bring NCCL";
  accel::detail::LaunchEnvironment env;
  env.master_port = 0;  // the store picks a free port
  accel::detail::ProcessGroup group(env, c10::Device(c10::kCUDA, 0), std::chrono::seconds(60));
  EXPECT_EQ(group.backend_name(), "nccl");

  auto on_gpu = at::TensorOptions().device(c10::kCUDA, 0);
  at::Tensor sum = at::arange(6, on_gpu.dtype(at::kFloat));
  group.allreduce(sum, "allreduce");
  EXPECT_TRUE(at::equal(sum.cpu(), at::arange(6, at::kFloat)));

  std::vector<at::Tensor> tensors{at::full({3}, 7.0, on_gpu)};
  group.broadcast(tensors, 0, "broadcast");
  EXPECT_TRUE(at::equal(tensors[0].cpu(), at::full({3}, 7.0)));

  std::vector<at::Tensor> gathered = group.allgather(at::ones({2, 2}, on_gpu), "allgather");
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_TRUE(at::equal(gathered[0].cpu(), at::ones({2, 2})));

  // Sharded data parallel's two: NCCL's own one-tensor collectives.
  ASSERT_TRUE(group.native_tensor_collectives());
  at::Tensor grads = at::arange(4, on_gpu.dtype(at::kFloat));
  at::Tensor mine = group.reduce_scatter(grads, "reduce_scatter");
  EXPECT_TRUE(at::equal(mine.cpu(), at::arange(4, at::kFloat)));
  at::Tensor full = at::zeros({4}, on_gpu);
  group.all_gather_into(full, full.narrow(0, 0, 4).fill_(3.0), "all_gather_into (in place)");
  EXPECT_TRUE(at::equal(full.cpu(), at::full({4}, 3.0)));
  group.all_gather_into(full, at::full({2, 2}, 5.0, on_gpu), "all_gather_into");
  EXPECT_TRUE(at::equal(full.cpu(), at::full({4}, 5.0)));

  group.barrier("barrier");
  EXPECT_EQ(group.collectives_issued(), 7u);
}

TEST(CudaProcessGroup, MoreLocalProcessesThanGpusIsAClearError) {
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU"))
    GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set): NCCL tests need a GPU";
  std::string too_many = std::to_string(torch::cuda::device_count() + 1);
  setenv("WORLD_SIZE", too_many.c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", too_many.c_str(), 1);
  setenv("RANK", "0", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  try {
    accel::Accelerator accelerator;
    ADD_FAILURE() << "expected an error for " << too_many << " processes";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("LOCAL_WORLD_SIZE " + too_many));
    EXPECT_THAT(e.what(), HasSubstr("one GPU per process"));
  }
  for (const char* name : {"WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(name);
}

}  // namespace
