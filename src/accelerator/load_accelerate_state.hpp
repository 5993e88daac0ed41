// load_state for a directory that Python Accelerate's save_state wrote (no
// manifest.json): pytorch_model.bin or model.safetensors (or a sharded index)
// per model, optimizer.bin per optimizer (PyTorch's state_dict as a torch.save
// pickle), scheduler.bin per scheduler, scaler.pt, custom_checkpoint_{i}.pkl,
// random_states_{rank}.pkl (one per process: they give the world size).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "formats/model_weights.hpp"
#include "model/model_impl.hpp"
#include "accelerator/accelerator_state.hpp"

namespace accel::detail {

// True when dir has no manifest.json but one of the files Accelerate's
// save_state always writes (a model file, optimizer.bin or random_states_0.pkl).
bool is_accelerate_checkpoint(const std::string& dir);

// Model i's state-dict tensors paired with their stored values, for both
// kinds of directory: every name present with the same shape and dtype, and no
// name the model lacks, else an error naming path, the tensor and the mismatch.
using ModelLoadPlan = std::vector<std::pair<at::Tensor, const ModelWeights::Tensor*>>;
ModelLoadPlan plan_model_load(const ModelWeights& weights, const NamedTensors& state_dict, const std::string& path,
                              size_t i);

// Reads and checks everything, then applies it (the optimizers', schedulers'
// and custom objects' loads rolled back together if one fails). This
// process's random_states_{rank}.pkl, when present, restores the torch CPU and
// CUDA generators (and "step" where saved); Python's and NumPy's generator
// states are skipped. Not restored: dataloader positions (Accelerate 0.22 does
// not save them; resume mid-epoch with skip_first_batches, as there).
void load_accelerate_checkpoint(AcceleratorState& state, const std::string& dir);

}  // namespace accel::detail
