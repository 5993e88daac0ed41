// The owning pointer LibTorch hands out for an autograd Node (a gradient
// accumulator, say): std::shared_ptr in 1.13, c10::intrusive_ptr in the 2.x
// releases that moved Node onto it (2.15 has). Deduced from grad_accumulator's
// own return type, so code that keeps such a Node alive compiles with either.
#pragma once

#include <torch/csrc/autograd/variable.h>

#include <utility>

namespace accel::detail {

using AutogradNodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

}  // namespace accel::detail
