#include "model/gradient_sync.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <unordered_set>

#include "accel/error.hpp"
#include "core/trace_span.hpp"

namespace accel::detail {

namespace {

// Groups parameter indices (already in launch order) into buckets of one device
// and dtype, the first capped at first_cap bytes and the rest at cap bytes.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<at::Tensor>& params, int64_t cap, int64_t first_cap) {
  std::vector<std::vector<size_t>> buckets;
  int64_t bytes = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& p = params[i];
    bool fits = !buckets.empty() && bytes < (buckets.size() == 1 ? first_cap : cap) &&
                params[buckets.back().front()].scalar_type() == p.scalar_type() &&
                params[buckets.back().front()].device() == p.device();
    if (!fits) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(i);
    bytes += p.numel() * static_cast<int64_t>(p.element_size());
  }
  return buckets;
}

}  // namespace

GradientSync::GradientSync(std::vector<at::Tensor> parameters, std::vector<std::string> names,
                           ProcessGroup& process_group, const GradientSyncOptions& options)
    : options_(options), process_group_(process_group), divisor_(process_group.world_size()) {
  // Shared parameters appear once: a second hook on the same accumulator would
  // mark it ready twice.
  std::unordered_set<const void*> seen;
  for (size_t k = parameters.size(); k-- > 0;) {
    const at::Tensor& p = parameters[k];
    if (p.requires_grad() && seen.insert(p.unsafeGetTensorImpl()).second) {
      params_.push_back(p);
      names_.push_back(k < names.size() ? names[k] : "parameter " + std::to_string(k));
    }
  }

  auto assignment = assign_buckets(params_, options_.bucket_cap_bytes, options_.first_bucket_cap_bytes);
  bucket_of_.resize(params_.size());
  slot_of_.resize(params_.size());
  for (size_t b = 0; b < assignment.size(); ++b) {
    Bucket bucket;
    int64_t numel = 0;
    for (size_t i : assignment[b]) numel += params_[i].numel();
    std::vector<at::Tensor> homes = gradient_homes(assignment[b], numel);
    if (!homes.empty()) {
      const at::Tensor& first = homes.front();
      int64_t lo = first.storage_offset();
      for (const at::Tensor& home : homes) lo = std::min(lo, home.storage_offset());
      bucket.flat = at::empty({0}, first.options()).set_(first.storage(), lo, {numel}, {1});
      bucket.views = homes;
    } else {
      bucket.flat = at::zeros({numel}, params_[assignment[b].front()].options().requires_grad(false));
    }
    if (options_.comm_hook != CommHook::None) {
      bucket.wire = at::empty(
          {numel}, bucket.flat.options().dtype(options_.comm_hook == CommHook::Fp16 ? at::kHalf : at::kBFloat16));
    }
    int64_t offset = 0;
    for (size_t i : assignment[b]) {
      bucket_of_[i] = b;
      slot_of_[i] = bucket.params.size();
      bucket.params.push_back(i);
      if (homes.empty()) {
        bucket.views.push_back(bucket.flat.narrow(0, offset, params_[i].numel()).view(params_[i].sizes()));
      }
      offset += params_[i].numel();
    }
    buckets_.push_back(std::move(bucket));
  }
  if (options_.comm_hook != CommHook::None) check_wire_dtype();
  if (options_.gradient_as_bucket_view) {
    at::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      at::Tensor& view = buckets_[bucket_of_[i]].views[slot_of_[i]];
      if (params_[i].grad().defined()) view.copy_(params_[i].grad());
      params_[i].mutable_grad() = view;  // AccumulateGrad now adds into the bucket in place
    }
  }

  options_.gradient_home = nullptr;  // used above only; what it captured need not outlive the constructor
  ready_.assign(params_.size(), false);
  for (size_t i = 0; i < params_.size(); ++i) {
    // The autograd metadata holds the accumulator weakly: keep it alive so the hook stays.
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[i]);
    require(accumulator != nullptr, ErrorCode::Internal, "parameter has no gradient accumulator");
    hook_keys_.push_back(accumulator->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [this, i](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          on_gradient_ready(i);
          return outputs;
        })));
    accumulators_.push_back(std::move(accumulator));
  }
}

void GradientSync::check_wire_dtype() {
  const char* hook = options_.comm_hook == CommHook::Fp16 ? "fp16" : "bf16";
  at::Tensor probe =
      at::ones({1}, buckets_.empty() ? at::TensorOptions().dtype(at::kHalf) : buckets_[0].wire.options());
  std::vector<at::Tensor> tensors{probe};
  try {
    ProcessGroup::Pending pending =
        process_group_.allreduce_async(tensors, std::string("comm hook ") + hook + " probe");
    process_group_.wait(pending);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::Timeout) throw;
    fail(ErrorCode::Unsupported, std::string("comm_hook ") + hook + ": the " + process_group_.backend_name() +
                                     " backend cannot allreduce " + c10::toString(probe.scalar_type()) + ": " +
                                     error.what());
  } catch (const std::exception& error) {
    std::string message = error.what();
    fail(ErrorCode::Unsupported, std::string("comm_hook ") + hook + ": the " + process_group_.backend_name() +
                                     " backend cannot allreduce " + c10::toString(probe.scalar_type()) + ": " +
                                     message.substr(0, message.find('\n')));
  }
}

std::vector<at::Tensor> GradientSync::gradient_homes(const std::vector<size_t>& bucket, int64_t numel) const {
  if (!options_.gradient_home) return {};
  std::vector<at::Tensor> homes;
  for (size_t i : bucket) {
    at::Tensor home = options_.gradient_home(params_[i]);
    if (!home.defined() || !home.is_contiguous() || home.sizes() != params_[i].sizes() ||
        home.scalar_type() != params_[i].scalar_type() ||
        (!homes.empty() && !home.storage().is_alias_of(homes.front().storage()))) {
      return {};
    }
    homes.push_back(std::move(home));
  }
  // The homes must tile one range exactly: no gaps, no overlaps.
  std::vector<const at::Tensor*> by_offset;
  for (const at::Tensor& home : homes) by_offset.push_back(&home);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const at::Tensor* a, const at::Tensor* b) { return a->storage_offset() < b->storage_offset(); });
  int64_t next = by_offset.front()->storage_offset();
  for (const at::Tensor* home : by_offset) {
    if (home->storage_offset() != next) return {};
    next += home->numel();
  }
  if (next - by_offset.front()->storage_offset() != numel) return {};
  return homes;
}

bool GradientSync::aliased(size_t param) const {
  const at::Tensor& grad = params_[param].grad();
  return grad.defined() && grad.is_same(buckets_[bucket_of_[param]].views[slot_of_[param]]);
}

GradientSync::~GradientSync() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
}

std::vector<size_t> GradientSync::bucket_sizes() const {
  std::vector<size_t> sizes;
  for (const auto& b : buckets_) sizes.push_back(b.params.size());
  return sizes;
}

void GradientSync::shadow() {
  require(!armed_, ErrorCode::State, "join_uneven_inputs: a joined process cannot also be in a backward");
  // The zeros go through scratch buffers: with gradients as bucket views the
  // buckets hold this process's own gradients.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    std::vector<at::Tensor> tensors{at::zeros_like(bucket.wire.defined() ? bucket.wire : bucket.flat)};
    bucket.work = process_group_.allreduce_async(tensors, "gradient allreduce (bucket " + std::to_string(b) + ")");
  }
  for (auto& bucket : buckets_) process_group_.wait(bucket.work);
}

void GradientSync::arm() {
  if (!enabled_ || armed_) return;
  armed_ = true;
  finalize_queued_ = false;
  next_to_launch_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (auto& bucket : buckets_) bucket.pending = bucket.params.size();
}

void GradientSync::on_gradient_ready(size_t param) {
  if (!armed_ || ready_[param]) return;
  ready_[param] = true;
  if (!finalize_queued_) {
    finalize_queued_ = true;
    torch::autograd::Engine::get_default_engine().queue_callback([this] { finalize(); });
  }
  copy_into_bucket(param);
  if (buckets_[bucket_of_[param]].pending == 0) launch_ready_buckets();
}

void GradientSync::copy_into_bucket(size_t param) {
  ACCEL_TRACE_SPAN("accel::grad_sync::bucket_copy");
  Bucket& bucket = buckets_[bucket_of_[param]];
  at::Tensor& view = bucket.views[slot_of_[param]];
  const at::Tensor& grad = params_[param].grad();
  if (aliased(param)) {
    view.mul_(1.0 / divisor_);
  } else if (grad.defined()) {
    at::mul_out(view, grad, 1.0 / divisor_);
  } else {
    view.zero_();
  }
  --bucket.pending;
}

void GradientSync::launch(size_t b) {
  ACCEL_TRACE_SPAN("accel::grad_sync::launch");
  Bucket& bucket = buckets_[b];
  if (bucket.wire.defined()) bucket.wire.copy_(bucket.flat);
  std::vector<at::Tensor> tensors{bucket.wire.defined() ? bucket.wire : bucket.flat};
  bucket.work = process_group_.allreduce_async(tensors, "gradient allreduce (bucket " + std::to_string(b) + ")");
}

void GradientSync::launch_ready_buckets() {
  while (next_to_launch_ < buckets_.size() && buckets_[next_to_launch_].pending == 0) launch(next_to_launch_++);
}

void GradientSync::finalize() {
  // Parameters that took no part in this backward still join the allreduce
  // (with their local gradient, or zeros), so every rank launches every bucket.
  std::vector<std::string> unused;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (ready_[i]) continue;
    unused.push_back(names_[i]);
    copy_into_bucket(i);
  }
  launch_ready_buckets();
  armed_ = false;
  {
    ACCEL_TRACE_SPAN("accel::grad_sync::wait");
    for (auto& bucket : buckets_) {
      process_group_.wait(bucket.work);
      if (bucket.wire.defined()) bucket.flat.copy_(bucket.wire);
    }
  }
  ACCEL_TRACE_SPAN("accel::grad_sync::unbucket");
  at::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (aliased(i)) continue;
    const at::Tensor& view = buckets_[bucket_of_[i]].views[slot_of_[i]];
    at::Tensor& grad = params_[i].mutable_grad();
    if (options_.gradient_as_bucket_view || !grad.defined()) {
      grad = options_.gradient_as_bucket_view ? view : view.clone();
    } else {
      grad.copy_(view);
    }
  }
  if (!unused.empty() && !options_.find_unused_parameters) {
    std::string list;
    for (size_t k = 0; k < unused.size() && k < 10; ++k) list += (k ? ", " : "") + unused[k];
    if (unused.size() > 10) list += ", ... (" + std::to_string(unused.size()) + " in all)";
    fail(ErrorCode::State, "gradient sync: parameters got no gradient in this backward: " + list +
                               ". Their gradient was averaged as is (zeros if none); set find_unused_parameters "
                               "to allow parameters that a step does not use");
  }
}

}  // namespace accel::detail
