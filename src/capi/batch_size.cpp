// accel_find_executable_batch_size: the C callback under the core's search.
#include "accel/memory.hpp"
#include "capi/handles.hpp"

using namespace accel::capi;

extern "C" {

ACCEL_API accel_status accel_find_executable_batch_size(int64_t starting_batch_size, accel_batch_size_fn fn, void* user,
                                                        int64_t* out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    accel::require_arg(fn != nullptr, "fn is NULL");
    // Before each call, so a message left by an earlier callback is not taken for this one's.
    result = accel::find_executable_batch_size(starting_batch_size, [&](int64_t batch_size) {
      accel_set_error(nullptr);
      check_callback(fn(user, batch_size),
                     "find_executable_batch_size: the function at batch size " + std::to_string(batch_size));
    });
  });
}

}  // extern "C"
