// The optional top-level "init" of a JSON model spec: GPT-2's initialisation
// (transformers' GPT2PreTrainedModel._init_weights) instead of PyTorch's
// per-layer defaults, so a GPT written in JSON starts where transformers' does.
#pragma once

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include <cstdint>
#include <optional>

namespace accel::detail {

struct InitSpec {
  double std = 0.02;
  uint64_t seed = 0;
};

// Reads and removes "init" from an object spec ({"layers": ...} or a graph),
// so the builders see only their own keys. InvalidArgument naming the key or
// value for anything but {"std": >0 finite, "seed": non-negative integer}.
std::optional<InitSpec> take_init_spec(nlohmann::json& spec);

// Linear, Embedding, PositionalEmbedding and MultiheadAttention weights (at any
// depth) ~ N(0, std) drawn from a generator seeded with `seed`, in
// registration order; their biases 0; an Embedding's padding_idx row 0. Other
// layers keep PyTorch's initialisation (LayerNorm's is already GPT-2's).
void apply_init(torch::nn::Module& root, const InitSpec& init);

}  // namespace accel::detail
