#include "accelerator/checkpoint_layouts.hpp"

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "accel/error.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "formats/torch_pickle.hpp"

namespace accel::detail {

namespace {

constexpr const char* kFlatShard = "flat_param_shard";
constexpr const char* kUnitsKey = "accel_fsdp_units";

nlohmann::json units_of(const FullShard& shard) { return nlohmann::json::parse(shard.layout_json()); }

// The trainable parameters in registration order, each once (the order of a
// whole optimizer's indices and of the ZeRO flat vector). Under FULL_SHARD the
// parameters are empty between units: the shapes come from the unit layout.
// `whole_shapes`: a parameter split for tensor parallelism with its whole
// shape (what a whole layout's checkpoint holds); else this rank's slice.
std::vector<LayoutParam> trainable_parameters(const ModelImpl& model, bool whole_shapes) {
  std::map<std::string, std::vector<int64_t>> unit_shapes;
  if (model.full_shard()) {
    const FullShard& shard = *model.full_shard();
    const ShardLayout units = ShardLayout::units(units_of(shard), shard.shard_group_size(), "the model's wrap units");
    for (const auto& p : units.params()) unit_shapes[p.name] = p.shape;
  }
  std::vector<LayoutParam> out;
  std::set<const void*> seen;
  const TensorParallelModel* tp = whole_shapes ? model.tensor_parallel() : nullptr;
  for (const auto& [name, p] : model.named_parameters()) {
    if (!p.requires_grad() || !seen.insert(p.unsafeGetTensorImpl()).second) continue;
    auto shape = unit_shapes.find(name);
    LayoutParam param{name, shape != unit_shapes.end() ? shape->second : p.sizes().vec(), 1};
    // Split for tensor parallelism: checkpoints hold the whole parameter (tensor_parallel_state.hpp).
    if (const TensorSplit* split = tp ? tp->split_of(name) : nullptr) {
      param.shape[static_cast<size_t>(split->dim)] *= tp->slot.size;
    }
    for (int64_t d : param.shape) param.numel *= d;
    out.push_back(std::move(param));
  }
  return out;
}

}  // namespace

namespace {

// FULL_SHARD's units hold (and record) this rank's slices; so do ZeRO's flat vectors.
ShardLayout layout_of(const ModelImpl& model, bool whole_shapes) {
  if (model.full_shard()) {
    const FullShard& shard = *model.full_shard();
    return ShardLayout::units(units_of(shard), shard.shard_group_size(), "the model's wrap units");
  }
  if (model.flat_shard())
    return ShardLayout::flat(trainable_parameters(model, false), model.flat_shard()->shard_group_size());
  return ShardLayout::whole(trainable_parameters(model, whole_shapes));
}

}  // namespace

ShardLayout live_layout(const ModelImpl& model) { return layout_of(model, true); }

ShardLayout local_layout(const ModelImpl& model) { return layout_of(model, false); }

ShardLayout whole_layout(const ModelImpl& model, bool slices) {
  return ShardLayout::whole(trainable_parameters(model, !slices));
}

int live_member(const ModelImpl& model) { return model.flat_shard() ? model.flat_shard()->shard_group_rank() : 0; }

ShardLayout saved_layout(const JsonFile& manifest, const CheckpointReader& reader, const ModelImpl& model, size_t i) {
  const std::string where = manifest.path();
  if (manifest.has("layouts")) {
    const nlohmann::json& layouts = manifest.field("layouts");
    require(layouts.is_array() && i < layouts.size(), ErrorCode::IO,
            where + ": \"layouts\" does not hold model " + std::to_string(i) + "'s layout");
    return ShardLayout::from_json(layouts[i], where + ": layouts[" + std::to_string(i) + "]");
  }
  // Written before the manifest recorded layouts: the strategy's rule.
  const int64_t saved = manifest.integer("num_processes");
  if (manifest.has("sharded_models") && manifest.boolean("sharded_models")) {
    require(!manifest.has("sharding_strategy") || manifest.string("sharding_strategy") == "FULL_SHARD",
            ErrorCode::Unsupported,
            where + " was written by sharding_strategy " + manifest.string("sharding_strategy") +
                " before checkpoints recorded their layout; it loads only under the same strategy and world size");
    const std::string name = model_shard_file(i, 0);
    reader.verify(name);
    const safetensors::File file = safetensors::File::open(reader.path(name));
    auto units = file.metadata().find(kUnitsKey);
    require(units != file.metadata().end(), ErrorCode::IO,
            reader.path(name) + " has no \"" + std::string(kUnitsKey) + "\" metadata to cut its shards again by");
    const nlohmann::json json = nlohmann::json::parse(units->second, nullptr, false);
    return ShardLayout::units(json, static_cast<int>(saved), reader.path(name));
  }
  if (manifest.has("sharded_optimizers") && manifest.boolean("sharded_optimizers")) {
    return ShardLayout::flat(trainable_parameters(model, false), static_cast<int>(saved));
  }
  return ShardLayout::whole(trainable_parameters(model, true));
}

c10::IValue resharded_optimizer(const CheckpointReader& reader, size_t i, const ShardLayout& source,
                                const ShardLayout& target, int member) {
  const bool whole = source.kind() == ShardLayout::Kind::Whole;
  auto file = [&](int m) { return whole ? numbered_file("optimizer", i, ".bin") : optimizer_shard_file(i, m); };
  // Mapped: of each saved tensor only the pages holding this process's
  // elements are read (and resident), until the cut is done.
  auto saved = [&](int m) {
    reader.verify(file(m));
    return read_torch_save_file(reader.path(file(m)), "load_state: " + reader.path(file(m)),
                                PickleVocabulary::StateDict, StorageReads::Map);
  };
  return reshard_optimizer_state(source, saved, target, member, "load_state: " + reader.path(file(0)));
}

std::vector<std::pair<at::Tensor, at::Tensor>> resharded_model(const CheckpointReader& reader, size_t i,
                                                               const ShardLayout& source, const ModelImpl& model) {
  const std::string label = "load_state: " + reader.path(model_shard_file(i, 0));
  std::map<int, safetensors::File> files;
  auto file = [&](int m) -> const safetensors::File& {
    auto it = files.find(m);
    if (it != files.end()) return it->second;
    const std::string name = model_shard_file(i, m);
    require(std::filesystem::exists(reader.path(name)), ErrorCode::IO,
            "load_state: " + reader.path(name) + " is missing: the checkpoint's layout has " +
                std::to_string(source.group()) + " shards");
    reader.verify(name);
    return files.emplace(m, safetensors::File::open(reader.path(name))).first->second;
  };
  auto vector = [&](int m) {  // a view of the mapped file: only the pages this process needs are read
    const safetensors::File& f = file(m);
    const safetensors::Entry* flat = f.find(kFlatShard);
    require(flat != nullptr, ErrorCode::IO, "load_state: " + f.label() + " has no " + kFlatShard + " tensor");
    return mapped_tensor(f, *flat);
  };
  std::vector<std::pair<at::Tensor, at::Tensor>> copies;
  if (model.full_shard()) {  // this process's shard of the new units, straight into shard()
    const ShardLayout target = live_layout(model);
    copies.emplace_back(model.full_shard()->shard(),
                        assemble_member(source, vector, target, live_member(model), label));
  } else {  // every parameter whole, as NO_SHARD and ZeRO-1/2 keep them
    const ShardLayout target = ShardLayout::whole(trainable_parameters(model, true));
    const at::Tensor whole = assemble_member(source, vector, target, 0, label);
    std::map<std::string, at::Tensor> params;
    for (const auto& [name, p] : model.named_parameters()) params.emplace(name, p);
    int64_t offset = 0;
    for (const LayoutParam& p : target.params()) {
      copies.emplace_back(params.at(p.name), whole.narrow(0, offset, p.numel).view(p.shape));
      offset += p.numel;
    }
  }
  // Buffers are whole in every shard file: member 0's.
  const safetensors::File& first = file(0);
  for (const auto& [name, buffer] : model.named_buffers()) {
    const safetensors::Entry* entry = first.find(name);
    require(entry != nullptr, ErrorCode::IO, "load_state: " + first.label() + " lacks the buffer " + name);
    require(entry->shape == buffer.sizes().vec(), ErrorCode::IO,
            "load_state: " + first.label() + ": buffer " + name + " has shape " +
                c10::str(at::IntArrayRef(entry->shape)) + ", the model's has " + c10::str(buffer.sizes()));
    copies.emplace_back(buffer, read_tensor(first, *entry));
  }
  return copies;
}

}  // namespace accel::detail
