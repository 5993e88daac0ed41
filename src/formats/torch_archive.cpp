// The zip side of torch.save's format: writing libaccel's archives (a state
// dict's tensors, a bytes object) and checking an archive's records before
// LibTorch's zip reader allocates them. The pickle inside is torch_pickle.cpp's.
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include "accel/error.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

uint64_t le(const std::string& bytes, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(bytes[at + i])} << (8 * i);
  return v;
}

}  // namespace

// torch.save stores its records uncompressed. A compressed record is refused
// before LibTorch reads it: its reader allocates the size the archive declares
// for a record, and only a stored record's size is checked (by miniz) against
// the archive's own size; a deflated one could declare, and inflate to, a
// thousand times the file. Walks the central directory (zip64 included).
void require_stored_records(const std::string& bytes, const std::string& label) {
  auto broken = [&](const std::string& what) {
    fail(ErrorCode::IO, label + ": not a readable torch.save archive (" + what + ")");
  };
  const size_t n = bytes.size();
  if (n < 22) broken("too short for a zip archive");
  size_t eocd = n - 22;
  const size_t lowest = n > 22 + 65535 ? n - 22 - 65535 : 0;  // the comment is at most 65535 bytes
  while (le(bytes, eocd, 4) != 0x06054b50) {
    if (eocd == lowest) broken("no end of central directory");
    --eocd;
  }
  uint64_t entries = le(bytes, eocd + 10, 2), offset = le(bytes, eocd + 16, 4);
  if (entries == 0xffff || offset == 0xffffffff) {  // zip64: the real values are in the zip64 record
    if (eocd < 20 || le(bytes, eocd - 20, 4) != 0x07064b50) broken("no zip64 end of central directory locator");
    const uint64_t record = le(bytes, eocd - 20 + 8, 8);
    if (n < 56 || record > n - 56 || le(bytes, record, 4) != 0x06064b50) broken("no zip64 end of central directory");
    entries = le(bytes, record + 32, 8);
    offset = le(bytes, record + 48, 8);
  }
  for (uint64_t i = 0; i < entries; ++i) {
    if (offset > n || n - offset < 46 || le(bytes, offset, 4) != 0x02014b50) broken("a damaged central directory");
    const uint64_t method = le(bytes, offset + 10, 2), stored = le(bytes, offset + 24, 4);
    if (method != 0) broken("a compressed record; torch.save stores records uncompressed");
    if (stored != 0xffffffff && stored > n) broken("a record larger than the archive");
    offset += 46 + le(bytes, offset + 28, 2) + le(bytes, offset + 30, 2) + le(bytes, offset + 32, 2);
  }
}

std::string pickle_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor.detach().cpu());
  std::vector<char> bytes = torch::jit::pickle_save(dict);
  return std::string(bytes.begin(), bytes.end());
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

bool is_zip_archive(const std::string& bytes) { return bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0; }

}  // namespace accel::detail
