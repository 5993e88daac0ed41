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

namespace accel::detail {

namespace {

using Dict = c10::impl::GenericDict;

// Every box of this process's pieces of the layout, with the values of `vector`
// (the member's flat vector of one per-element quantity).
void add_pieces(DcpFileWriter& file, const ShardLayout& layout, int member, const at::Tensor& vector,
                const std::function<std::pair<std::string, std::vector<c10::IValue>>(const std::string&)>& name) {
  for (const LayoutPiece& piece : layout.pieces(member)) {
    const LayoutParam& p = layout.params()[piece.param];
    const auto [key, path] = name(p.name);
    for (const DcpBox& box : flat_range_boxes(p.shape, piece.begin, piece.begin + piece.length)) {
      file.add_chunk(key, path, p.shape, box.offsets,
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

nlohmann::json write_dcp_items(const std::string& partial, const CheckpointTargets& targets, int rank) {
  require(targets.models.size() == 1, ErrorCode::Unsupported,
          "save_state with SHARDED_STATE_DICT writes one prepared model, and " + std::to_string(targets.models.size()) +
              " are prepared");
  const ModelImpl& model = *targets.models.front();
  const ShardLayout layout = live_layout(model), whole = whole_layout(model);
  const int member = live_member(model);
  // HYBRID_SHARD: the first node's processes hold the whole model between them; the others are replicas.
  const bool holds_shards = layout.kind() != ShardLayout::Kind::Whole && rank < layout.group();
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
    if (holds_shards) add_pieces(model_file, layout, member, model.full_shard()->shard(), model_key);
  }
  if (rank == 0) {
    for (const auto& [name, tensor] : model_state_dict(model)) {
      if (sharded.count(name)) continue;
      const auto [key, path] = model_key(name);
      model_file.add_chunk(key, path, tensor.sizes().vec(), zeros_like_shape(tensor.sizes().vec()), tensor);
    }
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
        if (!whole_state && holds_shards) add_pieces(file, layout, member, item.value().toTensor(), name);
        if (whole_state && rank == 0) {
          for (size_t p = 0; p < whole.params().size(); ++p) {
            const at::Tensor value =
                state.at(static_cast<int64_t>(p)).toGenericDict().at(key).toTensor().reshape(whole.params()[p].shape);
            const auto [k, path] = name(whole.params()[p].name);
            file.add_chunk(k, path, whole.params()[p].shape, zeros_like_shape(whole.params()[p].shape), value);
          }
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
