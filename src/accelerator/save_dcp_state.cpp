#include "accelerator/save_dcp_state.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <set>

#include "accel/error.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "accelerator/load_dcp_state.hpp"
#include "checkpoint/checkpoint_dir.hpp"
#include "formats/dcp_writer.hpp"
#include "optim/optimizer_state.hpp"
#include "parallel/tensor_parallel.hpp"

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

// Where this process's tensors go in the distributed checkpoint: its boxes
// of a tensor are chunks of the whole tensor, which for a parameter split for
// tensor parallelism means moved to this rank's slice (and cut where the
// slice's blocks are apart in the whole tensor).
struct Placement {
  const TensorParallelModel* tp = nullptr;  // null: the model is not split

  const TensorSplit* split_of(const std::string& name) const { return tp ? tp->split_of(name) : nullptr; }
  // Replicated over the tensor-parallel group: written by its first rank only.
  bool writes_replicated() const { return !tp || tp->slot.rank == 0; }

  // `values`: the box at `offsets` of this process's tensor `name` (a slice
  // when split) of the whole tensor `key`, whose shape is `whole_shape`.
  void add(DcpFileWriter& file, const std::string& name, const std::string& key, const std::vector<c10::IValue>& path,
           const std::vector<int64_t>& whole_shape, const std::vector<int64_t>& offsets,
           const at::Tensor& values) const {
    const TensorSplit* split = split_of(name);
    if (!split) {
      file.add_chunk(key, path, whole_shape, offsets, values);
      return;
    }
    const size_t d = static_cast<size_t>(split->dim);
    const int64_t slice_extent = whole_shape[d] / tp->slot.size;
    for (const ShardRun& run :
         whole_runs(offsets[d], values.size(split->dim), slice_extent, *split, tp->slot.size, tp->slot.rank)) {
      std::vector<int64_t> at = offsets;
      at[d] = run.whole_begin;
      file.add_chunk(key, path, whole_shape, at, values.narrow(split->dim, run.shard_begin - offsets[d], run.length));
    }
  }
};

// Every box of this process's pieces of the layout (whose shapes are this
// rank's slices), with the values of `vector` (the member's flat vector of one
// per-element quantity); `whole` has each parameter's whole shape.
void add_pieces(DcpFileWriter& file, const ShardLayout& layout, const ShardLayout& whole, int member,
                const at::Tensor& vector, const Placement& placement,
                const std::function<std::pair<std::string, std::vector<c10::IValue>>(const std::string&)>& name) {
  for (const LayoutPiece& piece : layout.pieces(member)) {
    const LayoutParam& p = layout.params()[piece.param];
    if (!placement.split_of(p.name) && !placement.writes_replicated()) continue;
    const auto [key, path] = name(p.name);
    const std::vector<int64_t>& whole_shape = whole.params()[static_cast<size_t>(whole.find(p.name))].shape;
    for (const DcpBox& box : flat_range_boxes(p.shape, piece.begin, piece.begin + piece.length)) {
      placement.add(file, p.name, key, path, whole_shape, box.offsets,
                    vector.narrow(0, piece.at + (box.begin - piece.begin), box.numel).view(box.sizes));
    }
  }
}

std::vector<int64_t> zeros_like_shape(const std::vector<int64_t>& shape) {
  return std::vector<int64_t>(shape.size(), 0);
}

at::Tensor step_tensor(const c10::IValue& step) {  // PyTorch 2.x keeps Adam's step as a float32 0-d tensor
  if (step.isTensor()) return step.toTensor().to(at::kFloat).reshape({});
  return at::scalar_tensor(step.isInt() ? static_cast<double>(step.toInt()) : step.toDouble(), at::kFloat);
}

}  // namespace

nlohmann::json write_dcp_items(const std::string& partial, const CheckpointTargets& targets, int rank,
                               int data_parallel_rank) {
  require(targets.models.size() == 1, ErrorCode::Unsupported,
          "save_state with SHARDED_STATE_DICT writes one prepared model, and " + std::to_string(targets.models.size()) +
              " are prepared");
  const ModelImpl& model = *targets.models.front();
  // The layout's shapes are this rank's slices of a split model; `whole` has the whole shapes.
  const ShardLayout layout = local_layout(model), whole = whole_layout(model);
  const ShardLayout slices = whole_layout(model, /*slices=*/true);
  const int member = live_member(model);
  const Placement placement{model.tensor_parallel()};
  // HYBRID_SHARD: the first replica's processes (the first node's, or
  // dp_replicate 0 of a mesh) hold the whole model between them; the others are replicas.
  const bool holds_shards = layout.kind() != ShardLayout::Kind::Whole && data_parallel_rank < layout.group();
  // A whole tensor each process holds is written once: by process 0, or for a
  // split one by each tensor-parallel rank of the first data-parallel rank.
  auto writes_whole = [&](const std::string& name) {
    return placement.split_of(name) ? data_parallel_rank == 0 : rank == 0;
  };
  const std::string file_name = "__" + std::to_string(rank) + "_0.distcp";
  nlohmann::json out = {{"digests", nlohmann::json::object()}, {"records", nlohmann::json::object()}};
  auto write = [&](const std::string& dir, DcpFileWriter& file) {
    if (file.empty()) return;
    std::error_code error;
    std::filesystem::create_directories(partial + "/" + dir, error);
    const std::string name = dir + "/" + file.file();
    const FileDigest digest = write_durable(partial, name, [&](ByteSink& sink) { file.write(sink); });
    out["digests"][name] = nlohmann::json::array({digest.bytes, digest.xxh3});
    out["records"][dir] = file.records();
  };

  // The model: the sharded parameters' chunks where they live, the rest whole from process 0.
  const std::string model_dir = dcp_model_folder(0);
  DcpFileWriter model_file(file_name);
  auto model_key = [](const std::string& name) {
    return std::pair<std::string, std::vector<c10::IValue>>{"model." + name, {std::string("model"), name}};
  };
  std::set<std::string> sharded;
  if (layout.kind() == ShardLayout::Kind::Units) {
    for (const auto& p : layout.params()) sharded.insert(p.name);
    if (holds_shards) add_pieces(model_file, layout, whole, member, model.full_shard()->shard(), placement, model_key);
  }
  for (const auto& [name, tensor] : model_state_dict(model)) {
    if (sharded.count(name) || !writes_whole(name)) continue;
    const auto [key, path] = model_key(name);
    std::vector<int64_t> shape = tensor.sizes().vec();
    if (const TensorSplit* split = placement.split_of(name))
      shape[static_cast<size_t>(split->dim)] *= placement.tp->slot.size;
    placement.add(model_file, name, key, path, shape, zeros_like_shape(shape), tensor);
  }
  write(model_dir, model_file);

  // Each optimizer: its per-element state like the parameters, step and the group from process 0.
  for (size_t i = 0; i < targets.optimizers.size(); ++i) {
    const std::string dir = dcp_optimizer_folder(i);
    DcpFileWriter file(file_name);
    const c10::IValue saved = targets.optimizers[i].state_dict();
    const Dict state = saved.toGenericDict().at("state").toGenericDict();
    const Dict group = saved.toGenericDict().at("param_groups").toList().get(0).toGenericDict();
    const bool whole_state = layout.kind() == ShardLayout::Kind::Whole;
    if (!state.empty()) {
      const Dict first = state.begin()->value().toGenericDict();
      for (const auto& item : first) {
        const std::string key = item.key().toStringRef();
        if (key == "step" || !item.value().isTensor()) continue;
        auto name = [&](const std::string& param) {
          return std::pair<std::string, std::vector<c10::IValue>>{
              "optimizer.state." + param + "." + key, {std::string("optimizer"), std::string("state"), param, key}};
        };
        if (!whole_state && holds_shards)
          add_pieces(file, layout, whole, member, item.value().toTensor(), placement, name);
        for (size_t p = 0; whole_state && p < whole.params().size(); ++p) {
          const std::string& param = whole.params()[p].name;
          if (!writes_whole(param)) continue;
          const at::Tensor value =
              state.at(static_cast<int64_t>(p)).toGenericDict().at(key).toTensor().reshape(slices.params()[p].shape);
          const auto [k, path] = name(param);
          placement.add(file, param, k, path, whole.params()[p].shape, zeros_like_shape(whole.params()[p].shape),
                        value);
        }
      }
      if (rank == 0 && first.contains("step")) {
        for (const auto& p : whole.params()) {
          file.add_chunk("optimizer.state." + p.name + ".step",
                         {std::string("optimizer"), std::string("state"), p.name, std::string("step")}, {}, {},
                         step_tensor(first.at("step")));
        }
      }
    }
    if (rank == 0) {
      auto option = [&](const std::string& key, const c10::IValue& value) {
        file.add_object("optimizer.param_groups.0." + key,
                        {std::string("optimizer"), std::string("param_groups"), int64_t{0}, key}, value);
      };
      for (const auto& item : group) {
        const std::string key = item.key().toStringRef();
        if (key != "params") option(key, item.value());
      }
      c10::List<std::string> names;
      for (const auto& p : whole.params()) names.push_back(p.name);
      option("params", names);
      // Options PyTorch 2.x's optimizers have that 1.13's state dict lacks (libaccel
      // writes "fused" for Adam only): its load wants every key it knows.
      if (!group.contains("fused")) option("fused", c10::IValue());
      if (group.contains("betas") && !group.contains("decoupled_weight_decay")) {
        option("decoupled_weight_decay", !group.contains("fused"));  // AdamW, not Adam
      }
    }
    write(dir, file);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> dcp_metadata_files(const std::vector<std::string>& per_process) {
  std::map<std::string, std::vector<nlohmann::json>> records;  // dir -> each process's records
  for (const std::string& text : per_process) {
    const nlohmann::json json = nlohmann::json::parse(text);
    for (const auto& [dir, list] : json.at("records").items()) records[dir].push_back(list);
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [dir, lists] : records) out.emplace_back(dir + "/.metadata", dcp_metadata(lists));
  return out;
}

}  // namespace accel::detail
