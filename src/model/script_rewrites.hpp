// Graph rewrites applied to a TorchScript model when it is loaded. The graph
// executor's own optimisations stay off (they slow training on LibTorch 1.13's
// CPU, see script_model.cpp); these rewrites are the few that pay on their own.
#pragma once

#include <cstddef>

namespace c10 {
struct Device;
}
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

// Replaces GPT-2's attention softmax as transformers' eager attention traces
// it, softmax(where(causal, (scores / d).to(float32), mask_value) [+ mask],
// -1), seven kernels each way, by libaccel::masked_softmax
// (eltwise/masked_softmax_op.hpp): two passes each way on float32 and
// bfloat16 CPU scores, the chain itself on anything else. Only a chain with
// exactly these constants (a float32 cast that neither copies nor blocks, the
// last dimension, alpha 1) is replaced, and only where its intermediate values
// have no other use. Likewise Llama's (Mistral's, Qwen2's, Gemma's),
// softmax(scores * scale + mask, -1, dtype=float32) with a tensor scale and
// mask, by libaccel::scaled_softmax. In place, before the first forward;
// returns how many chains were replaced. Probabilities differ from the chain's
// by float rounding (a few float32 ulps).
std::size_t fuse_attention_softmax(torch::jit::Module& module);

// Points every plain matrix product of every method of the module and its
// submodules (aten::addmm with beta = alpha = 1, aten::linear, aten::matmul)
// and every aten::gelu at libaccel's operator of the same meaning
// (matmul/matmul_ops.hpp, eltwise/gelu_op.hpp), which computes float32 CPU
// products, and float32 or bfloat16 CPU GELU, through oneDNN and anything else
// through the same ATen op, so the graph still runs on any device and dtype. In
// place, before the first forward (after fuse_tanh_gelu, whose GELU it then
// takes too); returns how many nodes changed. Results differ from ATen's by
// float rounding (summation order; GELU's tanh and erf approximations, a few
// float32 ulps).
std::size_t onednn_ops(torch::jit::Module& module);

// torch.jit.trace records the device it ran on as constants (the `device=` of
// an arange, a zeros, a to) and keeps small tensors it made as constants, so a
// model traced on the CPU cannot run on a GPU after Module::to. This points
// every Device constant, and every tensor constant with elements, of every
// method of the module and its submodules at `device`, in place; run it right
// after moving the module (ScriptModel does), before its first forward there.
// Returns how many constants changed.
std::size_t retarget_constants(torch::jit::Module& module, const c10::Device& device);

}  // namespace accel::detail
