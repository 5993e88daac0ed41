// LibTorch's C++ optimizers keep per-parameter state in a map keyed by the
// parameter's TensorImpl: by its address printed as a string up to 1.x, by the
// address itself from 2.0. Code that reads or fills that map uses these two
// names, so it builds against either.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace accel::detail {

using OptimizerStates = std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>;

template <class Key = typename OptimizerStates::key_type>  // a template, so only one branch is compiled
Key optimizer_state_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream address;  // the same text LibTorch 1.x's c10::guts::to_string gives
    address << static_cast<const void*>(param.unsafeGetTensorImpl());
    return address.str();
  } else {
    return param.unsafeGetTensorImpl();
  }
}

}  // namespace accel::detail
