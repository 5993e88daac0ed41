// libaccel C++ API: optimizers over a model's trainable parameters.
#pragma once

#include <memory>
#include <string>

#include "accel/checkpoint.hpp"
#include "accel/model.hpp"

namespace torch {
namespace optim {
class Optimizer;
}
}  // namespace torch

namespace accel {

struct GradientState;
namespace detail {
class GradScaler;
class FlatShard;
struct OptimizerCheckpoint;
}  // namespace detail

enum class OptimizerKind { Sgd = 1, Adam = 2, AdamW = 3, RmsProp = 4, Adagrad = 5 };

// Hyperparameters of every kind; each kind reads the ones PyTorch's optimizer of
// that name has. Start from defaults(kind), which holds PyTorch's defaults.
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::AdamW;
  double lr = 1e-3;
  double weight_decay = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  bool nesterov = false;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  bool amsgrad = false;
  double alpha = 0.99;
  bool centered = false;
  double lr_decay = 0.0;
  double initial_accumulator_value = 0.0;

  static OptimizerOptions defaults(OptimizerKind kind);
};

class Optimizer {
 public:
  // Throws InvalidArgument naming a bad hyperparameter.
  Optimizer(const Model& model, const OptimizerOptions& options);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  // Once prepared: does nothing on accumulation micro-steps (sync_gradients
  // false), and under fp16 unscales the gradients first and skips the step when
  // any is inf or NaN (step_was_skipped() then says so).
  void step();
  // Zeroes gradients in place: gradient buffers keep their storage. Once
  // prepared, does nothing on accumulation micro-steps.
  void zero_grad();
  bool step_was_skipped() const;
  double lr() const;       // of the first parameter group
  void set_lr(double lr);  // of every parameter group
  const OptimizerOptions& options() const;
  const Model& model() const;
  torch::optim::Optimizer& torch_optimizer();
  std::vector<at::Tensor> parameters() const;
  // The optimizer's state (moments, step counts, hyperparameters of every
  // group) as the bytes of `torch.save(optimizer.state_dict())` in PyTorch:
  // a pickle with PyTorch's structure and key names, which Python's torch.load
  // reads. load_state_bytes reads such a pickle without running code (plain
  // data only; also the LibTorch archives older libaccel versions wrote, which
  // are TorchScript: trusted sources only). It throws IO for bytes it cannot
  // read and InvalidArgument when they do not fit, and changes nothing then.
  std::string state_bytes() const;
  void load_state_bytes(const std::string& bytes);
  // Expires when this optimizer is destroyed (moves keep it).
  std::weak_ptr<const void> lifetime() const;
  // state_bytes / load_state_bytes of this optimizer, valid across moves while lifetime() has not expired.
  CheckpointObject checkpoint_object() const;
  // Used by save_state / load_state: the state dict itself, without bytes
  // between (src/optim/optimizer_checkpoint.hpp); valid as checkpoint_object().
  detail::OptimizerCheckpoint checkpoint_state() const;

  // Used by Scheduler: the entries PyTorch's schedulers add to every param
  // group (initial_lr; OneCycleLR's max_lr and min_lr), one list per group.
  // state_bytes writes them into param_groups as PyTorch's state_dict() has
  // them, so a scheduler built over the optimizer in Python finds them after
  // load_state_dict. Reading ignores them (the scheduler's own state rules).
  using GroupEntries = std::vector<std::vector<std::pair<std::string, double>>>;
  void set_scheduler_group_entries(GroupEntries entries);

  // Used by Accelerator::prepare under SHARD_OPTIMIZER / SHARD_GRAD_OP: from
  // then on the optimizer updates only this rank's chunk of the flat
  // parameters (its state is allocated for that chunk only), step() ends with
  // the parameters' all-gather and is collective, and state_bytes covers this
  // rank's chunk. Throws State if the optimizer already holds state.
  void shard_over(std::shared_ptr<detail::FlatShard> shard);
  bool is_sharded() const;
  // Used by Accelerator::prepare.
  void bind(std::shared_ptr<GradientState> gradient_state, std::shared_ptr<detail::GradScaler> scaler);
  bool is_prepared() const;

 private:
  struct Impl;
  static void load_into(Impl& impl, const std::string& bytes);
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel
