// Walking a model's module tree the way Accelerate's big-model code does.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace accel {
class Model;
}

namespace accel::detail {

// The model's module; Unsupported naming `what` for TorchScript models.
std::shared_ptr<torch::nn::Module> module_of(const Model& model, const char* what);
// Parameters then buffers, each tensor once under its first name.
std::vector<std::pair<std::string, at::Tensor>> named_module_tensors(const torch::nn::Module& module);
// "Linear" for torch::nn::LinearImpl: the name no_split_module_classes uses.
std::string class_name(const torch::nn::Module& module);

}  // namespace accel::detail
