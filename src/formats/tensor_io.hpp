// at::Tensor <-> safetensors.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "core/file_io.hpp"
#include "formats/safetensors.hpp"

namespace accel::detail {

std::string safetensors_dtype(at::ScalarType type);
at::ScalarType scalar_type_of(const safetensors::Entry& entry, const std::string& label);
// The entry's bytes as an owning CPU tensor.
at::Tensor read_tensor(const safetensors::File& file, const safetensors::Entry& entry);
// A tensor over the file's mapped bytes (no copy) when they are aligned for
// the dtype, else an owning copy. Read-only: only for copying from; valid
// while file lives.
at::Tensor mapped_tensor(const safetensors::File& file, const safetensors::Entry& entry);
// Safetensors of (name, tensor) pairs, streamed into sink: each tensor's bytes
// go from its memory (a GPU tensor: from a host copy of it alone).
void write_tensors(ByteSink& sink, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                   const std::map<std::string, std::string>& metadata);
// The same as bytes in memory.
std::string serialize_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata);

}  // namespace accel::detail
