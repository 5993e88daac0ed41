#include <ATen/ATen.h>

#include "accel/error.hpp"
#include "accel/loss.hpp"

namespace accel {

namespace {

const char* loss_name(LossKind kind) {
  switch (kind) {
    case LossKind::CrossEntropy: return "cross_entropy";
    case LossKind::Mse: return "mse";
    case LossKind::Nll: return "nll";
    case LossKind::BceWithLogits: return "bce_with_logits";
    case LossKind::CausalLm: return "causal_lm";
  }
  return "unknown";
}

void check_class_targets(const char* name, const at::Tensor& input, const at::Tensor& target) {
  require_arg(input.dim() == 2,
              std::string(name) + ": input must be [N, C] scores, got shape " + c10::str(input.sizes()));
  require_arg(at::isFloatingType(input.scalar_type()),
              std::string(name) + ": input must be floating point, got " + c10::toString(input.scalar_type()));
  require_arg(target.scalar_type() == at::kLong,
              std::string(name) + ": target must be int64 class indices, got " + c10::toString(target.scalar_type()));
  require_arg(target.dim() == 1 && target.size(0) == input.size(0), std::string(name) + ": target must have shape [" +
                                                                        std::to_string(input.size(0)) + "], got " +
                                                                        c10::str(target.sizes()));
}

void check_same_shape(const char* name, const at::Tensor& input, const at::Tensor& target) {
  require_arg(input.sizes() == target.sizes(), std::string(name) + ": input shape " + c10::str(input.sizes()) +
                                                   " differs from target shape " + c10::str(target.sizes()));
  require_arg(at::isFloatingType(input.scalar_type()) && at::isFloatingType(target.scalar_type()),
              std::string(name) + ": input and target must be floating point, got " +
                  c10::toString(input.scalar_type()) + " and " + c10::toString(target.scalar_type()));
}

// Class indices outside [0, classes) that are not ignore_index: LibTorch
// throws for them on the CPU but asserts on a GPU, which kills the process.
void check_class_range(const std::string& name, const at::Tensor& target, int64_t classes, int64_t ignore_index) {
  at::Tensor counted = target.masked_select(target != ignore_index);
  if (counted.numel() == 0) return;
  const int64_t low = counted.min().item<int64_t>(), high = counted.max().item<int64_t>();
  require_arg(low >= 0 && high < classes, name + ": target holds class " + std::to_string(low < 0 ? low : high) +
                                              ", outside [0, " + std::to_string(classes) + ") and not ignore_index " +
                                              std::to_string(ignore_index));
}

void check_options(const char* name, LossKind kind, const LossOptions& options) {
  const bool class_loss = kind == LossKind::CrossEntropy || kind == LossKind::Nll || kind == LossKind::CausalLm;
  require_arg(class_loss || options.ignore_index == -100,
              std::string(name) + ": ignore_index " + std::to_string(options.ignore_index) +
                  " applies to class-index losses only (cross_entropy, nll, causal_lm)");
  require_arg(
      options.label_smoothing >= 0.0 && options.label_smoothing <= 1.0,
      std::string(name) + ": label_smoothing must be in [0, 1], got " + std::to_string(options.label_smoothing));
  require_arg(options.label_smoothing == 0.0 || kind == LossKind::CrossEntropy || kind == LossKind::CausalLm,
              std::string(name) + ": label_smoothing " + std::to_string(options.label_smoothing) +
                  " applies to cross_entropy and causal_lm only");
}

}  // namespace

at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels, const LossOptions& options,
                          const std::string& where) {
  require_arg(logits.dim() >= 2 && at::isFloatingType(logits.scalar_type()),
              where + ": the logits must be floating point [N, L, V] or [L, V], got " +
                  c10::toString(logits.scalar_type()) + " " + c10::str(logits.sizes()));
  require_arg(at::isIntegralType(labels.scalar_type(), false),
              where + ": the labels must hold integer token ids, got " + c10::toString(labels.scalar_type()));
  require_arg(labels.sizes() == logits.sizes().slice(0, logits.dim() - 1),
              where + ": the labels must have shape " + c10::str(logits.sizes().slice(0, logits.dim() - 1)) +
                  " (the logits' without the vocabulary), got " + c10::str(labels.sizes()));
  const int64_t vocab = logits.size(-1), length = logits.size(-2);
  at::Tensor shifted_logits = logits.narrow(-2, 0, length - 1).reshape({-1, vocab});
  at::Tensor shifted_labels = labels.narrow(-1, 1, length - 1).reshape({-1}).to(at::kLong);
  check_class_range(where, shifted_labels, vocab, options.ignore_index);
  return at::cross_entropy_loss(shifted_logits, shifted_labels, {}, at::Reduction::Mean, options.ignore_index,
                                options.label_smoothing);
}

at::Tensor compute_loss(LossKind kind, const at::Tensor& input, const at::Tensor& target_in,
                        const LossOptions& options) {
  const char* name = loss_name(kind);
  require_arg(input.defined() && target_in.defined(), std::string(name) + ": input or target is undefined");
  check_options(name, kind, options);
  at::Tensor target = target_in.device() == input.device() ? target_in : target_in.to(input.device());
  try {
    switch (kind) {
      case LossKind::CrossEntropy:
        check_class_targets(name, input, target);
        check_class_range(name, target, input.size(1), options.ignore_index);
        return at::cross_entropy_loss(input, target, {}, at::Reduction::Mean, options.ignore_index,
                                      options.label_smoothing);
      case LossKind::Nll:
        check_class_targets(name, input, target);
        check_class_range(name, target, input.size(1), options.ignore_index);
        return at::nll_loss(input, target, {}, at::Reduction::Mean, options.ignore_index);
      case LossKind::Mse:
        check_same_shape(name, input, target);
        return at::mse_loss(input, target.to(input.scalar_type()));
      case LossKind::BceWithLogits:
        check_same_shape(name, input, target);
        return at::binary_cross_entropy_with_logits(input, target.to(input.scalar_type()));
      case LossKind::CausalLm: return causal_lm_loss(input, target, options, name);
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string message = e.what();
    fail(ErrorCode::InvalidArgument, std::string(name) + ": " + message.substr(0, message.find('\n')));
  }
  fail(ErrorCode::InvalidArgument, "unknown loss kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace accel
