// Hugging Face's layout of model files (save_model): one model.safetensors (or
// pytorch_model.bin), or shards past max_shard_size with an index; and the
// FULL_SHARD writer that streams them one wrap unit at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_impl.hpp"

namespace accel::detail {

// model-00001-of-00002.safetensors, or pytorch_model-00001-of-00002.bin for pickles.
std::string model_shard_name(size_t index, size_t count, bool safe);

// Hugging Face's rule: tensors in order, a new shard when the next tensor
// would overflow a non-empty one. Returns each shard's tensor indices.
std::vector<std::vector<size_t>> split_by_size(const std::vector<int64_t>& bytes, int64_t limit);

// save_model of a FULL_SHARD model as safetensors, streamed: every process
// gathers the wrap units in the same order, one unit at a time, and `writes`
// (one process) writes each tensor to its file as its unit is gathered, so no
// process holds more than one unit's full parameters (Accelerate's full
// save_model gathers the whole model first). Collective. The files are those
// save_model writes; the data of each follow the state dict's order. A failure
// to write is thrown by the writing process once every unit has been gathered,
// so the others are never left waiting.
void save_full_shard_model(const ModelImpl& model, const std::string& dir, int64_t max_shard_bytes, bool writes);

}  // namespace accel::detail
