#include "accelerator/load_dcp_state.hpp"

#include <ATen/ATen.h>

#include <set>

#include "accel/error.hpp"
#include "formats/dcp.hpp"

namespace accel::detail {

namespace {

bool floating(at::ScalarType t) { return at::isFloatingType(t); }

}  // namespace

std::vector<std::pair<at::Tensor, at::Tensor>> dcp_model_values(const std::string& model_dir,
                                                                const NamedTensors& state_dict) {
  const DcpDirectory dcp = DcpDirectory::open(model_dir);
  const std::string where = "load_state: " + model_dir;
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  std::set<std::string> wanted;
  for (const auto& [name, tensor] : state_dict) {
    const std::string key = "model." + name;
    wanted.insert(key);
    auto it = dcp.tensors().find(key);
    require(it != dcp.tensors().end(), ErrorCode::IO, where + " lacks \"" + key + "\"");
    require(it->second.size == tensor.sizes().vec(), ErrorCode::IO,
            where + ": \"" + key + "\" has shape " + c10::str(at::IntArrayRef(it->second.size)) + ", the model's has " +
                c10::str(tensor.sizes()));
    require(it->second.dtype == tensor.scalar_type() || (floating(it->second.dtype) && floating(tensor.scalar_type())),
            ErrorCode::IO,
            where + ": \"" + key + "\" is " + c10::toString(it->second.dtype) + ", the model's is " +
                c10::toString(tensor.scalar_type()));
    out.emplace_back(tensor, dcp.read_tensor(key));
  }
  for (const auto& [key, t] : dcp.tensors()) {
    require(key.rfind("model.", 0) != 0 || wanted.count(key) == 1, ErrorCode::IO,
            where + " holds \"" + key + "\", which the model lacks");
  }
  return out;
}

c10::IValue dcp_optimizer_state(const std::string& optimizer_dir, const ShardLayout& whole) {
  const DcpDirectory dcp = DcpDirectory::open(optimizer_dir);
  const std::string where = "load_state: " + optimizer_dir;
  using Dict = c10::impl::GenericDict;
  // The group: every "optimizer.param_groups.0.<option>"; a second group is not libaccel's.
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
        require(whole.find(n.toStringRef()) >= 0, ErrorCode::IO,
                where + ": \"" + key + "\" names " + n.toStringRef() + ", which the model has not (or not trainable)");
        names.insert(n.toStringRef());
      }
      require(names.size() == whole.params().size(), ErrorCode::IO,
              where + ": \"" + key + "\" names " + std::to_string(names.size()) + " parameters, the model trains " +
                  std::to_string(whole.params().size()));
      std::vector<int64_t> indices(whole.params().size());
      for (size_t i = 0; i < indices.size(); ++i) indices[i] = static_cast<int64_t>(i);
      value = c10::List<int64_t>(indices);
    }
    group.insert(option, value);
  }
  require(group.contains("params"), ErrorCode::IO, where + " lacks \"" + prefix + "params\"");
  // Each parameter's state: "optimizer.state.<name>.<key>" (keys have no dots).
  Dict state(c10::IntType::get(), c10::AnyType::get());
  std::set<std::string> used;
  for (size_t i = 0; i < whole.params().size(); ++i) {
    const std::string param = "optimizer.state." + whole.params()[i].name + ".";
    Dict values(c10::StringType::get(), c10::AnyType::get());
    for (const auto& [key, t] : dcp.tensors()) {
      if (key.rfind(param, 0) != 0 || key.find('.', param.size()) != std::string::npos) continue;
      values.insert(key.substr(param.size()), dcp.read_tensor(key));
      used.insert(key);
    }
    for (const auto& [key, item] : dcp.objects()) {  // a step saved as a number
      if (key.rfind(param, 0) != 0 || key.find('.', param.size()) != std::string::npos) continue;
      values.insert(key.substr(param.size()), dcp.read_object(key));
      used.insert(key);
    }
    if (!values.empty()) state.insert(static_cast<int64_t>(i), values);
  }
  require(state.empty() || state.size() == whole.params().size(), ErrorCode::IO,
          where + " holds state for " + std::to_string(state.size()) + " of the model's " +
              std::to_string(whole.params().size()) + " trainable parameters");
  for (const auto& [key, t] : dcp.tensors()) {
    require(key.rfind("optimizer.state.", 0) != 0 || used.count(key) == 1, ErrorCode::IO,
            where + " holds \"" + key + "\", which is no state of the model's trainable parameters");
  }
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  Dict out(c10::StringType::get(), c10::AnyType::get());
  out.insert("state", state);
  out.insert("param_groups", groups);
  return out;
}

}  // namespace accel::detail
