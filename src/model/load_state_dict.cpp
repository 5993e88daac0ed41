// Model::load_state_dict: writes named tensors into a model's parameters and
// buffers, all or nothing.
#include <ATen/ATen.h>

#include <map>
#include <set>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "accel/model.hpp"
#include "model/model_impl.hpp"

namespace accel {

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 10; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 10) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out.empty() ? "none" : out;
}

// Floating types convert (as PyTorch's copy_ does); integers, booleans and
// floats do not mix, since that would silently truncate or reinterpret.
int dtype_kind(at::ScalarType type) {
  if (type == at::kBool) return 0;
  return at::isFloatingType(type) ? 1 : 2;
}

}  // namespace

LoadReport Model::load_state_dict(const NamedTensors& tensors, bool strict) {
  std::map<std::string, const at::Tensor*> given;
  for (const auto& [name, tensor] : tensors) {
    require_arg(tensor.defined(), "load_state_dict: tensor \"" + name + "\" is undefined");
    given[name] = &tensor;  // a repeated name: the last one wins, as in a Python dict
  }
  LoadReport report;
  std::vector<std::pair<at::Tensor, const at::Tensor*>> plan;
  std::set<std::string> used;
  // FULL_SHARD: loaded into the gathered parameters; each process keeps its slices. Collective there.
  detail::ModelImpl::Gathered gathered(*impl_);
  for (auto& [name, target] : impl_->state_dict()) {
    auto it = given.find(name);
    if (it == given.end()) {
      report.missing_keys.push_back(name);
      continue;
    }
    const at::Tensor& source = *it->second;
    require_arg(source.sizes() == target.sizes(), "load_state_dict: tensor \"" + name + "\" has shape " +
                                                      c10::str(source.sizes()) + ", the model's has " +
                                                      c10::str(target.sizes()));
    require_arg(dtype_kind(source.scalar_type()) == dtype_kind(target.scalar_type()),
                "load_state_dict: tensor \"" + name + "\" is " + c10::toString(source.scalar_type()) +
                    ", the model's is " + c10::toString(target.scalar_type()) +
                    " (no conversion between integer, boolean and floating types)");
    used.insert(name);
    plan.emplace_back(target, &source);
  }
  for (const auto& [name, tensor] : given) {
    if (!used.count(name)) report.unexpected_keys.push_back(name);
  }
  require_arg(!strict || (report.missing_keys.empty() && report.unexpected_keys.empty()),
              "load_state_dict: the tensors do not match the model: missing " + join_names(report.missing_keys) +
                  "; unexpected " + join_names(report.unexpected_keys));
  at::NoGradGuard no_grad;  // parameters are leaves that require grad
  for (auto& [target, source] : plan) target.copy_(*source);
  gathered.scattered();
  return report;
}

}  // namespace accel
