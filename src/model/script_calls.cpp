#include "model/script_calls.hpp"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/runtime/operator.h>

#include "accel/error.hpp"

namespace accel::detail {

namespace {

// Types are tested by kind() and read with expectRef: Type::cast<T>() pulls in
// c10::DynamicType's typeinfo, which libtorch does not export (UBSan's vptr
// check then fails to link).
bool is_tuple(const c10::TypePtr& type) { return type->kind() == c10::TypeKind::TupleType; }

size_t count_tensors(const c10::TypePtr& type) {
  if (!is_tuple(type)) return 1;
  size_t n = 0;
  for (const auto& element : type->expectRef<c10::TupleType>().elements()) n += count_tensors(element);
  return n;
}

// Tensors, or plain (unnamed) tuples of them.
bool tensors_only(const c10::TypePtr& type) {
  if (!is_tuple(type)) return type->kind() == c10::TypeKind::TensorType;
  const auto& tuple = type->expectRef<c10::TupleType>();
  if (tuple.schema()) return false;  // a NamedTuple
  for (const auto& element : tuple.elements()) {
    if (!tensors_only(element)) return false;
  }
  return true;
}

// Rebuilds a value of `type` from the unpacked tensors, from `next` on.
torch::jit::Value* rebuild(torch::jit::Graph& graph, const c10::TypePtr& type, at::ArrayRef<torch::jit::Value*> tensors,
                           size_t& next) {
  if (!is_tuple(type)) return tensors[next++];
  std::vector<torch::jit::Value*> elements;
  for (const auto& element : type->expectRef<c10::TupleType>().elements()) {
    elements.push_back(rebuild(graph, element, tensors, next));
  }
  return graph.insertNode(graph.createTuple(elements))->output();
}

}  // namespace

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

void require_tensor_call(const torch::jit::Node* call, const std::string& where, const std::string& what) {
  for (size_t i = 1; i < call->inputs().size(); ++i) {
    require(call->input(i)->type()->kind() == c10::TypeKind::TensorType, ErrorCode::Unsupported,
            where + " passes " + call->input(i)->type()->annotation_str() + " as argument " + std::to_string(i) + "; " +
                what + " takes tensors only");
  }
  const c10::TypePtr result = call->output()->type();
  require(tensors_only(result), ErrorCode::Unsupported,
          where + " returns " + result->annotation_str() + "; " + what + " returns tensors or plain tuples of them");
}

void replace_call_with_operator(torch::jit::Graph& graph, torch::jit::Node* call, c10::Symbol op) {
  const c10::TypePtr result = call->output()->type();
  torch::jit::WithInsertPoint point(call);
  std::vector<torch::jit::Value*> args(call->inputs().begin() + 1, call->inputs().end());
  torch::jit::Value* list = graph.insertNode(graph.createList(c10::TensorType::get(), args))->output();
  // Graph::insert matches the operator's schema and types the output
  // (Tensor[]); Value::setType here would need DynamicType's typeinfo.
  torch::jit::Value* run = graph.insert(op, {call->input(0), list});
  torch::jit::Node* unpacked = graph.insertNode(graph.createListUnpack(run, count_tensors(result)));
  size_t next = 0;
  torch::jit::Value* rebuilt = rebuild(graph, result, unpacked->outputs(), next);
  call->output()->replaceAllUsesWith(rebuilt);
  call->destroy();
}

void register_module_call_operator(const std::string& name, void (*run)(std::vector<c10::IValue>& stack)) {
  torch::jit::registerOperator(torch::jit::Operator(name + "(Any module, Tensor[] inputs) -> Tensor[]", run,
                                                    c10::AliasAnalysisKind::CONSERVATIVE));
}

void flatten_tensors(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) flatten_tensors(element, out);
  } else {
    out.push_back(value.toTensor());
  }
}

}  // namespace accel::detail
