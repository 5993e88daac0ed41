// libaccel C++ API: a trainable model, from TorchScript, a JSON spec or a torch::nn::Module.
//
// Model is a shared handle: copies refer to the same module. After
// Accelerator::prepare it lives on the accelerator's device and its gradients
// are averaged across processes during Accelerator::backward.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace accel {

namespace detail {
class ModelImpl;
}
struct LoadReport;  // checkpoint.hpp

class Model {
 public:
  using ForwardFn = std::function<at::Tensor(const at::Tensor&)>;
  // Tensors by name, in order: a Hugging Face model's inputs (input_ids,
  // attention_mask, labels) and outputs (loss, logits).
  using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;
  using NamedForwardFn = std::function<NamedTensors(const NamedTensors&)>;

  // A TorchScript module saved with torch.jit.save, its elementwise tanh-GELU
  // chains run as one aten::gelu kernel (see accel_model_from_torchscript).
  // Throws IO naming the path.
  static Model from_torchscript(const std::string& path);
  // The same, naming the outputs of a forward that returns a plain tuple (or
  // one tensor) for the named forward; see forward(const NamedTensors&).
  static Model from_torchscript(const std::string& path, std::vector<std::string> output_names);
  // from_torchscript with the parameters on the meta device, their bytes never
  // read (Accelerate's init_empty_weights for a TorchScript model): code,
  // constants and buffers are loaded, the buffers from the file itself, since
  // a checkpoint need not hold them (transformers' non-persistent ones, such as
  // GPT-2's causal mask, are in no model.safetensors). Tied parameters stay one
  // tensor. materialize or load_checkpoint_and_dispatch (accel/big_model.hpp)
  // then fill the parameters from a checkpoint; forward fails until they do.
  // Throws what from_torchscript throws; IO naming the path for a compressed
  // record or a data.pkl holding anything but module objects and their data.
  static Model from_torchscript_empty(const std::string& path, std::vector<std::string> output_names = {});
  // A model from a JSON spec (see accel_model.h, accel_model_from_json): a
  // torch::nn::Sequential for a list of layers, a graph with named inputs and
  // outputs for {"inputs", "nodes", "outputs"}. Throws InvalidArgument naming
  // the layer or node and the argument, or for a spec that is not JSON or nests
  // arrays and objects more than 256 levels deep.
  static Model from_json(const std::string& spec);
  // Any torch::nn::Module with the forward to call on it.
  static Model from_module(std::shared_ptr<torch::nn::Module> module, ForwardFn forward);
  // A module with a one-tensor forward and a named one (either may be empty,
  // not both); the forward without a function is refused with InvalidArgument.
  static Model from_module(std::shared_ptr<torch::nn::Module> module, ForwardFn forward, NamedForwardFn named_forward);
  // A module holder such as torch::nn::Sequential or a TORCH_MODULE type.
  template <class Impl>
  static Model from_module(const torch::nn::ModuleHolder<Impl>& holder) {
    std::shared_ptr<Impl> impl = holder.ptr();
    return from_module(impl, [impl](const at::Tensor& input) { return impl->forward(input); });
  }

  at::Tensor forward(const at::Tensor& input);
  // Named inputs to named outputs (see NamedTensors). A model with one tensor
  // in and out takes exactly one input, of any name, and returns "output".
  // A TorchScript model binds inputs to its forward's argument names (omitted
  // ones take their defaults) and names its outputs: a dict by its keys, a
  // NamedTuple by its fields, a plain tuple or list by the output names given
  // at load time or "0", "1", ..., a tensor "output"; None outputs are left out.
  // Throws InvalidArgument naming a missing, unknown, repeated or undefined
  // input, one of the wrong type or on another device, with the expected and
  // the given names.
  NamedTensors forward(const NamedTensors& inputs);
  void train(bool training = true);
  bool is_training() const;
  std::vector<at::Tensor> parameters() const;
  std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;
  std::vector<std::pair<std::string, at::Tensor>> named_buffers() const;
  int64_t num_parameters(bool trainable_only = false) const;
  // PyTorch's load_state_dict: copies each named tensor into the parameter or
  // buffer of that state_dict() name (tied copies name the same tensor).
  // Floating types convert; shapes must match. strict: a name the model lacks
  // or one of its names the dict lacks is an error; otherwise they are skipped
  // and reported. Everything is checked before anything is copied, so a throw
  // (InvalidArgument naming the tensors, shapes or dtypes) changes nothing.
  // Collective under FULL_SHARD (it gathers the shards first, so every process
  // calls it); otherwise not, but every process of a prepared model should
  // load the same tensors, or the replicas diverge.
  LoadReport load_state_dict(const NamedTensors& tensors, bool strict = true);
  c10::Device device() const;
  bool is_prepared() const;

  detail::ModelImpl& impl() const { return *impl_; }

 private:
  explicit Model(std::shared_ptr<detail::ModelImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::ModelImpl> impl_;
};

}  // namespace accel
