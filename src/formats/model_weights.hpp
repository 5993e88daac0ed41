// The tensors of a model file in any of Hugging Face's layouts, for
// load_checkpoint_in_model and load_state: model.safetensors (mapped, read on
// demand), pytorch_model.bin (a torch.save pickle, read as data only), or a
// sharded index (model.safetensors.index.json, pytorch_model.bin.index.json)
// whose shards are either.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "formats/safetensors.hpp"

namespace accel::detail {

class ModelWeights {
 public:
  struct Tensor {
    std::string file;  // the file holding it, for messages
    std::vector<int64_t> shape;
    std::string dtype;  // safetensors' name ("F32") whatever the file's kind
    const safetensors::Entry* entry = nullptr;
    size_t file_index = 0;
    at::Tensor pickled;  // a pickled file's tensor, read whole
  };

  // path ending in .json: a sharded index (shards must be files in its
  // directory); .bin, .pt, .pth: a torch.save pickle; else safetensors.
  // Throws IO naming the file: unreadable, malformed, a pickle naming a
  // global outside a state dict's data, a value that is not a tensor, a
  // tensor found in two shards.
  static ModelWeights open(const std::string& path);

  const std::map<std::string, Tensor>& tensors() const { return tensors_; }
  at::ScalarType scalar_type(const Tensor& t) const;
  // The values as a CPU tensor; a safetensors view is read-only (copy from it).
  at::Tensor values(const Tensor& t) const;

 private:
  void add_safetensors(const std::string& path);
  void add_pickle(const std::string& path);
  void add(const std::string& name, Tensor t);

  std::vector<std::unique_ptr<safetensors::File>> files_;
  std::map<std::string, Tensor> tensors_;
};

}  // namespace accel::detail
