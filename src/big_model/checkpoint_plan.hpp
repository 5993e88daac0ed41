// Reading a safetensors checkpoint into a model's tensors, checked in full
// before anything changes (shared by materialize and dispatch).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <torch/nn/module.h>

#include <map>
#include <string>
#include <vector>

#include "formats/safetensors.hpp"

namespace accel::detail {

struct CheckpointSources {
  std::vector<safetensors::File> files;
  std::map<std::string, size_t> file_of;  // tensor name -> index in files (from a sharded index)
};

// A .safetensors file, a model.safetensors.index.json, or a directory holding
// either, memory-mapped. Throws IO naming the path.
CheckpointSources open_checkpoint(const std::string& checkpoint);

struct PlannedTensor {
  std::string name;
  at::Tensor target;              // the model's tensor (its contents get replaced)
  const safetensors::File* file;  // points into the sources
  const safetensors::Entry* entry;
  at::ScalarType type;  // what the model holds: dtype for floating tensors
};

// Every parameter and buffer of root found and checked in sources; throws
// InvalidArgument naming the tensor missing or whose shape or kind differs.
std::vector<PlannedTensor> plan_checkpoint(const torch::nn::Module& root, const CheckpointSources& sources,
                                           const std::string& checkpoint, c10::optional<c10::ScalarType> dtype);

// The entry's bytes as a new CPU tensor of `type`; the mapped pages it read are
// then dropped from this process's resident memory, so streaming a checkpoint
// through costs one tensor of RSS, not the file.
at::Tensor load_planned(const safetensors::File& file, const safetensors::Entry& entry, at::ScalarType type);

// A tensor kept on the meta device between calls and read from its
// checkpoint entry around them (the disk offload hooks of TorchScript
// submodules). The file must outlive it.
struct DiskTensor {
  at::Tensor target;
  const safetensors::File* file;
  safetensors::Entry entry;
  at::ScalarType type;
};
// entering: the entry's bytes read into target (load_planned); else target back to meta.
void swap_disk_tensor(const DiskTensor& tensor, bool entering);

}  // namespace accel::detail
