// PyTorch's distributed checkpoint format (torch.distributed.checkpoint, "DCP"),
// as its FileSystemWriter lays a directory out: `.metadata`, a pickle of
// Metadata (every tensor's dtype, size and chunks; where each chunk and each
// non-tensor item is stored), and `__<rank>_<n>.distcp` files, in which every
// item is one torch.save archive at (offset, length). Accelerate's FSDP
// save_state with SHARDED_STATE_DICT writes one for the model
// (pytorch_model_fsdp_<i>/, keys "model.<name>") and one per optimizer
// (optimizer_<i>/, keys "optimizer.state.<name>.<key>" and
// "optimizer.param_groups.<g>.<option>").
//
// Reading only. The .metadata is read by the project's data-only unpickler
// with exactly DCP's vocabulary (formats/torch_pickle.hpp); items by its
// torch.save reader. Every size, offset and file name is checked before use.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::detail {

class DcpDirectory {
 public:
  struct Item {  // where an item's torch.save archive lies
    std::string file;
    int64_t offset = 0, length = 0;
  };
  struct Chunk {
    std::vector<int64_t> offsets, sizes;
    Item item;
  };
  struct Tensor {
    at::ScalarType dtype = at::kFloat;
    std::vector<int64_t> size;
    std::vector<Chunk> chunks;
  };

  // Reads and checks dir/.metadata. Throws IO naming it (and the key) for
  // anything outside DCP's vocabulary, a chunk outside its tensor, chunks
  // that do not cover their tensor exactly once, an item without storage, a
  // file name that leaves the directory, or an item past its file's end.
  static DcpDirectory open(const std::string& dir);
  static bool is_dcp(const std::string& dir);  // dir/.metadata exists

  const std::string& dir() const { return dir_; }
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  const std::map<std::string, Item>& objects() const { return objects_; }

  // The whole tensor `key`, assembled from its chunks; each chunk must be a
  // tensor of the recorded dtype and sizes (IO naming the file and key).
  at::Tensor read_tensor(const std::string& key) const;
  // A non-tensor item (a number, string, list, tuple, None) as torch.save wrote it.
  c10::IValue read_object(const std::string& key) const;

 private:
  std::string read_item(const Item& item, const std::string& key) const;
  std::string dir_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, Item> objects_;
};

}  // namespace accel::detail
