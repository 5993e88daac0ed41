// The zip side of torch.save's format: writing libaccel's archives (a state
// dict's tensors, a bytes object) streamed, reading one from a file where it
// lies, and checking an archive's records before LibTorch's zip reader
// allocates them. The pickle inside is torch_pickle.cpp's.
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/torch_archive.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

uint64_t le(const std::string& bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return v;
}

// Reads through ArchiveFile::read for LibTorch's zip reader. Never throws:
// miniz, which calls it, is C; a failed read returns 0 bytes, which LibTorch
// reports as its own error (turned into IO naming the file by the caller).
// The bytes inside the skipped ranges (begin -> end) are neither read nor
// written: the caller's buffer keeps what it held there.
class FileAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  FileAdapter(std::shared_ptr<ArchiveFile> file, std::map<uint64_t, uint64_t> skipped)
      : file_(std::move(file)), skipped_(std::move(skipped)) {}
  size_t size() const override { return static_cast<size_t>(file_->size()); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= file_->size()) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, file_->size() - pos));
    const uint64_t end = pos + n;
    // The last skipped range starting at or before pos, then the ones after it.
    auto range = skipped_.upper_bound(pos);
    if (range != skipped_.begin()) --range;
    try {
      for (uint64_t at = pos; at < end;) {
        if (range != skipped_.end() && range->second <= at) {  // behind us
          ++range;
        } else if (range != skipped_.end() && range->first <= at) {  // inside a skipped range
          at = std::min(end, range->second);
        } else {  // up to the next skipped range
          const uint64_t next = range == skipped_.end() ? end : std::min(end, range->first);
          file_->read_into(at, static_cast<char*>(buf) + (at - pos), next - at);
          at = next;
        }
      }
    } catch (...) {
      return 0;
    }
    return n;
  }

 private:
  std::shared_ptr<ArchiveFile> file_;
  std::map<uint64_t, uint64_t> skipped_;
};

void unmap_buffer(void* context) { delete static_cast<std::shared_ptr<ArchiveFile>*>(context); }

}  // namespace

std::shared_ptr<ArchiveFile> ArchiveFile::open(const std::string& path) {
  const int fd = open_regular_file(path);
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int e = errno;
    ::close(fd);
    fail(ErrorCode::IO, "cannot stat " + path + ": " + std::strerror(e));
  }
  return std::shared_ptr<ArchiveFile>(new ArchiveFile(path, fd, static_cast<uint64_t>(info.st_size)));
}

ArchiveFile::~ArchiveFile() {
  if (mapping_ != nullptr) ::munmap(mapping_, static_cast<size_t>(size_));
  ::close(fd_);
}

void ArchiveFile::read_into(uint64_t at, void* out, size_t n) const {
  require(at <= size_ && n <= size_ - at, ErrorCode::IO,
          path_ + ": a read of " + std::to_string(n) + " bytes at " + std::to_string(at) + " passes the end of the " +
              std::to_string(size_) + "-byte file");
  auto* bytes = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, bytes, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    require(got > 0, ErrorCode::IO,
            "cannot read " + path_ + ": " + (got < 0 ? std::strerror(errno) : "it ended early (shortened meanwhile?)"));
    bytes += got;
    at += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

std::string ArchiveFile::read(uint64_t at, size_t n) const {
  std::string out(n, '\0');
  read_into(at, out.data(), n);
  return out;
}

std::shared_ptr<caffe2::serialize::ReadAdapterInterface> ArchiveFile::adapter() {
  return std::make_shared<FileAdapter>(shared_from_this(), std::map<uint64_t, uint64_t>{});
}

std::shared_ptr<caffe2::serialize::ReadAdapterInterface> ArchiveFile::adapter_skipping(
    std::map<uint64_t, uint64_t> skipped) {
  return std::make_shared<FileAdapter>(shared_from_this(), std::move(skipped));
}

at::DataPtr ArchiveFile::map(uint64_t at, size_t n, size_t alignment) {
  require(at <= size_ && n <= size_ - at, ErrorCode::IO,
          path_ + ": " + std::to_string(n) + " bytes at " + std::to_string(at) + " pass the end of the file");
  if (mapping_ == nullptr && size_ > 0) {
    // Private and read-only: the file's pages, read on first touch; a later
    // change to the file is not promised to be seen, and nothing writes here.
    void* mapped = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd_, 0);
    require(mapped != MAP_FAILED, ErrorCode::IO, "cannot map " + path_ + ": " + std::strerror(errno));
    mapping_ = mapped;
  }
  char* data = static_cast<char*>(mapping_) + at;
  if (alignment > 1 && reinterpret_cast<uintptr_t>(data) % alignment != 0) return at::DataPtr();
  return at::DataPtr(data, new std::shared_ptr<ArchiveFile>(shared_from_this()), &unmap_buffer, c10::Device(c10::kCPU));
}

void ArchiveFile::release_pages(const void* data, size_t n) const {
  if (mapping_ == nullptr || n == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<uintptr_t>(mapping_);
  const uintptr_t end_of_mapping = base + ((static_cast<uintptr_t>(size_) + page - 1) / page) * page;
  const uintptr_t from = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t to = std::min(end_of_mapping, (reinterpret_cast<uintptr_t>(data) + n + page - 1) / page * page);
  if (from < base || from >= to) return;
  ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);  // best effort: only residency changes
}

bool is_mapped_tensor(const at::Tensor& tensor) {
  return tensor.defined() && tensor.has_storage() && tensor.storage().data_ptr().get_deleter() == &unmap_buffer;
}

void release_mapped_pages(const at::Tensor& tensor) {
  if (!is_mapped_tensor(tensor)) return;
  const c10::DataPtr& data = tensor.storage().data_ptr();
  const auto* file = static_cast<const std::shared_ptr<ArchiveFile>*>(data.get_context());
  (*file)->release_pages(data.get(), tensor.storage().nbytes());
}

namespace {

// Calls visit(name, method, size) for each record of the central directory
// (zip64 included), reading only it and the end of central directory. Throws
// IO naming label for a damaged directory.
void walk_records(const ArchiveBytes& archive, const std::string& label,
                  const std::function<void(const std::string&, uint64_t, uint64_t)>& visit) {
  auto broken = [&](const std::string& what) {
    fail(ErrorCode::IO, label + ": not a readable torch.save archive (" + what + ")");
  };
  const uint64_t n = archive.size();
  if (n < 22) broken("too short for a zip archive");
  // The end record is in the last 22 + 65535 bytes (its comment is at most 65535).
  const uint64_t tail_start = n > 22 + 65535 ? n - 22 - 65535 : 0;
  const std::string tail = archive.read(tail_start, static_cast<size_t>(n - tail_start));
  size_t end = tail.size() - 22;
  while (le(tail, end, 4) != 0x06054b50) {
    if (end == 0) broken("no end of central directory");
    --end;
  }
  const uint64_t eocd = tail_start + end;
  uint64_t entries = le(tail, end + 10, 2), offset = le(tail, end + 16, 4);
  if (entries == 0xffff || offset == 0xffffffff) {  // zip64: the real values are in the zip64 record
    if (eocd < 20) broken("no zip64 end of central directory locator");
    const std::string locator = archive.read(eocd - 20, 20);
    if (le(locator, 0, 4) != 0x07064b50) broken("no zip64 end of central directory locator");
    const uint64_t record = le(locator, 8, 8);
    if (n < 56 || record > n - 56) broken("no zip64 end of central directory");
    const std::string zip64 = archive.read(record, 56);
    if (le(zip64, 0, 4) != 0x06064b50) broken("no zip64 end of central directory");
    entries = le(zip64, 32, 8);
    offset = le(zip64, 48, 8);
  }
  for (uint64_t i = 0; i < entries; ++i) {
    if (offset > n || n - offset < 46) broken("a damaged central directory");
    const std::string entry = archive.read(offset, 46);
    if (le(entry, 0, 4) != 0x02014b50) broken("a damaged central directory");
    const uint64_t method = le(entry, 10, 2), name_length = le(entry, 28, 2), extra_length = le(entry, 30, 2);
    const uint64_t variable = name_length + extra_length + le(entry, 32, 2);
    if (n - offset - 46 < variable) broken("a damaged central directory");
    const std::string name = archive.read(offset + 46, static_cast<size_t>(name_length));
    // LibTorch allocates the uncompressed size; for a stored record both agree.
    uint64_t stored = le(entry, 24, 4), compressed = le(entry, 20, 4);
    if (stored == 0xffffffff || compressed == 0xffffffff) {  // the sizes are in the zip64 extra field, in that order
      const std::string extra = archive.read(offset + 46 + name_length, static_cast<size_t>(extra_length));
      const size_t wanted = (stored == 0xffffffff ? 8 : 0) + (compressed == 0xffffffff ? 8 : 0);
      bool found = false;
      for (size_t at = 0; at + 4 <= extra.size();) {
        const uint64_t id = le(extra, at, 2), length = le(extra, at + 2, 2);
        if (at + 4 + length > extra.size()) break;
        if (id == 0x0001 && length >= wanted) {
          size_t field = at + 4;
          if (stored == 0xffffffff) {
            stored = le(extra, field, 8);
            field += 8;
          }
          if (compressed == 0xffffffff) compressed = le(extra, field, 8);
          found = true;
          break;
        }
        at += 4 + length;
      }
      if (!found) broken("a zip64 record without its sizes");
    }
    visit(name, method, std::max(stored, compressed));
    offset += 46 + variable;
  }
}

}  // namespace

std::map<std::string, uint64_t> stored_records(const ArchiveBytes& archive, const std::string& label,
                                               CompressedRecords compressed) {
  std::map<std::string, uint64_t> records;
  walk_records(archive, label, [&](const std::string& name, uint64_t method, uint64_t size) {
    if (method != 0) {
      const size_t slash = name.find('/');
      const std::string inner = slash == std::string::npos ? name : name.substr(slash + 1);
      const bool data = inner == "data.pkl" || inner.rfind("data/", 0) == 0;
      if (compressed == CompressedRecords::LeftOutOutsideData && !data) return;
      fail(ErrorCode::IO, label +
                              ": not a readable torch.save archive (a compressed record; torch.save stores "
                              "records uncompressed)");
    }
    if (size > archive.size()) {
      fail(ErrorCode::IO, label + ": not a readable torch.save archive (a record larger than the archive)");
    }
    records[name] = size;
  });
  return records;
}

void require_stored_records(const std::string& bytes, const std::string& label) {
  stored_records(StringArchiveBytes(bytes), label);
}

namespace {

// LibTorch's zip writer over a sink. A failing sink must not throw through
// miniz (nor from the writer's destructor, which finishes the archive): the
// first error is kept, later writes are dropped, and finish() rethrows it.
class ArchiveOverSink {
 public:
  explicit ArchiveOverSink(ByteSink& sink)
      : writer_([this, &sink](const void* data, size_t n) {
          if (error_) return n;
          try {
            sink.write(data, n);
          } catch (...) {
            error_ = std::current_exception();
          }
          return n;
        }) {}
  caffe2::serialize::PyTorchStreamWriter& writer() { return writer_; }
  void finish() {
    writer_.writeEndOfFile();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
  caffe2::serialize::PyTorchStreamWriter writer_;
};

}  // namespace

void write_torch_save(ByteSink& sink, const c10::IValue& value) {
  // What torch::pickle_save writes (data.pkl, then a data/<i> record per
  // storage, 64-byte aligned), with each storage written from its tensor's
  // memory instead of a copy of the whole archive.
  std::string pickle;
  torch::jit::Pickler pickler([&pickle](const char* data, size_t n) { pickle.append(data, n); });
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  ArchiveOverSink archive(sink);
  torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), archive.writer());
  archive.finish();
}

c10::IValue tensor_dict(const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor.detach().cpu());
  return dict;
}

std::string pickle_bytes(const std::string& bytes) {
  std::string pickle("\x80\x03", 2);  // PROTO 3, the first with BINBYTES
  if (bytes.size() <= 0xffffffffu) {
    pickle += 'B';
    for (int i = 0; i < 4; ++i) pickle += static_cast<char>((bytes.size() >> (8 * i)) & 0xff);
  } else {
    pickle = std::string("\x80\x04\x8e", 3);  // BINBYTES8 needs protocol 4
    for (int i = 0; i < 8; ++i) pickle += static_cast<char>((static_cast<uint64_t>(bytes.size()) >> (8 * i)) & 0xff);
  }
  pickle += bytes;
  pickle += '.';
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeRecord("byteorder", "little", 6);
  writer.writeEndOfFile();
  return out;
}

bool is_torchscript_archive_file(const std::string& path) {
  try {
    const std::shared_ptr<ArchiveFile> file = ArchiveFile::open(path);
    if (file->size() < 4 || file->read(0, 4) != "PK\x03\x04") return false;
    bool code = false;
    walk_records(*file, path, [&](const std::string& name, uint64_t, uint64_t) {
      code = code || name.find("/code/__torch__") != std::string::npos;
    });
    return code;
  } catch (const Error&) {
  }
  return false;
}

bool is_zip_archive(const std::string& bytes) { return bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0; }

}  // namespace accel::detail
