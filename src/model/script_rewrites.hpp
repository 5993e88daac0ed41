// Graph rewrites applied to a TorchScript model when it is loaded. The graph
// executor's own optimisations stay off (they slow training on LibTorch 1.13's
// CPU, see script_model.cpp); these rewrites are the few that pay on their own.
#pragma once

#include <cstddef>

namespace torch::jit {
struct Module;
}

namespace accel::detail {

// Replaces the tanh approximation of GELU written out elementwise (transformers'
// NewGELUActivation, GPT-2's "gelu_new": 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))),
// eight kernels forward and more backward) by aten::gelu(x, approximate="tanh"),
// one kernel each way and the same formula (results differ by float rounding,
// at most a few 1e-7). Only a chain whose constants are exactly these values is
// replaced. Runs over every method of the module and its submodules, in place,
// before the first forward; returns how many chains were replaced.
std::size_t fuse_tanh_gelu(torch::jit::Module& module);

}  // namespace accel::detail
