#include "model/script_calls.hpp"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

namespace accel::detail {

std::string type_name(const torch::jit::Module& module) {
  auto name = module.type()->name();
  return name ? name->name() : module.type()->str();
}

const c10::ClassType* class_of(const torch::jit::Value* value) {
  const c10::TypePtr& type = value->type();
  return type->kind() == c10::TypeKind::ClassType ? &type->expectRef<c10::ClassType>() : nullptr;
}

void collect_forward_calls(torch::jit::Block* block, const std::set<const c10::ClassType*>& types,
                           std::vector<torch::jit::Node*>& calls) {
  for (torch::jit::Node* node : block->nodes()) {
    for (torch::jit::Block* inner : node->blocks()) collect_forward_calls(inner, types, calls);
    if (node->kind() != c10::prim::CallMethod || node->s(c10::attr::name) != "forward") continue;
    const c10::ClassType* type = class_of(node->input(0));
    if (type && types.count(type)) calls.push_back(node);
  }
}

}  // namespace accel::detail
