// C ABI over accel::PartialState.
#include "accel/accel_partial_state.h"
#include <torch/cuda.h>

#include "capi/handles.hpp"

using namespace accel::capi;
using accel::require_arg;

namespace {

void init_partial_state_options(accel_partial_state_options* opts) {
  *opts = accel_partial_state_options{};
  opts->struct_size = sizeof(accel_partial_state_options);
  opts->timeout_ms = 1800000;
}

template <class Query>
accel_status query_state(const accel_partial_state* state, Query&& query_fn) {
  return guarded([&] { query_fn(*deref(state, "state").state); });
}

}  // namespace

extern "C" {

ACCEL_API void accel_partial_state_options_init(accel_partial_state_options* opts) {
  if (opts != nullptr) init_partial_state_options(opts);
}

ACCEL_API accel_status accel_partial_state_create(const accel_partial_state_options* opts, accel_partial_state** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    const auto given = read_options(opts, "opts", init_partial_state_options);  // NULL: the defaults
    require_arg(given.timeout_ms > 0, "opts->timeout_ms must be positive, got " + std::to_string(given.timeout_ms));
    accel::PartialStateOptions options;
    options.cpu = given.cpu != 0;
    options.timeout = std::chrono::milliseconds(given.timeout_ms);
    auto handle = std::make_unique<accel_partial_state>();
    handle->state = std::make_unique<accel::PartialState>(options);
    handle->device_name = handle->state->device().str();
    publish(std::move(handle), &result);
  });
}

ACCEL_API void accel_partial_state_free(accel_partial_state* state) { release(state); }

ACCEL_API accel_status accel_partial_state_process_index(const accel_partial_state* state, int* out) {
  return query_state(state, [&](const accel::PartialState& s) { out_param(out, "out") = s.process_index(); });
}
ACCEL_API accel_status accel_partial_state_local_process_index(const accel_partial_state* state, int* out) {
  return query_state(state, [&](const accel::PartialState& s) { out_param(out, "out") = s.local_process_index(); });
}
ACCEL_API accel_status accel_partial_state_num_processes(const accel_partial_state* state, int* out) {
  return query_state(state, [&](const accel::PartialState& s) { out_param(out, "out") = s.num_processes(); });
}
ACCEL_API accel_status accel_partial_state_distributed_type(const accel_partial_state* state,
                                                            accel_distributed_type* out) {
  return query_state(state, [&](const accel::PartialState& s) {
    out_param(out, "out") = static_cast<accel_distributed_type>(s.distributed_type());
  });
}
ACCEL_API accel_status accel_partial_state_device(const accel_partial_state* state, const char** out) {
  return guarded([&] { out_param(out, "out") = deref(state, "state").device_name.c_str(); });
}
ACCEL_API accel_status accel_partial_state_split_range(const accel_partial_state* state, int64_t n, int apply_padding,
                                                       int64_t* start, int64_t* end, int64_t* padded_length) {
  return guarded([&] {
    auto& start_out = out_param(start, "start");
    auto& end_out = out_param(end, "end");
    auto& padded_out = out_param(padded_length, "padded_length");
    const auto range = deref(state, "state").state->split_range(n, apply_padding != 0);
    start_out = range.start;
    end_out = range.end;
    padded_out = range.padded_length;
  });
}
ACCEL_API accel_status accel_partial_state_wait_for_everyone(accel_partial_state* state) {
  return guarded([&] { deref(state, "state").state->wait_for_everyone(); });
}

ACCEL_API accel_status accel_set_seed(uint64_t seed, int deterministic) {
  return guarded([&] { accel::set_seed(seed, deterministic != 0); });
}

ACCEL_API accel_status accel_cuda_device_count(int* out) {
  return guarded(
      [&] { out_param(out, "out") = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0; });
}

}  // extern "C"
