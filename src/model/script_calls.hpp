// What the TorchScript graph rewrites (FULL_SHARD's wrap units in
// script_units, tensor parallelism in script_tensor_parallel) share: finding
// the calls of a submodule's forward in a graph, by the submodule's class.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace c10 {
struct ClassType;
}
namespace torch::jit {
struct Block;
struct Module;
struct Node;
struct Value;
}  // namespace torch::jit

namespace accel::detail {

// A module's class name without its qualifiers ("GPT2Block"; a traced
// module's mangled ___torch_mangle_N prefix dropped with them).
std::string type_name(const torch::jit::Module& module);

// The class of a value (a submodule passed to prim::CallMethod), or null.
// Types are tested by kind() and read with expectRef: Type::cast<T>() pulls in
// c10::DynamicType's typeinfo, which libtorch does not export.
const c10::ClassType* class_of(const torch::jit::Value* value);

// Appends the prim::CallMethod "forward" nodes of `block` (and the blocks
// nested in it) whose module is of one of `types`, in graph order.
void collect_forward_calls(torch::jit::Block* block, const std::set<const c10::ClassType*>& types,
                           std::vector<torch::jit::Node*>& calls);

}  // namespace accel::detail
