#include "accel/optimizer.hpp"
#include "optim/fused_adam.hpp"
#include "optim/optimizer_checkpoint.hpp"
#include "optim/optimizer_state.hpp"

#include <ATen/ATen.h>
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <sstream>
#include <torch/serialize/archive.h>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "precision/grad_scaler.hpp"
#include "core/trace_span.hpp"
#include "sharding/flat_shard.hpp"
#include "state/out_of_memory.hpp"

namespace accel {

namespace {

const char* kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::Sgd: return "SGD";
    case OptimizerKind::Adam: return "Adam";
    case OptimizerKind::AdamW: return "AdamW";
    case OptimizerKind::RmsProp: return "RMSprop";
    case OptimizerKind::Adagrad: return "Adagrad";
  }
  return "unknown";
}

void require_at_least(const char* kind, const char* field, double value, double minimum) {
  require_arg(std::isfinite(value) && value >= minimum, std::string(kind) + ": " + field +
                                                            " must be a finite number >= " + std::to_string(minimum) +
                                                            ", got " + std::to_string(value));
}

void require_beta(const char* kind, const char* field, double value) {
  require_arg(value >= 0.0 && value < 1.0,
              std::string(kind) + ": " + field + " must be in [0, 1), got " + std::to_string(value));
}

std::string number(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// PyTorch's optimizers raise TypeError for a keyword they lack (AdamW(momentum=0.9));
// options structs cannot, so a field that differs from the kind's default where
// the kind has no such option is refused instead of silently ignored.
void require_only_own_options(const OptimizerOptions& o, const char* kind) {
  const OptimizerOptions d = OptimizerOptions::defaults(o.kind);
  const bool sgd = o.kind == OptimizerKind::Sgd, adam = o.kind == OptimizerKind::Adam || o.kind == OptimizerKind::AdamW;
  const bool rmsprop = o.kind == OptimizerKind::RmsProp, adagrad = o.kind == OptimizerKind::Adagrad;
  struct Field {
    const char* name;
    bool applies;
    bool set;
    std::string value;
    const char* owners;
  };
  const Field fields[] = {
      {"momentum", sgd || rmsprop, o.momentum != d.momentum, number(o.momentum), "SGD and RMSprop"},
      {"dampening", sgd, o.dampening != d.dampening, number(o.dampening), "SGD"},
      {"nesterov", sgd, o.nesterov != d.nesterov, o.nesterov ? "true" : "false", "SGD"},
      {"betas", adam, o.beta1 != d.beta1 || o.beta2 != d.beta2, "(" + number(o.beta1) + ", " + number(o.beta2) + ")",
       "Adam and AdamW"},
      {"eps", !sgd, o.eps != d.eps, number(o.eps), "Adam, AdamW, RMSprop and Adagrad"},
      {"amsgrad", adam, o.amsgrad != d.amsgrad, o.amsgrad ? "true" : "false", "Adam and AdamW"},
      {"alpha", rmsprop, o.alpha != d.alpha, number(o.alpha), "RMSprop"},
      {"centered", rmsprop, o.centered != d.centered, o.centered ? "true" : "false", "RMSprop"},
      {"lr_decay", adagrad, o.lr_decay != d.lr_decay, number(o.lr_decay), "Adagrad"},
      {"initial_accumulator_value", adagrad, o.initial_accumulator_value != d.initial_accumulator_value,
       number(o.initial_accumulator_value), "Adagrad"},
  };
  for (const Field& f : fields) {
    require_arg(f.applies || !f.set, std::string(kind) + " has no option " + f.name + " (got " + f.value + "); " +
                                         f.name + " applies to " + f.owners);
  }
}

void validate(const OptimizerOptions& o) {
  const char* kind = kind_name(o.kind);
  require_arg(std::string(kind) != "unknown", "unknown optimizer kind " + std::to_string(static_cast<int>(o.kind)));
  require_only_own_options(o, kind);
  require_at_least(kind, "lr", o.lr, 0.0);
  require_at_least(kind, "weight_decay", o.weight_decay, 0.0);
  switch (o.kind) {
    case OptimizerKind::Sgd:
      require_at_least(kind, "momentum", o.momentum, 0.0);
      require_at_least(kind, "dampening", o.dampening, 0.0);
      require_arg(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
                  "SGD: nesterov needs momentum > 0 and dampening 0, got momentum " + std::to_string(o.momentum) +
                      " and dampening " + std::to_string(o.dampening));
      break;
    case OptimizerKind::Adam:
    case OptimizerKind::AdamW:
      require_beta(kind, "beta1", o.beta1);
      require_beta(kind, "beta2", o.beta2);
      require_at_least(kind, "eps", o.eps, 0.0);
      break;
    case OptimizerKind::RmsProp:
      require_at_least(kind, "alpha", o.alpha, 0.0);
      require_at_least(kind, "eps", o.eps, 0.0);
      require_at_least(kind, "momentum", o.momentum, 0.0);
      break;
    case OptimizerKind::Adagrad:
      require_at_least(kind, "lr_decay", o.lr_decay, 0.0);
      require_at_least(kind, "initial_accumulator_value", o.initial_accumulator_value, 0.0);
      require_at_least(kind, "eps", o.eps, 0.0);
      break;
  }
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::vector<at::Tensor>& params,
                                                        const OptimizerOptions& o) {
  switch (o.kind) {
    case OptimizerKind::Sgd:
      return std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(o.lr)
                                                             .momentum(o.momentum)
                                                             .dampening(o.dampening)
                                                             .weight_decay(o.weight_decay)
                                                             .nesterov(o.nesterov));
    case OptimizerKind::Adam:
      return std::make_unique<detail::FusedAdam>(params, torch::optim::AdamOptions(o.lr)
                                                             .betas({o.beta1, o.beta2})
                                                             .eps(o.eps)
                                                             .weight_decay(o.weight_decay)
                                                             .amsgrad(o.amsgrad));
    case OptimizerKind::AdamW:
      return std::make_unique<detail::FusedAdamW>(params, torch::optim::AdamWOptions(o.lr)
                                                              .betas({o.beta1, o.beta2})
                                                              .eps(o.eps)
                                                              .weight_decay(o.weight_decay)
                                                              .amsgrad(o.amsgrad));
    case OptimizerKind::RmsProp:
      return std::make_unique<torch::optim::RMSprop>(params, torch::optim::RMSpropOptions(o.lr)
                                                                 .alpha(o.alpha)
                                                                 .eps(o.eps)
                                                                 .weight_decay(o.weight_decay)
                                                                 .momentum(o.momentum)
                                                                 .centered(o.centered));
    case OptimizerKind::Adagrad:
      return std::make_unique<torch::optim::Adagrad>(params, torch::optim::AdagradOptions(o.lr)
                                                                 .lr_decay(o.lr_decay)
                                                                 .weight_decay(o.weight_decay)
                                                                 .initial_accumulator_value(o.initial_accumulator_value)
                                                                 .eps(o.eps));
  }
  fail(ErrorCode::InvalidArgument, "unknown optimizer kind");
}

}  // namespace

OptimizerOptions OptimizerOptions::defaults(OptimizerKind kind) {
  OptimizerOptions o;
  o.kind = kind;
  switch (kind) {
    case OptimizerKind::Sgd: o.lr = 1e-3; break;
    case OptimizerKind::Adam: o.lr = 1e-3; break;
    case OptimizerKind::AdamW:
      o.lr = 1e-3;
      o.weight_decay = 1e-2;
      break;
    case OptimizerKind::RmsProp:
      o.lr = 1e-2;
      o.alpha = 0.99;
      o.eps = 1e-8;
      break;
    case OptimizerKind::Adagrad:
      o.lr = 1e-2;
      o.eps = 1e-10;
      break;
  }
  return o;
}

struct Optimizer::Impl {
  Model model;
  OptimizerOptions options;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::shared_ptr<GradientState> gradient_state;  // set by prepare
  std::shared_ptr<detail::GradScaler> scaler;     // set by prepare under fp16
  bool step_was_skipped = false;
  std::shared_ptr<detail::FlatShard> shard;  // set by prepare under ZeRO-1/2
  std::shared_ptr<int> alive = std::make_shared<int>(0);
  GroupEntries scheduler_group_entries;

  bool accumulating() const { return gradient_state && !gradient_state->sync_gradients; }
};

Optimizer::Optimizer(const Model& model, const OptimizerOptions& options) {
  validate(options);
  std::vector<at::Tensor> params;
  for (auto& p : model.parameters()) {
    if (p.requires_grad()) params.push_back(p);
  }
  require_arg(!params.empty(), std::string(kind_name(options.kind)) + ": the model has no trainable parameters");
  impl_.reset(new Impl{model, options, make_optimizer(params, options), nullptr, nullptr, false, nullptr});
}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

void Optimizer::step() {
  if (impl_->accumulating()) return;
  ACCEL_TRACE_SPAN("accel::optimizer::step");
  try {
    if (impl_->scaler) {
      bool finite = impl_->scaler->should_step(parameters());
      if (finite) impl_->optimizer->step();
      impl_->step_was_skipped = !finite;
      impl_->scaler->update();
      return;
    }
    if (impl_->shard) impl_->shard->before_step();
    impl_->optimizer->step();
    impl_->step_was_skipped = false;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(detail::is_out_of_memory(e) ? ErrorCode::Resource : ErrorCode::Internal,
         std::string(kind_name(impl_->options.kind)) + " step failed: " + message.substr(0, message.find('\n')));
  }
  if (impl_->shard) impl_->shard->after_step();
}

void Optimizer::zero_grad() {
  if (impl_->accumulating()) return;
  ACCEL_TRACE_SPAN("accel::optimizer::zero_grad");
  if (impl_->shard) return impl_->shard->zero_grad();
  at::NoGradGuard no_grad;
  // One multi-tensor launch per device on a GPU instead of one per gradient
  // (the GPU step is bound by launches); the CPU takes the same per-tensor loop.
  std::vector<at::Tensor> dense;
  for (auto& group : impl_->optimizer->param_groups()) {
    for (auto& p : group.params()) {
      at::Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (grad.layout() == at::kStrided) {
        dense.push_back(grad);
      } else {
        grad.zero_();
      }
    }
  }
  if (!dense.empty()) at::_foreach_zero_(dense);
}

double Optimizer::lr() const { return impl_->optimizer->param_groups().front().options().get_lr(); }

void Optimizer::set_lr(double lr) {
  require_arg(std::isfinite(lr) && lr >= 0, "set_lr: lr must be a finite number >= 0, got " + std::to_string(lr));
  for (auto& group : impl_->optimizer->param_groups()) group.options().set_lr(lr);
}

const OptimizerOptions& Optimizer::options() const { return impl_->options; }

std::weak_ptr<const void> Optimizer::lifetime() const { return impl_->alive; }

namespace {

std::string save_optimizer(torch::optim::Optimizer& optimizer, OptimizerKind kind,
                           const Optimizer::GroupEntries& group_entries) {
  return detail::pickle_state_dict(detail::optimizer_state_dict(optimizer, kind, group_entries));
}

}  // namespace

std::string Optimizer::state_bytes() const {
  return save_optimizer(*impl_->optimizer, impl_->options.kind, impl_->scheduler_group_entries);
}

void Optimizer::set_scheduler_group_entries(GroupEntries entries) {
  impl_->scheduler_group_entries = std::move(entries);
}

CheckpointObject Optimizer::checkpoint_object() const {
  Impl* impl = impl_.get();  // heap: stays put when the Optimizer moves
  return CheckpointObject{
      [impl] { return save_optimizer(*impl->optimizer, impl->options.kind, impl->scheduler_group_entries); },
      [impl](const std::string& bytes) { Optimizer::load_into(*impl, bytes); }};
}

detail::OptimizerCheckpoint Optimizer::checkpoint_state() const {
  Impl* impl = impl_.get();  // heap: stays put when the Optimizer moves
  return detail::OptimizerCheckpoint{
      &impl->model.impl(),
      [impl] {
        return detail::optimizer_state_dict(*impl->optimizer, impl->options.kind, impl->scheduler_group_entries);
      },
      [impl](const c10::IValue& state_dict) {
        detail::load_optimizer_state_dict(*impl->optimizer, impl->options.kind, state_dict,
                                          std::string(kind_name(impl->options.kind)) + " state");
      },
      [impl](const std::string& bytes) { Optimizer::load_into(*impl, bytes); }};
}

void Optimizer::load_state_bytes(const std::string& bytes) { load_into(*impl_, bytes); }

void Optimizer::load_into(Impl& impl, const std::string& bytes) {
  auto* impl_ = &impl;
  const std::string label = std::string(kind_name(impl.options.kind)) + " state";
  if (!detail::is_legacy_optimizer_archive(bytes)) {
    detail::load_optimizer_state_dict(*impl.optimizer, impl.options.kind, detail::unpickle_state_dict(bytes, label),
                                      label);
    return;
  }
  // Checkpoints written before libaccel used PyTorch's format: a LibTorch
  // archive (a TorchScript module; trusted sources only, see docs/checkpointing.md).
  torch::serialize::InputArchive archive;
  try {
    std::istringstream in(bytes);
    archive.load_from(in);
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::IO, std::string(kind_name(impl_->options.kind)) + " state: unreadable (" +
                            message.substr(0, message.find('\n')) + ")");
  }
  try {
    impl_->optimizer->load(archive);
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::InvalidArgument, std::string(kind_name(impl_->options.kind)) +
                                         " state does not fit this optimizer (" +
                                         message.substr(0, message.find('\n')) + ")");
  }
}
const Model& Optimizer::model() const { return impl_->model; }
torch::optim::Optimizer& Optimizer::torch_optimizer() { return *impl_->optimizer; }
bool Optimizer::step_was_skipped() const { return impl_->step_was_skipped; }

std::vector<at::Tensor> Optimizer::parameters() const {
  std::vector<at::Tensor> params;
  for (auto& group : impl_->optimizer->param_groups()) {
    params.insert(params.end(), group.params().begin(), group.params().end());
  }
  return params;
}

void Optimizer::bind(std::shared_ptr<GradientState> gradient_state, std::shared_ptr<detail::GradScaler> scaler) {
  require(!impl_->gradient_state, ErrorCode::State, "prepare(optimizer): this optimizer is already prepared");
  impl_->gradient_state = std::move(gradient_state);
  impl_->scaler = std::move(scaler);
}

bool Optimizer::is_prepared() const { return impl_->gradient_state != nullptr; }

void Optimizer::shard_over(std::shared_ptr<detail::FlatShard> shard) {
  require(!impl_->shard, ErrorCode::State, "prepare(optimizer): this optimizer is already sharded");
  require(impl_->optimizer->state().empty(), ErrorCode::State,
          std::string("prepare(optimizer): with sharding_strategy ") + to_string(shard->strategy()) +
              " the optimizer must be prepared before it steps or loads state (it holds state for whole tensors)");
  const double lr = this->lr();
  auto sharded = make_optimizer({shard->shard()}, impl_->options);
  for (auto& group : sharded->param_groups()) group.options().set_lr(lr);
  impl_->optimizer = std::move(sharded);
  impl_->shard = std::move(shard);
}

bool Optimizer::is_sharded() const { return impl_->shard != nullptr; }

}  // namespace accel
