#include "state/host_allocator.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace accel::detail {

namespace {

constexpr int kMmapThreshold = 32 << 20;  // glibc's maximum on 64-bit machines
constexpr int kTrimThreshold = 256 << 20;

bool env_set(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

bool apply() {
#if defined(__GLIBC__)
  if (const char* tune = std::getenv("ACCEL_TUNE_MALLOC"); tune != nullptr && std::strcmp(tune, "0") == 0) {
    return false;
  }
  if (env_set("MALLOC_MMAP_THRESHOLD_") || env_set("MALLOC_TRIM_THRESHOLD_") || env_set("MALLOC_TOP_PAD_")) return false;
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
