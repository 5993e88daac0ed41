// Tensor parallelism's building blocks (Megatron-LM's column- and row-parallel
// layers): the collectives a split layer needs in forward and backward, as
// autograd functions, and how a parameter is cut into one shard per rank of
// the tensor-parallel group and put back together.
//
// A column-parallel Linear holds rows [r*out/tp, (r+1)*out/tp) of the weight
// (and bias): its input enters through copy_to_tensor_parallel (the same
// tensor on every rank forward; the input gradients, which each rank holds a
// part of, summed backward) and its output is this rank's slice of features.
// A row-parallel Linear holds the matching columns: it takes that slice, and
// its partial products are summed by reduce_from_tensor_parallel (forward; the
// gradient passes through backward) before the bias, held whole, is added once.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace accel::detail {

class ProcessGroup;

// Megatron's f: identity forward; backward, the gradient summed over the group.
at::Tensor copy_to_tensor_parallel(const at::Tensor& input, ProcessGroup& group);
// Megatron's g: summed over the group forward; backward, the gradient as it is.
at::Tensor reduce_from_tensor_parallel(const at::Tensor& input, ProcessGroup& group);
// The ranks' slices of the last dimension, concatenated in rank order forward
// (colwise_rep's replicated output); backward, this rank's slice of the gradient.
at::Tensor gather_from_tensor_parallel(const at::Tensor& input, ProcessGroup& group);

// Sequence parallelism (Megatron-LM's, transformers' "sequence_parallel"):
// between the split products, activations (the residual stream, layer norms,
// dropout) are held as this rank's block of the sequence, dim 1 of a
// batch-first [N, L, ...] tensor (L divisible by the group's size: the
// caller checks). A split layer gathers the blocks before its column-parallel
// product and reduce-scatters its row-parallel partial sums back into blocks,
// where tensor parallelism alone all-reduces them.
//
// Into a sequence-parallel region: forward this rank's block of `whole` (the
// same on every rank); backward the blocks' gradients gathered.
at::Tensor scatter_to_sequence_parallel(const at::Tensor& whole, ProcessGroup& group);
// Out of it, into whole (unsplit) computation: forward the blocks gathered
// whole; backward this rank's block of the gradient (the same on every rank).
at::Tensor gather_from_sequence_parallel(const at::Tensor& block, ProcessGroup& group);
// Into computation that every rank runs differently on the whole (context
// parallelism's keys and values, which each rank's queries read): forward
// the blocks gathered whole; backward every rank's gradient of the whole
// summed over the group, this rank's block of it (a reduce-scatter).
at::Tensor all_gather_sequence(const at::Tensor& block, ProcessGroup& group);
// A column-parallel Linear reading blocks: the blocks gathered, then the
// product with this rank's rows of the weight (and bias). Backward, each
// rank's input gradient is its features' share: summed over the group, this
// rank's block (a reduce-scatter). Only the block is kept for backward, which
// gathers it again: the whole input, the largest activation a split layer
// reads, is not held between forward and backward (Megatron-LM does the same).
at::Tensor gathered_column_parallel_linear(const at::Tensor& block, const at::Tensor& weight, const at::Tensor& bias,
                                           ProcessGroup& group);
// A row-parallel product's partial sums: forward summed over the group, this
// rank's block (a reduce-scatter; Gloo's composition, bf16 summed in float32);
// backward the gradients gathered.
at::Tensor reduce_scatter_to_sequence_parallel(const at::Tensor& partial, ProcessGroup& group);

// A vocabulary-parallel embedding (Megatron's VocabParallelEmbedding): this
// rank holds rows [start, start + local_weight.size(0)) of the table; ids
// outside them look up zeros, and the ranks' partial lookups are summed over
// the group (every id is in exactly one rank's rows). `ids` must be in
// [0, vocabulary) (checked by the caller).
at::Tensor vocab_parallel_embedding(const at::Tensor& ids, const at::Tensor& local_weight, int64_t start,
                                    ProcessGroup& group);

// Cross-entropy over logits split by vocabulary (this rank's columns [start,
// start + V/tp) of the last dimension), without gathering them: the maximum,
// the sum of exponentials and the target's logit are reduced over the group.
// logits [T, V/tp] (float32), labels [T]; returns the per-token losses [T],
// 0 where the label is ignore_index. Backward: softmax minus the one-hot
// target, this rank's columns only. Collective over the group.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& labels, int64_t start,
                                        int64_t ignore_index, ProcessGroup& group);

// Dropout of this rank's block of an activation split along `dim` into
// group-size equal blocks (a head's attention weights, a slice of the
// feed-forward features): the mask is drawn for the whole activation, as the
// unsplit layer draws it (at::dropout's bernoulli_ then 1/(1-p)), and this
// rank's block of it applied. Every rank of the group draws the same numbers
// (their generators are in step: prepare makes them so), so the generators
// stay in step for the dropouts on whole activations that follow, and a run
// on one data-parallel rank draws the unsplit run's masks.
at::Tensor dropout_of_block(const at::Tensor& block, double p, bool training, int64_t dim, int64_t rank, int64_t size);

// Puts the default generators (the CPU's, and `device`'s when it is not the
// CPU) of every rank of the group in the state of the group's first rank, so
// dropout draws the same masks on all of them (PyTorch's DTensor syncs its
// seed over the mesh likewise). Collective over the group.
void align_generators(ProcessGroup& group, const c10::Device& device);

// How a parameter is split over a tensor-parallel group: along `dim`, within
// each of `blocks` equal blocks. A packed q, k, v projection ([3E, E]) has 3
// blocks, so every rank holds the same heads of each of q, k and v.
struct TensorSplit {
  int64_t dim = 0;
  int64_t blocks = 1;
};

// Whether `full` can be split `size` ways (each block's extent along dim divisible).
bool can_split(const at::Tensor& full, const TensorSplit& split, int64_t size);
// Rank `rank`'s shard of `full` (a new contiguous tensor).
at::Tensor shard_of(const at::Tensor& full, const TensorSplit& split, int64_t size, int64_t rank);
// The whole tensor from every rank's shard, in rank order (inverse of shard_of).
at::Tensor unshard(const std::vector<at::Tensor>& shards, const TensorSplit& split);

// Where a run of rank `rank`'s shard lies in the whole tensor, along
// split.dim: shard indices [shard_begin, shard_begin + length) sit at whole
// indices [whole_begin, whole_begin + length). A shard's blocks are apart in
// the whole tensor, so a run that crosses a block boundary is two or more.
struct ShardRun {
  int64_t shard_begin = 0, whole_begin = 0, length = 0;
};
// The runs that indices [begin, begin + length) of the shard make, in order;
// `shard_extent`: the shard's extent along split.dim (a multiple of split.blocks).
std::vector<ShardRun> whole_runs(int64_t begin, int64_t length, int64_t shard_extent, const TensorSplit& split,
                                 int64_t size, int64_t rank);

// Where a layer split for tensor parallelism sends its collectives; no
// group: the layer is whole.
struct TensorParallelSlot {
  ProcessGroup* group = nullptr;
  int64_t size = 1;
  int64_t rank = 0;
  bool active() const { return group != nullptr; }
};

// Parameters a split cut, by name, and how.
using ParameterSplits = std::vector<std::pair<std::string, TensorSplit>>;

// A model's tensor-parallel state once prepare has split it: where, and how
// each split parameter (by its state-dict name) was cut. Parameters not
// listed are whole (replicated) on every rank of the group.
struct TensorParallelModel {
  TensorParallelSlot slot;
  ParameterSplits splits;
  const TensorSplit* split_of(const std::string& name) const;
};

// clip_grad_norm_ of a model split for tensor parallelism: the norm of the
// whole gradients (the split parameters' slices summed over the group, the
// replicated ones counted once), the same on every rank; gradients scaled by
// max_norm / (norm + 1e-6) when that is below 1, as PyTorch does. Returns the
// norm. Collective over the tensor-parallel group.
double clip_grad_norm_tensor_parallel(const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                      const TensorParallelModel& model, double max_norm, double norm_type);

// The whole parameter from this rank's shard: an all-gather over the group.
// Collective over the tensor-parallel group.
at::Tensor gather_whole(const at::Tensor& shard, const TensorSplit& split, ProcessGroup& group,
                        const std::string& name);

}  // namespace accel::detail
