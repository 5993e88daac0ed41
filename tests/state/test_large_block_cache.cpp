// The large-block cache: blocks come back, the process never holds more than
// its live peak, unused blocks decay, and LibTorch's tensors go through it.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <chrono>

#include "accel/accelerator.hpp"
#include "state/large_block_cache.hpp"

namespace {

using accel::detail::LargeBlockCache;
constexpr size_t kMiB = size_t{1} << 20;

TEST(LargeBlockCache, AFreedBlockIsReusedForTheSameSizeOrSlightlySmaller) {
  LargeBlockCache cache;
  const auto t0 = LargeBlockCache::Clock::now();
  void* a = cache.allocate(40 * kMiB, t0);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(cache.owns(a));
  cache.release(a, t0);
  EXPECT_FALSE(cache.owns(a));
  EXPECT_EQ(cache.allocate(40 * kMiB - 1000, t0), a);  // within the same 2 MiB granule
  cache.release(a, t0);
  EXPECT_EQ(cache.allocate(36 * kMiB, t0), a);  // 40 MiB is within an eighth of 36
  cache.release(a, t0);
  void* b = cache.allocate(34 * kMiB, t0);  // 40 would waste more than an eighth
  EXPECT_NE(b, a);
  cache.release(b, t0);
  const auto stats = cache.stats();
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.live, 0u);
  int other = 0;
  cache.release(&other, t0);  // not its block: ignored
  EXPECT_EQ(cache.stats().cached, stats.cached);
}

TEST(LargeBlockCache, NeverHoldsMoreThanTheLivePeak) {
  LargeBlockCache cache;
  const auto t0 = LargeBlockCache::Clock::now();
  void* a = cache.allocate(40 * kMiB, t0);
  void* b = cache.allocate(40 * kMiB, t0);
  cache.release(a, t0);
  cache.release(b, t0);
  EXPECT_EQ(cache.stats().cached, 80 * kMiB);
  EXPECT_EQ(cache.stats().peak_live, 80 * kMiB);
  // 64 MiB fits neither cached block: new, and cached ones leave until live +
  // cached is back within the peak (80 MiB), so both 40s go.
  void* c = cache.allocate(64 * kMiB, t0);
  auto stats = cache.stats();
  EXPECT_EQ(stats.live, 64 * kMiB);
  EXPECT_EQ(stats.peak_live, 80 * kMiB);
  EXPECT_LE(stats.live + stats.cached, stats.peak_live);
  EXPECT_EQ(stats.cached, 0u);
  cache.release(c, t0);
}

TEST(LargeBlockCache, UnusedBlocksDecay) {
  LargeBlockCache cache;
  const auto t0 = LargeBlockCache::Clock::now();
  void* a = cache.allocate(40 * kMiB, t0);
  void* b = cache.allocate(50 * kMiB, t0);
  cache.release(a, t0);
  EXPECT_EQ(cache.stats().cached, 40 * kMiB);
  cache.release(b, t0 + LargeBlockCache::kDecay + std::chrono::seconds(1));  // a is older than the decay: freed
  EXPECT_EQ(cache.stats().cached, 50 * kMiB);
}

TEST(LargeBlockCache, AnAcceleratorRoutesLibTorchsLargeTensorsThroughIt) {
  accel::AcceleratorOptions options;
  options.cpu = true;
  accel::Accelerator accelerator(options);
  const LargeBlockCache* cache = accel::detail::large_block_cache();
  if (cache == nullptr) GTEST_SKIP() << "not installed (a sanitizer build, or ACCEL_HOST_BLOCK_CACHE=0)";
  const void* first = nullptr;
  const auto before = cache->stats();
  {
    at::Tensor big = at::ones({int64_t{10} << 20});  // 40 MiB
    first = big.data_ptr();
    EXPECT_EQ(big.sum().item<float>(), static_cast<float>(int64_t{10} << 20));
  }
  at::Tensor again = at::zeros({int64_t{10} << 20});
  EXPECT_EQ(again.data_ptr(), first);                // the same block, no page faults
  EXPECT_EQ(again.abs().max().item<float>(), 0.0f);  // and zeros are zeros
  EXPECT_GE(cache->stats().hits, before.hits + 1);
  // Small tensors and raw allocations still work through the replaced allocator.
  at::Tensor small = at::arange(10);
  EXPECT_EQ(small.sum().item<int64_t>(), 45);
  c10::Allocator* allocator = c10::GetCPUAllocator();
  for (size_t n : {size_t{100}, 48 * kMiB}) {
    void* raw = allocator->raw_allocate(n);
    ASSERT_NE(raw, nullptr);
    static_cast<char*>(raw)[n - 1] = 1;
    allocator->raw_deallocate(raw);
  }
}

}  // namespace
