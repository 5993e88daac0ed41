// libaccel C++ API: checkpoints and model files.
//
// save_state / load_state (on Accelerator) write and restore everything a
// training run needs to continue as if it never stopped; save_model writes a
// model in Hugging Face's safetensors layout. The on-disk layout is described
// in docs/checkpointing.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace accel {

using TensorDict = std::vector<std::pair<std::string, at::Tensor>>;

// An object the user registers with register_for_checkpointing: save returns
// its state as bytes, load restores it from them (throw to report failure).
struct CheckpointObject {
  std::function<std::string()> save;
  std::function<void(const std::string&)> load;
};

// Called with the checkpoint directory before save_state writes / load_state reads.
using StateHook = std::function<void(const std::string& dir)>;

// What load_checkpoint_in_model found: state-dict names the file lacked, and
// names in the file the model does not have.
struct LoadReport {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

// Writes tensors (CPU copies are made as needed) to a safetensors file,
// atomically. Throws IO naming the path.
void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Reads every tensor of a safetensors file (owning CPU tensors). Throws IO
// naming the file and what is wrong (a header nesting more than 256 levels
// deep included).
TensorDict load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata = nullptr);

// "5GB" (10^9), "5GiB" (2^30), "200MB", "1.5GB", "123" (bytes) → bytes, as Accelerate's
// convert_file_size_to_int reads them: "5Gb" (lowercase b) is gigabits, 625000000
// bytes. Throws InvalidArgument naming the text.
int64_t parse_size(const std::string& text);

}  // namespace accel
