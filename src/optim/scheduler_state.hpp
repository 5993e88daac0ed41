// Scheduler state in PyTorch's own structure, the dict `scheduler.state_dict()`
// returns in Python for the class each kind corresponds to (StepLR,
// MultiStepLR, ..., OneCycleLR, LambdaLR for the warmup kinds,
// ReduceLROnPlateau), stored as a PyTorch pickle of plain data that
// `torch.load` reads and Python's `load_state_dict` accepts.
#pragma once

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "accel/scheduler.hpp"

namespace accel::detail {

// Where a scheduler stands; what its state dict carries besides its options.
struct SchedulerPosition {
  int64_t last_epoch = 0;
  std::vector<double> base_lrs, lrs;  // lrs: the groups' current learning rates (PyTorch's _last_lr)
  double best = 0;                    // ReduceOnPlateau's counters
  int64_t bad_epochs = 0, cooldown_counter = 0;
  int64_t adjusted_steps = 0;  // calls counted towards OneCycle's cap on accumulation micro-steps
};

// PyTorch's class name for kind ("StepLR", ..., "LambdaLR", "ReduceLROnPlateau").
const char* torch_scheduler_class(SchedulerKind kind);

c10::IValue scheduler_state_dict(const SchedulerOptions& options, const SchedulerPosition& position);

// Checks state_dict against options — that it is the state of the same
// PyTorch class with the same hyperparameters, for `groups` parameter groups —
// and returns the position to apply. Throws IO (malformed) or InvalidArgument
// (another kind, other hyperparameters or group count), naming label and the key.
SchedulerPosition read_scheduler_state_dict(const SchedulerOptions& options, const c10::IValue& state_dict,
                                            size_t groups, const std::string& label);

// True for what torch.save and torch::pickle_save write (a zip container, or
// a bare pickle: protocol 2+ starts with 0x80), false for the JSON state
// libaccel wrote before it used PyTorch's format.
bool is_pickle(const std::string& bytes);

}  // namespace accel::detail
