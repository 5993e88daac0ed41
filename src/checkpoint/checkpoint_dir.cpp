#include "checkpoint/checkpoint_dir.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/safetensors.hpp"
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

namespace {

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

FileDigest digest_of(const std::string& bytes) {
  return {bytes.size(), hex64(XXH3_64bits(bytes.data(), bytes.size()))};
}

FileDigest digest_file(const std::string& path) {
  int fd = open_regular_file(path);
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<char> buffer(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      fail(ErrorCode::IO, "cannot read " + path + ": " + std::strerror(e));
    }
    if (n == 0) break;
    XXH3_64bits_update(state.get(), buffer.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return {total, hex64(XXH3_64bits_digest(state.get()))};
}

FileDigest write_durable(const std::string& dir, const std::string& name, const std::string& bytes) {
  write_file_atomically(dir + "/" + name, bytes);
  return digest_of(bytes);
}

namespace {

// Checksums what passes on its way to the file.
class DigestingSink final : public ByteSink {
 public:
  explicit DigestingSink(AtomicFileWriter& file) : file_(file), state_(XXH3_createState(), &XXH3_freeState) {
    require(state_ != nullptr, ErrorCode::Internal, "cannot allocate an XXH3 state");
    XXH3_64bits_reset(state_.get());
  }
  void write(const void* data, size_t n) override {
    file_.write(data, n);
    XXH3_64bits_update(state_.get(), data, n);
  }
  FileDigest digest() const { return {file_.bytes_written(), hex64(XXH3_64bits_digest(state_.get()))}; }

 private:
  AtomicFileWriter& file_;
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state_;
};

}  // namespace

FileDigest write_durable(const std::string& dir, const std::string& name,
                         const std::function<void(ByteSink&)>& produce) {
  AtomicFileWriter file(dir + "/" + name);
  DigestingSink sink(file);
  produce(sink);
  file.commit();
  return sink.digest();
}

void retire_directory(const std::string& dir) {
  fs::path path = fs::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  const std::string retired = (path.parent_path() / ("." + path.filename().string() + ".removing")).string();
  remove_tree(retired);  // an earlier interrupted removal
  if (::rename(path.c_str(), retired.c_str()) != 0) return;
  sync_directory(path.parent_path().empty() ? "." : path.parent_path().string());
  remove_tree(retired);
}

void remove_leftovers(const std::string& dir) {
  std::error_code error;
  std::vector<std::string> leftovers;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 1 && name[0] == '.' && (ends_with(name, ".partial") || ends_with(name, ".removing"))) {
      leftovers.push_back(entry.path().string());
    }
  }
  for (const auto& path : leftovers) remove_tree(path);
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
