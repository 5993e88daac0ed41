// What save_state and load_state use of a prepared optimizer: its state dict as
// values, so that a checkpoint's tensors go between the files and the
// optimizer's state without a pickled copy of the whole state in memory.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <string>

namespace accel::detail {

class ModelImpl;

struct OptimizerCheckpoint {
  // The model whose parameters it steps (which layout its sharded state follows).
  const ModelImpl* model = nullptr;
  // PyTorch's structure (optimizer_state.hpp). On the CPU its tensors are the
  // live state's own, not copies: writing it streams them, and holding it keeps
  // the state as it was (load_state's rollback) while load_state_dict installs
  // other tensors.
  std::function<c10::IValue()> state_dict;
  // Checks the state dict against the optimizer, then applies it; throws IO or
  // InvalidArgument naming the key ("AdamW state: ...") and changes nothing when
  // it does not fit. Tensors of the dict become the optimizer's state (no copy
  // on the CPU).
  std::function<void(const c10::IValue& state_dict)> load_state_dict;
  // Optimizer::load_state_bytes, for the LibTorch archives of format-1 checkpoints.
  std::function<void(const std::string& bytes)> load_bytes;
};

}  // namespace accel::detail
