#include "model/meta_tensors.hpp"

#include <ATen/ops/empty.h>
#include <c10/core/TensorImpl.h>

namespace accel::detail {

void replace_tensor_contents(const at::Tensor& target, const at::Tensor& source) {
  target.unsafeGetTensorImpl()->shallow_copy_from(source.getIntrusivePtr());
}

void to_meta(const at::Tensor& tensor, c10::optional<at::ScalarType> type) {
  replace_tensor_contents(
      tensor,
      at::empty(tensor.sizes(), tensor.options().dtype(type.value_or(tensor.scalar_type())).device(c10::kMeta)));
}

void move_to_meta(torch::nn::Module& module) {
  for (const auto& dict : {module.parameters(true), module.buffers(true)}) {
    for (const auto& tensor : dict) {
      if (tensor.defined() && !tensor.is_meta()) to_meta(tensor);
    }
  }
}

}  // namespace accel::detail
