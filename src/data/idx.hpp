// Reader for the IDX format of MNIST-style datasets (gzip-compressed or raw).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace accel::detail {

// The whole file as a tensor of the stored dtype and shape. Throws IO naming the
// file and the byte offset of a bad magic number, unknown type code, or a
// payload that is truncated or followed by extra bytes.
at::Tensor read_idx(const std::string& path);

}  // namespace accel::detail
