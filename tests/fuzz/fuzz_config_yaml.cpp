// libFuzzer target for the launcher's YAML configuration file reader: any
// bytes either load or are refused with a ConfigFileError naming the file;
// never a crash (yaml-cpp recurses once per nesting level), a hang or another
// exception escaping to `accel launch`.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/config_file.hpp"

namespace {

const std::string& scratch_path() {
  static const std::string path = [] {
    char pattern[] = "/tmp/accel-fuzz-config-XXXXXX";
    int fd = ::mkstemp(pattern);
    if (fd < 0) std::abort();
    ::close(fd);
    return std::string(pattern);
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_path();
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) std::abort();
  try {
    accel::cli::load_config_file(path);
  } catch (const accel::cli::ConfigFileError& error) {
    if (std::string(error.what()).find(path) == std::string::npos) __builtin_trap();  // names the file
  }
  return 0;
}
