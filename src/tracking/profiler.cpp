// The one tracking file that includes LibTorch's profiler headers.
#include "accel/profiler.hpp"

#include <torch/csrc/autograd/profiler_legacy.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "accel/accelerator.hpp"
#include "core/file_io.hpp"
#include "tracking/record_file.hpp"

namespace accel {
namespace {
// The legacy profiler is per thread but its guard refuses to nest; report that
// as a State error instead of LibTorch's internal assertion.
thread_local bool profiling = false;

// LibTorch 1.13's legacy profiler writes a bare array of events with the pid
// "CPU Functions". Trace readers want the object form, and merging ranks needs
// one pid per rank with a name, so the events are rewrapped here.
std::string trace_event_document(const std::string& legacy_events, int process_index) {
  nlohmann::json events = nlohmann::json::parse(legacy_events, nullptr, /*allow_exceptions=*/false);
  if (!events.is_array()) events = nlohmann::json::array();
  nlohmann::json out = nlohmann::json::array();
  const auto metadata = [&](const char* name, const nlohmann::json& tid, nlohmann::json args) {
    out.push_back({{"name", name}, {"ph", "M"}, {"pid", process_index}, {"tid", tid}, {"args", std::move(args)}});
  };
  metadata("process_name", 0, {{"name", "rank " + std::to_string(process_index)}});
  metadata("process_sort_index", 0, {{"sort_index", process_index}});
  std::set<std::string> threads;
  for (auto& event : events) {
    if (!event.is_object()) continue;
    event["pid"] = process_index;
    if (event.contains("tid") && threads.insert(event["tid"].dump()).second) {
      metadata("thread_name", event["tid"], {{"name", "thread " + event["tid"].dump()}});
    }
    out.push_back(std::move(event));
  }
  nlohmann::json document = {{"traceEvents", std::move(out)},
                             {"displayTimeUnit", "ms"},
                             {"otherData", {{"producer", "libaccel"}, {"process_index", process_index}}}};
  return document.dump();
}
}  // namespace

struct ProfileScope::Impl {
  Impl() : record(std::make_unique<torch::autograd::profiler::RecordProfile>(events)) {}
  std::thread::id owner = std::this_thread::get_id();
  std::ostringstream events;
  std::unique_ptr<torch::autograd::profiler::RecordProfile> record;
};

ProfileScope::ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir) {
  require_arg(!output_trace_dir.empty(), "profile: output_trace_dir is empty");
  require(!profiling, ErrorCode::State, "profile: a profile is already running on this thread");
  detail::make_dirs(output_trace_dir);
  process_index_ = accelerator.process_index();
  path_ = output_trace_dir + "/trace_" + std::to_string(process_index_) + ".json";
  {
    std::ofstream probe(path_);
    require(probe.good(), ErrorCode::IO, "profile: cannot open '" + path_ + "' for writing");
  }
  impl_ = std::make_unique<Impl>();
  profiling = true;
}

void ProfileScope::finish() {
  if (!impl_) return;
  // LibTorch's profiler state lives on the thread that began it: stopping it
  // from another thread fails inside LibTorch and leaves the first thread
  // recording, so refuse and keep the profile open for the right thread.
  require(impl_->owner == std::this_thread::get_id(), ErrorCode::State,
          "profile: ended on another thread than the one that began it (the profiler records per thread)");
  std::unique_ptr<Impl> impl = std::move(impl_);
  profiling = false;
  impl->record.reset();  // stops the profiler and writes its events
  detail::write_file_atomically(path_, trace_event_document(impl->events.str(), process_index_));
}

ProfileScope::~ProfileScope() {
  try {
    finish();
  } catch (...) {
    // A destructor must not throw; the trace is incomplete. Stopping another
    // thread's profiler from here would corrupt LibTorch's per-thread state.
    if (impl_ && impl_->owner != std::this_thread::get_id()) static_cast<void>(impl_.release());
  }
}

}  // namespace accel
