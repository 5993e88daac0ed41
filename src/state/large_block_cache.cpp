#include "state/large_block_cache.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "state/environment.hpp"

namespace accel::detail {

void* LargeBlockCache::allocate(size_t n, Clock::time_point now) {
  const size_t size = (n + kGranule - 1) / kGranule * kGranule;
  std::unique_lock<std::mutex> lock(mutex_);
  evict_older_than(now - kDecay);
  // The smallest cached block that fits without wasting more than an eighth.
  auto fit = cached_.lower_bound(size);
  if (fit != cached_.end() && fit->first <= size + size / 8) {
    void* block = fit->second.first;
    const size_t got = fit->first;
    cached_.erase(fit);
    stats_.cached -= got;
    stats_.live += got;
    live_blocks_.emplace(block, got);
    ++stats_.hits;
    return block;
  }
  lock.unlock();
  void* block = nullptr;
  if (posix_memalign(&block, 64, size) != 0) return nullptr;  // 64: LibTorch's CPU alignment
  lock.lock();
  live_blocks_.emplace(block, size);
  stats_.live += size;
  stats_.peak_live = std::max(stats_.peak_live, stats_.live);
  ++stats_.misses;
  evict_to_peak();
  return block;
}

void LargeBlockCache::release(void* block, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_blocks_.find(block);
  if (it == live_blocks_.end()) return;
  const size_t size = it->second;
  live_blocks_.erase(it);
  stats_.live -= size;
  // live + cached is unchanged by this, so it stays within the peak.
  cached_.emplace(size, std::make_pair(block, now));
  stats_.cached += size;
  evict_older_than(now - kDecay);
}

bool LargeBlockCache::owns(void* block) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_blocks_.count(block) > 0;
}

LargeBlockCache::Stats LargeBlockCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void LargeBlockCache::free_cached(std::multimap<size_t, std::pair<void*, Clock::time_point>>::iterator it) {
  stats_.cached -= it->first;
  std::free(it->second.first);
  cached_.erase(it);
}

void LargeBlockCache::evict_to_peak() {
  // The largest first: the fewest blocks leave.
  while (!cached_.empty() && stats_.live + stats_.cached > stats_.peak_live) free_cached(std::prev(cached_.end()));
}

void LargeBlockCache::evict_older_than(Clock::time_point limit) {
  for (auto it = cached_.begin(); it != cached_.end();) {
    auto next = std::next(it);
    if (it->second.second < limit) free_cached(it);
    it = next;
  }
}

namespace {

LargeBlockCache* g_cache = nullptr;
c10::DeleterFnPtr g_fallback_deleter = nullptr;

void release_large(void* block) { g_cache->release(block, LargeBlockCache::Clock::now()); }

// raw_deallocate's deleter, for blocks of either kind: the large ones go back
// to the cache, the rest to LibTorch's allocator. (Tensors' small blocks keep
// LibTorch's own deleter, so their frees take no lock here.)
void free_block(void* block) {
  if (g_cache->owns(block)) {
    g_cache->release(block, LargeBlockCache::Clock::now());
  } else {
    g_fallback_deleter(block);
  }
}

class CachingCpuAllocator final : public c10::Allocator {
 public:
  explicit CachingCpuAllocator(c10::Allocator* fallback) : fallback_(fallback) {}

  // LibTorch 1.13 declares allocate const and 2.x not; each version's is
  // overridden by one of these, and 2.x's copy_data by the last.
  c10::DataPtr allocate(size_t n) const { return allocate_block(n); }
  c10::DataPtr allocate(size_t n) { return allocate_block(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

 private:
  c10::DataPtr allocate_block(size_t n) const {
    if (n >= LargeBlockCache::kThreshold) {
      if (void* block = g_cache->allocate(n, LargeBlockCache::Clock::now())) {
        return {block, block, &release_large, c10::Device(c10::DeviceType::CPU)};
      }
    }
    // Small blocks, and large ones the system refused (LibTorch's allocator
    // then raises its own out-of-memory error).
    return fallback_->allocate(n);
  }

  c10::Allocator* fallback_;
};

bool sanitized_build() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

}  // namespace

bool install_large_block_cache() {
  const bool wanted = get_env_flag("ACCEL_HOST_BLOCK_CACHE", true) && get_env_flag("ACCEL_TUNE_MALLOC", true);
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [&] {
    if (!wanted || sanitized_build()) return;
    c10::Allocator* fallback = c10::GetCPUAllocator();
    g_fallback_deleter = fallback->raw_deleter();
    if (g_fallback_deleter == nullptr) return;  // an allocator whose blocks cannot be told apart
    g_cache = new LargeBlockCache();            // lives as long as the process: tensors may outlive everything
    static CachingCpuAllocator allocator(fallback);
    c10::SetCPUAllocator(&allocator, /*priority=*/1);
    installed = true;
  });
  return installed;
}

const LargeBlockCache* large_block_cache() { return g_cache; }

}  // namespace accel::detail
