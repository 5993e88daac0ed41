#include "model/script_units.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "accel/error.hpp"
#include "model/script_calls.hpp"
#include "model/model_impl.hpp"

namespace accel::detail {

namespace {

constexpr const char* kUnitOperator = "accel::fsdp_unit";

struct Registered {
  std::weak_ptr<ModelImpl> model;
  size_t unit = 0;
};

// Child module objects of every prepared model, to their units (never
// destroyed: operators may run while static destructors do).
ObjectRegistry<Registered>& registry() {
  static auto* units = new ObjectRegistry<Registered>();
  return *units;
}

// The operator: runs the child's forward inside its unit.
void run_unit_operator(torch::jit::Stack& stack) {
  std::vector<at::Tensor> inputs = torch::jit::pop(stack).toTensorVector();
  c10::intrusive_ptr<c10::ivalue::Object> object = torch::jit::pop(stack).toObject();
  const Registered found = registry().find(object.get()).value_or(Registered{});
  torch::jit::Module child(object);
  FullShard::Bodies body = [child](const std::vector<at::Tensor>& x) mutable {
    std::vector<c10::IValue> args(x.begin(), x.end());
    std::vector<at::Tensor> out;
    flatten_tensors(child.get_method("forward")(std::move(args)), out);
    return out;
  };
  std::shared_ptr<ModelImpl> model = found.model.lock();
  FullShard* shard = model ? model->full_shard() : nullptr;
  std::vector<at::Tensor> outputs = shard ? shard->run_unit(found.unit, inputs, body) : body(inputs);
  torch::jit::push(stack, c10::List<at::Tensor>(outputs));
}

void register_operator_once() {
  static std::once_flag once;
  std::call_once(once, [] { register_module_call_operator(kUnitOperator, run_unit_operator); });
}

}  // namespace

std::vector<UnitLayout> wrap_script_units(torch::jit::Module& module, const std::vector<std::string>& classes,
                                          const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                          const std::weak_ptr<ModelImpl>& owner) {
  const std::set<std::string> wanted(classes.begin(), classes.end());
  std::set<std::string> matched_names, seen_classes;
  struct Child {
    std::string path;
    torch::jit::Module module;
  };
  std::vector<Child> children;
  for (const auto& item : module.named_modules()) {
    if (item.name.empty()) continue;  // the root
    const std::string cls = type_name(item.value);
    seen_classes.insert(cls);
    if (!children.empty() && item.name.rfind(children.back().path + ".", 0) == 0) continue;  // inside a wrapped one
    const bool by_class = wanted.count(cls) > 0, by_path = wanted.count(item.name) > 0;
    if (!by_class && !by_path) continue;
    matched_names.insert(by_class ? cls : item.name);
    children.push_back({item.name, item.value});
  }
  for (const auto& name : wanted) {
    if (matched_names.count(name)) continue;
    std::string known;
    for (const auto& cls : seen_classes) known += (known.empty() ? "" : ", ") + cls;
    fail(ErrorCode::InvalidArgument, "fsdp_transformer_layer_cls_to_wrap: \"" + name +
                                         "\" is neither a class nor a submodule path of the TorchScript model (its "
                                         "classes: " +
                                         known + ")");
  }

  // The units, and which parameters they take from the root.
  std::unordered_set<const c10::TensorImpl*> trainable;
  for (const auto& [name, p] : parameters) trainable.insert(p.unsafeGetTensorImpl());
  std::unordered_set<const c10::TensorImpl*> taken;
  std::vector<UnitLayout> units;
  std::vector<const c10::ivalue::Object*> objects;
  std::set<const c10::ClassType*> types;
  for (const Child& child : children) {
    UnitLayout unit{child.path, {}};
    for (const auto& item : child.module.named_parameters(true)) {
      const c10::TensorImpl* impl = item.value.unsafeGetTensorImpl();
      if (!trainable.count(impl) || !taken.insert(impl).second) continue;
      unit.parameters.emplace_back(child.path + "." + item.name, item.value);
    }
    if (unit.parameters.empty()) continue;
    units.push_back(std::move(unit));
    objects.push_back(child.module._ivalue().get());
    types.insert(child.module.type().get());
  }
  UnitLayout root{"(model)", {}, /*whole_model=*/true};
  for (const auto& [name, p] : parameters) {
    if (!taken.count(p.unsafeGetTensorImpl())) root.parameters.emplace_back(name, p);
  }

  // Every call of a wrapped class, in every method of every module (a graph
  // belongs to its class, so each is rewritten once).
  register_operator_once();
  std::unordered_set<const torch::jit::Graph*> done;
  std::set<const c10::ClassType*> called;
  const c10::Symbol op = c10::Symbol::fromQualString(kUnitOperator);
  for (const auto& item : module.modules()) {
    for (const auto& method : item.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      if (!done.insert(graph.get()).second) continue;
      std::vector<torch::jit::Node*> calls;
      collect_forward_calls(graph->block(), types, calls);
      for (torch::jit::Node* call : calls) {
        const c10::ClassType* type = class_of(call->input(0));
        require_tensor_call(call,
                            "fsdp_transformer_layer_cls_to_wrap: the call of " + type->name()->name() + " in " +
                                type_name(item) + "." + method.name(),
                            "a wrapped submodule");
        replace_call_with_operator(*graph, call, op);
        called.insert(type);
      }
    }
  }
  for (const Child& child : children) {
    require(
        called.count(child.module.type().get()) || !types.count(child.module.type().get()), ErrorCode::Unsupported,
        "fsdp_transformer_layer_cls_to_wrap: submodule " + child.path + " (" + type_name(child.module) +
            ") is not called as a method in the TorchScript graph (inlined at export?), so it cannot be a wrap unit");
  }

  std::vector<UnitLayout> layouts;
  if (!root.parameters.empty()) layouts.push_back(std::move(root));
  const size_t first = layouts.size();
  for (auto& unit : units) layouts.push_back(std::move(unit));
  const ModelImpl* raw = owner.lock().get();
  for (size_t i = 0; i < objects.size(); ++i) registry().set(objects[i], raw, Registered{owner, first + i});
  return layouts;
}

void unregister_script_units(const ModelImpl* owner) { registry().forget(owner); }

}  // namespace accel::detail
