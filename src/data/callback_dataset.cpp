// Datasets whose samples come from functions (the C ABI's callbacks, hence
// datasets written in Python, Java or Go).
#include <ATen/ATen.h>

#include "accel/data.hpp"
#include "accel/error.hpp"

namespace accel {

namespace {

void check_fields(const std::vector<FieldSpec>& fields) {
  require_arg(!fields.empty(), "callback dataset: needs at least one field");
  for (size_t f = 0; f < fields.size(); ++f) {
    for (int64_t d : fields[f].shape) {
      require_arg(
          d > 0, "callback dataset: field " + std::to_string(f) + " has a non-positive dimension " + std::to_string(d));
    }
  }
}

std::vector<int64_t> batched_shape(int64_t batch, const FieldSpec& field) {
  std::vector<int64_t> shape{batch};
  shape.insert(shape.end(), field.shape.begin(), field.shape.end());
  return shape;
}

// Pointers to row `row` of every batch tensor.
std::vector<void*> row_pointers(const Batch& batch, int64_t row) {
  std::vector<void*> pointers;
  for (const auto& t : batch) {
    int64_t row_bytes = t.numel() / t.size(0) * static_cast<int64_t>(t.element_size());
    pointers.push_back(static_cast<char*>(t.data_ptr()) + row * row_bytes);
  }
  return pointers;
}

}  // namespace

CallbackDataset::CallbackDataset(std::vector<FieldSpec> fields, std::function<int64_t()> length, SampleWriter read,
                                 SampleWriter transform)
    : fields_(std::move(fields)), length_(std::move(length)), read_(std::move(read)), transform_(std::move(transform)) {
  check_fields(fields_);
  require_arg(static_cast<bool>(length_), "callback dataset: the length callback is missing");
  require_arg(static_cast<bool>(read_), "callback dataset: the get_sample callback is missing");
}

int64_t CallbackDataset::size() const {
  int64_t n = length_();
  require_arg(n >= 0, "callback dataset: the length callback returned " + std::to_string(n));
  return n;
}

Batch CallbackDataset::get_batch(const std::vector<int64_t>& indices) const {
  Batch batch;
  const int64_t count = static_cast<int64_t>(indices.size());
  for (const auto& field : fields_) batch.push_back(at::empty(batched_shape(count, field), field.dtype));
  for (int64_t row = 0; row < count; ++row) {
    std::vector<void*> pointers = row_pointers(batch, row);
    read_(indices[static_cast<size_t>(row)], pointers);
    if (transform_) transform_(indices[static_cast<size_t>(row)], pointers);
  }
  return batch;
}

CallbackStream::CallbackStream(std::vector<FieldSpec> fields, std::function<bool(const std::vector<void*>&)> next,
                               std::function<void(uint64_t)> reset)
    : fields_(std::move(fields)), next_(std::move(next)), reset_(std::move(reset)) {
  check_fields(fields_);
  require_arg(static_cast<bool>(next_), "callback stream: the next_sample callback is missing");
}

void CallbackStream::reset(uint64_t epoch) {
  if (reset_) reset_(epoch);
}

std::optional<Sample> CallbackStream::next() {
  Batch one;
  for (const auto& field : fields_) one.push_back(at::empty(batched_shape(1, field), field.dtype));
  if (!next_(row_pointers(one, 0))) return std::nullopt;
  Sample sample;
  for (auto& t : one) sample.push_back(t.squeeze(0));
  return sample;
}

}  // namespace accel
