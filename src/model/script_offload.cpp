#include "model/script_offload.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <mutex>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "accel/error.hpp"
#include "model/script_calls.hpp"

namespace accel::detail {

namespace {

constexpr const char* kOperator = "accel::offloaded_call";

// Hooked submodule objects of every offloaded model (never destroyed, as script_units' registry).
ObjectRegistry<SubmoduleHook>& registry() {
  static auto* hooks = new ObjectRegistry<SubmoduleHook>();
  return *hooks;
}

void run_offloaded_operator(torch::jit::Stack& stack) {
  std::vector<at::Tensor> inputs = torch::jit::pop(stack).toTensorVector();
  c10::intrusive_ptr<c10::ivalue::Object> object = torch::jit::pop(stack).toObject();
  const SubmoduleHook hook = registry().find(object.get()).value_or(SubmoduleHook());
  struct Leave {
    const SubmoduleHook& hook;
    ~Leave() {
      if (hook) hook(false);
    }
  };
  std::vector<at::Tensor> outputs;
  {
    Leave leave{hook};  // first, so a half-done bring-in is released too
    if (hook) hook(true);
    torch::jit::Module child(object);
    std::vector<c10::IValue> args(inputs.begin(), inputs.end());
    flatten_tensors(child.get_method("forward")(std::move(args)), outputs);
  }
  torch::jit::push(stack, c10::List<at::Tensor>(outputs));
}

void register_operator_once() {
  static std::once_flag once;
  std::call_once(once, [] { register_module_call_operator(kOperator, run_offloaded_operator); });
}

struct Found {
  std::map<std::string, torch::jit::Module> children;  // by path
  std::set<const c10::ClassType*> types;
};

Found find_children(const torch::jit::Module& module, const std::vector<std::string>& paths) {
  Found found;
  std::map<std::string, torch::jit::Module> all;
  for (const auto& item : module.named_modules()) all.emplace(item.name, item.value);
  for (const auto& path : paths) {
    auto it = all.find(path);
    require_arg(!path.empty() && it != all.end(), "offload: \"" + path + "\" is no submodule of the TorchScript model");
    found.children.emplace(path, it->second);
    found.types.insert(it->second.type().get());
  }
  return found;
}

// Every call of a hooked class in every method of every module (a graph
// belongs to its class, so each is visited once).
template <typename Visit>
void for_each_call(const torch::jit::Module& module, const std::set<const c10::ClassType*>& types, Visit visit) {
  std::unordered_set<const torch::jit::Graph*> done;
  for (const auto& item : module.modules()) {
    for (const auto& method : item.get_methods()) {
      std::shared_ptr<torch::jit::Graph> graph = method.graph();
      if (!done.insert(graph.get()).second) continue;
      std::vector<torch::jit::Node*> calls;
      collect_forward_calls(graph->block(), types, calls);
      for (torch::jit::Node* call : calls) visit(*graph, call, type_name(item) + "." + method.name());
    }
  }
}

}  // namespace

void check_hookable_submodules(const torch::jit::Module& module, const std::vector<std::string>& paths) {
  const Found found = find_children(module, paths);
  std::set<const c10::ClassType*> called;
  for_each_call(module, found.types, [&](torch::jit::Graph&, torch::jit::Node* call, const std::string& method) {
    const c10::ClassType* type = class_of(call->input(0));
    require_tensor_call(call, "offload: the call of " + type->name()->name() + " in " + method,
                        "an offloaded submodule");
    called.insert(type);
  });
  for (const auto& [path, child] : found.children) {
    require(called.count(child.type().get()) > 0, ErrorCode::Unsupported,
            "offload: submodule " + path + " (" + type_name(child) +
                ") is not called as a method in the TorchScript graph (inlined at export?), so its weights cannot be "
                "brought in around its forward");
  }
}

void hook_script_submodules(torch::jit::Module& module, const std::map<std::string, SubmoduleHook>& hooks,
                            const ModelImpl* owner) {
  std::vector<std::string> paths;
  for (const auto& entry : hooks) paths.push_back(entry.first);
  check_hookable_submodules(module, paths);
  const Found found = find_children(module, paths);
  register_operator_once();
  const c10::Symbol op = c10::Symbol::fromQualString(kOperator);
  for_each_call(module, found.types, [&](torch::jit::Graph& graph, torch::jit::Node* call, const std::string&) {
    replace_call_with_operator(graph, call, op);
  });
  for (const auto& [path, child] : found.children) registry().set(child._ivalue().get(), owner, hooks.at(path));
}

void unregister_script_offload(const ModelImpl* owner) { registry().forget(owner); }

}  // namespace accel::detail
