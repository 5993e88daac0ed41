#include "state/host_allocator.hpp"

#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "state/environment.hpp"

namespace accel::detail {

namespace {

constexpr int kMmapThreshold = 32 << 20;  // glibc's maximum on 64-bit machines
constexpr int kTrimThreshold = 256 << 20;

bool apply() {
#if defined(__GLIBC__)
  if (!get_env_flag("ACCEL_TUNE_MALLOC", true)) return false;
  if (get_env("MALLOC_MMAP_THRESHOLD_") || get_env("MALLOC_TRIM_THRESHOLD_") || get_env("MALLOC_TOP_PAD_"))
    return false;
  // Setting either threshold also turns glibc's adjustment of both off, so
  // both are set: a fixed trim threshold with the default 128 KiB mmap
  // threshold would send every buffer to mmap(), the opposite of the aim.
  return mallopt(M_MMAP_THRESHOLD, kMmapThreshold) == 1 && mallopt(M_TRIM_THRESHOLD, kTrimThreshold) == 1;
#else
  return false;
#endif
}

}  // namespace

bool tune_host_allocator() {
  static std::once_flag once;
  static bool tuned = false;
  std::call_once(once, [] { tuned = apply(); });
  return tuned;
}

}  // namespace accel::detail
