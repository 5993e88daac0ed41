// Float32 and bfloat16 matrix products on the CPU through oneDNN's matmul
// primitive (the oneDNN LibTorch itself links). For float32 LibTorch 1.13
// calls OpenBLAS: on the bench machine (AVX-512) oneDNN's kernels are about 2x
// OpenBLAS's on a transformer's linear layers and 2.5-3x on its attention
// products, because OpenBLAS 0.3.21 runs its AVX2 kernels there and LibTorch's
// bmm loops over the batch (docs/benchmarks.md, "LM"). For bfloat16 LibTorch
// already calls oneDNN, but copies the bias into the output and permuted heads
// into contiguous tensors first. Here operands are read through their
// strides, so transposed and permuted views cost no copy, and the bias is
// oneDNN's.
//
// Built only when the system's oneDNN headers are found and LibTorch links that
// same libdnnl (cmake/dependencies.cmake: Debian's does; a pip LibTorch carries
// its own copy, and two copies in one process must not meet). Otherwise
// available() is false and matmul() always declines.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace accel::detail::onednn {

bool available();

// a @ b (+ bias), a: [..., M, K], b: [..., K, N] with the same number of
// dimensions and equal batch dimensions; bias: undefined or [N]. The result is
// a new contiguous [..., M, N] tensor of a's dtype. a and b are both float32
// or both bfloat16 (accumulated in float32, as ATen's bfloat16 products are),
// the bias either. Declines (nullopt, nothing computed) unless every operand
// is such a CPU tensor with positive strides that one of oneDNN's optimised
// kernels accepts; the caller then computes with ATen.
std::optional<at::Tensor> matmul(const at::Tensor& a, const at::Tensor& b, const at::Tensor& bias = {});

}  // namespace accel::detail::onednn
