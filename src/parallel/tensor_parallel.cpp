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

at::Tensor summed(const at::Tensor& tensor, ProcessGroup& group, const char* op) {
  // Gloo has no 16-bit float sums (mixed precision's activations on a CPU):
  // those add in float32, rounded once at the end. NCCL sums them as they are.
  const bool widen =
      tensor.device().is_cpu() && (tensor.scalar_type() == at::kBFloat16 || tensor.scalar_type() == at::kHalf);
  at::Tensor sum = widen ? tensor.to(at::kFloat) : tensor.contiguous().clone();
  group.allreduce(sum, op);
  return widen ? sum.to(tensor.scalar_type()) : sum;
}

at::Tensor gathered_last_dim(const at::Tensor& tensor, ProcessGroup& group) {
  std::vector<at::Tensor> parts = group.allgather(tensor.contiguous(), "tensor parallel all-gather");
  return at::cat(parts, -1);
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
  return unshard(group.allgather(shard.detach().contiguous(), "tensor parallel gather of " + name), split);
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
