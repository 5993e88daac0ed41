#pragma once
// Named spans on the profiler timeline (accel_profile_begin / ProfileScope).
// LibTorch's RecordFunction costs one thread-local flag test when no profiler
// is running, so the spans stay in release builds: docs/benchmarks.md's
// step breakdown (bench/step_breakdown.py) is read from them.
#include <ATen/record_function.h>

// Spans are named "accel::<area>::<what>"; the breakdown groups by these names.
#define ACCEL_TRACE_SPAN(name) RECORD_USER_SCOPE(name)
