// The torch::nn::Module (or TorchScript module) behind a model, for big-model
// dispatch (src/big_model), which walks and re-places its submodules. A free function rather than a
// ModelImpl member so the model's widely included header stays as it is.
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>

namespace torch::jit {
struct Module;
}

namespace accel::detail {

class ModelImpl;

// Null for TorchScript models.
std::shared_ptr<torch::nn::Module> nn_module_of(const ModelImpl& model);

// The TorchScript module behind a model, for graph rewrites after load
// (offload); null for other models. Throws Unsupported, naming `what`, once the
// model ran a forward: the graph executor fixes its plan then.
torch::jit::Module* script_module_for_rewrite(ModelImpl& model, const std::string& what);

}  // namespace accel::detail
