#include "sharding/flat_shard.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_set>

#include "accel/error.hpp"

namespace accel::detail {

FlatShard::FlatShard(const std::vector<at::Tensor>& parameters, const std::vector<std::string>& names,
                     ProcessGroup* process_group, ShardingStrategy strategy, bool cpu_offload)
    : process_group_(process_group), strategy_(strategy), offload_(cpu_offload) {
  std::unordered_set<const void*> seen;
  for (size_t k = 0; k < parameters.size(); ++k) {
    const at::Tensor& p = parameters[k];
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    if (!params_.empty()) {
      const at::Tensor& first = params_.front();
      const std::string name = k < names.size() ? names[k] : "parameter " + std::to_string(k);
      require(p.scalar_type() == first.scalar_type() && p.device() == first.device(), ErrorCode::Unsupported,
              std::string("sharding_strategy ") + to_string(strategy) + ": parameter " + name + " is " +
                  c10::toString(p.scalar_type()) + " on " + p.device().str() + " but the first is " +
                  c10::toString(first.scalar_type()) + " on " + first.device().str() +
                  "; one flat buffer needs one dtype and device");
    }
    offsets_.push_back(total_);
    total_ += p.numel();
    params_.push_back(p);
  }
  require(!params_.empty(), ErrorCode::InvalidArgument,
          std::string("sharding_strategy ") + to_string(strategy) + ": the model has no trainable parameters");
  const int world = world_size();
  chunk_ = (total_ + world - 1) / world;
  flat_ = at::zeros({chunk_ * world}, params_.front().options().requires_grad(false));
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor& p = params_[i];
    flat_.narrow(0, offsets_[i], p.numel()).view(p.sizes()).copy_(p);
    at::Tensor grad = p.grad();
    // The parameter keeps its identity (autograd metadata, optimizer and
    // module references) and now lives in the flat buffer.
    p.set_(flat_.narrow(0, offsets_[i], p.numel()).view(p.sizes()));
    if (grad.defined() && strategy_ == ShardingStrategy::ShardGradOp) p.mutable_grad().reset();
  }
  at::Tensor mine = flat_.narrow(0, rank() * chunk_, chunk_);
  shard_ = offload_ ? at::empty({chunk_}, shard_options(mine)).copy_(mine) : mine;
  // ZeRO-1 builds its chunk's gradient only for the step (before_step): the
  // averaged full gradients already hold it between steps.
  if (strategy_ == ShardingStrategy::ShardGradOp) {
    shard_.mutable_grad() = at::zeros_like(shard_);
    in_flat_grad_.assign(params_.size(), false);
    for (size_t i = 0; i < params_.size(); ++i) {
      auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
      require(accumulator != nullptr, ErrorCode::Internal, "parameter has no gradient accumulator");
      const uintptr_t key = accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
          [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
            on_gradient_ready(i);
            return outputs;
          }));
      gradient_hooks_.emplace_back(std::move(accumulator), key);
    }
  } else if (strategy_ != ShardingStrategy::ShardOptimizer) {
    shard_.mutable_grad() = at::zeros_like(shard_);
  } else if (!offload_) {
    // The full gradients in one buffer shaped as flat_, so that the step's
    // chunk gradient is a view of it rather than a copy (sync: 49 of a
    // 390 ms step, docs/benchmarks.md). Held between steps either way.
    flat_grad_ = at::zeros_like(flat_);
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor view = flat_grad_.narrow(0, offsets_[i], params_[i].numel()).view(params_[i].sizes());
      if (params_[i].grad().defined()) view.copy_(params_[i].grad());
      params_[i].mutable_grad() = view;
      grad_views_.push_back(view);
    }
  }
}

FlatShard::~FlatShard() {
  for (auto& [accumulator, key] : gradient_hooks_) accumulator->del_post_hook(key);
}

void FlatShard::begin_backward() {
  flat_grad_ = at::Tensor();
  std::fill(in_flat_grad_.begin(), in_flat_grad_.end(), false);
}

void FlatShard::on_gradient_ready(size_t i) {
  if (!sync_enabled_) return;  // an accumulation micro-step: the gradients stay in .grad
  const at::Tensor& grad = params_[i].grad();
  if (!grad.defined()) return;
  at::NoGradGuard no_grad;
  if (!flat_grad_.defined()) flat_grad_ = at::empty_like(flat_);
  flat_grad_.narrow(0, offsets_[i], params_[i].numel()).copy_(grad.reshape(-1));
  in_flat_grad_[i] = true;
  params_[i].mutable_grad().reset();
}

bool FlatShard::gradients_in_flat_buffer() const {
  if (!flat_grad_.defined()) return false;
  for (size_t i = 0; i < params_.size(); ++i) {
    // By address: with gradient_as_bucket_view the gradient is the bucket's
    // own view of the same memory (GradientSyncOptions::gradient_home).
    const at::Tensor& grad = params_[i].grad();
    if (!grad.defined() || grad.data_ptr() != grad_views_[i].data_ptr() || grad.sizes() != grad_views_[i].sizes()) {
      return false;
    }
  }
  return true;
}

at::Tensor FlatShard::gradient_home(const at::Tensor& parameter) const {
  for (size_t i = 0; i < grad_views_.size(); ++i) {
    if (params_[i].is_same(parameter)) return grad_views_[i];
  }
  return {};
}

at::TensorOptions FlatShard::shard_options(const at::Tensor& like) const {
  at::TensorOptions options = like.options().requires_grad(false);
  if (!offload_) return options;
  // Pinned host memory: the copies to and from a CUDA device run at full speed.
  return options.device(at::kCPU).pinned_memory(like.is_cuda());
}

at::Tensor FlatShard::to_shard_device(const at::Tensor& t) const {
  return t.device() == shard_.device() ? t : t.to(shard_.device());
}

at::Tensor FlatShard::reduce_scatter(const at::Tensor& flat, const std::string& what) {
  if (process_group_ == nullptr) return flat;  // one rank: its chunk is everything
  at::Tensor input = flat;
  return process_group_->reduce_scatter(input, what);
}

void FlatShard::all_gather_into(at::Tensor& output, const at::Tensor& chunk, const std::string& what) {
  if (process_group_ != nullptr) {
    process_group_->all_gather_into(output, chunk, what);
  } else if (output.data_ptr() != chunk.data_ptr() || output.numel() != chunk.numel()) {
    output.copy_(chunk);  // else the chunk already is the whole buffer
  }
}

void FlatShard::scatter_from_full() {
  if (!offload_) return;  // shard_ is a view of the parameters
  at::NoGradGuard no_grad;
  shard_.copy_(flat_.narrow(0, rank() * chunk_, chunk_));
}

void FlatShard::reduce_scatter_gradients() {
  at::NoGradGuard no_grad;
  // Parameters tile [0, total_) in order: each range is written once (the
  // gradient, or zeros where there is none) and the padding zeroed, rather
  // than zeroing the whole buffer first (one memory pass fewer). Most ranges
  // were filled during the backward (on_gradient_ready).
  at::Tensor flat_grad = flat_grad_.defined() ? std::move(flat_grad_) : at::empty_like(flat_);
  flat_grad_ = at::Tensor();
  for (size_t i = 0; i < params_.size(); ++i) {
    if (in_flat_grad_[i]) {
      in_flat_grad_[i] = false;
      continue;
    }
    const at::Tensor& grad = params_[i].grad();
    at::Tensor range = flat_grad.narrow(0, offsets_[i], params_[i].numel());
    if (grad.defined()) {
      range.copy_(grad.reshape(-1));
    } else {
      range.zero_();
    }
  }
  flat_grad.narrow(0, total_, flat_grad.numel() - total_).zero_();
  at::Tensor mine = reduce_scatter(flat_grad, "gradient reduce-scatter");
  if (replicas_ != nullptr) replicas_->allreduce(mine, "gradient allreduce across nodes");
  // Divided after the sum, as the allreduce path divides before it: both are
  // exact for power-of-two world sizes and agree to rounding otherwise.
  shard_.mutable_grad().add_(to_shard_device(mine.div_(data_parallel_size())));
  for (auto& p : params_) p.mutable_grad().reset();
}

void FlatShard::before_step() {
  if (strategy_ != ShardingStrategy::ShardOptimizer) return;
  at::NoGradGuard no_grad;
  at::Tensor& shard_grad = shard_.mutable_grad();
  if (gradients_in_flat_buffer()) {
    shard_grad = flat_grad_.narrow(0, rank() * chunk_, chunk_);
    return;
  }
  // Each parameter's part of this chunk is written once (its gradient, or
  // zeros) and the padding past the last parameter zeroed.
  shard_grad = at::empty_like(shard_);
  const int64_t begin = rank() * chunk_, end = begin + chunk_;
  for (size_t i = 0; i < params_.size(); ++i) {
    const int64_t lo = std::max(begin, offsets_[i]), hi = std::min(end, offsets_[i] + params_[i].numel());
    if (lo >= hi) continue;
    at::Tensor target = shard_grad.narrow(0, lo - begin, hi - lo);
    const at::Tensor& grad = params_[i].grad();
    if (grad.defined()) {
      target.copy_(grad.reshape(-1).narrow(0, lo - offsets_[i], hi - lo));  // to the host when offloaded
    } else {
      target.zero_();
    }
  }
  const int64_t covered = std::clamp<int64_t>(total_ - begin, 0, chunk_);
  shard_grad.narrow(0, covered, chunk_ - covered).zero_();
}

void FlatShard::after_step() {
  at::NoGradGuard no_grad;
  // Gloo gathers through its own buffer, so the chunk may alias the output.
  at::Tensor mine = flat_.narrow(0, rank() * chunk_, chunk_);
  // Pinned memory to the device: ordered before the all-gather on the same stream.
  if (offload_) mine.copy_(shard_, /*non_blocking=*/true);
  all_gather_into(flat_, mine, "parameter all-gather");
  // ZeRO-1: the chunk's gradient copy is not kept between steps.
  if (strategy_ == ShardingStrategy::ShardOptimizer) shard_.mutable_grad().reset();
}

void FlatShard::zero_grad() {
  at::NoGradGuard no_grad;
  if (shard_.grad().defined()) shard_.mutable_grad().zero_();
  for (auto& p : params_) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
}

double FlatShard::clip_grad_norm(double max_norm, double norm_type, const at::Tensor& split_mask,
                                 ProcessGroup* tensor_parallel) {
  at::NoGradGuard no_grad;
  at::Tensor& grad = shard_.mutable_grad();
  const bool split = split_mask.defined() && tensor_parallel != nullptr;
  // [split part, whole part] (one part without tensor parallelism), on the
  // model's device: NCCL carries CUDA tensors only, and an offloaded shard is on the host.
  at::Tensor magnitude = grad.to(at::kDouble).abs();
  at::Tensor mask = split ? split_mask.to(magnitude.options()) : at::Tensor();
  double total = 0;
  if (std::isinf(norm_type)) {
    at::Tensor local =
        split ? at::stack({(magnitude * mask).max(), (magnitude * (1 - mask)).max()}) : magnitude.max().reshape({1});
    local = local.to(flat_device());
    std::vector<at::Tensor> maxima{local};
    if (process_group_ != nullptr) maxima = process_group_->allgather(local, "clip_grad_norm (max)");
    at::Tensor parts = at::stack(maxima).amax(0);
    if (split) {
      at::Tensor split_max = parts.narrow(0, 0, 1).contiguous();
      for (const at::Tensor& t : tensor_parallel->allgather(split_max, "clip_grad_norm (tensor parallel max)")) {
        total = std::max(total, t.item<double>());
      }
    }
    for (int64_t i = 0; i < parts.numel(); ++i) total = std::max(total, parts[i].item<double>());
  } else {
    at::Tensor powered = magnitude.pow(norm_type);
    at::Tensor local =
        split ? at::stack({(powered * mask).sum(), (powered * (1 - mask)).sum()}) : powered.sum().reshape({1});
    local = local.to(flat_device());
    if (process_group_ != nullptr) process_group_->allreduce(local, "clip_grad_norm (sum)");
    double sum = local.sum().item<double>();
    if (split) {
      at::Tensor split_sum = local.narrow(0, 0, 1).contiguous();
      tensor_parallel->allreduce(split_sum, "clip_grad_norm (tensor parallel sum)");
      sum = split_sum.item<double>() + local[1].item<double>();
    }
    total = std::pow(sum, 1.0 / norm_type);
  }
  // torch.nn.utils.clip_grad_norm_'s rule: scale by max_norm / (norm + 1e-6), at most 1.
  const double coefficient = std::min(1.0, max_norm / (total + 1e-6));
  grad.mul_(coefficient);
  return total;
}

void FlatShard::clip_grad_value(double clip_value) { shard_.mutable_grad().clamp_(-clip_value, clip_value); }

}  // namespace accel::detail
