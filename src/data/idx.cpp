#include "data/idx.hpp"

#include <ATen/ATen.h>
#include <sys/stat.h>
#include <zlib.h>

#include <array>
#include <memory>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace accel::detail {

namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    require(file_ != nullptr, ErrorCode::IO, "IDX file \"" + path + "\" cannot be opened");
    gzbuffer(file_.get(), 1 << 17);
  }

  // Reads exactly n bytes or fails naming what was being read and where.
  void read_exact(void* out, size_t n, const std::string& what) {
    auto* dest = static_cast<char*>(out);
    size_t done = 0;
    while (done < n) {
      unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
      int got = gzread(file_.get(), dest + done, chunk);
      if (got < 0) {
        int code = 0;
        fail(ErrorCode::IO, "IDX file \"" + path_ + "\": read error at byte " + std::to_string(offset_ + done) + ": " +
                                gzerror(file_.get(), &code));
      }
      if (got == 0) {
        fail(ErrorCode::IO, "IDX file \"" + path_ + "\" is truncated at byte " + std::to_string(offset_ + done) +
                                " while reading " + what + " (" + std::to_string(n) + " bytes expected from byte " +
                                std::to_string(offset_) + ")");
      }
      done += static_cast<size_t>(got);
    }
    offset_ += n;
  }

  // Fails unless the rest of the file can hold nbytes of payload (what names
  // the header fields that claim it). A raw file must have that many bytes
  // left; a gzip one at least nbytes / 1032 compressed bytes, deflate's
  // largest expansion. Either way nothing has been allocated yet.
  void check_payload(int64_t nbytes, const std::string& what) {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return;  // not a regular path: the read itself reports truncation
    const auto file_size = static_cast<int64_t>(st.st_size);
    const int64_t rest = file_size - static_cast<int64_t>(offset_);
    if (gzdirect(file_.get())) {
      require(nbytes <= rest, ErrorCode::IO,
              "IDX file \"" + path_ + "\" is truncated: its " + what + " need " + std::to_string(nbytes) +
                  " bytes of data but only " + std::to_string(rest) + " follow the header at byte " +
                  std::to_string(offset_));
    } else {
      constexpr int64_t kMaxDeflateRatio = 1032;
      require(nbytes / kMaxDeflateRatio <= file_size, ErrorCode::IO,
              "IDX file \"" + path_ + "\" is truncated: its " + what + " need " + std::to_string(nbytes) +
                  " bytes of data, more than a " + std::to_string(file_size) + "-byte gzip file can hold");
    }
  }

  bool at_end() {
    char probe;
    return gzread(file_.get(), &probe, 1) == 0;
  }

  const std::string& path() const { return path_; }
  size_t offset() const { return offset_; }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
  size_t offset_ = 0;
};

at::ScalarType dtype_for_code(uint8_t code, const std::string& path) {
  switch (code) {
    case 0x08: return at::kByte;
    case 0x09: return at::kChar;
    case 0x0B: return at::kShort;
    case 0x0C: return at::kInt;
    case 0x0D: return at::kFloat;
    case 0x0E: return at::kDouble;
  }
  fail(ErrorCode::IO, "IDX file \"" + path + "\": unknown element type code 0x" +
                          c10::str(std::hex, static_cast<int>(code)) + " at byte 2");
}

}  // namespace

at::Tensor read_idx(const std::string& path) {
  IdxFile file(path);
  std::array<uint8_t, 4> magic{};
  file.read_exact(magic.data(), magic.size(), "the magic number");
  require(magic[0] == 0 && magic[1] == 0, ErrorCode::IO,
          "IDX file \"" + path + "\": bad magic number at byte 0 (expected 00 00, got " +
              c10::str(std::hex, static_cast<int>(magic[0]), " ", static_cast<int>(magic[1])) + ")");
  at::ScalarType dtype = dtype_for_code(magic[2], path);
  int ndim = magic[3];
  require(ndim >= 1, ErrorCode::IO, "IDX file \"" + path + "\": zero dimensions at byte 3");

  std::vector<int64_t> shape;
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) {
    std::array<uint8_t, 4> be{};
    file.read_exact(be.data(), be.size(), "dimension " + std::to_string(d));
    int64_t size = (int64_t(be[0]) << 24) | (int64_t(be[1]) << 16) | (int64_t(be[2]) << 8) | int64_t(be[3]);
    shape.push_back(size);
    require(!__builtin_mul_overflow(numel, size, &numel), ErrorCode::IO,
            "IDX file \"" + path + "\": dimension " + std::to_string(d) + " (byte " + std::to_string(4 + 4 * d) +
                ") is " + std::to_string(size) + ", which makes more elements than fit in 64 bits");
  }
  const auto element_size = static_cast<int64_t>(c10::elementSize(dtype));
  int64_t nbytes = 0;
  require(!__builtin_mul_overflow(numel, element_size, &nbytes), ErrorCode::IO,
          "IDX file \"" + path + "\": dimensions " + c10::str(at::IntArrayRef(shape)) + " make " +
              std::to_string(numel) + " elements, more bytes than fit in 64 bits");
  // The header is only a claim: check it against what the file can hold before
  // allocating, so that a 16-byte file claiming 2^31 images is refused rather
  // than allocating terabytes.
  file.check_payload(nbytes, "dimensions " + c10::str(at::IntArrayRef(shape)));
  at::Tensor data = at::empty(shape, at::TensorOptions().dtype(dtype));
  file.read_exact(data.data_ptr(), static_cast<size_t>(nbytes), "the data");
  require(file.at_end(), ErrorCode::IO,
          "IDX file \"" + path + "\" has extra bytes after the data, at byte " + std::to_string(file.offset()));
  // IDX stores multi-byte values big-endian.
  if (data.element_size() > 1) {
    auto* bytes = static_cast<uint8_t*>(data.data_ptr());
    size_t width = data.element_size();
    for (int64_t i = 0; i < numel; ++i) std::reverse(bytes + i * width, bytes + (i + 1) * width);
  }
  return data;
}

}  // namespace accel::detail

namespace accel {

std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                                                double mean, double std) {
  require_arg(std > 0, "load_idx_dataset: std must be positive, got " + std::to_string(std));
  at::Tensor images = detail::read_idx(images_path);
  at::Tensor labels = detail::read_idx(labels_path);
  require(images.dim() == 3, ErrorCode::IO,
          "IDX image file \"" + images_path + "\" has shape " + c10::str(images.sizes()) +
              "; expected [count, rows, cols]");
  require(labels.dim() == 1, ErrorCode::IO,
          "IDX label file \"" + labels_path + "\" has shape " + c10::str(labels.sizes()) + "; expected [count]");
  require(images.size(0) == labels.size(0), ErrorCode::IO,
          "IDX files disagree: \"" + images_path + "\" holds " + std::to_string(images.size(0)) + " images but \"" +
              labels_path + "\" holds " + std::to_string(labels.size(0)) + " labels");
  at::Tensor inputs = images.unsqueeze(1).to(at::kFloat).div_(255.0).sub_(mean).div_(std);
  return std::make_shared<TensorDataset>(std::vector<at::Tensor>{inputs, labels.to(at::kLong)});
}

}  // namespace accel
