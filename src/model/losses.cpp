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
  }
  return "unknown";
}

void check_class_targets(const char* name, const at::Tensor& input, const at::Tensor& target) {
  require_arg(input.dim() == 2, std::string(name) + ": input must be [N, C] scores, got shape " + c10::str(input.sizes()));
  require_arg(at::isFloatingType(input.scalar_type()),
              std::string(name) + ": input must be floating point, got " + c10::toString(input.scalar_type()));
  require_arg(target.scalar_type() == at::kLong,
              std::string(name) + ": target must be int64 class indices, got " + c10::toString(target.scalar_type()));
  require_arg(target.dim() == 1 && target.size(0) == input.size(0),
              std::string(name) + ": target must have shape [" + std::to_string(input.size(0)) + "], got " +
                  c10::str(target.sizes()));
}

void check_same_shape(const char* name, const at::Tensor& input, const at::Tensor& target) {
  require_arg(input.sizes() == target.sizes(), std::string(name) + ": input shape " + c10::str(input.sizes()) +
                                                   " differs from target shape " + c10::str(target.sizes()));
  require_arg(at::isFloatingType(input.scalar_type()) && at::isFloatingType(target.scalar_type()),
              std::string(name) + ": input and target must be floating point, got " +
                  c10::toString(input.scalar_type()) + " and " + c10::toString(target.scalar_type()));
}

}  // namespace

at::Tensor compute_loss(LossKind kind, const at::Tensor& input, const at::Tensor& target_in) {
  const char* name = loss_name(kind);
  require_arg(input.defined() && target_in.defined(), std::string(name) + ": input or target is undefined");
  at::Tensor target = target_in.device() == input.device() ? target_in : target_in.to(input.device());
  try {
    switch (kind) {
      case LossKind::CrossEntropy:
        check_class_targets(name, input, target);
        return at::cross_entropy_loss(input, target);
      case LossKind::Nll:
        check_class_targets(name, input, target);
        return at::nll_loss(input, target);
      case LossKind::Mse:
        check_same_shape(name, input, target);
        return at::mse_loss(input, target.to(input.scalar_type()));
      case LossKind::BceWithLogits:
        check_same_shape(name, input, target);
        return at::binary_cross_entropy_with_logits(input, target.to(input.scalar_type()));
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
