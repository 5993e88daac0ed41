// Collectives and process control beyond gather/reduce: broadcast, padding,
// objects, splitting work, triggers, and who goes first.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include "accel/accelerator.hpp"
#include "state/accelerator_state.hpp"
#include "state/c10d_adapter.hpp"
#include "state/collectives.hpp"

namespace accel {

at::Tensor Accelerator::broadcast(const at::Tensor& tensor, int from) {
  require_arg(from >= 0 && from < num_processes(), "broadcast: from process " + std::to_string(from) +
                                                       " is not in [0, " + std::to_string(num_processes()) + ")");
  return detail::broadcast_tensor(*state_, tensor, from);
}

at::Tensor Accelerator::pad_across_processes(const at::Tensor& tensor, int64_t dim, double pad_value, bool pad_first) {
  require_arg(tensor.defined(), "pad_across_processes: the tensor is undefined");
  // Accelerate returns a tensor without the dimension unchanged, without communicating.
  if (dim >= tensor.dim()) return tensor.to(device());
  require_arg(dim >= -tensor.dim(), "pad_across_processes: dim " + std::to_string(dim) +
                                        " is out of range for shape " + c10::str(tensor.sizes()));
  int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  at::Tensor sizes = gather(at::tensor({tensor.size(d)}, at::kLong));
  int64_t target = sizes.max().item<int64_t>();
  at::Tensor local = tensor.to(device());
  if (local.size(d) == target) return local;
  std::vector<int64_t> shape = local.sizes().vec();
  shape[static_cast<size_t>(d)] = target;
  at::Tensor padded = at::full(shape, pad_value, local.options());
  int64_t offset = pad_first ? target - local.size(d) : 0;
  padded.narrow(d, offset, local.size(d)).copy_(local);
  return padded;
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

at::Tensor Accelerator::split_between_processes(const at::Tensor& tensor, bool apply_padding) const {
  require_arg(tensor.defined() && tensor.dim() > 0, "split_between_processes: needs a tensor with a dim 0");
  const int64_t n = tensor.size(0), world = num_processes(), me = process_index();
  const int64_t per = n / world, extras = n % world;
  const int64_t start = me * per + std::min(me, extras);
  const int64_t length = per + (me < extras ? 1 : 0);
  at::Tensor share = start >= n ? tensor.narrow(0, n - 1, 1) : tensor.narrow(0, start, length);
  if (!apply_padding || n == 0) return share;
  const int64_t target = per + (extras > 0 ? 1 : 0);
  if (share.size(0) >= target) return share;
  at::Tensor last = tensor.narrow(0, n - 1, 1);
  std::vector<at::Tensor> parts{share};
  for (int64_t i = share.size(0); i < target; ++i) parts.push_back(last);
  return at::cat(parts, 0);
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
