#include "accelerator/tensor_parallel_state.hpp"

#include <ATen/ATen.h>

#include "accel/error.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "parallel/tensor_parallel.hpp"
#include "state/process_group.hpp"

namespace accel::detail {

namespace {

std::vector<int64_t> whole_shape(const at::Tensor& slice, const TensorSplit& split, int64_t size) {
  std::vector<int64_t> shape = slice.sizes().vec();
  shape[static_cast<size_t>(split.dim)] *= size;
  return shape;
}

// Applies `change` to each per-parameter tensor of a split parameter in the
// state dict ({"state": {index: {key: value}}, "param_groups": [...]});
// `matches(value, whole shape, split)` says whether a value is one (shaped
// like the parameter, whole or sliced). The indices are whole_layout's
// parameters (the optimizer's order).
template <class Matches, class Change>
c10::IValue map_split_state(const c10::IValue& dict, const ModelImpl& model, Matches&& matches, Change&& change) {
  const TensorParallelModel& tp = *model.tensor_parallel();
  const ShardLayout layout = whole_layout(model);
  const std::vector<LayoutParam>& params = layout.params();
  c10::impl::GenericDict out(dict.toGenericDict().keyType(), dict.toGenericDict().valueType());
  for (const auto& item : dict.toGenericDict()) {
    if (!(item.key().isString() && item.key().toStringRef() == "state" && item.value().isGenericDict())) {
      out.insert(item.key(), item.value());
      continue;
    }
    const c10::impl::GenericDict state = item.value().toGenericDict();
    c10::impl::GenericDict new_state(state.keyType(), state.valueType());
    for (const auto& entry : state) {
      const int64_t index = entry.key().isInt() ? entry.key().toInt() : -1;
      const TensorSplit* split = index >= 0 && index < static_cast<int64_t>(params.size())
                                     ? tp.split_of(params[static_cast<size_t>(index)].name)
                                     : nullptr;
      if (!split || !entry.value().isGenericDict()) {
        new_state.insert(entry.key(), entry.value());
        continue;
      }
      const LayoutParam& parameter = params[static_cast<size_t>(index)];
      c10::impl::GenericDict values = entry.value().toGenericDict();
      c10::impl::GenericDict new_values(values.keyType(), values.valueType());
      for (const auto& value : values) {
        const bool per_parameter =
            value.value().isTensor() && matches(value.value().toTensor(), parameter.shape, *split);
        new_values.insert(value.key(), per_parameter
                                           ? c10::IValue(change(value.value().toTensor(), *split, parameter.name))
                                           : value.value());
      }
      new_state.insert(entry.key(), new_values);
    }
    out.insert(item.key(), new_state);
  }
  return out;
}

}  // namespace

NamedTensors whole_model_state(const ModelImpl& model) {
  const TensorParallelModel& tp = *model.tensor_parallel();
  const ModelImpl::Gathered gathered(model);        // FULL_SHARD: the units' full (tp-local) parameters
  const bool copy = model.full_shard() != nullptr;  // their storage is freed when `gathered` ends
  NamedTensors out = model_state_dict(model);
  for (auto& [name, tensor] : out) {
    if (const TensorSplit* split = tp.split_of(name)) {
      tensor = gather_whole(tensor, *split, *tp.slot.group, name);
    } else if (copy) {
      tensor = tensor.detach().clone();
    }
  }
  return out;
}

c10::IValue whole_optimizer_state(const c10::IValue& state, const ModelImpl& model) {
  const TensorParallelSlot& slot = model.tensor_parallel()->slot;
  ProcessGroup& group = *slot.group;
  return map_split_state(
      state, model,
      [&slot](const at::Tensor& value, std::vector<int64_t> slice, const TensorSplit& split) {
        slice[static_cast<size_t>(split.dim)] /= slot.size;  // this rank's slice of the whole shape
        return value.sizes().vec() == slice;
      },
      [&group](const at::Tensor& value, const TensorSplit& split, const std::string& name) {
        return gather_whole(value, split, group, name).to(value.device());
      });
}

c10::IValue split_optimizer_state(const c10::IValue& whole, const ModelImpl& model, const std::string& label) {
  const TensorParallelSlot& slot = model.tensor_parallel()->slot;
  return map_split_state(
      whole, model,
      [](const at::Tensor& value, const std::vector<int64_t>& whole, const TensorSplit&) {
        return value.sizes().vec() == whole;
      },
      [&slot, &label](const at::Tensor& value, const TensorSplit& split, const std::string& name) {
        require(can_split(value, split, slot.size), ErrorCode::IO,
                label + ": the optimizer state of " + name + " (shape " + c10::str(value.sizes()) +
                    ") cannot be split " + std::to_string(slot.size) + " ways");
        return shard_of(value, split, slot.size, slot.rank);
      });
}

c10::IValue unsharded_optimizer_state(const c10::IValue& member_state, const ModelImpl& model,
                                      ProcessGroup& shard_group, const std::string& label) {
  // A flat or units layout's state dict has one entry (index 0): this
  // member's vector; its per-element tensors (every one but a 0-d step) are
  // gathered in the dict's order, the same on every member.
  const int members = shard_group.world_size();
  std::vector<c10::IValue> member_dicts(static_cast<size_t>(members));
  const c10::impl::GenericDict dict = member_state.toGenericDict();
  std::vector<c10::impl::GenericDict> copies;
  for (int m = 0; m < members; ++m) copies.push_back(dict.copy());
  for (const auto& item : dict) {
    if (!(item.key().isString() && item.key().toStringRef() == "state" && item.value().isGenericDict())) continue;
    const c10::impl::GenericDict state = item.value().toGenericDict();
    std::vector<c10::impl::GenericDict> member_states;
    for (int m = 0; m < members; ++m) member_states.push_back(state.copy());
    for (const auto& entry : state) {
      require(entry.value().isGenericDict(), ErrorCode::Internal,
              label + ": a sharded optimizer state entry is not a dict");
      const c10::impl::GenericDict values = entry.value().toGenericDict();
      std::vector<c10::impl::GenericDict> member_values;
      for (int m = 0; m < members; ++m) member_values.push_back(values.copy());
      for (const auto& value : values) {
        if (!value.value().isTensor() || value.value().toTensor().dim() == 0) continue;
        const std::vector<at::Tensor> chunks =
            shard_group.allgather(value.value().toTensor().contiguous(), label + ": optimizer state");
        for (int m = 0; m < members; ++m) member_values[m].insert_or_assign(value.key(), chunks[m]);
      }
      for (int m = 0; m < members; ++m) member_states[m].insert_or_assign(entry.key(), member_values[m]);
    }
    for (int m = 0; m < members; ++m) copies[m].insert_or_assign(item.key(), member_states[m]);
  }
  for (int m = 0; m < members; ++m) member_dicts[static_cast<size_t>(m)] = copies[m];
  return reshard_optimizer_state(
      local_layout(model), [&member_dicts](int m) { return member_dicts[static_cast<size_t>(m)]; },
      whole_layout(model, /*slices=*/true), 0, label);
}

c10::IValue split_optimizer_from_checkpoint(const CheckpointReader& reader, size_t i, const ShardLayout& source,
                                            const ModelImpl& model, const std::string& label) {
  return split_optimizer_from_whole(resharded_optimizer(reader, i, source, whole_layout(model), 0), model, label);
}

c10::IValue split_optimizer_from_whole(const c10::IValue& whole, const ModelImpl& model, const std::string& label) {
  const c10::IValue slices = split_optimizer_state(whole, model, label);
  if (!model.flat_shard()) return slices;
  return reshard_optimizer_state(
      whole_layout(model, /*slices=*/true), [&slices](int) { return slices; }, local_layout(model), live_member(model),
      label);
}

WholeModelTargets whole_model_targets(const ModelImpl& model, const NamedTensors& entries) {
  const TensorParallelModel& tp = *model.tensor_parallel();
  WholeModelTargets out;
  for (const auto& [name, tensor] : entries) {
    const TensorSplit* split = tp.split_of(name);
    if (!split) {
      out.targets.emplace_back(name, tensor);
      continue;
    }
    at::Tensor staging = at::empty(whole_shape(tensor, *split, tp.slot.size), tensor.options());
    out.targets.emplace_back(name, staging);
    out.staged.push_back({tensor, staging, *split});
  }
  return out;
}

void WholeModelTargets::keep_slices(const TensorParallelSlot& slot) const {
  at::NoGradGuard no_grad;
  for (const Staged& s : staged) s.parameter.copy_(shard_of(s.staging, s.split, slot.size, slot.rank));
}

}  // namespace accel::detail
