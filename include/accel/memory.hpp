// libaccel C++ API: Accelerate's find_executable_batch_size.
#pragma once

#include <cstdint>
#include <functional>

namespace accel {

// Calls function(batch_size) from starting_batch_size on. When it fails for
// lack of memory (LibTorch's out-of-memory errors on CUDA, a host allocation
// failure, an accel::Error with ErrorCode::Resource), the cached CUDA memory
// is released and it is called again with int(batch_size * 0.9), as
// Accelerate 1.x does (128, 115, 103, 92, ...). Returns the batch size that
// ran. Any other error is rethrown at once. Throws Error(Resource) "No
// executable batch size found, reached zero." when the size reaches 0, and
// InvalidArgument when starting_batch_size is negative or function is empty.
// Not collective by itself: with several processes, function's collectives
// must fail alike on every rank (an allocation failure on one rank is not
// seen by the others).
int64_t find_executable_batch_size(int64_t starting_batch_size, const std::function<void(int64_t)>& function);

}  // namespace accel
