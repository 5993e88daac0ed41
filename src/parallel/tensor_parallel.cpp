#include "parallel/tensor_parallel.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "accel/error.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

ProcessGroup& group_of(AutogradContext* ctx) {
  return *reinterpret_cast<ProcessGroup*>(ctx->saved_data.at("group").toInt());
}

void remember(AutogradContext* ctx, ProcessGroup* group) {
  ctx->saved_data["group"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(group));
}

// Gloo has no 16-bit float sums (mixed precision's activations on a CPU):
// those add in float32, rounded once at the end. NCCL sums them as they are.
bool sums_in_float32(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && (tensor.scalar_type() == at::kBFloat16 || tensor.scalar_type() == at::kHalf);
}

at::Tensor summed(const at::Tensor& tensor, ProcessGroup& group, const char* op) {
  const bool widen = sums_in_float32(tensor);
  at::Tensor sum = widen ? tensor.to(at::kFloat) : tensor.contiguous().clone();
  group.allreduce(sum, op);
  return widen ? sum.to(tensor.scalar_type()) : sum;
}

// Every rank's tensor. Gloo gathers no bfloat16 (mixed precision's
// activations on a CPU): those travel as float16 bits, which a gather only copies.
std::vector<at::Tensor> gathered(const at::Tensor& tensor, ProcessGroup& group, const char* op) {
  const bool as_bits = tensor.device().is_cpu() && tensor.scalar_type() == at::kBFloat16;
  std::vector<at::Tensor> parts =
      group.allgather(as_bits ? tensor.contiguous().view(at::kHalf) : tensor.contiguous(), op);
  if (as_bits) {
    for (at::Tensor& part : parts) part = part.view(tensor.scalar_type());
  }
  return parts;
}

at::Tensor gathered_last_dim(const at::Tensor& tensor, ProcessGroup& group) {
  return at::cat(gathered(tensor, group, "tensor parallel all-gather"), -1);
}

struct CopyToGroup : torch::autograd::Function<CopyToGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    return input;  // an output that is an input: autograd records it as a view of it
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed(grads[0], group_of(ctx), "tensor parallel input gradient (all-reduce)"), at::Tensor()};
  }
};

struct ReduceFromGroup : torch::autograd::Function<ReduceFromGroup> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& input, ProcessGroup* group) {
    return summed(input, *group, "tensor parallel partial sums (all-reduce)");
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], at::Tensor()}; }
};

struct GatherFromGroup : torch::autograd::Function<GatherFromGroup> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    ctx->saved_data["width"] = input.size(-1);
    return gathered_last_dim(input, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const int64_t width = ctx->saved_data.at("width").toInt();
    const int64_t rank = group_of(ctx).rank();
    return {grads[0].narrow(-1, rank * width, width).contiguous(), at::Tensor()};
  }
};

// Sequence parallelism's blocks: dim 1 of [N, L, ...] cut into group-size
// equal blocks, this rank's block being [rank * L/size, (rank + 1) * L/size).
at::Tensor sequence_block(const at::Tensor& whole, ProcessGroup& group) {
  const int64_t block = whole.size(1) / group.world_size();
  return whole.narrow(1, group.rank() * block, block).contiguous();
}

at::Tensor gathered_sequence(const at::Tensor& block, ProcessGroup& group) {
  return at::cat(gathered(block, group, "sequence parallel all-gather"), 1);
}

// The sum over the group of every rank's whole `partial`, this rank's block of it.
at::Tensor summed_sequence_block(const at::Tensor& partial, ProcessGroup& group) {
  const bool widen = sums_in_float32(partial);
  // Sequence first, so that each rank's block is one contiguous run.
  at::Tensor flat = (widen ? partial.to(at::kFloat) : partial).transpose(0, 1).contiguous().view(-1);
  std::vector<int64_t> shape = partial.transpose(0, 1).sizes().vec();
  shape[0] /= group.world_size();
  at::Tensor mine = group.reduce_scatter(flat, "sequence parallel reduce-scatter").view(shape).transpose(0, 1);
  return (widen ? mine.to(partial.scalar_type()) : mine).contiguous();
}

struct ScatterToSequence : torch::autograd::Function<ScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    return sequence_block(input, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gathered_sequence(grads[0], group_of(ctx)), at::Tensor()};
  }
};

struct GatherFromSequence : torch::autograd::Function<GatherFromSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    return gathered_sequence(input, *group);
  }
  // Read by whole computation, the gradient is the whole one on every rank: this rank's block of it.
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {sequence_block(grads[0], group_of(ctx)), at::Tensor()};
  }
};

struct ReduceScatterToSequence : torch::autograd::Function<ReduceScatterToSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    return summed_sequence_block(input, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {gathered_sequence(grads[0], group_of(ctx)), at::Tensor()};
  }
};

struct AllGatherSequence : torch::autograd::Function<AllGatherSequence> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, ProcessGroup* group) {
    remember(ctx, group);
    return gathered_sequence(input, *group);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {summed_sequence_block(grads[0], group_of(ctx)), at::Tensor()};
  }
};

// Megatron's column-parallel Linear under sequence parallelism: the blocks
// gathered, then the product; only the block is kept for backward, which
// gathers it again for the weight's gradient and reduce-scatters the input's.
struct GatheredColumnParallelLinear : torch::autograd::Function<GatheredColumnParallelLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& block, const at::Tensor& weight,
                            const at::Tensor& bias, ProcessGroup* group) {
    remember(ctx, group);
    ctx->save_for_backward({block, weight});
    ctx->saved_data["bias"] = bias.defined();
    return at::linear(gathered_sequence(block, *group), weight, bias);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    ProcessGroup& group = group_of(ctx);
    const auto saved = ctx->get_saved_variables();
    // Autocast ran the forward's product in the gradient's dtype (bf16): so does backward.
    const at::Tensor& grad = grads[0];
    const at::Tensor whole = gathered_sequence(saved[0], group).to(grad.scalar_type());
    const at::Tensor weight = saved[1].to(grad.scalar_type());
    const at::Tensor rows = grad.reshape({-1, grad.size(-1)});
    const at::Tensor grad_weight = rows.t().mm(whole.reshape({-1, whole.size(-1)})).to(saved[1].scalar_type());
    const at::Tensor grad_bias =
        ctx->saved_data.at("bias").toBool() ? rows.sum(0).to(saved[1].scalar_type()) : at::Tensor();
    const at::Tensor grad_block = summed_sequence_block(at::matmul(grad, weight), group).to(saved[0].scalar_type());
    return {grad_block, grad_weight, grad_bias, at::Tensor()};
  }
};

// Forward: per-token losses; backward: (softmax - one-hot) * the tokens' gradients.
struct VocabParallelCrossEntropy : torch::autograd::Function<VocabParallelCrossEntropy> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& logits, const at::Tensor& labels, int64_t start,
                            int64_t ignore_index, ProcessGroup* group) {
    const int64_t width = logits.size(-1);
    // The maximum over every rank's columns, for a stable exponent.
    at::Tensor local_max = std::get<0>(logits.max(-1)).contiguous();
    at::Tensor global_max = at::stack(group->allgather(local_max, "vocab parallel cross-entropy (max)")).amax(0);
    at::Tensor shifted = logits - global_max.unsqueeze(-1);
    at::Tensor exp = shifted.exp();
    at::Tensor sum_exp = exp.sum(-1).contiguous();
    group->allreduce(sum_exp, "vocab parallel cross-entropy (sum of exponentials)");
    const at::Tensor valid = labels != ignore_index;
    const at::Tensor mine = valid & (labels >= start) & (labels < start + width);
    const at::Tensor local_target = (labels - start).masked_fill(mine.logical_not(), 0);
    at::Tensor target = shifted.gather(-1, local_target.unsqueeze(-1)).squeeze(-1).masked_fill(mine.logical_not(), 0);
    target = target.contiguous();
    group->allreduce(target, "vocab parallel cross-entropy (target logits)");
    at::Tensor loss = (sum_exp.log() - target).masked_fill(valid.logical_not(), 0);
    ctx->save_for_backward({exp / sum_exp.unsqueeze(-1), local_target, mine, valid});
    return loss;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    at::Tensor grad = saved[0].clone();
    grad.scatter_add_(-1, saved[1].unsqueeze(-1), -saved[2].to(grad.scalar_type()).unsqueeze(-1));
    grad = grad * (grads[0] * saved[3].to(grads[0].scalar_type())).unsqueeze(-1);
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor vocab_parallel_embedding(const at::Tensor& ids, const at::Tensor& local_weight, int64_t start,
                                    ProcessGroup& group) {
  const int64_t rows = local_weight.size(0);
  const at::Tensor outside = (ids < start) | (ids >= start + rows);
  at::Tensor lookup = at::embedding(local_weight, (ids - start).masked_fill(outside, 0));
  return reduce_from_tensor_parallel(lookup.masked_fill(outside.unsqueeze(-1), 0), group);
}

at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& labels, int64_t start,
                                        int64_t ignore_index, ProcessGroup& group) {
  return VocabParallelCrossEntropy::apply(logits, labels, start, ignore_index, &group);
}

at::Tensor copy_to_tensor_parallel(const at::Tensor& input, ProcessGroup& group) {
  return CopyToGroup::apply(input, &group);
}

at::Tensor reduce_from_tensor_parallel(const at::Tensor& input, ProcessGroup& group) {
  return ReduceFromGroup::apply(input, &group);
}

at::Tensor gather_from_tensor_parallel(const at::Tensor& input, ProcessGroup& group) {
  return GatherFromGroup::apply(input, &group);
}

at::Tensor scatter_to_sequence_parallel(const at::Tensor& whole, ProcessGroup& group) {
  return ScatterToSequence::apply(whole, &group);
}

at::Tensor gather_from_sequence_parallel(const at::Tensor& block, ProcessGroup& group) {
  return GatherFromSequence::apply(block, &group);
}

at::Tensor reduce_scatter_to_sequence_parallel(const at::Tensor& partial, ProcessGroup& group) {
  return ReduceScatterToSequence::apply(partial, &group);
}

at::Tensor all_gather_sequence(const at::Tensor& block, ProcessGroup& group) {
  return AllGatherSequence::apply(block, &group);
}

at::Tensor gathered_column_parallel_linear(const at::Tensor& block, const at::Tensor& weight, const at::Tensor& bias,
                                           ProcessGroup& group) {
  return GatheredColumnParallelLinear::apply(block, weight, bias, &group);
}

bool can_split(const at::Tensor& full, const TensorSplit& split, int64_t size) {
  if (split.dim >= full.dim()) return false;
  const int64_t extent = full.size(split.dim);
  return extent % split.blocks == 0 && (extent / split.blocks) % size == 0;
}

at::Tensor shard_of(const at::Tensor& full, const TensorSplit& split, int64_t size, int64_t rank) {
  std::vector<at::Tensor> parts;
  for (const at::Tensor& block : full.chunk(split.blocks, split.dim)) {
    const int64_t width = block.size(split.dim) / size;
    parts.push_back(block.narrow(split.dim, rank * width, width));
  }
  return at::cat(parts, split.dim).contiguous();
}

at::Tensor unshard(const std::vector<at::Tensor>& shards, const TensorSplit& split) {
  std::vector<std::vector<at::Tensor>> per_rank;
  for (const at::Tensor& shard : shards) per_rank.push_back(shard.chunk(split.blocks, split.dim));
  std::vector<at::Tensor> parts;
  for (int64_t b = 0; b < split.blocks; ++b) {
    for (const auto& blocks : per_rank) parts.push_back(blocks[static_cast<size_t>(b)]);
  }
  return at::cat(parts, split.dim);
}

std::vector<ShardRun> whole_runs(int64_t begin, int64_t length, int64_t shard_extent, const TensorSplit& split,
                                 int64_t size, int64_t rank) {
  const int64_t width = shard_extent / split.blocks;  // one block's share on each rank
  std::vector<ShardRun> runs;
  for (int64_t at = begin, end = begin + length; at < end;) {
    const int64_t block = at / width, within = at % width;
    const int64_t run = std::min(end - at, width - within);
    runs.push_back({at, block * width * size + rank * width + within, run});
    at += run;
  }
  return runs;
}

const TensorSplit* TensorParallelModel::split_of(const std::string& name) const {
  for (const auto& [parameter, split] : splits) {
    if (parameter == name) return &split;
  }
  return nullptr;
}

double clip_grad_norm_tensor_parallel(const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                      const TensorParallelModel& model, double max_norm, double norm_type) {
  std::vector<at::Tensor> grads;
  const bool infinite = std::isinf(norm_type);
  // In float64: the split and replicated parts are added across ranks.
  double split_part = 0.0, whole_part = 0.0;
  for (const auto& [name, parameter] : parameters) {
    const at::Tensor& grad = parameter.grad();
    if (!grad.defined()) continue;
    grads.push_back(grad);
    const double part = infinite ? grad.detach().abs().max().item<double>()
                                 : grad.detach().to(at::kDouble).abs().pow(norm_type).sum().item<double>();
    double& into = model.split_of(name) ? split_part : whole_part;
    into = infinite ? std::max(into, part) : into + part;
  }
  at::Tensor parts = at::tensor({split_part}, at::kDouble);
  ProcessGroup& group = *model.slot.group;
  double norm = 0.0;
  if (infinite) {
    for (const at::Tensor& part : group.allgather(parts, "clip_grad_norm (tensor parallel max)")) {
      split_part = std::max(split_part, part.item<double>());
    }
    norm = std::max(split_part, whole_part);
  } else {
    group.allreduce(parts, "clip_grad_norm (tensor parallel sum)");
    norm = std::pow(parts.item<double>() + whole_part, 1.0 / norm_type);
  }
  const double coefficient = max_norm / (norm + 1e-6);
  if (coefficient < 1.0) {
    torch::NoGradGuard no_grad;
    for (at::Tensor& grad : grads) grad.mul_(coefficient);
  }
  return norm;
}

at::Tensor gather_whole(const at::Tensor& shard, const TensorSplit& split, ProcessGroup& group,
                        const std::string& name) {
  const std::string op = "tensor parallel gather of " + name;
  return unshard(gathered(shard.detach(), group, op.c_str()), split);
}

at::Tensor dropout_of_block(const at::Tensor& block, double p, bool training, int64_t dim, int64_t rank, int64_t size) {
  if (!training || p == 0 || block.numel() == 0) return block;
  if (p == 1) return block * at::zeros({}, block.options());
  const int64_t d = dim < 0 ? dim + block.dim() : dim;
  std::vector<int64_t> whole = block.sizes().vec();
  whole[static_cast<size_t>(d)] *= size;
  at::Tensor noise = at::empty(whole, block.options());
  noise.bernoulli_(1 - p);
  noise.div_(1 - p);
  return block * noise.narrow(d, rank * block.size(d), block.size(d));
}

void align_generators(ProcessGroup& group, const c10::Device& device) {
  std::vector<at::Generator> generators{at::detail::getDefaultCPUGenerator()};
  if (!device.is_cpu()) generators.push_back(at::globalContext().defaultGenerator(device));
  for (at::Generator& generator : generators) {
    at::Tensor state;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      state = generator.get_state();
    }
    std::vector<at::Tensor> tensors{state.to(device)};  // NCCL carries device tensors only
    group.broadcast(tensors, 0, "tensor parallel: the generators' state");
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(tensors.front().cpu());
  }
}

}  // namespace accel::detail
