// C ABI over accel::Logger, accel::ProgressBar and accel::ProfileScope.
#include "accel/accel_tracking.h"
#include "accel/logging.hpp"
#include "capi/handles.hpp"

using namespace accel::capi;
using accel::require_arg;

extern "C" {

accel_status accel_log(const char* name, accel_log_level level, const char* message, int main_process_only) {
  return guarded([&] {
    require_arg(name != nullptr, "name is NULL");
    require_arg(message != nullptr, "message is NULL");
    const int value = enum_value(level);
    require_arg(value == 10 || value == 20 || value == 30 || value == 40 || value == 50,
                "level " + std::to_string(value) + " is not an accel_log_level");
    accel::Logger(name).log(static_cast<accel::LogLevel>(value), message, main_process_only != 0);
  });
}

accel_status accel_progress_create(int64_t total, const char* description, int main_process_only,
                                   accel_progress** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    require_arg(total >= 0, "total must be >= 0, got " + std::to_string(total));
    require_arg(description != nullptr, "description is NULL");
    auto handle = std::make_unique<accel_progress>();
    handle->bar = std::make_unique<accel::ProgressBar>(total, description, main_process_only != 0);
    publish(std::move(handle), &result);
  });
}

accel_status accel_progress_update(accel_progress* progress, int64_t steps) {
  return guarded([&] {
    auto& bar = *deref(progress, "progress").bar;
    require_arg(steps >= 0, "steps must be >= 0, got " + std::to_string(steps));
    bar.update(steps);
  });
}

void accel_progress_free(accel_progress* progress) {
  try {
    release(progress);
  } catch (...) {
    // Closing writes to stderr; a failed write must not cross the ABI.
  }
}

}  // extern "C"

extern "C" {

accel_status accel_profile_begin(const accel_accelerator* acc, const char* output_trace_dir, accel_profile** out) {
  return accel_profile_begin_with(acc, output_trace_dir, 0, out);
}

namespace {

accel::ProfileOptions profile_options(unsigned options) {
  const unsigned known = ACCEL_PROFILE_RECORD_SHAPES | ACCEL_PROFILE_MEMORY | ACCEL_PROFILE_WITH_FLOPS |
                         ACCEL_PROFILE_WITH_STACK | ACCEL_PROFILE_WITH_MODULES;
  require_arg((options & ~known) == 0, "profile options " + std::to_string(options) + " hold unknown bits (" +
                                           std::to_string(options & ~known) + ")");
  accel::ProfileOptions what;
  what.record_shapes = (options & ACCEL_PROFILE_RECORD_SHAPES) != 0;
  what.profile_memory = (options & ACCEL_PROFILE_MEMORY) != 0;
  what.with_flops = (options & ACCEL_PROFILE_WITH_FLOPS) != 0;
  what.with_stack = (options & ACCEL_PROFILE_WITH_STACK) != 0;
  what.with_modules = (options & ACCEL_PROFILE_WITH_MODULES) != 0;
  return what;
}

void begin_profile(const accel_accelerator* acc, const char* output_trace_dir, const accel::ProfileOptions& what,
                   accel_profile*& result) {
  const auto& accelerator = *deref(acc, "acc").accelerator;
  require_arg(output_trace_dir != nullptr && *output_trace_dir != '\0', "output_trace_dir is NULL or empty");
  auto handle = std::make_unique<accel_profile>();
  handle->scope = std::make_unique<accel::ProfileScope>(accelerator, output_trace_dir, what);
  publish(std::move(handle), &result);
}

void init_profile_schedule(accel_profile_schedule* schedule) {
  *schedule = accel_profile_schedule{};
  schedule->struct_size = sizeof(accel_profile_schedule);
}

}  // namespace

accel_status accel_profile_begin_with(const accel_accelerator* acc, const char* output_trace_dir, unsigned options,
                                      accel_profile** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    begin_profile(acc, output_trace_dir, profile_options(options), result);
  });
}

void accel_profile_schedule_init(accel_profile_schedule* schedule) {
  if (schedule != nullptr) init_profile_schedule(schedule);
}

accel_status accel_profile_begin_scheduled(const accel_accelerator* acc, const char* output_trace_dir, unsigned options,
                                           const accel_profile_schedule* schedule, accel_profile** out) {
  return guarded([&] {
    auto& result = out_param(out, "out");
    require_arg(schedule != nullptr, "schedule is NULL");
    const auto given = read_options(schedule, "schedule", init_profile_schedule);
    auto what = profile_options(options);
    what.schedule = accel::ProfileSchedule{given.wait, given.warmup, given.active, given.repeat, given.skip_first};
    begin_profile(acc, output_trace_dir, what, result);
  });
}

accel_status accel_profile_step(accel_profile* profile, int* trace_ready) {
  return guarded([&] {
    auto& ready = out_param(trace_ready, "trace_ready");
    ready = deref(profile, "profile").scope->step() ? 1 : 0;
  });
}

accel_status accel_profile_end(accel_profile* profile) {
  return guarded([&] {
    deref(profile, "profile");
    try {
      profile->scope->finish();  // errors writing the trace reach the caller
    } catch (...) {
      // Refused on another thread, it still records: the handle stays valid for its own thread.
      if (!profile->scope->running()) release(profile);
      throw;
    }
    release(profile);
  });
}

}  // extern "C"
