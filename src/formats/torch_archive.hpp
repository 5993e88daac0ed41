// The zip side of reading torch.save's format from a file without holding the
// file in memory: the archive's bytes are read where they lie (pread), each
// storage record either straight into its tensor or, for callers that use a
// part of each tensor, as a view of a private read-only mapping of the file.
// torch_pickle.cpp's reader takes its storages from here.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>
#include <caffe2/serialize/read_adapter_interface.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace accel::detail {

// Bytes an archive is read from: a string in memory or a regular file.
class ArchiveBytes {
 public:
  virtual ~ArchiveBytes() = default;
  virtual uint64_t size() const = 0;
  // n bytes from offset `at`, which lie inside; throws IO naming the file.
  virtual std::string read(uint64_t at, size_t n) const = 0;
};

class StringArchiveBytes final : public ArchiveBytes {
 public:
  explicit StringArchiveBytes(const std::string& bytes) : bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  std::string read(uint64_t at, size_t n) const override { return bytes_.substr(at, n); }

 private:
  const std::string& bytes_;
};

// A regular file (open_regular_file's checks), read with pread. Shared by the
// adapter LibTorch's zip reader reads through and the mapped storages.
class ArchiveFile final : public ArchiveBytes, public std::enable_shared_from_this<ArchiveFile> {
 public:
  static std::shared_ptr<ArchiveFile> open(const std::string& path);
  ~ArchiveFile() override;
  uint64_t size() const override { return size_; }
  std::string read(uint64_t at, size_t n) const override;
  void read_into(uint64_t at, void* out, size_t n) const;
  const std::string& path() const { return path_; }
  // For caffe2::serialize::PyTorchStreamReader.
  std::shared_ptr<caffe2::serialize::ReadAdapterInterface> adapter();
  // The same, but the byte ranges [begin, end) of `skipped` are not read: a
  // read leaves the caller's buffer as it was there. For loading a TorchScript
  // module without its storages' bytes (model/script_archive.cpp).
  std::shared_ptr<caffe2::serialize::ReadAdapterInterface> adapter_skipping(std::map<uint64_t, uint64_t> skipped);
  // A read-only CPU buffer over bytes [at, at + n) of a private mapping of the
  // file (mapped once, on first use): pages are read when touched, and only
  // those count as resident. Keeps the mapping alive. Null when at is not
  // aligned to `alignment` in memory.
  at::DataPtr map(uint64_t at, size_t n, size_t alignment);
  // Gives back the resident pages of mapped bytes [data, data + n) (whole
  // pages, widened to page boundaries inside the mapping); a later read maps
  // them in again from the file.
  void release_pages(const void* data, size_t n) const;

 private:
  ArchiveFile(std::string path, int fd, uint64_t size) : path_(std::move(path)), fd_(fd), size_(size) {}

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  void* mapping_ = nullptr;
};

// The records of a zip archive by name, each with its stored size. Refuses (IO,
// naming label) a compressed record or one larger than the archive, before
// LibTorch's reader allocates what a record declares: its reader allocates the
// size the archive declares, and only a stored record's size is checked (by
// miniz) against the archive's own; a deflated one could declare, and inflate
// to, a thousand times the file. Reads only the end of central directory and
// the central directory (zip64 included).
// TorchScript archives deflate their code records (code/*.py, *.debug_pkl),
// which LibTorch's own loader inflates; LeftOutOutsideData leaves those out of
// the result and still refuses a compressed data.pkl or data/ record.
enum class CompressedRecords { Refused, LeftOutOutsideData };
std::map<std::string, uint64_t> stored_records(const ArchiveBytes& bytes, const std::string& label,
                                               CompressedRecords compressed = CompressedRecords::Refused);

}  // namespace accel::detail
