#include "state/collectives.hpp"

#include <ATen/ATen.h>

#include <map>
#include <sstream>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

constexpr int64_t kMaxGatherDims = 16;

// [ndim, dtype, size_0, ..., size_15]: enough to check agreement before moving data.
at::Tensor shape_signature(const at::Tensor& tensor, const c10::Device& device) {
  std::vector<int64_t> signature(2 + kMaxGatherDims, -1);
  signature[0] = tensor.dim();
  signature[1] = static_cast<int64_t>(tensor.scalar_type());
  for (int64_t d = 0; d < std::min<int64_t>(tensor.dim(), kMaxGatherDims); ++d) signature[2 + d] = tensor.size(d);
  return at::tensor(signature, at::kLong).to(device);
}

struct PeerShapes {
  std::vector<std::vector<int64_t>> per_rank;  // each: signature as above
};

PeerShapes exchange_shapes(AcceleratorState& state, const at::Tensor& tensor, const std::string& op) {
  std::vector<at::Tensor> gathered =
      state.process_group->allgather(shape_signature(tensor, state.device), op + " (shape exchange)");
  PeerShapes shapes;
  for (auto& t : gathered) {
    at::Tensor cpu = t.cpu();
    shapes.per_rank.emplace_back(cpu.data_ptr<int64_t>(), cpu.data_ptr<int64_t>() + cpu.numel());
  }
  return shapes;
}

std::string describe(const std::vector<int64_t>& signature) {
  std::ostringstream out;
  out << c10::toString(static_cast<c10::ScalarType>(signature[1])) << "[";
  for (int64_t d = 0; d < std::min<int64_t>(signature[0], kMaxGatherDims); ++d) out << (d ? ", " : "") << signature[2 + d];
  out << "]";
  return out.str();
}

// Every rank runs the same check on the same data, so all fail together.
void check_agreement(const PeerShapes& shapes, const std::string& op, bool ignore_dim0) {
  const auto& first = shapes.per_rank[0];
  for (size_t r = 0; r < shapes.per_rank.size(); ++r) {
    const auto& sig = shapes.per_rank[r];
    require_arg(sig[0] <= kMaxGatherDims, op + ": rank " + std::to_string(r) + " passed a tensor with " +
                                              std::to_string(sig[0]) + " dimensions; at most " +
                                              std::to_string(kMaxGatherDims) + " are supported");
    bool same = sig[0] == first[0] && sig[1] == first[1];
    for (int64_t d = ignore_dim0 ? 1 : 0; same && d < sig[0]; ++d) same = sig[2 + d] == first[2 + d];
    require_arg(same, op + ": rank " + std::to_string(r) + " passed " + describe(sig) + " but rank 0 passed " +
                          describe(first) + (ignore_dim0 ? " (only dim 0 may differ)" : " (shapes must match)"));
  }
}

}  // namespace

at::Tensor gather_tensor(AcceleratorState& state, const at::Tensor& input) {
  require_arg(input.defined(), "gather: the tensor is undefined");
  at::Tensor tensor = input.dim() == 0 ? input.reshape({1}) : input;
  if (!state.process_group) return tensor;
  tensor = tensor.to(state.device).contiguous();
  PeerShapes shapes = exchange_shapes(state, tensor, "gather");
  check_agreement(shapes, "gather", /*ignore_dim0=*/true);

  int64_t max_rows = 0;
  for (const auto& sig : shapes.per_rank) max_rows = std::max(max_rows, sig[2]);
  at::Tensor padded = tensor;
  if (tensor.size(0) < max_rows) {
    std::vector<int64_t> padded_shape = tensor.sizes().vec();
    padded_shape[0] = max_rows;
    padded = at::zeros(padded_shape, tensor.options());
    padded.narrow(0, 0, tensor.size(0)).copy_(tensor);
  }
  if (padded.numel() == 0) {
    // Nothing to move, and Gloo divides by the element count: answer locally.
    std::vector<int64_t> shape = tensor.sizes().vec();
    shape[0] = 0;
    for (const auto& sig : shapes.per_rank) shape[0] += sig[2];
    return at::empty(shape, tensor.options());
  }
  std::vector<at::Tensor> pieces = state.process_group->allgather(padded, "gather");
  for (size_t r = 0; r < pieces.size(); ++r) pieces[r] = pieces[r].narrow(0, 0, shapes.per_rank[r][2]);
  return at::cat(pieces, 0);
}

at::Tensor reduce_tensor(AcceleratorState& state, const at::Tensor& input, ReduceOp op) {
  require_arg(input.defined(), "reduce: the tensor is undefined");
  require_arg(input.scalar_type() != at::kBool, "reduce: bool tensors cannot be summed; convert them to an integer dtype");
  at::Tensor result = input.to(state.device).clone().contiguous();
  if (state.process_group) {
    PeerShapes shapes = exchange_shapes(state, result, "reduce");
    check_agreement(shapes, "reduce", /*ignore_dim0=*/false);
    if (result.numel() > 0) state.process_group->allreduce(result, "reduce");
  }
  if (op == ReduceOp::Mean) result = at::div(result, state.world_size());
  return result;
}

at::Tensor broadcast_tensor(AcceleratorState& state, const at::Tensor& input, int from) {
  require_arg(input.defined(), "broadcast: the tensor is undefined");
  at::Tensor result = input.to(state.device).clone().contiguous();
  if (!state.process_group) return result;
  PeerShapes shapes = exchange_shapes(state, result, "broadcast");
  check_agreement(shapes, "broadcast", /*ignore_dim0=*/false);
  if (result.numel() == 0) return result;
  std::vector<at::Tensor> tensors{result};
  state.process_group->broadcast(tensors, from, "broadcast");
  return result;
}

void broadcast_from_main(AcceleratorState& state, const std::vector<at::Tensor>& tensors, const std::string& what) {
  broadcast_in_place(state, tensors, 0, what);
}

void broadcast_in_place(AcceleratorState& state, const std::vector<at::Tensor>& tensors, int root,
                        const std::string& what) {
  if (!state.process_group || tensors.empty()) return;
  // One flat buffer per dtype: one collective each instead of one per tensor.
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[t.scalar_type()].push_back(t);
  at::NoGradGuard no_grad;
  for (auto& [dtype, group] : by_dtype) {
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : group) flat_parts.push_back(t.detach().reshape(-1));
    std::vector<at::Tensor> flat{at::cat(flat_parts).to(state.device)};
    state.process_group->broadcast(flat, root, "broadcast " + what);
    int64_t offset = 0;
    for (auto& t : group) {
      t.detach().copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

}  // namespace accel::detail

namespace accel::detail {

namespace {
constexpr int64_t kMaxBatchFields = 16;
constexpr int64_t kMaxBatchDims = 8;
constexpr int64_t kFieldHeader = 2 + kMaxBatchDims;  // dtype, ndim, dims
}  // namespace

std::optional<std::vector<at::Tensor>> broadcast_batch(AcceleratorState& state,
                                                       std::optional<std::vector<at::Tensor>> batch) {
  if (!state.process_group) return batch;
  const bool main = state.rank() == 0;
  // Header: [has_batch, fields, (dtype, ndim, dims...) per field], int64.
  at::Tensor header = at::zeros({2 + kMaxBatchFields * kFieldHeader}, at::kLong);
  if (main && batch) {
    require_arg(static_cast<int64_t>(batch->size()) <= kMaxBatchFields,
                "dispatch_batches: a batch has " + std::to_string(batch->size()) + " fields, at most " +
                    std::to_string(kMaxBatchFields) + " can be dispatched");
    int64_t* h = header.data_ptr<int64_t>();
    h[0] = 1;
    h[1] = static_cast<int64_t>(batch->size());
    for (size_t f = 0; f < batch->size(); ++f) {
      const at::Tensor& t = (*batch)[f];
      require_arg(t.dim() <= kMaxBatchDims, "dispatch_batches: field " + std::to_string(f) + " has " +
                                                std::to_string(t.dim()) + " dims, at most " +
                                                std::to_string(kMaxBatchDims) + " can be dispatched");
      int64_t* fh = h + 2 + static_cast<int64_t>(f) * kFieldHeader;
      fh[0] = static_cast<int64_t>(t.scalar_type());
      fh[1] = t.dim();
      for (int64_t d = 0; d < t.dim(); ++d) fh[2 + d] = t.size(d);
    }
  }
  // Gloo broadcasts host tensors; NCCL needs them on the device.
  const c10::Device wire = state.device;
  std::vector<at::Tensor> header_wire{header.to(wire)};
  state.process_group->broadcast(header_wire, 0, "dispatch batch header");
  header = header_wire[0].cpu();
  const int64_t* h = header.data_ptr<int64_t>();
  if (h[0] == 0) return std::nullopt;
  std::vector<at::Tensor> tensors;
  for (int64_t f = 0; f < h[1]; ++f) {
    const int64_t* fh = h + 2 + f * kFieldHeader;
    if (main) {
      tensors.push_back((*batch)[static_cast<size_t>(f)].contiguous().to(wire));
    } else {
      std::vector<int64_t> sizes(fh + 2, fh + 2 + fh[1]);
      tensors.push_back(at::empty(sizes, at::TensorOptions().dtype(static_cast<at::ScalarType>(fh[0])).device(wire)));
    }
  }
  for (size_t f = 0; f < tensors.size(); ++f) {  // a c10d broadcast takes tensors of one shape
    std::vector<at::Tensor> one{tensors[f]};
    state.process_group->broadcast(one, 0, "dispatch batch field " + std::to_string(f));
    tensors[f] = one[0].cpu();
  }
  return tensors;
}

}  // namespace accel::detail
