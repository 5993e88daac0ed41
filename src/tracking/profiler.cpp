// The one tracking file that includes LibTorch's profiler headers.
#include "accel/profiler.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <atomic>
#include <fstream>

#include "accel/accelerator.hpp"
#include "tracking/record_file.hpp"

namespace accel {
namespace {
// The legacy profiler is per thread but its guard refuses to nest; report that
// as a State error instead of LibTorch's internal assertion.
thread_local bool profiling = false;
}  // namespace

struct ProfileScope::Impl {
  explicit Impl(const std::string& path) : out(path), record(out) {}
  std::ofstream out;
  torch::autograd::profiler::RecordProfile record;
};

ProfileScope::ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir) {
  require_arg(!output_trace_dir.empty(), "profile: output_trace_dir is empty");
  require(!profiling, ErrorCode::State, "profile: a profile is already running on this thread");
  detail::make_dirs(output_trace_dir);
  path_ = output_trace_dir + "/trace_" + std::to_string(accelerator.process_index()) + ".json";
  {
    std::ofstream probe(path_);
    require(probe.good(), ErrorCode::IO, "profile: cannot open '" + path_ + "' for writing");
  }
  impl_ = std::make_unique<Impl>(path_);
  profiling = true;
}

ProfileScope::~ProfileScope() {
  try {
    impl_.reset();  // RecordProfile writes the trace when destroyed
  } catch (...) {
    // A destructor must not throw; the trace is incomplete.
  }
  profiling = false;
}

}  // namespace accel
