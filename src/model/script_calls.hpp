// What the TorchScript graph rewrites (FULL_SHARD's wrap units in
// script_units, offload in script_offload, tensor parallelism in
// script_tensor_parallel) share: finding the calls of a submodule's forward in
// a graph, by the submodule's class, and replacing such a call with an
// operator `NAME(Any module, Tensor[] inputs) -> Tensor[]`.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/interned_strings.h>
#include <ATen/core/ivalue.h>

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace c10 {
struct ClassType;
}
namespace torch::jit {
struct Block;
struct Graph;
struct Module;
struct Node;
struct Value;
}  // namespace torch::jit

namespace accel::detail {

class ModelImpl;

// What a rewritten graph's operator finds for the submodule object it is
// called with: an entry per object, registered by the model that owns it
// (forgotten with that model). Safe to use from several threads.
template <typename Entry>
class ObjectRegistry {
 public:
  std::optional<Entry> find(const c10::ivalue::Object* object) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(object);
    return it == entries_.end() ? std::nullopt : std::optional<Entry>(it->second.second);
  }
  void set(const c10::ivalue::Object* object, const ModelImpl* owner, Entry entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_[object] = {owner, std::move(entry)};
  }
  void forget(const ModelImpl* owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.first == owner ? entries_.erase(it) : std::next(it);
    }
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const c10::ivalue::Object*, std::pair<const ModelImpl*, Entry>> entries_;
};

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

// Throws Unsupported, starting with `where` and naming `what` (the kind of
// submodule), unless the call passes tensors only and returns a tensor or
// plain (unnamed) tuples of them: what replace_call_with_operator carries.
void require_tensor_call(const torch::jit::Node* call, const std::string& where, const std::string& what);

// Replaces the prim::CallMethod `call` (checked by require_tensor_call) with
// op(module, [its tensor arguments]) and the unpacking of its result back into
// the call's (possibly nested tuple) type; `call` is destroyed.
void replace_call_with_operator(torch::jit::Graph& graph, torch::jit::Node* call, c10::Symbol op);

// Registers the operator NAME(Any module, Tensor[] inputs) -> Tensor[] that
// replace_call_with_operator inserts, run by `run`. Once per name.
void register_module_call_operator(const std::string& name, void (*run)(std::vector<c10::IValue>& stack));

// The tensors of a forward's result in depth-first order (the order the
// rewritten graph unpacks them in).
void flatten_tensors(const c10::IValue& value, std::vector<at::Tensor>& out);

}  // namespace accel::detail
