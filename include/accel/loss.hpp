// libaccel C++ API: the losses the C ABI offers (C++ users may call LibTorch's directly).
#pragma once

#include <ATen/core/Tensor.h>

namespace accel {

enum class LossKind { CrossEntropy = 1, Mse = 2, Nll = 3, BceWithLogits = 4 };

// The mean loss of input against target. Throws InvalidArgument naming a wrong
// dtype or shape: CrossEntropy and Nll take [N, C] scores and int64 [N] classes;
// Mse and BceWithLogits take floating tensors of the same shape.
at::Tensor compute_loss(LossKind kind, const at::Tensor& input, const at::Tensor& target);

}  // namespace accel
