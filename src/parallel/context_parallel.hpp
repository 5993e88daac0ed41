// Context parallelism (Accelerate's ParallelismConfig cp_size, with
// cp_comm_strategy "allgather"): the sequence, dim 1 of batch-first [N, L, ...]
// activations, is cut into 2 x cp_size equal chunks, and rank r of the context-
// parallel group holds chunks r and 2 cp_size - 1 - r as its block (PyTorch's
// context_parallel balances causal attention the same way: every rank's
// queries then see about as many keys), so a step's activations are split as
// its tokens are. Work on
// tokens one at a time (embeddings, norms, linear layers, the feed-forward
// block) runs on the block as it is; attention gathers the keys and values of
// every block (their gradients reduce-scattered back) and masks by the tokens'
// positions in the whole sequence; the causal LM loss is the mean over the
// whole sequence's counted tokens.
//
// The ranks of a group hold the same parameters and their gradients are
// averaged over the group, as data parallelism's are; each rank's gradient is
// its own tokens' share of the whole gradient. So where a value leaves the
// blocks for computation every rank repeats on the whole sequence (a gathered
// output, the loss), its gradient is scaled by cp_size on the way back: the
// shares then average to the whole gradient.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace accel::detail {

class ProcessGroup;

// Where a model cut for context parallelism sends its collectives; no group:
// the model runs whole.
struct ContextParallelSlot {
  ProcessGroup* group = nullptr;
  int64_t size = 1;
  int64_t rank = 0;
  bool active() const { return group != nullptr; }
};

// One forward's cut of a sequence of `length` tokens: padded at its end to a
// multiple of 2 x the group's size, this rank's block is its two chunks of
// the padded sequence, positions [first, first + chunk) then [second, second
// + chunk). Positions at or past `length` are padding: no query reads them
// and no label counts there.
struct SequenceCut {
  int64_t length = 0;
  int64_t padded = 0;
  int64_t chunk = 0;
  int64_t first = 0, second = 0;
  int64_t groups = 1;  // the group's size
  int64_t block() const { return 2 * chunk; }
  bool set() const { return length > 0; }
};
SequenceCut cut_sequence(int64_t length, const ContextParallelSlot& slot);

// The block's positions in the whole sequence [block()] (int64).
at::Tensor block_positions(const SequenceCut& cut, const c10::Device& device);

// This rank's block of `whole` [N, length, ...]: padded with `pad` along dim 1,
// then cut. Backward (floating point): the block's gradient in place, zeros
// elsewhere.
at::Tensor context_block(const at::Tensor& whole, const SequenceCut& cut, double pad = 0.0);

// Every rank's block as an all-gather gives them ([N, padded, ...], rank by
// rank) put in the order of the sequence.
at::Tensor in_sequence_order(const at::Tensor& gathered, const SequenceCut& cut);

// Every rank's block gathered into the whole sequence [N, length, ...]
// (padding dropped), for computation every rank repeats. Backward: this
// rank's block of the gradient, times the group's size (above). Collective.
at::Tensor gather_context_blocks(const at::Tensor& block, const SequenceCut& cut, const ContextParallelSlot& slot);

// The mean over the whole sequence from each rank's sum of per-token values
// and count of counted tokens: (sum of the sums) / (sum of the counts), the
// same on every rank. Backward: the gradient over the total count, times the
// group's size (above). `count` is a float64 scalar. Collective.
at::Tensor context_parallel_mean(const at::Tensor& sum, const at::Tensor& count, const ContextParallelSlot& slot);

}  // namespace accel::detail
