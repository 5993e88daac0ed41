// Optimizer state in PyTorch's own structure, the one `optimizer.state_dict()`
// returns in Python:
//   {"state": {index: {"exp_avg": tensor, ...}}, "param_groups": [{"lr": ..., "params": [index, ...]}]}
// with parameters numbered across groups in order and PyTorch's key names per
// optimizer. Stored as a PyTorch pickle (torch::pickle_save), which
// `torch.load` reads, and read back by libaccel's own data-only reader
// (read_torch_save), never by LibTorch's unpickler, which is not safe on
// untrusted bytes.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/optim/optimizer.h>

#include <string>

#include "accel/optimizer.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

// extra_group_entries[g]: keys a scheduler put in group g (see
// Optimizer::set_scheduler_group_entries); may be shorter than the groups.
c10::IValue optimizer_state_dict(torch::optim::Optimizer& optimizer, OptimizerKind kind,
                                 const Optimizer::GroupEntries& extra_group_entries = {});

// Checks state_dict against the optimizer — groups, parameter counts, tensor
// shapes, value types — and only then applies it (per-parameter state and the
// groups' hyperparameters). Throws IO (malformed) or InvalidArgument (does not
// fit), naming label and the key.
void load_optimizer_state_dict(torch::optim::Optimizer& optimizer, OptimizerKind kind, const c10::IValue& state_dict,
                               const std::string& label);

// A state dict as pickle bytes, and back (refusing anything but plain data;
// vocabulary: see read_torch_save).
std::string pickle_state_dict(const c10::IValue& state_dict);
c10::IValue unpickle_state_dict(const std::string& bytes, const std::string& label,
                                PickleVocabulary vocabulary = PickleVocabulary::StateDict);

// True for the LibTorch archives (TorchScript modules) libaccel wrote before
// it used PyTorch's format.
bool is_legacy_optimizer_archive(const std::string& bytes);

}  // namespace accel::detail
