// The safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length N, N bytes of JSON mapping tensor names
// to {dtype, shape, data_offsets} (plus an optional "__metadata__" map of
// strings), then the data. Our reader is strict: everything the format
// requires is checked before a byte of data is trusted, and every rejection is
// an accel::Error (IO) naming the file and what is wrong. Plain C++ (no
// LibTorch), so the fuzz target stays small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/file_io.hpp"

namespace accel::safetensors {

struct Entry {
  std::string name;
  std::string dtype;  // "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // offsets into the data section
};

// Bytes per element of a dtype name; 0 when the name is not a safetensors dtype.
size_t dtype_size(const std::string& dtype);

// Largest header we accept (the reference implementation's limit).
constexpr uint64_t kMaxHeaderBytes = 100u * 1000u * 1000u;

class File {
 public:
  // Maps path (a regular file: anything else is refused, never waited on) read-only and validates it.
  static File open(const std::string& path);
  // Validates a buffer (borrowed: it must outlive the File). label names it in errors.
  static File parse(const uint8_t* data, size_t size, const std::string& label);

  const std::vector<Entry>& entries() const { return entries_; }  // in data order
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const Entry* find(const std::string& name) const;
  const uint8_t* data(const Entry& entry) const { return data_ + entry.begin; }
  const std::string& label() const { return label_; }
  // True for open(): data() points into a read-only mapping of the file.
  bool mapped() const { return mapping_ != nullptr; }

 private:
  std::shared_ptr<void> mapping_;  // keeps an mmap alive (null for parse())
  const uint8_t* data_ = nullptr;  // start of the data section
  std::string label_;
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

struct TensorView {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
  // When data is null: writes the nbytes bytes (a tensor copied to the host
  // only while it is written).
  std::function<void(accel::detail::ByteSink&)> stream;
};

// The file's bytes for tensors (sorted by name, as the reference writer does;
// header padded with spaces to a multiple of 8) and metadata. Throws on
// duplicate names, unknown dtypes or byte counts that do not match the shape.
std::string serialize(std::vector<TensorView> tensors, const std::map<std::string, std::string>& metadata = {});
// The same bytes, streamed into sink one tensor at a time. With
// sort_by_name false the data follow the given order (readers locate tensors
// by their offsets; a writer that produces tensors one after another needs it).
void write(accel::detail::ByteSink& sink, std::vector<TensorView> tensors,
           const std::map<std::string, std::string>& metadata = {}, bool sort_by_name = true);

}  // namespace accel::safetensors
