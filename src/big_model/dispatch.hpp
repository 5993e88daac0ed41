// What the placing functions of src/big_model share beyond the public API:
// the dispatch of a checkpoint with a chosen device for its disk nodes, and
// reading an execution device a caller named.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "accel/big_model.hpp"

namespace accel::detail {

// load_checkpoint_and_dispatch, with the nodes that hold disk tensors brought
// in and run on main_gpu (none: the CPU) rather than on the map's first GPU.
void dispatch_checkpoint(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                         const std::string& offload_folder, c10::optional<c10::ScalarType> dtype,
                         const c10::optional<c10::Device>& main_gpu);

// verify_device_map's checks over a model's names: `known` every module (""
// too), parameter and buffer name; `tensors` the names each map must cover.
void verify_device_map_over(const std::set<std::string>& known, const std::vector<std::string>& tensors,
                            const DeviceMap& device_map);
// The device of the map's key that covers name (the key itself or a dotted
// prefix; "" covers all, the longest key wins). InvalidArgument when none does.
const std::string& device_of(const DeviceMap& map, const std::string& name);

// materialize (an empty device_map: everything on the CPU) and
// load_checkpoint_and_dispatch for a TorchScript model: tensors found by any
// of their names (a tied one once); a buffer the checkpoint lacks keeps its
// values; "disk" tensors of a submodule are read from the checkpoint around
// each of its calls (cast to dtype each time), the root module's own stay in
// memory. Map devices "cpu" and "disk" only (Unsupported for a GPU). All
// checked before a tensor changes; `what` names the caller in errors.
void dispatch_script_checkpoint(const Model& model, const std::string& checkpoint, const DeviceMap& device_map,
                                c10::optional<c10::ScalarType> dtype, const std::string& what);

// "cpu", "cuda:N" or Accelerate's bare "N" (a GPU this machine has); "" gives
// `fallback`. Throws InvalidArgument naming `what` and the value.
c10::Device parse_execution_device(const std::string& name, const std::string& what, const c10::Device& fallback);

// Writes tensors (as they are) to folder/model.safetensors, atomically, and
// returns its path: the file the offload functions dispatch a loaded model
// from. Throws IO naming what cannot be written.
std::string write_offload_weights(const std::string& folder,
                                  const std::vector<std::pair<std::string, at::Tensor>>& tensors);

}  // namespace accel::detail
