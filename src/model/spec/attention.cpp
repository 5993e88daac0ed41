#include "model/spec/attention.hpp"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <cmath>
#include <limits>

#include "accel/error.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

namespace {

std::string shape_text(const at::Tensor& t) { return c10::str(t.sizes()); }

// A batch-first 3-D view of x ([N, L, E]); `unbatched` says x was [L, E].
struct BatchFirst {
  at::Tensor x;
  bool unbatched;
};

BatchFirst to_batch_first(const at::Tensor& x, bool batch_first, int64_t embed_dim, const std::string& where,
                          const char* what) {
  require_arg(x.defined(), where + ": the " + std::string(what) + " is missing");
  require_arg(x.dim() == 2 || x.dim() == 3, where + ": the " + std::string(what) +
                                                " must be [L, E] or a batch [N, L, E] / [L, N, E], got shape " +
                                                shape_text(x));
  require_arg(x.size(-1) == embed_dim, where + ": the " + std::string(what) + "'s last dim must be the model width " +
                                           std::to_string(embed_dim) + ", got shape " + shape_text(x));
  require_arg(at::isFloatingType(x.scalar_type()),
              where + ": the " + std::string(what) + " must be floating point, got " + c10::toString(x.scalar_type()));
  if (x.dim() == 2) return {x.unsqueeze(0), true};
  return {batch_first ? x : x.transpose(0, 1), false};
}

at::Tensor from_batch_first(const at::Tensor& x, bool batch_first, bool unbatched) {
  if (unbatched) return x.squeeze(0);
  return batch_first ? x : x.transpose(0, 1);
}

// A Hugging Face attention_mask (nonzero = attend) as bool [N, S], checked against the batch.
at::Tensor key_mask(const at::Tensor& mask, int64_t batch, int64_t length, bool unbatched, const std::string& where,
                    const char* what) {
  if (!mask.defined()) return mask;
  at::Tensor m = unbatched && mask.dim() == 1 ? mask.unsqueeze(0) : mask;
  require_arg(m.dim() == 2 && m.size(0) == batch && m.size(1) == length,
              where + ": the " + std::string(what) + " must have shape [" + std::to_string(batch) + ", " +
                  std::to_string(length) + "] (batch, sequence), got " + shape_text(mask));
  return m.to(at::kBool);
}

torch::nn::LayerNorm layer_norm(int64_t width, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).eps(eps));
}

// The most negative value of the scores' dtype: float's lowest would overflow
// half precision under autocast (masked_fill refuses it).
c10::Scalar lowest_of(at::ScalarType type) {
  switch (type) {
    case at::kHalf: return std::numeric_limits<c10::Half>::lowest();
    case at::kBFloat16: return std::numeric_limits<c10::BFloat16>::lowest();
    case at::kDouble: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

at::Tensor activate(const at::Tensor& x, const std::string& activation) {
  return activation == "gelu" ? at::gelu(x) : at::relu(x);
}

// Replaces the parameter's data by this rank's shard; the parameter stays the
// same tensor (optimizers and hooks made later see the shard).
void keep_shard(at::Tensor& parameter, const TensorSplit& split, const TensorParallelSlot& slot) {
  torch::NoGradGuard no_grad;
  parameter.set_data(shard_of(parameter.detach(), split, slot.size, slot.rank));
}

// A row-parallel Linear: the partial products summed over the group, then the bias once.
at::Tensor row_parallel(const at::Tensor& x, const torch::nn::Linear& linear, const TensorParallelSlot& slot) {
  at::Tensor y = reduce_from_tensor_parallel(at::linear(x, linear->weight), *slot.group);
  return linear->bias.defined() ? y + linear->bias : y;
}

// linear1 column-parallel, linear2 row-parallel (Megatron's MLP).
ParameterSplits split_mlp(torch::nn::Linear& linear1, torch::nn::Linear& linear2, int64_t width,
                          const TensorParallelSlot& slot, const std::string& where) {
  require_arg(width % slot.size == 0, where + ": tp_size " + std::to_string(slot.size) +
                                          " does not divide dim_feedforward " + std::to_string(width) +
                                          " (linear1 is split by rows, linear2 by columns)");
  keep_shard(linear1->weight, {0, 1}, slot);
  if (linear1->bias.defined()) keep_shard(linear1->bias, {0, 1}, slot);
  keep_shard(linear2->weight, {1, 1}, slot);
  ParameterSplits splits{{"linear1.weight", {0, 1}}, {"linear2.weight", {1, 1}}};
  if (linear1->bias.defined()) splits.insert(splits.begin() + 1, {"linear1.bias", {0, 1}});
  return splits;
}

at::Tensor mlp(const at::Tensor& x, torch::nn::Linear& linear1, torch::nn::Linear& linear2, torch::nn::Dropout& dropout,
               const std::string& activation, const TensorParallelSlot& slot) {
  if (!slot.active()) return linear2(dropout(activate(linear1(x), activation)));
  // This rank's features: their block of the whole layer's dropout mask.
  at::Tensor hidden = dropout_of_block(activate(linear1(copy_to_tensor_parallel(x, *slot.group)), activation),
                                       dropout->options.p(), dropout->is_training(), -1, slot.rank, slot.size);
  return row_parallel(hidden, linear2, slot);
}

}  // namespace

PositionalEmbeddingImpl::PositionalEmbeddingImpl(int64_t num_positions, int64_t embedding_dim, bool batch_first,
                                                 std::string where)
    : num_positions_(num_positions),
      embedding_dim_(embedding_dim),
      batch_first_(batch_first),
      where_(std::move(where)) {
  // nn.Embedding's initialisation, as transformers' GPT-2 wpe before its own init.
  weight = register_parameter("weight", at::empty({num_positions, embedding_dim}));
  torch::NoGradGuard no_grad;
  weight.normal_();
}

at::Tensor PositionalEmbeddingImpl::forward(const at::Tensor& input) {
  BatchFirst in = to_batch_first(input, batch_first_, embedding_dim_, where_, "input");
  const bool block = cut_ != nullptr && cut_->set();  // context parallelism: this rank's block of the sequence
  const int64_t length = block ? cut_->length : in.x.size(1);
  require_arg(length <= num_positions_, where_ + ": the sequence length " + std::to_string(length) +
                                            " is longer than the maximum, num_positions " +
                                            std::to_string(num_positions_));
  // A block's rows are its positions' (padding past the whole sequence reads
  // the last row; nothing reads its output).
  const at::Tensor rows =
      block ? weight.index_select(0, block_positions(*cut_, in.x.device()).clamp_max(num_positions_ - 1))
            : weight.slice(0, 0, length);
  return from_batch_first(in.x + rows.unsqueeze(0), batch_first_, in.unbatched);
}

MultiheadAttentionImpl::MultiheadAttentionImpl(AttentionOptions options, std::string where)
    : options_(options), where_(std::move(where)) {
  const int64_t e = options.embed_dim;
  in_proj_weight = register_parameter("in_proj_weight", at::empty({3 * e, e}));
  if (options.bias) in_proj_bias = register_parameter("in_proj_bias", at::empty({3 * e}));
  out_proj = register_module("out_proj", torch::nn::Linear(torch::nn::LinearOptions(e, e).bias(options.bias)));
  // nn.MultiheadAttention._reset_parameters.
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  if (options.bias) {
    in_proj_bias.zero_();
    out_proj->bias.zero_();
  }
}

void MultiheadAttentionImpl::use_context_parallel(const ContextParallelSlot& slot, const SequenceCut* cut) {
  context_ = slot;
  cut_ = cut;
}

ParameterSplits MultiheadAttentionImpl::split_heads(const TensorParallelSlot& slot) {
  require_arg(options_.num_heads % slot.size == 0,
              where_ + ": tp_size " + std::to_string(slot.size) + " does not divide num_heads " +
                  std::to_string(options_.num_heads) + " (attention is split by heads)");
  keep_shard(in_proj_weight, {0, 3}, slot);
  if (in_proj_bias.defined()) keep_shard(in_proj_bias, {0, 3}, slot);
  keep_shard(out_proj->weight, {1, 1}, slot);
  split_ = slot;
  ParameterSplits splits{{"in_proj_weight", {0, 3}}, {"out_proj.weight", {1, 1}}};
  if (in_proj_bias.defined()) splits.insert(splits.begin() + 1, {"in_proj_bias", {0, 3}});
  return splits;
}

at::Tensor MultiheadAttentionImpl::attend(const at::Tensor& query_in, const at::Tensor& memory_in,
                                          const at::Tensor& mask, bool causal) {
  at::Tensor query = split_.active() ? copy_to_tensor_parallel(query_in, *split_.group) : query_in;
  at::Tensor memory =
      split_.active() && memory_in.defined() ? copy_to_tensor_parallel(memory_in, *split_.group) : memory_in;
  at::Tensor out = heads_output(query, memory, mask, causal);
  return split_.active() ? row_parallel(out, out_proj, split_) : out_proj(out);
}

at::Tensor MultiheadAttentionImpl::partial_attend(const at::Tensor& qkv, const at::Tensor& mask, bool causal) {
  auto parts = qkv.chunk(3, -1);
  return at::linear(heads_attend(parts[0], parts[1], parts[2], mask, causal), out_proj->weight);
}

at::Tensor MultiheadAttentionImpl::heads_output(const at::Tensor& query, const at::Tensor& memory,
                                                const at::Tensor& mask, bool causal) {
  const int64_t e = options_.embed_dim / split_.size;
  at::Tensor q, k, v;
  if (!memory.defined()) {
    auto qkv = at::linear(query, in_proj_weight, in_proj_bias).chunk(3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
    if (context_.active()) return context_attend(q, k, v, mask, causal);
  } else {
    // Cross-attention: the query rows of the packed projection on the query,
    // the key and value rows on the memory, as PyTorch's in_projection_packed.
    at::Tensor b = in_proj_bias.defined() ? in_proj_bias : at::Tensor();
    q = at::linear(query, in_proj_weight.slice(0, 0, e), b.defined() ? b.slice(0, 0, e) : b);
    auto kv = at::linear(memory, in_proj_weight.slice(0, e), b.defined() ? b.slice(0, e) : b).chunk(2, -1);
    k = kv[0], v = kv[1];
  }
  return heads_attend(q, k, v, mask, causal);
}

at::Tensor MultiheadAttentionImpl::context_attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& mask, bool causal) {
  const SequenceCut& cut = *cut_;
  const auto kv = in_sequence_order(all_gather_sequence(at::cat({k, v}, -1), *context_.group), cut).chunk(2, -1);
  at::Tensor attend;  // [N, padded]: the mask over the whole sequence, the padding hidden
  if (mask.defined() || cut.padded > cut.length) {
    const auto flags = q.options().dtype(at::kBool);
    const at::Tensor whole = mask.defined() ? mask : at::ones({q.size(0), cut.length}, flags);
    attend = at::cat({whole, at::zeros({q.size(0), cut.padded - cut.length}, flags)}, 1);
  }
  if (!causal) return heads_attend(q, kv[0], kv[1], attend, false);
  // Each chunk of queries against the keys up to its last position: those
  // past it are hidden from all of its queries, so neither kept nor multiplied.
  std::vector<at::Tensor> outputs;
  for (const auto& [in_block, start] : {std::pair<int64_t, int64_t>{0, cut.first}, {cut.chunk, cut.second}}) {
    const int64_t keys = start + cut.chunk;
    outputs.push_back(heads_attend(q.narrow(1, in_block, cut.chunk), kv[0].narrow(1, 0, keys), kv[1].narrow(1, 0, keys),
                                   attend.defined() ? attend.narrow(1, 0, keys) : attend, true, start));
  }
  return at::cat(outputs, 1);
}

at::Tensor MultiheadAttentionImpl::heads_attend(at::Tensor q, const at::Tensor& k, const at::Tensor& v,
                                                const at::Tensor& mask, bool causal, int64_t offset) {
  // Split by heads: this rank's heads only, e / size of the width.
  const int64_t e = options_.embed_dim / split_.size, heads = options_.num_heads / split_.size, head_dim = e / heads;
  const int64_t n = q.size(0), l = q.size(1), s = k.size(1);
  auto heads_first = [&](const at::Tensor& t, int64_t len) {
    return t.reshape({n, len, heads, head_dim}).transpose(1, 2);
  };
  q = heads_first(q, l) / std::sqrt(static_cast<double>(head_dim));
  at::Tensor scores = at::matmul(q, heads_first(k, s).transpose(-2, -1));  // [N, H, L, S]
  at::Tensor hidden;
  // Query i (at position offset + i) sees keys up to its own position.
  if (causal) hidden = at::ones({l, s}, scores.options().dtype(at::kBool)).triu(1 + offset);
  if (mask.defined()) {
    at::Tensor padding = mask.logical_not().reshape({n, 1, 1, s});
    hidden = hidden.defined() ? hidden.logical_or(padding) : padding;
  }
  if (hidden.defined()) scores = scores.masked_fill(hidden, lowest_of(scores.scalar_type()));
  // Split by heads: this rank's heads' block of the whole layer's mask.
  at::Tensor weights = split_.active() ? dropout_of_block(at::softmax(scores, -1), options_.dropout, is_training(), 1,
                                                          split_.rank, split_.size)
                                       : at::dropout(at::softmax(scores, -1), options_.dropout, is_training());
  return at::matmul(weights, heads_first(v, s)).transpose(1, 2).reshape({n, l, e});
}

at::Tensor MultiheadAttentionImpl::forward(const at::Tensor& input) { return forward_with(input, {}); }

at::Tensor MultiheadAttentionImpl::forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) {
  BatchFirst in = to_batch_first(input, options_.batch_first, options_.embed_dim, where_, "input");
  at::Tensor mask = key_mask(side.empty() ? at::Tensor() : side[0], in.x.size(0), mask_length(in.x.size(1)),
                             in.unbatched, where_, "attention_mask");
  return from_batch_first(attend(in.x, at::Tensor(), mask, options_.causal), options_.batch_first, in.unbatched);
}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(TransformerLayerOptions options, std::string where)
    : options_(options), where_(std::move(where)) {
  // Registered in nn.TransformerEncoderLayer's order, so state dicts list the same keys in the same order.
  self_attn = register_module("self_attn", MultiheadAttention(AttentionOptions{options.d_model, options.nhead,
                                                                               options.dropout, true, true, false},
                                                              where_ + " self_attn"));
  linear1 = register_module("linear1", torch::nn::Linear(options.d_model, options.dim_feedforward));
  dropout = register_module("dropout", torch::nn::Dropout(options.dropout));
  linear2 = register_module("linear2", torch::nn::Linear(options.dim_feedforward, options.d_model));
  norm1 = register_module("norm1", layer_norm(options.d_model, options.layer_norm_eps));
  norm2 = register_module("norm2", layer_norm(options.d_model, options.layer_norm_eps));
  dropout1 = register_module("dropout1", torch::nn::Dropout(options.dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(options.dropout));
}

ParameterSplits TransformerEncoderLayerImpl::split_feed_forward(const TensorParallelSlot& slot) {
  ParameterSplits splits = split_mlp(linear1, linear2, options_.dim_feedforward, slot, where_);
  split_ = slot;
  return splits;
}

at::Tensor TransformerEncoderLayerImpl::feed_forward(const at::Tensor& x) {
  return dropout2(mlp(x, linear1, linear2, dropout, options_.activation, split_));
}

void TransformerEncoderLayerImpl::use_sequence_parallel() {
  // The plan's checks (model/tensor_parallel_split.cpp) came first; these cannot fail after them.
  require(split_.size > 1 && self_attn->split_slot().size > 1 && options_.batch_first, ErrorCode::Internal,
          where_ + ": sequence_parallel on a layer that is not split by heads and features, or not batch_first");
  sequence_parallel_ = true;
}

at::Tensor TransformerEncoderLayerImpl::forward_sequence_parallel(const at::Tensor& block, const at::Tensor& mask) {
  ProcessGroup& group = *split_.group;
  // The norms and the biases added to blocks see this rank's tokens only:
  // their gradients are summed over the group (Megatron's f on the
  // parameters), all six in one all-reduce of their concatenation.
  const std::vector<at::Tensor> owned{norm1->weight, norm1->bias, norm2->weight, norm2->bias, self_attn->out_proj->bias,
                                      linear2->bias};
  std::vector<at::Tensor> present;
  for (const at::Tensor& p : owned) {
    if (p.defined()) present.push_back(p.reshape({-1}));
  }
  std::vector<at::Tensor> shared(owned.size());
  if (!present.empty()) {
    const at::Tensor all = copy_to_tensor_parallel(at::cat(present), group);
    int64_t at = 0;
    for (size_t i = 0; i < owned.size(); ++i) {
      if (!owned[i].defined()) continue;
      shared[i] = all.narrow(0, at, owned[i].numel()).view(owned[i].sizes());
      at += owned[i].numel();
    }
  }
  auto norm = [&](torch::nn::LayerNorm& layer, const at::Tensor& weight, const at::Tensor& bias, const at::Tensor& x) {
    return at::layer_norm(x, layer->options.normalized_shape(), weight, bias, layer->options.eps());
  };
  // The column-parallel products take the blocks gathered (again in backward: the whole input is not kept).
  auto into_split = [&](const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
    return gathered_column_parallel_linear(x, weight, bias, group);
  };
  auto out_of_split = [&](const at::Tensor& partial, const at::Tensor& bias) {
    at::Tensor y = reduce_scatter_to_sequence_parallel(partial, group);
    return bias.defined() ? y + bias : y;
  };
  // This rank's block of the whole residual dropout's mask (the unsplit layer's).
  auto drop = [&](torch::nn::Dropout& layer, const at::Tensor& x) {
    return dropout_of_block(x, layer->options.p(), layer->is_training(), 1, split_.rank, split_.size);
  };
  auto self_attention = [&](const at::Tensor& x) {
    const at::Tensor qkv = into_split(x, self_attn->in_proj_weight, self_attn->in_proj_bias);
    at::Tensor partial = self_attn->partial_attend(qkv, mask, options_.causal);
    return drop(dropout1, out_of_split(partial, shared[4]));
  };
  auto feed_forward_block = [&](const at::Tensor& x) {
    at::Tensor hidden = dropout_of_block(activate(into_split(x, linear1->weight, linear1->bias), options_.activation),
                                         dropout->options.p(), dropout->is_training(), -1, split_.rank, split_.size);
    return drop(dropout2, out_of_split(at::linear(hidden, linear2->weight), shared[5]));
  };
  at::Tensor x = block;
  if (options_.norm_first) {
    x = x + self_attention(norm(norm1, shared[0], shared[1], x));
    x = x + feed_forward_block(norm(norm2, shared[2], shared[3], x));
  } else {
    x = norm(norm1, shared[0], shared[1], x + self_attention(x));
    x = norm(norm2, shared[2], shared[3], x + feed_forward_block(x));
  }
  return x;
}

at::Tensor TransformerEncoderLayerImpl::forward(const at::Tensor& input) { return forward_with(input, {}); }

at::Tensor TransformerEncoderLayerImpl::forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) {
  BatchFirst in = to_batch_first(input, options_.batch_first, options_.d_model, where_, "input");
  // Sequence parallel: the input is this rank's block of the sequence; the mask covers the whole.
  // Context parallel: the input is this rank's block; the mask covers the whole.
  const int64_t length = sequence_parallel_ ? in.x.size(1) * split_.size : self_attn->mask_length(in.x.size(1));
  at::Tensor mask =
      key_mask(side.empty() ? at::Tensor() : side[0], in.x.size(0), length, in.unbatched, where_, "attention_mask");
  if (sequence_parallel_) return from_batch_first(forward_sequence_parallel(in.x, mask), true, in.unbatched);
  auto self_attention = [&](const at::Tensor& x) {
    return dropout1(self_attn->attend(x, at::Tensor(), mask, options_.causal));
  };
  at::Tensor x = in.x;
  if (options_.norm_first) {
    x = x + self_attention(norm1(x));
    x = x + feed_forward(norm2(x));
  } else {
    x = norm1(x + self_attention(x));
    x = norm2(x + feed_forward(x));
  }
  return from_batch_first(x, options_.batch_first, in.unbatched);
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(TransformerLayerOptions options, std::string where)
    : options_(options), where_(std::move(where)) {
  AttentionOptions attention{options.d_model, options.nhead, options.dropout, true, true, false};
  self_attn = register_module("self_attn", MultiheadAttention(attention, where_ + " self_attn"));
  multihead_attn = register_module("multihead_attn", MultiheadAttention(attention, where_ + " multihead_attn"));
  linear1 = register_module("linear1", torch::nn::Linear(options.d_model, options.dim_feedforward));
  dropout = register_module("dropout", torch::nn::Dropout(options.dropout));
  linear2 = register_module("linear2", torch::nn::Linear(options.dim_feedforward, options.d_model));
  norm1 = register_module("norm1", layer_norm(options.d_model, options.layer_norm_eps));
  norm2 = register_module("norm2", layer_norm(options.d_model, options.layer_norm_eps));
  norm3 = register_module("norm3", layer_norm(options.d_model, options.layer_norm_eps));
  dropout1 = register_module("dropout1", torch::nn::Dropout(options.dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(options.dropout));
  dropout3 = register_module("dropout3", torch::nn::Dropout(options.dropout));
}

ParameterSplits TransformerDecoderLayerImpl::split_feed_forward(const TensorParallelSlot& slot) {
  ParameterSplits splits = split_mlp(linear1, linear2, options_.dim_feedforward, slot, where_);
  split_ = slot;
  return splits;
}

at::Tensor TransformerDecoderLayerImpl::feed_forward(const at::Tensor& x) {
  return dropout3(mlp(x, linear1, linear2, dropout, options_.activation, split_));
}

at::Tensor TransformerDecoderLayerImpl::forward(const at::Tensor& input) { return forward_with(input, {}); }

at::Tensor TransformerDecoderLayerImpl::forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) {
  require_arg(!side.empty() && side[0].defined(),
              where_ + ": needs the encoder's memory as its second input (\"input\": [target, memory, ...])");
  BatchFirst tgt = to_batch_first(input, options_.batch_first, options_.d_model, where_, "target");
  BatchFirst memory = to_batch_first(side[0], options_.batch_first, options_.d_model, where_, "memory");
  require_arg(tgt.unbatched == memory.unbatched && tgt.x.size(0) == memory.x.size(0),
              where_ + ": the target " + shape_text(input) + " and the memory " + shape_text(side[0]) +
                  " must have the same batch size");
  const int64_t n = tgt.x.size(0);
  at::Tensor tgt_mask = key_mask(side.size() > 1 ? side[1] : at::Tensor(), n, tgt.x.size(1), tgt.unbatched, where_,
                                 "target attention_mask");
  at::Tensor memory_mask = key_mask(side.size() > 2 ? side[2] : at::Tensor(), n, memory.x.size(1), tgt.unbatched,
                                    where_, "memory attention_mask");
  auto self_attention = [&](const at::Tensor& x) {
    return dropout1(self_attn->attend(x, at::Tensor(), tgt_mask, options_.causal));
  };
  auto cross_attention = [&](const at::Tensor& x) {
    return dropout2(multihead_attn->attend(x, memory.x, memory_mask, false));
  };
  at::Tensor x = tgt.x;
  if (options_.norm_first) {
    x = x + self_attention(norm1(x));
    x = x + cross_attention(norm2(x));
    x = x + feed_forward(norm3(x));
  } else {
    x = norm1(x + self_attention(x));
    x = norm2(x + cross_attention(x));
    x = norm3(x + feed_forward(x));
  }
  return from_batch_first(x, options_.batch_first, tgt.unbatched);
}

}  // namespace accel::detail
