#include <ATen/ATen.h>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace accel {

TensorDataset::TensorDataset(std::vector<at::Tensor> fields) : fields_(std::move(fields)) {
  require_arg(!fields_.empty(), "TensorDataset: needs at least one tensor");
  for (size_t f = 0; f < fields_.size(); ++f) {
    require_arg(fields_[f].defined(), "TensorDataset: tensor " + std::to_string(f) + " is undefined");
    require_arg(fields_[f].dim() >= 1,
                "TensorDataset: tensor " + std::to_string(f) + " must have at least one dimension (samples on dim 0)");
    require_arg(fields_[f].size(0) == fields_[0].size(0),
                "TensorDataset: tensor " + std::to_string(f) + " has " + std::to_string(fields_[f].size(0)) +
                    " samples but tensor 0 has " + std::to_string(fields_[0].size(0)));
  }
}

int64_t TensorDataset::size() const { return fields_[0].size(0); }

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  at::Tensor index =
      at::from_blob(const_cast<int64_t*>(indices.data()), {static_cast<int64_t>(indices.size())}, at::kLong);
  Batch batch;
  for (const auto& field : fields_) batch.push_back(field.index_select(0, index.to(field.device())));
  return batch;
}

}  // namespace accel
