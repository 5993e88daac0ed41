#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string error_text(int error) { return std::strerror(error); }

// Writes all of bytes to fd, retrying short writes and EINTR; false with errno set.
bool write_all(int fd, const char* bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

mode_t creation_mode() {
  // umask can only be read by setting it; the process's value is restored at once.
  static const mode_t mode = [] {
    mode_t mask = ::umask(0);
    ::umask(mask);
    return static_cast<mode_t>(0666 & ~mask);
  }();
  return mode;
}

}  // namespace

int open_regular_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::IO, "cannot open " + path + ": " + error_text(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorCode::IO, "cannot stat " + path + ": " + error_text(e));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    fail(ErrorCode::IO, path + " is " + kind_of(info.st_mode) + ", not a regular file");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string read_regular_file(const std::string& path) {
  int fd = open_regular_file(path);
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      fail(ErrorCode::IO, "cannot read " + path + ": " + error_text(e));
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes.data(), bytes.size());
  writer.commit();
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp.XXXXXX") {
  // mkostemp creates with O_CREAT|O_EXCL: never opens what is already there.
  fd_ = ::mkostemp(tmp_.data(), O_CLOEXEC);
  if (fd_ < 0) fail(ErrorCode::IO, "cannot create a temporary file for " + path_ + ": " + error_text(errno));
  if (::fchmod(fd_, creation_mode()) != 0) give_up("set the mode of", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFileWriter::give_up(const std::string& what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  fail(ErrorCode::IO, "cannot " + what + " " + path_ + " (via " + tmp_ + "): " + error_text(error));
}

void AtomicFileWriter::write(const void* data, size_t n) {
  require(fd_ >= 0, ErrorCode::State, "write to " + path_ + " after it was committed or failed");
  if (!write_all(fd_, static_cast<const char*>(data), n)) give_up("write", errno);
  written_ += n;
}

void AtomicFileWriter::commit() {
  require(fd_ >= 0, ErrorCode::State, "commit of " + path_ + " after it was committed or failed");
  if (::fsync(fd_) != 0) give_up("flush", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    fail(ErrorCode::IO, "cannot flush " + path_ + " (via " + tmp_ + "): " + error_text(e));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_.c_str());
    fail(ErrorCode::IO, "cannot rename " + tmp_ + " to " + path_ + ": " + error_text(e));
  }
}

}  // namespace accel::detail
