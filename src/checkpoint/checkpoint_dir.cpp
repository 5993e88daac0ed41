#include "checkpoint/checkpoint_dir.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "accel/error.hpp"
#include "checkpoint/safetensors.hpp"
#include "core/remove_tree.hpp"

namespace fs = std::filesystem;

namespace accel::detail {

namespace {

// renameat2 with RENAME_EXCHANGE: glibc 2.36 has a wrapper, older ones do not.
constexpr unsigned kRenameExchange = 2;

bool exchange(const std::string& a, const std::string& b) {
  return ::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), kRenameExchange) == 0;
}

}  // namespace

std::string partial_dir_for(const std::string& dir) {
  fs::path path = fs::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return (path.parent_path() / ("." + path.filename().string() + ".partial")).string();
}

void recreate_directory(const std::string& path) {
  std::error_code error = remove_tree(path);
  require(!error, ErrorCode::IO, "cannot remove " + path + ": " + error.message());
  fs::create_directories(path, error);
  require(!error, ErrorCode::IO, "cannot create directory " + path + ": " + error.message());
}

void sync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  require(fd >= 0, ErrorCode::IO, "cannot open directory " + dir + ": " + std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  require(rc == 0, ErrorCode::IO, "cannot sync directory " + dir + ": " + std::strerror(errno));
}

void write_durable(const std::string& dir, const std::string& name, const std::string& bytes) {
  safetensors::write_file_atomically(dir + "/" + name, bytes);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorCode::IO, "cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void commit_directory(const std::string& partial, const std::string& dir) {
  sync_directory(partial);
  std::error_code error;
  fs::path parent = fs::path(partial).parent_path();
  if (fs::exists(dir, error)) {
    require(exchange(partial, dir), ErrorCode::IO,
            "cannot replace " + dir + " with the new checkpoint: " + std::strerror(errno));
    sync_directory(parent.empty() ? "." : parent.string());
    remove_tree(partial);  // the old checkpoint, now under the partial name
  } else {
    require(::rename(partial.c_str(), dir.c_str()) == 0, ErrorCode::IO,
            "cannot rename " + partial + " to " + dir + ": " + std::strerror(errno));
  }
  sync_directory(parent.empty() ? "." : parent.string());
}

std::vector<std::pair<int64_t, std::string>> numbered_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code error;
  if (!fs::is_directory(dir, error)) return found;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    std::string name = entry.path().filename().string();
    const std::string prefix = "checkpoint_";
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || !entry.is_directory()) continue;
    std::string digits = name.substr(prefix.size());
    if (!std::all_of(digits.begin(), digits.end(), ::isdigit) || digits.size() > 18) continue;
    found.emplace_back(std::stoll(digits), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace accel::detail
