// Removing a directory tree without std::filesystem::remove_all: pip's LibTorch
// 2.x exports its own old copy of that function from libtorch.so, which the
// dynamic linker may pick over libstdc++'s and which then jumps to address 0
// (seen with torch 2.11 on Ubuntu 24.04). POSIX nftw has no such double.
#pragma once

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

namespace accel::detail {

// Removes path and everything under it (a file, a symlink itself, or a tree).
// A missing path is not an error, and neither are entries that vanish meanwhile
// (another process removing the same tree). Returns the first failure, if any.
inline std::error_code remove_tree(const std::string& path) {
  struct stat info;
  if (::lstat(path.c_str(), &info) != 0) {
    return errno == ENOENT ? std::error_code() : std::error_code(errno, std::generic_category());
  }
  auto remove_entry = [](const char* entry, const struct stat*, int, struct FTW*) -> int {
    return std::remove(entry) == 0 || errno == ENOENT ? 0 : -1;
  };
  // FTW_DEPTH: children before their directory; FTW_PHYS: never follow links.
  if (::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    int error = errno;
    if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT) return {};
    return std::error_code(error, std::generic_category());
  }
  return {};
}

}  // namespace accel::detail
