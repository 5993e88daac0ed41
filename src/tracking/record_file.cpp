#include "tracking/record_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "accel/error.hpp"

namespace accel::detail {

void make_dirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  require(!ec, ErrorCode::IO, "cannot create directory '" + dir + "': " + ec.message());
}

void RecordFile::open(const std::string& path, bool truncate) {
  close();
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) make_dirs(parent.string());
  int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0);
  fd_ = ::open(path.c_str(), flags, 0644);
  require(fd_ >= 0, ErrorCode::IO, "cannot open '" + path + "': " + std::strerror(errno));
  path_ = path;
}

void RecordFile::append(const std::string& record) {
  require(fd_ >= 0, ErrorCode::State, "record file is closed");
  const char* data = record.data();
  size_t left = record.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    require(n > 0, ErrorCode::IO, "cannot write to '" + path_ + "': " + std::strerror(errno));
    data += n;
    left -= static_cast<size_t>(n);
  }
}

void RecordFile::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void write_file(const std::string& path, const std::string& content) {
  RecordFile file;
  file.open(path, true);
  file.append(content);
}

}  // namespace accel::detail
