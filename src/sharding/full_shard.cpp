#include "sharding/full_shard.hpp"

#include <ATen/ATen.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <mutex>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

// FSDP's _free_storage / _alloc_storage: the StorageImpl stays (every tensor
// sharing it, autograd's saved views included, keeps pointing at it) while
// its memory goes and comes back. No version counter moves.
void free_storage(const at::Tensor& t) { t.storage().unsafeGetStorageImpl()->reset(); }

void alloc_storage(const at::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (storage->nbytes() == nbytes) return;
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

// The parameter's shape changes in place (not through set_, which would bump
// the version counter autograd's saved views share with it).
void set_shape(const at::Tensor& p, c10::IntArrayRef shape) { p.unsafeGetTensorImpl()->set_sizes_contiguous(shape); }

struct UnitHandle : torch::CustomClassHolder {
  std::weak_ptr<FullShard> shard;
  size_t unit = 0;
  // Activation checkpointing: the unit's body and the random generator's
  // state at its forward, to run it again identically (dropout draws the same
  // masks) in the backward.
  FullShard::Bodies body;
  at::Generator generator;
  at::Tensor generator_state;
  std::vector<bool> input_grad;   // per input: floating and requiring grad
  std::vector<bool> output_grad;  // per output: part of the recorded graph
};

// Runs body with the generator in the state it had at the forward, and gives
// the generator back its current state after (torch.utils.checkpoint's
// preserve_rng_state).
std::vector<at::Tensor> rerun(const UnitHandle& handle, const std::vector<at::Tensor>& x) {
  at::Generator generator = handle.generator;  // a handle on the same generator
  at::Tensor now;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    now = generator.get_state();
    generator.set_state(handle.generator_state);
  }
  auto restore = [&] {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(now);
  };
  std::vector<at::Tensor> y;
  try {
    y = handle.body(x);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return y;
}

// The unit's inputs as its body sees them: detached, requiring grad where the
// caller's do (so the recorded graph reaches them).
std::vector<at::Tensor> detached_inputs(const std::vector<at::Tensor>& inputs, const std::vector<bool>& grad) {
  std::vector<at::Tensor> x;
  x.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    x.push_back(inputs[i].defined() ? inputs[i].detach().requires_grad_(grad[i]) : at::Tensor());
  }
  return x;
}

// Forward: gather, run the unit recording its own graph (with activation
// checkpointing: recording nothing), free. Backward: gather again, (run the
// unit again, recording its graph,) backpropagate through that graph,
// reduce-scatter, free. Any number of tensors in and out.
struct UnitFunction : public torch::autograd::Function<UnitFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, at::TensorList inputs,
                                                const at::Tensor& anchor, FullShard* shard, int64_t unit,
                                                const FullShard::Bodies* body) {
    (void)anchor;
    const bool checkpoint = shard->activation_checkpointing();
    auto handle = c10::make_intrusive<UnitHandle>();
    handle->shard = shard->weak_from_this();
    handle->unit = static_cast<size_t>(unit);
    for (const at::Tensor& input : inputs) {
      handle->input_grad.push_back(input.defined() && input.requires_grad() && at::isFloatingType(input.scalar_type()));
    }
    if (checkpoint) {
      handle->body = *body;
      const c10::Device device = inputs.empty() ? c10::Device(c10::kCPU) : inputs.front().device();
      handle->generator = at::globalContext().defaultGenerator(device);
      std::lock_guard<std::mutex> lock(handle->generator.mutex());
      handle->generator_state = handle->generator.get_state();
    }
    shard->gather(static_cast<size_t>(unit));
    std::vector<at::Tensor> x, y;
    try {
      shard->prefetch_forward(static_cast<size_t>(unit));
      at::AutoGradMode grad(!checkpoint);
      x = detached_inputs(inputs.vec(), checkpoint ? std::vector<bool>(inputs.size(), false) : handle->input_grad);
      y = (*body)(x);
    } catch (...) {
      shard->release(static_cast<size_t>(unit));
      throw;
    }
    shard->finish_forward(static_cast<size_t>(unit));
    torch::autograd::variable_list outputs, non_differentiable;
    for (const at::Tensor& out : y) {
      const bool differentiable = at::isFloatingType(out.scalar_type()) || at::isComplexType(out.scalar_type());
      handle->output_grad.push_back(differentiable && (checkpoint || out.requires_grad()));
      outputs.push_back(out.detach());
      if (!differentiable) non_differentiable.push_back(outputs.back());
    }
    if (!non_differentiable.empty()) ctx->mark_non_differentiable(non_differentiable);
    ctx->set_materialize_grads(false);
    ctx->saved_data["handle"] = c10::IValue::make_capsule(handle);
    ctx->saved_data["x"] = c10::List<at::Tensor>(x);
    if (!checkpoint) ctx->saved_data["y"] = c10::List<at::Tensor>(y);
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto handle = c10::static_intrusive_pointer_cast<UnitHandle>(ctx->saved_data["handle"].toCapsule());
    auto shard = handle->shard.lock();
    require(shard != nullptr, ErrorCode::State, "backward: the FULL_SHARD model was freed before its backward");
    const size_t unit = handle->unit;
    const bool checkpointed = static_cast<bool>(handle->body);
    std::vector<at::Tensor> x = ctx->saved_data["x"].toTensorVector();
    std::vector<at::Tensor> wrt = shard->unit_parameters(unit);
    const size_t num_params = wrt.size();
    shard->gather(unit);
    torch::autograd::variable_list grads;
    try {
      shard->start_backward();
      shard->prefetch_backward(unit);
      std::vector<at::Tensor> y;
      if (checkpointed) {
        at::AutoGradMode grad(true);
        x = detached_inputs(x, handle->input_grad);
        y = rerun(*handle, x);
      } else {
        y = ctx->saved_data["y"].toTensorVector();
      }
      for (size_t i = 0; i < x.size(); ++i) {
        if (handle->input_grad[i]) wrt.push_back(x[i]);
      }
      // Only the outputs that were used (a gradient came back) and that the
      // recorded graph reaches.
      torch::autograd::variable_list roots, root_grads;
      for (size_t i = 0; i < y.size() && i < grad_outputs.size(); ++i) {
        if (!handle->output_grad[i] || !grad_outputs[i].defined() || !y[i].requires_grad()) continue;
        roots.push_back(y[i]);
        root_grads.push_back(grad_outputs[i]);
      }
      if (!roots.empty()) {
        grads = torch::autograd::grad(roots, wrt, root_grads, /*retain_graph=*/false, /*create_graph=*/false,
                                      /*allow_unused=*/true);
      } else {
        grads.resize(wrt.size());
      }
    } catch (...) {
      shard->release(unit);
      throw;
    }
    shard->release(unit);
    torch::autograd::variable_list result;
    size_t next = num_params;
    for (size_t i = 0; i < x.size(); ++i) result.push_back(handle->input_grad[i] ? grads[next++] : at::Tensor());
    grads.resize(num_params);
    shard->absorb_gradients(unit, grads);
    for (int i = 0; i < 4; ++i) result.emplace_back();  // anchor, shard, unit, body
    return result;
  }
};

}  // namespace

FullShard::FullShard(const std::vector<UnitLayout>& layouts, ProcessGroup* process_group, bool cpu_offload)
    : FlatShard(process_group, ShardingStrategy::FullShard, cpu_offload) {
  const int world = world_size();
  std::unordered_set<const void*> seen;
  int64_t total_chunks = 0;
  for (const auto& layout : layouts) {
    Unit unit;
    unit.name = layout.name;
    int64_t numel = 0;
    for (const auto& [name, p] : layout.parameters) {
      if (!p.requires_grad()) continue;
      require(seen.insert(p.unsafeGetTensorImpl()).second, ErrorCode::Unsupported,
              "sharding_strategy FULL_SHARD: parameter " + name + " of unit " + layout.name +
                  " is shared with an earlier unit (tied weights must be in one wrap unit)");
      if (!params_.empty()) {
        const at::Tensor& first = params_.front();
        require(p.scalar_type() == first.scalar_type() && p.device() == first.device(), ErrorCode::Unsupported,
                "sharding_strategy FULL_SHARD: parameter " + name + " is " + c10::toString(p.scalar_type()) + " on " +
                    p.device().str() + " but the first is " + c10::toString(first.scalar_type()) + " on " +
                    first.device().str() + "; one flat buffer needs one dtype and device");
      }
      unit.offsets.push_back(numel);
      unit.shapes.push_back(p.sizes().vec());
      unit.names.push_back(name);
      unit.params.push_back(p);
      params_.push_back(p);
      numel += p.numel();
    }
    if (unit.params.empty()) continue;
    unit.chunk = (numel + world - 1) / world;
    unit.shard_offset = total_chunks;
    total_chunks += unit.chunk;
    total_ += numel;
    units_.push_back(std::move(unit));
  }
  require(!units_.empty(), ErrorCode::InvalidArgument,
          "sharding_strategy FULL_SHARD: the model has no trainable parameters");
  chunk_ = total_chunks;
  const at::TensorOptions options = params_.front().options().requires_grad(false);
  shard_ = at::zeros({chunk_}, shard_options(params_.front()));
  shard_.mutable_grad() = at::zeros_like(shard_);
  at::NoGradGuard no_grad;
  const int64_t begin = rank();
  for (Unit& unit : units_) {
    unit.full = at::zeros({unit.chunk * world}, options);
    unit.anchor = at::empty({0}, options).requires_grad_(true);
    for (size_t i = 0; i < unit.params.size(); ++i) {
      at::Tensor& p = unit.params[i];
      const int64_t n = p.numel();
      unit.full.narrow(0, unit.offsets[i], n).view(p.sizes()).copy_(p);
      if (p.grad().defined()) p.mutable_grad().reset();
      // The parameter keeps its identity (module and name) and now lives in
      // the unit's flat buffer.
      p.set_(unit.full.narrow(0, unit.offsets[i], n).view(p.sizes()));
    }
    unit_shard(unit).copy_(unit.full.narrow(0, begin * unit.chunk, unit.chunk));
    for (auto& p : unit.params) set_shape(p, {0});
    free_storage(unit.full);
  }
}

void FullShard::gather(size_t index) {
  Unit& unit = units_.at(index);
  if (unit.gathered++ > 0) return;
  try {
    at::NoGradGuard no_grad;
    if (unit.prefetch) {
      std::unique_ptr<ProcessGroup::Pending> pending = std::move(unit.prefetch);
      process_group_->wait(*pending);
    } else {
      start_gather(unit, /*async=*/false);
    }
  } catch (...) {
    unit.gathered = 0;
    free_storage(unit.full);
    throw;
  }
  for (size_t i = 0; i < unit.params.size(); ++i) set_shape(unit.params[i], unit.shapes[i]);
}

void FullShard::prefetch(size_t index) {
  if (index >= units_.size()) return;
  Unit& unit = units_[index];
  // A world of one has nothing to overlap: gather() copies when the unit runs.
  if (unit.gathered > 0 || unit.prefetch || process_group_ == nullptr) return;
  at::NoGradGuard no_grad;
  try {
    unit.prefetch = start_gather(unit, /*async=*/true);
  } catch (...) {
    free_storage(unit.full);
    throw;
  }
}

std::unique_ptr<ProcessGroup::Pending> FullShard::start_gather(Unit& unit, bool async) {
  alloc_storage(unit.full);
  at::Tensor chunk = unit_shard(unit);
  if (offload_) {
    // The host chunk goes to its place in the device buffer first (pinned
    // memory: asynchronous, ordered before the all-gather), and is gathered in place.
    at::Tensor mine = unit.full.narrow(0, rank() * unit.chunk, unit.chunk);
    mine.copy_(chunk, /*non_blocking=*/true);
    chunk = mine;
  }
  if (async) {
    return std::make_unique<ProcessGroup::Pending>(process_group_->all_gather_into_async(
        unit.full, chunk, "parameter all-gather (prefetched) of unit " + unit.name));
  }
  all_gather_into(unit.full, chunk, "parameter all-gather of unit " + unit.name);
  return nullptr;
}

void FullShard::finish_forward(size_t index) {
  if (!keep_after_forward_ || kept_after_forward_ == static_cast<int64_t>(index)) {  // a unit run twice: keep one
    release(index);
    return;
  }
  start_backward();
  kept_after_forward_ = static_cast<int64_t>(index);
}

void FullShard::start_backward() {
  if (kept_after_forward_ < 0) return;
  const size_t kept = static_cast<size_t>(kept_after_forward_);
  kept_after_forward_ = -1;
  release(kept);
}

void FullShard::drain_prefetches() {
  start_backward();  // a unit kept by a forward no backward followed
  for (Unit& unit : units_) {
    if (!unit.prefetch) continue;
    std::unique_ptr<ProcessGroup::Pending> pending = std::move(unit.prefetch);
    process_group_->wait(*pending);
    if (unit.gathered == 0) free_storage(unit.full);
  }
}

void FullShard::release(size_t index) {
  Unit& unit = units_.at(index);
  if (unit.gathered == 0 || --unit.gathered > 0) return;
  for (auto& p : unit.params) set_shape(p, {0});
  free_storage(unit.full);
}

void FullShard::gather_all() {
  for (size_t u = 0; u < units_.size(); ++u) gather(u);
}

void FullShard::release_all() {
  for (size_t u = 0; u < units_.size(); ++u) release(u);
}

void FullShard::scatter_from_full() {
  at::NoGradGuard no_grad;
  const int64_t mine = rank();
  for (Unit& unit : units_) {
    require(unit.gathered > 0, ErrorCode::Internal, "scatter_from_full: unit " + unit.name + " is not gathered");
    unit_shard(unit).copy_(unit.full.narrow(0, mine * unit.chunk, unit.chunk));
  }
}

at::Tensor FullShard::run_unit(size_t unit, const at::Tensor& input, const Body& body) {
  return run_unit(unit, std::vector<at::Tensor>{input},
                  Bodies([body](const std::vector<at::Tensor>& x) { return std::vector<at::Tensor>{body(x.at(0))}; }))
      .at(0);
}

std::vector<at::Tensor> FullShard::run_unit(size_t unit, const std::vector<at::Tensor>& inputs, const Bodies& body) {
  if (!at::GradMode::is_enabled()) {
    gather(unit);
    std::vector<at::Tensor> out;
    try {
      prefetch_forward(unit);
      out = body(inputs);
    } catch (...) {
      release(unit);
      throw;
    }
    release(unit);
    return out;
  }
  return UnitFunction::apply(at::TensorList(inputs), units_[unit].anchor, this, static_cast<int64_t>(unit), &body);
}

void FullShard::absorb_gradients(size_t index, const std::vector<at::Tensor>& grads) {
  Unit& unit = units_.at(index);
  at::NoGradGuard no_grad;
  at::Tensor flat = unit.unsynced_grad.defined() ? unit.unsynced_grad : at::zeros_like(unit.full);
  for (size_t i = 0; i < unit.params.size() && i < grads.size(); ++i) {
    if (grads[i].defined()) flat.narrow(0, unit.offsets[i], grads[i].numel()).add_(grads[i].reshape(-1));
  }
  if (!sync_enabled_) {
    unit.unsynced_grad = flat;
    return;
  }
  unit.unsynced_grad = at::Tensor();
  // Divided before the sum, as NO_SHARD's allreduce does, so that both add the
  // same terms (Adam turns rounding differences of near-zero gradients into
  // full-size steps, so the order matters at 3 processes).
  flat.div_(data_parallel_size());
  at::Tensor mine = reduce_scatter(flat, "gradient reduce-scatter of unit " + unit.name);
  // HYBRID_SHARD: every node holds the same chunks; sum them across nodes.
  if (replicas_ != nullptr) replicas_->allreduce(mine, "gradient allreduce across nodes of unit " + unit.name);
  at::Tensor& grad = shard_.mutable_grad();
  if (!grad.defined()) grad = at::zeros_like(shard_);
  grad.narrow(0, unit.shard_offset, unit.chunk).add_(to_shard_device(mine));
}

int64_t FullShard::unsynced_gradient_bytes() const {
  int64_t bytes = 0;
  for (const Unit& unit : units_) {
    if (unit.unsynced_grad.defined()) bytes += unit.unsynced_grad.numel() * unit.unsynced_grad.element_size();
  }
  return bytes;
}

void FullShard::zero_grad() {
  at::NoGradGuard no_grad;
  if (shard_.grad().defined()) shard_.mutable_grad().zero_();
  for (Unit& unit : units_) unit.unsynced_grad = at::Tensor();
}

int64_t FullShard::unit_of(const at::Tensor& param, std::vector<int64_t>* shape) const {
  for (size_t u = 0; u < units_.size(); ++u) {
    for (size_t i = 0; i < units_[u].params.size(); ++i) {
      if (units_[u].params[i].unsafeGetTensorImpl() != param.unsafeGetTensorImpl()) continue;
      if (shape != nullptr) *shape = units_[u].shapes[i];
      return static_cast<int64_t>(u);
    }
  }
  return -1;
}

std::string FullShard::layout_json() const {
  nlohmann::json units = nlohmann::json::array();
  for (const Unit& unit : units_) {
    nlohmann::json params = nlohmann::json::array();
    for (size_t i = 0; i < unit.params.size(); ++i) {
      params.push_back({{"name", unit.names[i]}, {"shape", unit.shapes[i]}, {"offset", unit.offsets[i]}});
    }
    units.push_back({{"name", unit.name},
                     {"chunk", unit.chunk},
                     {"shard_offset", unit.shard_offset},
                     {"params", std::move(params)}});
  }
  return units.dump();
}

}  // namespace accel::detail
