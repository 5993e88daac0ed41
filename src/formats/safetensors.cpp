#include "formats/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "core/json.hpp"

namespace accel::safetensors {

namespace {

[[noreturn]] void bad(const std::string& label, const std::string& what) {
  fail(ErrorCode::IO, label + ": not a valid safetensors file: " + what);
}

std::vector<int64_t> read_shape(const nlohmann::json& value, const std::string& label, const std::string& name) {
  if (!value.is_array()) bad(label, "tensor \"" + name + "\": shape is not an array");
  std::vector<int64_t> shape;
  for (const auto& d : value) {
    if (!d.is_number_unsigned()) {
      bad(label, "tensor \"" + name + "\": shape holds " + detail::describe_json(d) + ", not a size");
    }
    shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  return shape;
}

// Elements of shape times element size, or false on overflow.
bool byte_count(const std::vector<int64_t>& shape, size_t element, uint64_t* out) {
  uint64_t n = element;
  for (int64_t d : shape) {
    if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) return false;
    n *= static_cast<uint64_t>(d);
  }
  *out = n;
  return true;
}

}  // namespace

size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes{{"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
                                                   {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
                                                   {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

File File::parse(const uint8_t* data, size_t size, const std::string& label) {
  if (size < 8) bad(label, "file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];
  if (header_len > kMaxHeaderBytes) bad(label, "header length " + std::to_string(header_len) + " exceeds the limit");
  if (header_len > size - 8) {
    bad(label, "header length " + std::to_string(header_len) + " runs past the end of the " + std::to_string(size) +
                   "-byte file");
  }
  const char* header_begin = reinterpret_cast<const char*>(data + 8);
  // Nesting is capped here: a header whose shape nests 100,000 arrays deep
  // would otherwise overflow the stack when shown in an error message.
  nlohmann::json header = detail::parse_json(std::string_view(header_begin, header_len),
                                             label + ": not a valid safetensors file: header", ErrorCode::IO);
  if (!header.is_object()) bad(label, "header is not a JSON object");

  File file;
  file.label_ = label;
  file.data_ = data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& info = it.value();
    if (name == "__metadata__") {
      if (!info.is_object()) bad(label, "__metadata__ is not an object");
      for (auto m = info.begin(); m != info.end(); ++m) {
        if (!m.value().is_string()) bad(label, "__metadata__[\"" + m.key() + "\"] is not a string");
        file.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!info.is_object()) bad(label, "tensor \"" + name + "\" is not an object");
    for (auto k = info.begin(); k != info.end(); ++k) {
      if (k.key() != "dtype" && k.key() != "shape" && k.key() != "data_offsets") {
        bad(label, "tensor \"" + name + "\" has an unknown field \"" + k.key() + "\"");
      }
    }
    if (!info.contains("dtype") || !info["dtype"].is_string()) bad(label, "tensor \"" + name + "\": dtype missing");
    if (!info.contains("shape")) bad(label, "tensor \"" + name + "\": shape missing");
    if (!info.contains("data_offsets") || !info["data_offsets"].is_array() || info["data_offsets"].size() != 2 ||
        !info["data_offsets"][0].is_number_unsigned() || !info["data_offsets"][1].is_number_unsigned()) {
      bad(label, "tensor \"" + name + "\": data_offsets must be two unsigned integers");
    }
    Entry entry;
    entry.name = name;
    entry.dtype = info["dtype"].get<std::string>();
    size_t element = dtype_size(entry.dtype);
    if (element == 0) bad(label, "tensor \"" + name + "\": unknown dtype \"" + entry.dtype + "\"");
    entry.shape = read_shape(info["shape"], label, name);
    entry.begin = info["data_offsets"][0].get<uint64_t>();
    entry.end = info["data_offsets"][1].get<uint64_t>();
    if (entry.begin > entry.end || entry.end > data_size) {
      bad(label, "tensor \"" + name + "\": data_offsets [" + std::to_string(entry.begin) + ", " +
                     std::to_string(entry.end) + "] do not lie within the " + std::to_string(data_size) +
                     "-byte data section");
    }
    uint64_t expected = 0;
    if (!byte_count(entry.shape, element, &expected) || expected != entry.end - entry.begin) {
      bad(label, "tensor \"" + name + "\": " + std::to_string(entry.end - entry.begin) + " bytes for a " + entry.dtype +
                     " tensor of shape " + detail::describe_json(info["shape"]));
    }
    file.entries_.push_back(std::move(entry));
  }
  std::sort(file.entries_.begin(), file.entries_.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t cursor = 0;
  for (const Entry& entry : file.entries_) {
    if (entry.begin != cursor) {
      bad(label, "tensor \"" + entry.name + "\" starts at byte " + std::to_string(entry.begin) + " of the data, " +
                     (entry.begin < cursor ? "overlapping the tensor before it" : "leaving a gap before it"));
    }
    cursor = entry.end;
  }
  if (cursor != data_size) {
    bad(label, std::to_string(data_size - cursor) + " bytes after the last tensor belong to no tensor");
  }
  return file;
}

File File::open(const std::string& path) {
  int fd = detail::open_regular_file(path);  // a FIFO or device would block or never end
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail(ErrorCode::IO, "cannot stat " + path + ": " + std::strerror(e));
  }
  size_t size = static_cast<size_t>(st.st_size);
  std::shared_ptr<void> mapping;
  const uint8_t* bytes = nullptr;
  static const uint8_t kEmpty[1] = {0};
  if (size == 0) {
    bytes = kEmpty;
  } else {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(ErrorCode::IO, "cannot map " + path + ": " + std::strerror(e));
    }
    mapping = std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
    bytes = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  File file = parse(bytes, size, path);
  file.mapping_ = std::move(mapping);
  return file;
}

const Entry* File::find(const std::string& name) const {
  for (const auto& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void write(accel::detail::ByteSink& sink, std::vector<TensorView> tensors,
           const std::map<std::string, std::string>& metadata, bool sort_by_name) {
  if (sort_by_name) {
    std::sort(tensors.begin(), tensors.end(), [](const TensorView& a, const TensorView& b) { return a.name < b.name; });
  }
  std::set<std::string> names;
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorView& t = tensors[i];
    require_arg(t.name != "__metadata__", "safetensors: \"__metadata__\" cannot name a tensor");
    require_arg(names.insert(t.name).second, "safetensors: tensor name \"" + t.name + "\" appears twice");
    size_t element = dtype_size(t.dtype);
    require_arg(element != 0, "safetensors: unknown dtype \"" + t.dtype + "\" for tensor \"" + t.name + "\"");
    uint64_t expected = 0;
    const bool counted = byte_count(t.shape, element, &expected);  // before the message is built
    require_arg(counted && expected == t.nbytes, "safetensors: tensor \"" + t.name + "\" has " +
                                                     std::to_string(t.nbytes) + " bytes, its shape needs " +
                                                     std::to_string(expected));
    require_arg(t.data != nullptr || t.nbytes == 0 || static_cast<bool>(t.stream),
                "safetensors: tensor \"" + t.name + "\" has neither bytes nor a way to write them");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string start(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) start[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  start += text;
  sink.write(start.data(), start.size());
  for (const TensorView& t : tensors) {
    if (t.data != nullptr) {
      sink.write(t.data, t.nbytes);
    } else if (t.nbytes > 0) {
      t.stream(sink);
    }
  }
}

std::string serialize(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata) {
  accel::detail::StringSink sink;
  write(sink, std::move(tensors), metadata);
  return std::move(sink.bytes);
}

}  // namespace accel::safetensors
