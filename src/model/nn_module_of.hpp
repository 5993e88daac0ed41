// The torch::nn::Module behind a model, for big-model dispatch (src/dispatch),
// which walks and re-places its submodules. A free function rather than a
// ModelImpl member so the model's widely included header stays as it is.
#pragma once

#include <torch/nn/module.h>

#include <memory>

namespace accel::detail {

class ModelImpl;

// Null for TorchScript models.
std::shared_ptr<torch::nn::Module> nn_module_of(const ModelImpl& model);

}  // namespace accel::detail
