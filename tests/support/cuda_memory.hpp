// The CUDA caching allocator's limits and counters, for the Cuda* tests that
// prove memory behaviour on a GPU. Only for a CUDA LibTorch (ACCEL_WITH_CUDA,
// tests/CMakeLists.txt).
#pragma once

#if defined(ACCEL_WITH_CUDA)
#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace cuda_memory {

// Bytes the caching allocator holds allocated on GPU 0: now, and at most since
// the last reset_peak().
inline c10::CachingAllocator::Stat allocated() {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0)
      .allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
}
inline int64_t current() { return allocated().current; }
inline int64_t peak() { return allocated().peak; }
inline void reset_peak() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }

// torch.cuda.set_per_process_memory_fraction for a scope: the caching
// allocator refuses to hold more than `bytes` of GPU 0.
struct Cap {
  explicit Cap(int64_t bytes) {
    // The caching allocator exists once CUDA is initialised (lazily, by the first CUDA tensor).
    (void)at::empty({1}, at::TensorOptions().device(at::kCUDA));
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    fraction = static_cast<double>(bytes) / static_cast<double>(total);
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, 0);
    reset_peak();
  }
  ~Cap() {
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, 0);
  }
  Cap(const Cap&) = delete;
  Cap& operator=(const Cap&) = delete;
  double fraction = 1.0;
};

}  // namespace cuda_memory
#endif
