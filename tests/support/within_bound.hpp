// The numerical tests' comparison: elementwise |got - want| <= bound, the
// bound a tensor derived from the arithmetic beside each test. Prints the worst
// error and its share of the bound, so a passing log shows the margin.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace accel_test {

inline ::testing::AssertionResult within(const at::Tensor& got, const at::Tensor& want, const at::Tensor& bound) {
  const at::Tensor error = (got.to(at::kDouble) - want.to(at::kDouble)).abs();
  const double worst = error.max().item<double>(), share = (error / bound).max().item<double>();
  std::printf("worst error %g, %.3g of the bound\n", worst, share);
  if (share <= 1) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "worst error " << worst << " is " << share << " times the bound";
}

}  // namespace accel_test
