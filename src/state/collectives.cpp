#include "state/collectives.hpp"

#include <ATen/ATen.h>

#include <cmath>
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

using Signature = std::vector<int64_t>;  // as shape_signature

// per_rank[r][i]: rank r's signature of tensor i. One allgather for the whole
// list; in debug mode a first one checks that every rank passed as many tensors
// (the second needs equal sizes).
std::vector<std::vector<Signature>> exchange_signatures(RuntimeContext& state, ProcessGroup& group,
                                                        const std::vector<at::Tensor>& tensors, const std::string& op) {
  const int64_t count = static_cast<int64_t>(tensors.size());
  if (state.debug_mode) {
    at::Tensor counts =
        at::cat(group.allgather(at::tensor({count}, at::kLong).to(state.device), op + " (tensor count exchange)"))
            .cpu();
    for (int64_t r = 0; r < counts.size(0); ++r) {
      require_arg(counts[r].item<int64_t>() == count,
                  op + ": rank " + std::to_string(r) + " passed " + std::to_string(counts[r].item<int64_t>()) +
                      " tensors but rank " + std::to_string(state.rank()) + " passed " + std::to_string(count));
    }
  }
  std::vector<std::vector<Signature>> per_rank;
  if (count == 0) return per_rank;  // Gloo cannot move zero elements
  std::vector<at::Tensor> rows;
  for (const auto& t : tensors) rows.push_back(shape_signature(t, c10::kCPU));
  std::vector<at::Tensor> gathered = group.allgather(at::cat(rows).to(state.device), op + " (shape exchange)");
  const int64_t width = 2 + kMaxGatherDims;
  for (auto& t : gathered) {
    at::Tensor cpu = t.cpu();
    const int64_t* data = cpu.data_ptr<int64_t>();
    std::vector<Signature> mine;
    for (int64_t i = 0; i < count; ++i) mine.emplace_back(data + i * width, data + (i + 1) * width);
    per_rank.push_back(std::move(mine));
  }
  return per_rank;
}

std::string describe(const Signature& signature) {
  std::ostringstream out;
  out << c10::toString(static_cast<c10::ScalarType>(signature[1])) << "[";
  for (int64_t d = 0; d < std::min<int64_t>(signature[0], kMaxGatherDims); ++d)
    out << (d ? ", " : "") << signature[2 + d];
  out << "]";
  return out.str();
}

// Every rank runs the same check on the same data, so all fail together.
void check_agreement(const std::vector<std::vector<Signature>>& per_rank, size_t index, const std::string& op,
                     bool ignore_dim0) {
  const std::string what = per_rank[0].size() > 1 ? op + " (tensor " + std::to_string(index) + ")" : op;
  const auto& first = per_rank[0][index];
  for (size_t r = 0; r < per_rank.size(); ++r) {
    const auto& sig = per_rank[r][index];
    require_arg(sig[0] <= kMaxGatherDims, what + ": rank " + std::to_string(r) + " passed a tensor with " +
                                              std::to_string(sig[0]) + " dimensions; at most " +
                                              std::to_string(kMaxGatherDims) + " are supported");
    bool same = sig[0] == first[0] && sig[1] == first[1];
    for (int64_t d = ignore_dim0 ? 1 : 0; same && d < sig[0]; ++d) same = sig[2 + d] == first[2 + d];
    require_arg(same, what + ": rank " + std::to_string(r) + " passed " + describe(sig) + " but rank 0 passed " +
                          describe(first) + (ignore_dim0 ? " (only dim 0 may differ)" : " (shapes must match)"));
  }
}

void check_all(const std::vector<std::vector<Signature>>& per_rank, const std::string& op, bool ignore_dim0) {
  if (per_rank.empty()) return;
  for (size_t i = 0; i < per_rank[0].size(); ++i) check_agreement(per_rank, i, op, ignore_dim0);
}

// The inputs on the wire: defined, contiguous, on the device, cloned when asked
// (results must not alias the caller's tensors).
std::vector<at::Tensor> on_device(RuntimeContext& state, const std::vector<at::Tensor>& inputs, const std::string& op,
                                  bool clone) {
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_arg(inputs[i].defined(), op + ": tensor " + std::to_string(i) + " is undefined");
    at::Tensor t = inputs[i].to(state.device);
    out.push_back(clone ? t.clone().contiguous() : t.contiguous());
  }
  return out;
}

at::Tensor gather_one(ProcessGroup& group, const at::Tensor& tensor, const std::vector<Signature>& sigs) {
  int64_t max_rows = 0, total_rows = 0;
  for (const auto& sig : sigs) {
    max_rows = std::max(max_rows, sig[2]);
    total_rows += sig[2];
  }
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
    shape[0] = total_rows;
    return at::empty(shape, tensor.options());
  }
  std::vector<at::Tensor> pieces = group.allgather(padded, "gather");
  for (size_t r = 0; r < pieces.size(); ++r) pieces[r] = pieces[r].narrow(0, 0, sigs[r][2]);
  return at::cat(pieces, 0);
}

}  // namespace

std::vector<at::Tensor> gather_tensors(RuntimeContext& state, const std::vector<at::Tensor>& inputs,
                                       ProcessGroup* over) {
  std::vector<at::Tensor> tensors;
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_arg(inputs[i].defined(), "gather: tensor " + std::to_string(i) + " is undefined");
    tensors.push_back(inputs[i].dim() == 0 ? inputs[i].reshape({1}) : inputs[i]);
  }
  ProcessGroup* group = over ? over : state.process_group.get();
  if (!group) return tensors;
  tensors = on_device(state, tensors, "gather", /*clone=*/false);
  // Always exchanged: the dim-0 sizes are needed to gather unequal rows.
  auto per_rank = exchange_signatures(state, *group, tensors, "gather");
  check_all(per_rank, "gather", /*ignore_dim0=*/true);
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::vector<Signature> sigs;
    for (const auto& rank : per_rank) sigs.push_back(rank[i]);
    out.push_back(gather_one(*group, tensors[i], sigs));
  }
  return out;
}

std::vector<at::Tensor> reduce_tensors(RuntimeContext& state, const std::vector<at::Tensor>& inputs, ReduceOp op,
                                       double scale) {
  require_arg(op == ReduceOp::Sum || op == ReduceOp::Mean || op == ReduceOp::None,
              "reduce: op " + std::to_string(static_cast<int>(op)) + " is not sum, mean or none");
  require_arg(std::isfinite(scale), "reduce: scale " + std::to_string(scale) + " is not finite");
  for (size_t i = 0; i < inputs.size(); ++i) {
    require_arg(
        !inputs[i].defined() || inputs[i].scalar_type() != at::kBool,
        "reduce: tensor " + std::to_string(i) + " is bool and cannot be summed; convert it to an integer dtype");
  }
  std::vector<at::Tensor> results = on_device(state, inputs, "reduce", /*clone=*/true);
  // Accelerate scales before summing, so the sum is of scaled values.
  if (scale != 1.0) {
    for (auto& t : results) t = t * scale;
  }
  if (state.process_group) {
    if (state.debug_mode)
      check_all(exchange_signatures(state, *state.process_group, results, "reduce"), "reduce", /*ignore_dim0=*/false);
    // One allreduce per dtype over the flattened tensors, not one per tensor.
    std::map<at::ScalarType, std::vector<size_t>> by_dtype;
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i].numel() > 0) by_dtype[results[i].scalar_type()].push_back(i);
    }
    for (auto& [dtype, indices] : by_dtype) {
      std::vector<at::Tensor> parts;
      for (size_t i : indices) parts.push_back(results[i].reshape(-1));
      at::Tensor flat = indices.size() == 1 ? results[indices[0]] : at::cat(parts);
      state.process_group->allreduce(flat, "reduce");
      if (indices.size() == 1) continue;
      int64_t offset = 0;
      for (size_t i : indices) {
        results[i] = flat.narrow(0, offset, results[i].numel()).view(results[i].sizes());
        offset += results[i].numel();
      }
    }
  }
  if (op == ReduceOp::Mean) {
    for (auto& t : results) t = at::div(t, state.world_size());
  }
  return results;
}

std::vector<at::Tensor> broadcast_tensors(RuntimeContext& state, const std::vector<at::Tensor>& inputs, int from) {
  std::vector<at::Tensor> results = on_device(state, inputs, "broadcast", /*clone=*/true);
  if (!state.process_group) return results;
  if (state.debug_mode)
    check_all(exchange_signatures(state, *state.process_group, results, "broadcast"), "broadcast",
              /*ignore_dim0=*/false);
  for (auto& result : results) {
    if (result.numel() == 0) continue;
    std::vector<at::Tensor> tensors{result};
    state.process_group->broadcast(tensors, from, "broadcast");
  }
  return results;
}

void broadcast_from_main(RuntimeContext& state, const std::vector<at::Tensor>& tensors, const std::string& what) {
  broadcast_in_place(state, tensors, 0, what);
}

void broadcast_in_place(RuntimeContext& state, const std::vector<at::Tensor>& tensors, int root,
                        const std::string& what) {
  if (!state.process_group || tensors.empty()) return;
  // One flat buffer per dtype: one collective each instead of one per tensor.
  std::map<at::ScalarType, std::vector<at::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[t.scalar_type()].push_back(t);
  at::NoGradGuard no_grad;
  for (auto& [dtype, group] : by_dtype) {
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : group) flat_parts.push_back(t.detach().reshape(-1));
    // Gloo in LibTorch 1.13 cannot send bool tensors (GPT-2's causal-mask
    // buffers): they travel as uint8 and copy_ converts them back.
    std::vector<at::Tensor> flat{at::cat(flat_parts).to(state.device, dtype == at::kBool ? at::kByte : dtype)};
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

std::optional<std::vector<at::Tensor>> broadcast_batch(RuntimeContext& state,
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
