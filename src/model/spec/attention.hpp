// The attention layers of the JSON model spec, with PyTorch 1.13's parameter
// names and initialisation (nn.MultiheadAttention, nn.TransformerEncoderLayer,
// nn.TransformerDecoderLayer), plus a learned positional embedding.
//
// LibTorch's C++ versions of these modules lack batch_first and norm_first and
// take PyTorch's inverted key_padding_mask, so these are written here over ATen.
// Masks follow Hugging Face: an attention_mask holds 1 (or true) for tokens to
// attend to and 0 for padding; `causal` hides later positions (a GPT block).
// Masked scores are filled with the dtype's lowest value, as transformers does,
// not -inf: a row with no visible key then averages instead of turning NaN.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

#include "parallel/context_parallel.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

// A layer that takes extra inputs beside the tensor it transforms (masks, an
// encoder's memory). Chains and graph nodes hand it their side inputs;
// undefined tensors stand for inputs not given.
class SideInputs {
 public:
  virtual ~SideInputs() = default;
  virtual at::Tensor forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) = 0;
  // How many side inputs the layer reads, and what they are (for errors and docs).
  virtual size_t max_side_inputs() const = 0;
};

// Adds weight[arange(L)] to its input: [N, L, E] (batch_first), [L, N, E] or [L, E].
class PositionalEmbeddingImpl : public torch::nn::Module {
 public:
  PositionalEmbeddingImpl(int64_t num_positions, int64_t embedding_dim, bool batch_first, std::string where);
  at::Tensor forward(const at::Tensor& input);
  // Context parallelism: the input is this rank's block of the sequence,
  // which `cut` (the graph's, set for each forward) places in the whole.
  void use_context_parallel(const SequenceCut* cut) { cut_ = cut; }
  bool batch_first() const { return batch_first_; }

  at::Tensor weight;

 private:
  const SequenceCut* cut_ = nullptr;
  int64_t num_positions_;
  int64_t embedding_dim_;
  bool batch_first_;
  std::string where_;
};
TORCH_MODULE(PositionalEmbedding);

struct AttentionOptions {
  int64_t embed_dim;
  int64_t num_heads;
  double dropout = 0.0;
  bool bias = true;
  bool batch_first = false;
  bool causal = false;
};

// Self-attention (query = key = value) with nn.MultiheadAttention's parameters:
// in_proj_weight [3E, E], in_proj_bias [3E], out_proj.{weight,bias}. Side input:
// the attention_mask [N, S]. Returns the attention output only (no weights).
class MultiheadAttentionImpl : public torch::nn::Module, public SideInputs {
 public:
  MultiheadAttentionImpl(AttentionOptions options, std::string where);
  at::Tensor forward(const at::Tensor& input);
  at::Tensor forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) override;
  size_t max_side_inputs() const override { return 1; }

  // The core on batch-first 3-D tensors: query [N, L, E] attends to memory
  // [N, S, E] (undefined: to itself); key_mask [N, S] (undefined: all keys).
  at::Tensor attend(const at::Tensor& query, const at::Tensor& memory, const at::Tensor& key_mask, bool causal);
  // Split by heads under sequence parallelism: self-attention over this
  // rank's heads from their packed projections `qkv` [N, L, 3E / size] of
  // the whole (gathered) sequence, through out_proj's columns without its
  // bias: this rank's partial sums, which the caller reduce-scatters into
  // sequence blocks before adding the bias.
  at::Tensor partial_attend(const at::Tensor& qkv, const at::Tensor& key_mask, bool causal);

  // Tensor parallelism by heads (the plan's "colwise" on this module with
  // "rowwise" on its out_proj): keeps this rank's num_heads / size heads of q,
  // k and v (rows of the packed in_proj, TensorSplit{0, 3}) and the matching
  // columns of out_proj, whose partial outputs are summed over the group
  // before its bias, kept whole, is added. InvalidArgument naming the layer
  // when size does not divide num_heads; nothing changes then.
  ParameterSplits split_heads(const TensorParallelSlot& slot);
  // Context parallelism (parallel/context_parallel.hpp): self-attention of
  // this rank's block of queries over the whole sequence's keys and values,
  // gathered from every rank's block; masks cover the whole sequence. `cut`
  // is the graph's, set for each forward.
  void use_context_parallel(const ContextParallelSlot& slot, const SequenceCut* cut);
  // The length a mask must have: the whole sequence's under context parallelism.
  int64_t mask_length(int64_t input_length) const { return context_.active() ? cut_->length : input_length; }
  int64_t num_heads() const { return options_.num_heads; }
  bool batch_first() const { return options_.batch_first; }
  double dropout() const { return options_.dropout; }
  const TensorParallelSlot& split_slot() const { return split_; }

  at::Tensor in_proj_weight;
  at::Tensor in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  // Softmax(q k^T / sqrt(d)) v of this rank's heads, [N, L, E / size], before out_proj.
  at::Tensor heads_output(const at::Tensor& query, const at::Tensor& memory, const at::Tensor& key_mask, bool causal);
  // The same from the projections q [N, L, E / size], k and v [N, S, E / size].
  // `offset`: the queries' first position in the keys' sequence (context parallelism).
  at::Tensor heads_attend(at::Tensor q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                          bool causal, int64_t offset = 0);
  // Context parallelism: attention of the block's projections q, k, v over every block's keys and values.
  at::Tensor context_attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& key_mask,
                            bool causal);

  AttentionOptions options_;
  std::string where_;
  TensorParallelSlot split_;
  ContextParallelSlot context_;
  const SequenceCut* cut_ = nullptr;
};
TORCH_MODULE(MultiheadAttention);

struct TransformerLayerOptions {
  int64_t d_model;
  int64_t nhead;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
  bool causal = false;
};

// nn.TransformerEncoderLayer. Side input: the attention_mask [N, S].
class TransformerEncoderLayerImpl : public torch::nn::Module, public SideInputs {
 public:
  TransformerEncoderLayerImpl(TransformerLayerOptions options, std::string where);
  at::Tensor forward(const at::Tensor& input);
  at::Tensor forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) override;
  size_t max_side_inputs() const override { return 1; }

  // Tensor parallelism of the feed-forward block (the plan's "colwise" on
  // linear1, "rowwise" on linear2): rows of linear1, columns of linear2, the
  // partial sums added over the group before linear2's bias. InvalidArgument
  // naming the layer when size does not divide dim_feedforward.
  ParameterSplits split_feed_forward(const TensorParallelSlot& slot);
  // Sequence parallelism (the plan's "sequence_parallel" on norm1 and norm2),
  // once split by heads and features: the layer takes and returns this rank's
  // block of the sequence (tensor_parallel.hpp), the norms, residual adds and
  // dropouts run on blocks, and the split products see the gathered sequence.
  // The plan checks that the layer is split and batch_first before (Internal otherwise).
  void use_sequence_parallel();
  // Context parallelism: the layer takes and returns this rank's block of the
  // sequence; its self-attention reads every block (MultiheadAttention's).
  void use_context_parallel(const ContextParallelSlot& slot, const SequenceCut* cut) {
    self_attn->use_context_parallel(slot, cut);
  }
  bool batch_first() const { return options_.batch_first; }

 private:
  at::Tensor feed_forward(const at::Tensor& x);
  at::Tensor forward_sequence_parallel(const at::Tensor& block, const at::Tensor& mask);

  TransformerLayerOptions options_;
  std::string where_;
  TensorParallelSlot split_;
  bool sequence_parallel_ = false;
  MultiheadAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
};
TORCH_MODULE(TransformerEncoderLayer);

// nn.TransformerDecoderLayer. Side inputs: memory [N, S, E] (required), the
// target's attention_mask [N, L], the memory's attention_mask [N, S].
class TransformerDecoderLayerImpl : public torch::nn::Module, public SideInputs {
 public:
  TransformerDecoderLayerImpl(TransformerLayerOptions options, std::string where);
  at::Tensor forward(const at::Tensor& input);
  at::Tensor forward_with(const at::Tensor& input, const std::vector<at::Tensor>& side) override;
  size_t max_side_inputs() const override { return 3; }

  // As TransformerEncoderLayer's.
  ParameterSplits split_feed_forward(const TensorParallelSlot& slot);

 private:
  at::Tensor feed_forward(const at::Tensor& x);

  TransformerLayerOptions options_;
  std::string where_;
  TensorParallelSlot split_;
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
};
TORCH_MODULE(TransformerDecoderLayer);

}  // namespace accel::detail
