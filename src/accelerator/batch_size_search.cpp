#include <exception>
#include <string>

#include "accel/error.hpp"
#include "accel/memory.hpp"
#include "state/c10d_adapter.hpp"
#include "state/out_of_memory.hpp"

namespace accel {

int64_t find_executable_batch_size(int64_t starting_batch_size, const std::function<void(int64_t)>& function) {
  require_arg(starting_batch_size >= 0, "find_executable_batch_size: starting_batch_size must be >= 0, got " +
                                            std::to_string(starting_batch_size));
  require_arg(static_cast<bool>(function), "find_executable_batch_size: the function is empty");
  detail::c10d_adapter::empty_cuda_cache();
  int64_t batch_size = starting_batch_size;
  for (;;) {
    require(batch_size > 0, ErrorCode::Resource, "No executable batch size found, reached zero.");
    try {
      function(batch_size);
      return batch_size;
    } catch (const std::exception& error) {
      if (!detail::is_out_of_memory(error)) throw;
    }
    // Accelerate 1.x's reduce_batch_size_fn: int(batch_size * 0.9).
    detail::c10d_adapter::empty_cuda_cache();
    batch_size = static_cast<int64_t>(static_cast<double>(batch_size) * 0.9);
  }
}

}  // namespace accel
