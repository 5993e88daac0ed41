#include "parallel/context_parallel.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <vector>

#include "parallel/tensor_parallel.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity forward; backward the gradient times `factor`.
struct ScaleGradient : torch::autograd::Function<ScaleGradient> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, int64_t factor) {
    ctx->saved_data["factor"] = factor;
    return input;  // autograd records an output that is an input as a view of it
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * static_cast<double>(ctx->saved_data.at("factor").toInt()), at::Tensor()};
  }
};

struct ContextParallelMean : torch::autograd::Function<ContextParallelMean> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& sum, const at::Tensor& count, ProcessGroup* group) {
    // float64 on the wire: the sums of a few ranks' float32 sums round once, at the end.
    at::Tensor totals =
        at::stack({sum.detach().to(at::kDouble).reshape({}), count.to(sum.device(), at::kDouble).reshape({})});
    group->allreduce(totals, "context parallel loss (sum and count)");
    const at::Tensor total_count = totals[1];
    ctx->saved_data["size"] = static_cast<int64_t>(group->world_size());
    ctx->save_for_backward({total_count});
    return (totals[0] / total_count).to(sum.scalar_type());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor total_count = ctx->get_saved_variables()[0];
    const double size = static_cast<double>(ctx->saved_data.at("size").toInt());
    const at::Tensor grad = (grads[0].to(at::kDouble) * size / total_count).to(grads[0].scalar_type());
    return {grad, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

SequenceCut cut_sequence(int64_t length, const ContextParallelSlot& slot) {
  SequenceCut cut;
  cut.length = length;
  cut.groups = slot.size;
  cut.chunk = (length + 2 * slot.size - 1) / (2 * slot.size);
  cut.padded = cut.chunk * 2 * slot.size;
  cut.first = cut.chunk * slot.rank;
  cut.second = cut.chunk * (2 * slot.size - 1 - slot.rank);
  return cut;
}

at::Tensor block_positions(const SequenceCut& cut, const c10::Device& device) {
  const auto options = at::TensorOptions().dtype(at::kLong).device(device);
  return at::cat(
      {at::arange(cut.first, cut.first + cut.chunk, options), at::arange(cut.second, cut.second + cut.chunk, options)});
}

at::Tensor in_sequence_order(const at::Tensor& gathered, const SequenceCut& cut) {
  // Chunk j of the sequence is rank j's first (j < size) or rank 2 size - 1 - j's second.
  std::vector<at::Tensor> chunks;
  for (int64_t j = 0; j < 2 * cut.groups; ++j) {
    const bool first = j < cut.groups;
    const int64_t rank = first ? j : 2 * cut.groups - 1 - j;
    chunks.push_back(gathered.narrow(1, rank * cut.block() + (first ? 0 : cut.chunk), cut.chunk));
  }
  return at::cat(chunks, 1);
}

at::Tensor context_block(const at::Tensor& whole, const SequenceCut& cut, double pad) {
  at::Tensor padded = whole;
  if (cut.padded > whole.size(1)) {
    // constant_pad_nd's list runs from the last dimension: (0, 0) for each after dim 1.
    std::vector<int64_t> widths(static_cast<size_t>(2 * (whole.dim() - 1)), 0);
    widths.back() = cut.padded - whole.size(1);
    padded = at::constant_pad_nd(whole, widths, pad);
  }
  return at::cat({padded.narrow(1, cut.first, cut.chunk), padded.narrow(1, cut.second, cut.chunk)}, 1);
}

at::Tensor gather_context_blocks(const at::Tensor& block, const SequenceCut& cut, const ContextParallelSlot& slot) {
  const at::Tensor scaled = ScaleGradient::apply(block, slot.size);
  return in_sequence_order(gather_from_sequence_parallel(scaled, *slot.group), cut).narrow(1, 0, cut.length);
}

at::Tensor context_parallel_mean(const at::Tensor& sum, const at::Tensor& count, const ContextParallelSlot& slot) {
  return ContextParallelMean::apply(sum, count, slot.group);
}

}  // namespace accel::detail
