// Allocation failures, told apart from other errors so that callers can
// retry with less (Accelerate's should_reduce_batch_size): the C ABI reports
// them as ACCEL_ERR_RESOURCE.
#pragma once

#include <exception>

namespace accel::detail {

// Whether `error` says memory could not be allocated: LibTorch's
// OutOfMemoryError (CUDA; the CPU allocator in LibTorch 2.x), its CPU
// allocator's "not enough memory" (LibTorch 1.13 throws a plain c10::Error),
// std::bad_alloc, or an accel::Error with ErrorCode::Resource.
bool is_out_of_memory(const std::exception& error);

}  // namespace accel::detail
