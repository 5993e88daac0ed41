// Collectives and process control beyond gather/reduce: broadcast, padding,
// objects, splitting work, triggers, and who goes first.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstring>

#include "accel/accelerator.hpp"
#include "state/split_range.hpp"
#include "accelerator/accelerator_state.hpp"
#include "state/c10d_adapter.hpp"
#include "state/collectives.hpp"

namespace accel {

at::Tensor Accelerator::broadcast(const at::Tensor& tensor, int from) {
  return broadcast(std::vector<at::Tensor>{tensor}, from)[0];
}

std::vector<at::Tensor> Accelerator::broadcast(const std::vector<at::Tensor>& tensors, int from) {
  require_arg(from >= 0 && from < num_processes(), "broadcast: from process " + std::to_string(from) +
                                                       " is not in [0, " + std::to_string(num_processes()) + ")");
  return detail::broadcast_tensors(*state_, tensors, from);
}

at::Tensor Accelerator::pad_across_processes(const at::Tensor& tensor, int64_t dim, double pad_value, bool pad_first) {
  return pad_across_processes(std::vector<at::Tensor>{tensor}, dim, pad_value, pad_first)[0];
}

std::vector<at::Tensor> Accelerator::pad_across_processes(const std::vector<at::Tensor>& tensors, int64_t dim,
                                                          double pad_value, bool pad_first) {
  // Everything is checked before communicating, so a bad tensor fails alone.
  std::vector<int64_t> dims, local_sizes;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    require_arg(t.defined(), "pad_across_processes: tensor " + std::to_string(i) + " is undefined");
    // Accelerate returns a tensor without the dimension unchanged.
    if (dim >= t.dim()) {
      dims.push_back(-1);
      local_sizes.push_back(0);
      continue;
    }
    require_arg(dim >= -t.dim(), "pad_across_processes: dim " + std::to_string(dim) + " is out of range for shape " +
                                     c10::str(t.sizes()));
    dims.push_back(dim < 0 ? dim + t.dim() : dim);
    local_sizes.push_back(t.size(dims.back()));
  }
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) out.push_back(t.to(device()));
  const bool any = std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
  if (!any) return out;  // nothing to pad: no collective, as for one tensor without the dim
  // One gather of every tensor's size: [processes, tensors].
  const int64_t count = static_cast<int64_t>(local_sizes.size());
  at::Tensor all = gather(at::tensor(local_sizes, at::kLong).reshape({1, count})).cpu();
  at::Tensor targets = std::get<0>(all.max(0));
  for (size_t i = 0; i < out.size(); ++i) {
    if (dims[i] < 0) continue;
    const int64_t d = dims[i], target = targets[static_cast<int64_t>(i)].item<int64_t>();
    at::Tensor local = out[i];
    if (local.size(d) == target) continue;
    std::vector<int64_t> shape = local.sizes().vec();
    shape[static_cast<size_t>(d)] = target;
    at::Tensor padded = at::full(shape, pad_value, local.options());
    int64_t offset = pad_first ? target - local.size(d) : 0;
    padded.narrow(d, offset, local.size(d)).copy_(local);
    out[i] = padded;
  }
  return out;
}

std::vector<std::string> Accelerator::gather_object(const std::string& bytes) {
  at::Tensor lengths = gather(at::tensor({static_cast<int64_t>(bytes.size())}, at::kLong)).cpu();
  at::Tensor local = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(local.data_ptr(), bytes.data(), bytes.size());
  at::Tensor all = gather(local).cpu().contiguous();
  std::vector<std::string> out;
  int64_t offset = 0;
  for (int64_t r = 0; r < lengths.size(0); ++r) {
    int64_t n = lengths[r].item<int64_t>();
    out.emplace_back(reinterpret_cast<const char*>(all.data_ptr<uint8_t>()) + offset, static_cast<size_t>(n));
    offset += n;
  }
  return out;
}

std::string Accelerator::broadcast_object(const std::string& bytes, int from) {
  require_arg(from >= 0 && from < num_processes(), "broadcast_object: from process " + std::to_string(from) +
                                                       " is not in [0, " + std::to_string(num_processes()) + ")");
  if (!state_->process_group) return bytes;
  // The length first (the others do not know it), then the bytes.
  std::vector<at::Tensor> length{at::tensor({static_cast<int64_t>(bytes.size())}, at::kLong).to(device())};
  state_->process_group->broadcast(length, from, "broadcast_object (length)");
  const int64_t n = length[0].cpu().item<int64_t>();
  if (n == 0) return std::string();
  at::Tensor data = at::empty({n}, at::kByte);
  if (process_index() == from) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  std::vector<at::Tensor> wire{data.to(device())};
  state_->process_group->broadcast(wire, from, "broadcast_object");
  at::Tensor host = wire[0].cpu().contiguous();
  return std::string(reinterpret_cast<const char*>(host.data_ptr<uint8_t>()), static_cast<size_t>(n));
}

Accelerator::SplitRange Accelerator::split_range(int64_t n, bool apply_padding) const {
  return detail::split_range(n, num_processes(), process_index(), apply_padding);
}

at::Tensor Accelerator::split_between_processes(const at::Tensor& tensor, bool apply_padding) const {
  return split_between_processes(std::vector<at::Tensor>{tensor}, apply_padding)[0];
}

std::vector<at::Tensor> Accelerator::split_between_processes(const std::vector<at::Tensor>& tensors,
                                                             bool apply_padding) const {
  if (tensors.empty()) return {};
  for (size_t i = 0; i < tensors.size(); ++i) {
    require_arg(tensors[i].defined() && tensors[i].dim() > 0,
                "split_between_processes: tensor " + std::to_string(i) + " needs a dim 0");
    require_arg(tensors[i].size(0) == tensors[0].size(0),
                "split_between_processes: tensor " + std::to_string(i) + " has " + std::to_string(tensors[i].size(0)) +
                    " rows but tensor 0 has " + std::to_string(tensors[0].size(0)) + "; all must have as many");
  }
  const int64_t n = tensors[0].size(0);
  const SplitRange range = split_range(n, apply_padding);
  std::vector<at::Tensor> out;
  for (const auto& t : tensors) {
    at::Tensor share = t.narrow(0, range.start, range.end - range.start);
    const int64_t missing = range.padded_length - share.size(0);
    if (missing > 0) {
      std::vector<int64_t> filler = t.sizes().vec();
      filler[0] = missing;
      share = at::cat({share, t.narrow(0, n - 1, 1).expand(filler)}, 0);
    }
    out.push_back(share);
  }
  return out;
}

void Accelerator::set_trigger() { state_->trigger = true; }

bool Accelerator::check_trigger() {
  at::Tensor flag = reduce(at::tensor({state_->trigger ? 1L : 0L}, at::kLong), ReduceOp::Sum);
  if (flag.item<int64_t>() > 0) {
    state_->trigger = false;
    return true;
  }
  return false;
}

void Accelerator::main_process_first_begin() {
  if (!is_main_process()) wait_for_everyone();
  ++state_->main_process_first_depth;
}
void Accelerator::main_process_first_end() {
  require(state_->main_process_first_depth > 0, ErrorCode::State,
          "main_process_first_end without a matching main_process_first_begin");
  --state_->main_process_first_depth;  // the scope ends even if the barrier fails
  if (is_main_process()) wait_for_everyone();
}
void Accelerator::local_main_process_first_begin() {
  if (!is_local_main_process()) wait_for_everyone();
  ++state_->local_main_process_first_depth;
}
void Accelerator::local_main_process_first_end() {
  require(state_->local_main_process_first_depth > 0, ErrorCode::State,
          "local_main_process_first_end without a matching local_main_process_first_begin");
  --state_->local_main_process_first_depth;
  if (is_local_main_process()) wait_for_everyone();
}

void Accelerator::wait_for_everyone() {
  if (state_->process_group) state_->process_group->barrier("wait_for_everyone");
}

void Accelerator::free_memory() {
  // As Accelerate's free_memory: the accelerator lets go of everything it
  // prepared (backward syncs no model, save_state saves none of them), so
  // their memory goes when the caller drops them; then the device cache goes.
  state_->prepared_models.clear();
  state_->prepared_optimizers.clear();
  state_->prepared_schedulers.clear();
  state_->prepared_loaders.clear();
  state_->gradient_state->step = 0;
  state_->gradient_state->sync_gradients = true;
  state_->trigger = false;
  if (device().is_cuda()) {
    torch::cuda::synchronize();
    detail::c10d_adapter::empty_cuda_cache();
  }
}

}  // namespace accel
