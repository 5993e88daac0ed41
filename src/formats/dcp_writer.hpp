// Writing PyTorch's distributed checkpoint format (formats/dcp.hpp) as torch's
// FileSystemWriter does, so that torch.distributed.checkpoint.load (and
// Accelerate's FSDP load_state) reads it: every process appends its items (one
// torch.save archive each) to its own __<rank>_0.distcp, and one process writes
// .metadata, a pickle of Metadata naming every tensor's chunks and where each
// item lies, from the records all processes gathered.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/file_io.hpp"

namespace accel::detail {

// An N-D chunk of a tensor: elements [offsets, offsets + sizes) per dimension,
// which is elements [begin, begin + numel) of the tensor in row-major order.
struct DcpBox {
  std::vector<int64_t> offsets, sizes;
  int64_t begin = 0, numel = 0;
};
// The boxes that elements [begin, end) of a row-major tensor of `shape` make,
// in order: a flat range is a partial first row, whole rows and a partial last
// row, recursively. A 0-d tensor is one box of no dimensions.
std::vector<DcpBox> flat_range_boxes(const std::vector<int64_t>& shape, int64_t begin, int64_t end);

// One process's .distcp file: the items to write, then written one at a time
// (a chunk is copied into its own storage only while it is written).
class DcpFileWriter {
 public:
  explicit DcpFileWriter(std::string file_name) : file_(std::move(file_name)) {}
  // A chunk of tensor `key` (of `size` and the values' dtype) at `offsets`;
  // `path`: the key's place in the nested state dict (Metadata.planner_data).
  // `values` is read when write() runs: it must hold the values until then.
  void add_chunk(const std::string& key, const std::vector<c10::IValue>& path, const std::vector<int64_t>& size,
                 const std::vector<int64_t>& offsets, const at::Tensor& values);
  // A non-tensor item (a number, bool, None, string, list or tuple).
  void add_object(const std::string& key, const std::vector<c10::IValue>& path, const c10::IValue& value);
  const std::string& file() const { return file_; }
  bool empty() const { return items_.empty(); }
  // Writes the file's bytes: each item a torch.save archive, end to end.
  void write(ByteSink& sink);
  // What .metadata needs of the written items, as JSON (gathered to one process).
  const nlohmann::json& records() const { return records_; }

 private:
  struct Item {
    nlohmann::json record;  // without "offset" and "length", known once written
    c10::IValue value;      // a chunk's tensor, or the object
  };
  std::string file_;
  std::vector<Item> items_;
  nlohmann::json records_ = nlohmann::json::array();
};

// The .metadata of a directory from every file's records: a protocol-2 pickle
// of torch.distributed.checkpoint.metadata.Metadata (version "1.0.0"). Throws
// InvalidArgument when two records disagree on a tensor's dtype or size.
std::string dcp_metadata(const std::vector<nlohmann::json>& records_per_file);

}  // namespace accel::detail
