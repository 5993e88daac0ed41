// FULL_SHARD's transformer_auto_wrap_policy for TorchScript models: the
// submodules named by class or path become wrap units, run inside
// FullShard::run_unit by an operator that replaces their calls in the graph.
//
// A traced or scripted module keeps each submodule's forward as its own
// method, called from its parent's graph as prim::CallMethod. Before the first
// forward (the executor fixes its plan then) every such call to a wrapped
// submodule becomes accel::fsdp_unit(child, [tensor inputs]) -> Tensor[]
// followed by the unpacking of its (possibly nested tuple) result. The
// operator finds the unit registered for that child object and runs the
// child's forward through its model's FullShard, so the unit is gathered just
// for that call and again for its backward, like FSDP's pre-forward and
// pre-backward hooks. A child with no unit registered (an unprepared model,
// or a non-wrapped module sharing the class) is called directly.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sharding/full_shard.hpp"

namespace torch::jit {
struct Module;
}

namespace accel::detail {

class ModelImpl;

// The units of `module` under `classes`: first, when parameters are left
// over, the whole_model root unit "(model)" with them, then one unit per
// outermost submodule whose class name (GPT2Block) or dotted path
// (transformer.h.0) is listed and that holds trainable parameters, named by
// its path. `parameters` are the model's trainable parameters, each once.
// Rewrites the calls of those submodules in place and registers each as
// `owner`'s unit of that index (unregister_script_units undoes that). Throws
// InvalidArgument naming a listed name that matches no submodule, Unsupported
// naming a wrapped submodule that no graph calls as a method (inlined at
// export) or whose call takes or returns more than tensors (and tuples of
// them).
std::vector<UnitLayout> wrap_script_units(torch::jit::Module& module, const std::vector<std::string>& classes,
                                          const std::vector<std::pair<std::string, at::Tensor>>& parameters,
                                          const std::weak_ptr<ModelImpl>& owner);

// Forgets every unit registered for `owner` (its destructor calls this).
void unregister_script_units(const ModelImpl* owner);

}  // namespace accel::detail
