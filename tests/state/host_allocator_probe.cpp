// Shows in a fresh process whether creating an Accelerator tuned glibc's
// malloc: with the tuning, 100 MiB freed in 25 MiB blocks stays in the heap
// for the next step to reuse; without it, glibc hands it back to the kernel
// (its dynamic trim threshold is at most 64 MiB).
// It also shows whether LibTorch's large blocks go through the block cache
// (src/state/large_block_cache.hpp): installed with the tuning, not with
// ACCEL_HOST_BLOCK_CACHE=0 (mode block_cache_off, malloc still tuned).
//   host_allocator_probe tuned|untuned|block_cache_off|rejected
// rejected: creating the Accelerator fails, naming the bad ACCEL_TUNE_MALLOC
// or ACCEL_HOST_BLOCK_CACHE.
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "state/large_block_cache.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "tuned" && mode != "untuned" && mode != "block_cache_off" && mode != "rejected") {
    std::fprintf(stderr, "usage: host_allocator_probe tuned|untuned|block_cache_off|rejected\n");
    return 2;
  }
  const bool expect_tuned = mode == "tuned" || mode == "block_cache_off";
  accel::AcceleratorOptions options;
  options.cpu = true;
  try {
    accel::Accelerator accelerator(options);
  } catch (const accel::Error& error) {
    std::printf("creating the Accelerator failed: %s\n", error.what());
    const char* value = std::getenv("ACCEL_TUNE_MALLOC");
    if (value == nullptr) value = std::getenv("ACCEL_HOST_BLOCK_CACHE");
    return mode == "rejected" && value != nullptr && std::strstr(error.what(), value) != nullptr ? 0 : 1;
  }
  if (mode == "rejected") {
    std::printf("creating the Accelerator succeeded; expected it to fail\n");
    return 1;
  }

  const bool cached = accel::detail::large_block_cache() != nullptr;
  // ACCEL_TUNE_MALLOC=0 turns both off; the user's own glibc settings leave the cache on.
  const bool expect_cached = mode == "tuned" || (mode == "untuned" && std::getenv("ACCEL_TUNE_MALLOC") == nullptr);
  std::printf("large-block cache %s; expected %s\n", cached ? "installed" : "not installed",
              expect_cached ? "installed" : "not installed");
  if (cached != expect_cached) return 1;

  constexpr size_t kBlock = 25u << 20;
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(std::malloc(kBlock));
    std::memset(blocks.back(), 1, kBlock);
  }
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) std::free(*it);
  const size_t kept = mallinfo2().fordblks;  // free bytes the heap still holds
  const bool kept_for_reuse = kept >= 4 * kBlock;
  std::printf("after freeing 100 MiB the heap holds %zu free bytes: %s; expected %s\n", kept,
              kept_for_reuse ? "kept for reuse" : "given back to the kernel",
              expect_tuned ? "kept for reuse" : "given back to the kernel");
  return kept_for_reuse == expect_tuned ? 0 : 1;
}
