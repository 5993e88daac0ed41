// The layer types of the JSON spec for sequences: Conv1d, LSTM, GRU, a learned
// PositionalEmbedding, MultiheadAttention, TransformerEncoderLayer and
// TransformerDecoderLayer. Each reads PyTorch's keyword names and defaults.
// They join the table of sequential_spec.cpp, so chains and graphs both have them.
#pragma once

#include <torch/nn/modules/container/any.h>

#include <map>
#include <string>

#include "model/layer_args.hpp"

namespace accel::detail {

// Reads and validates every argument, then builds the module.
using LayerBuilder = torch::nn::AnyModule (*)(LayerArgs&);

const std::map<std::string, LayerBuilder>& sequence_layer_builders();

}  // namespace accel::detail
