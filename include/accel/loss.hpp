// libaccel C++ API: the losses the C ABI offers (C++ users may call LibTorch's directly).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace accel {

enum class LossKind { CrossEntropy = 1, Mse = 2, Nll = 3, BceWithLogits = 4, CausalLm = 5 };

// PyTorch's CrossEntropyLoss options. Targets equal to ignore_index count for
// nothing (the mean runs over the others); label_smoothing in [0, 1] mixes the
// one-hot target with the uniform distribution.
struct LossOptions {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
};

// The mean loss of input against target. Throws InvalidArgument naming a wrong
// dtype, shape, class index or option: CrossEntropy and Nll take [N, C] scores
// and int64 [N] classes in [0, C) or ignore_index; Mse and BceWithLogits take
// floating tensors of the same shape and only the default options; Nll takes
// no label_smoothing (as PyTorch's NLLLoss); CausalLm is causal_lm_loss.
at::Tensor compute_loss(LossKind kind, const at::Tensor& input, const at::Tensor& target,
                        const LossOptions& options = {});

// Hugging Face's causal LM loss (GPT2LMHeadModel): logits [N, L, V] (or
// [L, V]) and integer labels [N, L] (or [L]); position t predicts label t + 1
// and the mean runs over the labels that are not ignore_index. The JSON
// graph's CausalLMLoss node calls this. where prefixes the error messages.
at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& labels, const LossOptions& options,
                          const std::string& where);

}  // namespace accel
