#include "state/out_of_memory.hpp"

#include <c10/util/Exception.h>

#include <new>
#include <string>

#include "accel/error.hpp"

namespace accel::detail {

bool is_out_of_memory(const std::exception& error) {
  if (dynamic_cast<const c10::OutOfMemoryError*>(&error) != nullptr) return true;
  if (dynamic_cast<const std::bad_alloc*>(&error) != nullptr) return true;
  if (const auto* accel_error = dynamic_cast<const Error*>(&error)) return accel_error->code() == ErrorCode::Resource;
  if (dynamic_cast<const c10::Error*>(&error) == nullptr) return false;
  // The statements Accelerate's should_reduce_batch_size looks for, and
  // LibTorch 1.13's CPU allocator ("DefaultCPUAllocator: not enough memory").
  const std::string message = error.what();
  for (const char* statement : {"out of memory", "not enough memory", "can't allocate memory"}) {
    if (message.find(statement) != std::string::npos) return true;
  }
  return false;
}

}  // namespace accel::detail
