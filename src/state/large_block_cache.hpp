// Reuses host buffers above glibc's mmap threshold (32 MiB) instead of giving
// them back to the kernel when a tensor frees them.
//
// glibc serves every block above 32 MiB with a fresh mmap() (its threshold
// cannot go higher), so a training step that frees and allocates such blocks
// (the weight gradients of 4096 x 4096 layers, FULL_SHARD's gathered units,
// an embedding's gradient) pays a page fault for every 4 KiB of each, every
// step. On the `sync` workload that was 65k faults and ~150 ms of system time
// a step under NO_SHARD, 262k and ~590 ms under FULL_SHARD (docs/benchmarks.md).
//
// The cache never makes the process hold more than it did: the bytes of live
// plus cached blocks stay at or below the most ever live at once (what the
// kernel gave the process at its peak without the cache), so peak RSS does
// not grow; blocks left unused for kDecay go back to the kernel, so a one-off
// large buffer (a checkpoint being written) does not stay.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

namespace accel::detail {

class LargeBlockCache {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kThreshold = size_t{32} << 20;  // glibc's largest mmap threshold
  static constexpr size_t kGranule = size_t{2} << 20;
  static constexpr std::chrono::seconds kDecay{5};

  struct Stats {
    size_t live = 0, cached = 0, peak_live = 0;
    uint64_t hits = 0, misses = 0;
  };

  // `now` is for tests; the allocator passes Clock::now().
  // Returns a 64-byte aligned block of at least n bytes (n >= kThreshold): a
  // cached one of between n and n + n/8 bytes, else a new one. Null when the
  // system has no memory.
  void* allocate(size_t n, Clock::time_point now);
  // Takes back a block allocate returned and caches it; ignores other pointers.
  void release(void* block, Clock::time_point now);
  // Whether `block` is one allocate returned and release has not taken back.
  bool owns(void* block) const;
  Stats stats() const;

 private:
  void evict_to_peak();                      // while live + cached > peak_live
  void evict_older_than(Clock::time_point);  // decay
  void free_cached(std::multimap<size_t, std::pair<void*, Clock::time_point>>::iterator it);

  mutable std::mutex mutex_;
  std::unordered_map<void*, size_t> live_blocks_;
  std::multimap<size_t, std::pair<void*, Clock::time_point>> cached_;  // size -> block, when it was freed
  Stats stats_;
};

// Installs, once per process, a CPU allocator for LibTorch that serves blocks
// of kThreshold bytes and more from a LargeBlockCache and everything smaller
// from LibTorch's own. Not in sanitizer builds (reused blocks would hide
// use-after-free) nor when ACCEL_HOST_BLOCK_CACHE or ACCEL_TUNE_MALLOC is
// false (0, no, off, ...).
// Returns whether it is installed. Throws accel::Error (InvalidArgument) for
// an ACCEL_HOST_BLOCK_CACHE that is not a true/false word.
bool install_large_block_cache();

// The process's cache (null when not installed), for tests and benchmarks.
const LargeBlockCache* large_block_cache();

}  // namespace accel::detail
