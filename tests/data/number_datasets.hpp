// Datasets whose samples are their own indices, shared by the loader tests
// (tests/data) and the multi-process loader tests (tests/dist): a batch's
// labels then say exactly which samples it holds.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "accel/data.hpp"

namespace accel_test {

// n samples: input = `width` copies of i (float), label = i (int64), i = 0..n-1.
class CountingStream : public accel::IterableDataset {
 public:
  explicit CountingStream(int64_t n, int64_t width = 1) : n_(n), width_(width) {}
  void reset(uint64_t) override { next_ = 0; }
  std::optional<accel::Sample> next() override {
    if (next_ == n_) return std::nullopt;
    const int64_t i = next_++;
    return accel::Sample{at::full({width_}, static_cast<float>(i)), at::scalar_tensor(i, at::kLong)};
  }

 private:
  int64_t n_;
  int64_t width_;
  int64_t next_ = 0;
};

// The same n samples as a map-style dataset (inputs of width 1).
inline std::shared_ptr<accel::TensorDataset> numbers(int64_t n) {
  at::Tensor x = at::arange(n, at::kFloat).unsqueeze(1);
  at::Tensor y = at::arange(n, at::kLong);
  return std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y});
}

inline std::vector<int64_t> as_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kLong).contiguous().cpu();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

}  // namespace accel_test
