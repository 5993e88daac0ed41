// Multi-process training checked against a one-process reference, both in
// float64: the model, the reference and the data widened exactly from their
// float32 draws, so that what separates the two sides is summation order
// alone, which float64 bounds where float32 cannot.
#pragma once

#include <ATen/ATen.h>

#include "accel/accel.hpp"

namespace float64_reference {

// The processes' batch means averaged by an allreduce and one mean over the
// same samples differ only in summation order: rounding, which in float32 has
// no bound independent of the kernels' blocking and of cancellation across
// samples (oneDNN and OpenBLAS sum in other orders on AVX2, AVX-512 and AMX).
// SGD carries it through the updates about unamplified; in float64
// (u = 1.1e-16) it stays near 1e-15. kSgdTolerance = 1e-11 is 1e4 over that
// and 1e6 below a real difference (a window's gradient applied twice or not
// divided by the world size: 1e-3 and up after the first update).
constexpr double kSgdTolerance = 1e-11;

// The model's parameters as float64 (exact: every float32 is a float64).
inline void widen(accel::Model& model) {
  at::NoGradGuard no_grad;
  for (auto& p : model.parameters()) p.set_data(p.to(at::kDouble));
}

}  // namespace float64_reference
