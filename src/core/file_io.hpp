// Reading and writing whole files safely: inputs must be regular files (a FIFO
// or a device would block or never end), and outputs appear atomically under a
// temporary name no one else can have planted. Plain C++ (no LibTorch), so the
// fuzz targets can link it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace accel::detail {

// Where a writer streams bytes: a file being written, a checksum, a string.
// write throws accel::Error (IO) when the bytes cannot be taken.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(const void* data, size_t n) = 0;
};

// Collects what is written, for callers that want the bytes in memory.
class StringSink final : public ByteSink {
 public:
  void write(const void* data, size_t n) override { bytes.append(static_cast<const char*>(data), n); }
  std::string bytes;
};

// Opens path for reading and checks that it is a regular file, without
// blocking on a FIFO (O_NONBLOCK until the check). Returns the descriptor (the
// caller closes it). Throws accel::Error (IO) naming the path: missing,
// unreadable, or not a regular file (saying what it is).
int open_regular_file(const std::string& path);

// The whole content of a regular file (open_regular_file's checks).
std::string read_regular_file(const std::string& path);

// Writes bytes to path durably and atomically: into a fresh temporary in the
// same directory created with O_EXCL (a planted file or symlink there is never
// followed or overwritten), fsync, rename over path. The temporary is removed
// if anything fails. Mode 0666 less the umask, like a plain open. Throws IO
// naming the path.
void write_file_atomically(const std::string& path, const std::string& bytes);

// The same, streamed: write() appends to the temporary, commit() makes it
// durable and renames it over path. A writer destroyed without commit()
// removes its temporary, so a failed save leaves nothing at path. Throws IO
// naming the path.
class AtomicFileWriter final : public ByteSink {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter() override;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t n) override;
  void commit();
  uint64_t bytes_written() const { return written_; }

 private:
  [[noreturn]] void give_up(const std::string& what, int error);

  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

}  // namespace accel::detail
