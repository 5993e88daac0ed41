// find_executable_batch_size on a GPU: LibTorch's CUDA out-of-memory error is
// caught, the cached memory released, and the function retried with Accelerate
// 1.x's sizes (int(batch_size * 0.9)) until one fits under the memory the
// process may use. Skipped, with the reason printed, where no GPU is present.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "accel/memory.hpp"
#include "support/cuda_memory.hpp"

namespace {

#if defined(ACCEL_WITH_CUDA)
TEST(CudaBatchSize, OutOfGpuMemoryRetriesWithSmallerBatches) {
  if (!torch::cuda::is_available() || std::getenv("ACCELERATE_USE_CPU") != nullptr) {
    GTEST_SKIP() << "no CUDA device (or ACCELERATE_USE_CPU set)";
  }
  // A batch of n takes n MiB of activations on the GPU (and a product over
  // them); the process may hold 62 MiB. Accelerate's sizes from 128: 128, 115,
  // 103, 92, 82, 73, 65 need more, 58 is the first that fits (the sum's small
  // blocks take one 2 MiB segment of the allocator's small pool: 60 MiB).
  constexpr int64_t kMiB = 1 << 20;
  cuda_memory::Cap cap(62 * kMiB);
  std::vector<int64_t> tried;
  const int64_t found = accel::find_executable_batch_size(128, [&](int64_t batch_size) {
    tried.push_back(batch_size);
    at::Tensor activations = at::ones({batch_size, kMiB / 4}, at::TensorOptions().device(at::kCUDA));
    // At most 58 x 2^18 ones: below 2^24, so float32 sums them exactly.
    EXPECT_EQ(activations.sum().item<double>(), static_cast<double>(batch_size * kMiB / 4));
  });
  EXPECT_EQ(found, 58);
  EXPECT_EQ(tried, (std::vector<int64_t>{128, 115, 103, 92, 82, 73, 65, 58}));
}
#else
TEST(CudaBatchSize, OutOfGpuMemoryRetriesWithSmallerBatches) {
  GTEST_SKIP() << "built against a CPU LibTorch: capping GPU memory needs CUDA's allocator";
}
#endif

}  // namespace
