// The CPU kernels of libaccel::masked_softmax and libaccel::scaled_softmax
// (eltwise/masked_softmax_op.hpp): the attention softmax of GPT-2,
// softmax(where(causal, scores / d, mask_value) + attention_mask), and of
// Llama and its kin, softmax(scores * scale + mask), over the last dimension,
// forward and backward, one row at a time in two passes each way where ATen's
// chain takes five to seven kernels and as many tensors. Compiled for AVX-512, AVX2 and baseline x86-64, chosen at load
// by the CPU (GCC's target_clones); the arithmetic is 16 floats wide in each.
#pragma once

#include <cstdint>

namespace accel::detail::masked_softmax {

// One problem: `rows` rows of `length` scores, the rows numbered over the
// first three dimensions [b, h, t] of a [B, H, T, length] tensor.
struct Rows {
  int64_t rows = 0, length = 0;
  int64_t heads = 1, queries = 1;  // H and T, to find a row's b, h, t
  // The scores, contiguous: float32, or bfloat16 bits when bfloat16.
  const void* scores = nullptr;
  bool bfloat16 = false;
  // The scores are divided by `factor` (GPT-2), or multiplied by it when
  // `multiply` (Llama), in their own dtype as the chain does.
  float factor = 1;
  bool multiply = false;
  float mask_value = 0;
  // causal[b, h, t, j] at causal + b*causal_stride[0] + h*causal_stride[1] +
  // t*causal_stride[2] + j (strides of the mask expanded to the scores' shape;
  // 0 where it broadcasts; the last stride is 1); nullptr when none (Llama's
  // causal mask is in the additive one).
  const bool* causal = nullptr;
  int64_t causal_stride[3] = {0, 0, 0};
  // The additive mask, float32, strided the same way; nullptr when none.
  const float* additive = nullptr;
  int64_t additive_stride[3] = {0, 0, 0};
};

// y (contiguous float32 [rows, length]) for rows [begin, end).
void forward(const Rows& problem, float* y, int64_t begin, int64_t end);

// The scores' gradient for rows [begin, end): causal ? y (dy - sum(dy y)) / d
// : 0 (times the factor when `multiply`; everywhere without a causal mask),
// in the scores' dtype (bfloat16 bits when bfloat16, rounded twice as the
// chain's backward rounds it: after the softmax and after the scaling).
// problem.scores and problem.additive are not read.
// dy and y are contiguous float32 [rows, length]; so is grad (or bfloat16).
void backward(const Rows& problem, const float* dy, const float* y, void* grad, int64_t begin, int64_t end);

}  // namespace accel::detail::masked_softmax
