// An out-of-tree C++ program linking accel::accel from find_package(accel): the
// C++ API, and with it LibTorch's headers, come through the imported target.
#include <accel/accel.h>
#include <accel/accelerator.hpp>

#include <ATen/ops/arange.h>

#include <iostream>

int main() {
  accel::Accelerator accelerator;
  at::Tensor values = at::arange(1, 7, at::kFloat).reshape({2, 3});
  at::Tensor total = accelerator.reduce(values, accel::ReduceOp::Sum).sum();
  std::cout << "libaccel " << accel_version() << ", " << accelerator.num_processes() << " process(es), device "
            << accelerator.device() << ", sum " << total.item<double>() << std::endl;
  return 0;
}
