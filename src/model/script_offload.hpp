// Hooks around submodule calls of a TorchScript model, for offload (Accelerate's
// AlignDevicesHook, which brings a module's weights in before its forward and
// releases them after). As for FULL_SHARD's wrap units (script_units.hpp), each
// prim::CallMethod of a hooked submodule's forward becomes
// accel::offloaded_call(child, [tensor inputs]) -> Tensor[]; the operator runs
// the child's hook, its forward, and the hook again on the way out, also when
// the forward throws. A child object with no hook registered is called directly.
// The graph executor fixes its plan at the first forward, so the model must
// not have run one yet.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace accel::detail {

class ModelImpl;

// hook(true) before the submodule's forward, hook(false) after.
using SubmoduleHook = std::function<void(bool entering)>;

// Throws Unsupported naming the submodule unless each path names a submodule
// of `module` that its parent's graph calls as a method with tensors only
// (and returns tensors or plain tuples of them); InvalidArgument naming a
// path that is no submodule. Changes nothing.
void check_hookable_submodules(const torch::jit::Module& module, const std::vector<std::string>& paths);

// Rewrites the calls of the submodules at hooks' paths (checked as above) and
// registers each hook for owner; replaces hooks registered before for the same
// submodules. unregister_script_offload(owner) forgets them (the graph keeps
// its operator calls, which then call the children directly).
void hook_script_submodules(torch::jit::Module& module, const std::map<std::string, SubmoduleHook>& hooks,
                            const ModelImpl* owner);
void unregister_script_offload(const ModelImpl* owner);

}  // namespace accel::detail
