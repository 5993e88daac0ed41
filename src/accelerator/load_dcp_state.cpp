#include "accelerator/load_dcp_state.hpp"

#include <ATen/ATen.h>

#include <map>
#include <set>

#include "accel/error.hpp"
#include "accelerator/checkpoint_files.hpp"
#include "accelerator/checkpoint_layouts.hpp"
#include "checkpoint/optimizer_reshard.hpp"
#include "formats/dcp.hpp"

namespace accel::detail {

namespace {

bool floating(at::ScalarType t) { return at::isFloatingType(t); }

// DCP tensor `key` as the value of a model tensor of that shape and dtype (IO naming `where` otherwise).
const DcpDirectory::Tensor& checked_model_tensor(const DcpDirectory& dcp, const std::string& key,
                                                 const std::vector<int64_t>& shape, at::ScalarType dtype,
                                                 const std::string& where) {
  auto it = dcp.tensors().find(key);
  require(it != dcp.tensors().end(), ErrorCode::IO, where + " lacks \"" + key + "\"");
  require(it->second.size == shape, ErrorCode::IO,
          where + ": \"" + key + "\" has shape " + c10::str(at::IntArrayRef(it->second.size)) + ", the model's has " +
              c10::str(at::IntArrayRef(shape)));
  require(
      it->second.dtype == dtype || (floating(it->second.dtype) && floating(dtype)), ErrorCode::IO,
      where + ": \"" + key + "\" is " + c10::toString(it->second.dtype) + ", the model's is " + c10::toString(dtype));
  return it->second;
}

}  // namespace

namespace {

void refuse_unknown_model_tensors(const DcpDirectory& dcp, const std::set<std::string>& wanted,
                                  const std::string& where) {
  for (const auto& [key, t] : dcp.tensors()) {
    require(key.rfind("model.", 0) != 0 || wanted.count(key) == 1, ErrorCode::IO,
            where + " holds \"" + key + "\", which the model lacks");
  }
}

}  // namespace

std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir,
                                                                const NamedTensors& state_dict) {
  const DcpDirectory dcp = DcpDirectory::open(model_dir);
  const std::string where = "load_state: " + model_dir;
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  std::set<std::string> wanted;
  for (const auto& [name, tensor] : state_dict) {
    checked_model_tensor(dcp, "model." + name, tensor.sizes().vec(), tensor.scalar_type(), where);
    wanted.insert("model." + name);
  }
  refuse_unknown_model_tensors(dcp, wanted, where);
  for (const auto& [name, tensor] : state_dict) out.emplace_back(tensor, dcp.read_tensor("model." + name));
  return out;
}

std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir, const ModelImpl& model) {
  if (!model.full_shard()) return dcp_model_values(model_dir, model_state_dict(model));
  // This process's elements of each parameter, one whole parameter at a time.
  const DcpDirectory dcp = DcpDirectory::open(model_dir);
  const std::string where = "load_state: " + model_dir;
  const ShardLayout layout = live_layout(model);
  const at::Tensor shard = model.full_shard()->shard();
  std::set<std::string> wanted;
  for (const LayoutParam& p : layout.params()) {
    checked_model_tensor(dcp, "model." + p.name, p.shape, shard.scalar_type(), where);
    wanted.insert("model." + p.name);
  }
  const NamedTensors buffers = model.named_buffers();
  for (const auto& [name, buffer] : buffers) {
    checked_model_tensor(dcp, "model." + name, buffer.sizes().vec(), buffer.scalar_type(), where);
    wanted.insert("model." + name);
  }
  refuse_unknown_model_tensors(dcp, wanted, where);
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  out.emplace_back(shard, assemble_member_by_param(
                              layout, live_member(model),
                              [&](size_t p) { return dcp.read_tensor("model." + layout.params()[p].name); },
                              shard.options(), where));
  for (const auto& [name, buffer] : buffers) out.emplace_back(buffer, dcp.read_tensor("model." + name));
  return out;
}

namespace {

using Dict = c10::impl::GenericDict;

// The one group: every "optimizer.param_groups.0.<option>", "params" as the
// target's parameter indices; a second group is not libaccel's.
Dict dcp_param_group(const DcpDirectory& dcp, const ShardLayout& target, const std::string& where) {
  Dict group(c10::StringType::get(), c10::AnyType::get());
  const std::string prefix = "optimizer.param_groups.0.";
  for (const auto& [key, item] : dcp.objects()) {
    if (key.rfind("optimizer.param_groups.", 0) != 0) continue;
    require(key.rfind(prefix, 0) == 0, ErrorCode::Unsupported,
            where + " holds \"" + key + "\": libaccel's optimizers have one parameter group");
    const std::string option = key.substr(prefix.size());
    c10::IValue value = dcp.read_object(key);
    if (option == "params") {  // the parameters' names, in the group's order
      require(value.isList(), ErrorCode::IO, where + ": \"" + key + "\" is not a list of names");
      std::set<std::string> names;
      for (const auto& n : value.toListRef()) {
        require(n.isString(), ErrorCode::IO, where + ": \"" + key + "\" holds a " + n.tagKind());
        require(target.find(n.toStringRef()) >= 0, ErrorCode::IO,
                where + ": \"" + key + "\" names " + n.toStringRef() + ", which the model has not (or not trainable)");
        names.insert(n.toStringRef());
      }
      require(names.size() == target.params().size(), ErrorCode::IO,
              where + ": \"" + key + "\" names " + std::to_string(names.size()) + " parameters, the model trains " +
                  std::to_string(target.params().size()));
      const size_t entries = target.kind() == ShardLayout::Kind::Whole ? target.params().size() : 1;
      std::vector<int64_t> indices(entries);
      for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
      value = c10::List<int64_t>(indices);
    }
    group.insert(option, value);
  }
  require(group.contains("params"), ErrorCode::IO, where + " lacks \"" + prefix + "params\"");
  return group;
}

// A parameter's state keys ("optimizer.state.<name>.<key>"; keys have no dots),
// each a tensor or (a step saved as a number) an object.
std::map<std::string, bool> state_keys(const DcpDirectory& dcp, const std::string& param) {
  const std::string prefix = "optimizer.state." + param + ".";
  std::map<std::string, bool> keys;  // key -> is a tensor
  for (const auto& [key, t] : dcp.tensors()) {
    if (key.rfind(prefix, 0) == 0 && key.find('.', prefix.size()) == std::string::npos) {
      keys.emplace(key.substr(prefix.size()), true);
    }
  }
  for (const auto& [key, item] : dcp.objects()) {
    if (key.rfind(prefix, 0) == 0 && key.find('.', prefix.size()) == std::string::npos) {
      keys.emplace(key.substr(prefix.size()), false);
    }
  }
  return keys;
}

}  // namespace

c10::IValue dcp_optimizer_state(const std::string& optimizer_dir, const ShardLayout& target, int member) {
  const DcpDirectory dcp = DcpDirectory::open(optimizer_dir);
  const std::string where = "load_state: " + optimizer_dir;
  const Dict group = dcp_param_group(dcp, target, where);
  std::vector<std::map<std::string, bool>> keys;  // per parameter
  size_t with_state = 0;
  std::set<std::string> used;
  for (const LayoutParam& p : target.params()) {
    keys.push_back(state_keys(dcp, p.name));
    if (!keys.back().empty()) ++with_state;
    for (const auto& [key, tensor] : keys.back()) used.insert("optimizer.state." + p.name + "." + key);
  }
  require(with_state == 0 || with_state == target.params().size(), ErrorCode::IO,
          where + " holds state for " + std::to_string(with_state) + " of the model's " +
              std::to_string(target.params().size()) + " trainable parameters");
  for (const auto& [key, t] : dcp.tensors()) {
    require(key.rfind("optimizer.state.", 0) != 0 || used.count(key) == 1, ErrorCode::IO,
            where + " holds \"" + key + "\", which is no state of the model's trainable parameters");
  }
  auto value_of = [&](size_t p, const std::string& key, bool tensor) {
    const std::string name = "optimizer.state." + target.params()[p].name + "." + key;
    return tensor ? c10::IValue(dcp.read_tensor(name)) : dcp.read_object(name);
  };
  Dict state(c10::IntType::get(), c10::AnyType::get());
  if (with_state > 0 && target.kind() == ShardLayout::Kind::Whole) {  // every parameter's state whole
    for (size_t p = 0; p < target.params().size(); ++p) {
      Dict values(c10::StringType::get(), c10::AnyType::get());
      for (const auto& [key, tensor] : keys[p]) values.insert(key, value_of(p, key, tensor));
      state.insert(static_cast<int64_t>(p), values);
    }
  } else if (with_state > 0) {  // this member's vector of each per-element key
    Dict values(c10::StringType::get(), c10::AnyType::get());
    for (const auto& first_key : keys.front()) {  // not a structured binding: the lambdas below capture it
      const std::string& key = first_key.first;
      const bool tensor = first_key.second;
      for (size_t p = 1; p < keys.size(); ++p) {
        require(keys[p].count(key) == 1, ErrorCode::IO,
                where + ": parameter " + target.params()[p].name + " lacks the state \"" + key + "\" that " +
                    target.params().front().name + " has");
      }
      const DcpDirectory::Tensor* first =
          tensor ? &dcp.tensors().at("optimizer.state." + target.params().front().name + "." + key) : nullptr;
      const bool per_element = key != "step" && first != nullptr && first->size == target.params().front().shape;
      if (per_element) {
        values.insert(key, assemble_member_by_param(
                               target, member, [&](size_t p) { return value_of(p, key, true).toTensor(); },
                               at::TensorOptions(first->dtype), where + " (\"" + key + "\")"));
        continue;
      }
      // The rest (step) agrees between the parameters: one value for the member's vector.
      const c10::IValue value = value_of(0, key, tensor);
      for (size_t p = 1; p < target.params().size(); ++p) {
        require(same_state_value(value_of(p, key, keys[p].at(key)), value), ErrorCode::IO,
                where + ": \"" + key + "\" differs between parameters " + target.params().front().name + " and " +
                    target.params()[p].name + "; it must agree for the state to be cut for " +
                    std::to_string(target.group()) + " processes");
      }
      values.insert(key, value);
    }
    state.insert(int64_t{0}, values);
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  Dict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace accel::detail
