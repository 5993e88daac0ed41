// Applies a tensor-parallel plan (parallel/tp_plan.hpp) to a JSON-spec model's
// module tree: the transformer layers of model/spec/attention.hpp split their
// attention by heads and their feed-forward block by columns and rows.
#pragma once

#include <torch/nn/module.h>

#include <optional>

#include "model/spec/attention.hpp"
#include "parallel/tp_plan.hpp"

namespace accel::detail {

// The built-in plan for `root`: every TransformerEncoderLayer and
// TransformerDecoderLayer splits its attention ("colwise" on the attention,
// "rowwise" on its out_proj) and its feed-forward block ("colwise" linear1,
// "rowwise" linear2). Empty when the model has no such layer.
TpPlan builtin_tp_plan(torch::nn::Module& root);

// Splits `root` for rank slot.rank of a group of slot.size; returns the split
// parameters by state-dict name. Everything is checked before any parameter
// changes (InvalidArgument naming the entry, the module and what was
// expected): an entry that matches no module, two styles for one module, an
// attention "colwise" without its out_proj "rowwise" (and the reverse), a
// linear1 "colwise" without its layer's linear2 "rowwise", a size that does
// not divide the heads or dim_feedforward, a "sequence_parallel" entry that
// is not a LayerNorm node or the pair norm1/norm2 of a split, batch-first
// encoder layer of a graph. Unsupported for a style on a module libaccel
// cannot split yet (sequence_parallel in a decoder layer), and for a model
// with nothing to split. Sequence-parallel layers and LayerNorm nodes take
// and give sequence blocks (GraphModuleImpl::set_sequence_parallel).
ParameterSplits split_for_tensor_parallel(torch::nn::Module& root, const std::optional<TpPlan>& plan,
                                          const TensorParallelSlot& slot);

}  // namespace accel::detail
