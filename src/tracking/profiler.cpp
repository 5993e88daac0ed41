// The one tracking file that includes LibTorch's profiler headers.
#include "accel/profiler.hpp"

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/csrc/jit/runtime/interpreter.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "accel/accelerator.hpp"
#include "core/file_io.hpp"
#include "tracking/record_file.hpp"

namespace accel {
namespace {
// The legacy profiler is per thread but its guard refuses to nest; report that
// as a State error instead of LibTorch's internal assertion.
thread_local bool profiling = false;

using torch::autograd::profiler::EventKind;
using torch::autograd::profiler::LegacyEvent;
using torch::autograd::profiler::thread_event_lists;

// Each operator's TorchScript module hierarchy, by the handle its events carry.
using ModuleHierarchies = std::unordered_map<at::RecordFunctionHandle, std::string>;

// Each part followed by `terminator`, as torch.profiler writes "Call stack"
// ("a.py(5): forward;b.py(10): forward;") and "Module Hierarchy"
// ("TOP(Net)::forward.block(Block)::forward.").
std::string terminated(const std::vector<std::string>& parts, char terminator) {
  std::string out;
  for (const auto& part : parts) {
    out += part;
    out += terminator;
  }
  return out;
}

// with_modules: LibTorch's legacy profiler does not record module
// hierarchies (only its Kineto profiler does, which Debian's LibTorch is built
// without), so a thread-local RecordFunction callback asks the TorchScript
// interpreter for each operator's as it starts, keyed by the handle the
// profiler's events carry. Ops outside TorchScript get none.
class ModuleHierarchyRecorder {
 public:
  ModuleHierarchyRecorder() {
    active_ = &hierarchies_;
    callback_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&ModuleHierarchyRecorder::on_start)
                                               .needsIds(true)
                                               .scopes({at::RecordScope::FUNCTION}));
  }
  ~ModuleHierarchyRecorder() {
    at::removeCallback(callback_);
    active_ = nullptr;
  }
  ModuleHierarchyRecorder(const ModuleHierarchyRecorder&) = delete;
  ModuleHierarchyRecorder& operator=(const ModuleHierarchyRecorder&) = delete;
  ModuleHierarchies take() { return std::move(hierarchies_); }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    if (active_ != nullptr) {
      auto hierarchy = torch::jit::currentModuleHierarchy();
      if (!hierarchy.empty()) active_->emplace(fn.handle(), terminated(hierarchy, '.'));
    }
    return nullptr;
  }
  static thread_local ModuleHierarchies* active_;
  ModuleHierarchies hierarchies_;
  at::CallbackHandle callback_ = 0;
};

thread_local ModuleHierarchies* ModuleHierarchyRecorder::active_ = nullptr;

// What one recording gives: the profiler's events and, with with_modules, the hierarchies.
struct Recording {
  thread_event_lists events;
  ModuleHierarchies modules;
};

// torch.profiler marks each step with a "ProfilerStep#N" range, which
// TensorBoard's profile plugin splits a trace by.
constexpr const char* kStepPrefix = "ProfilerStep#";
bool is_step_annotation(const std::string& name) { return name.rfind(kStepPrefix, 0) == 0; }

// The legacy profiler's events as Trace Event Format events (what its own
// writer, RecordProfile, writes, plus what options ask for): each push/pop pair
// of an operator one complete ("X") event, timed from the profile's start mark;
// allocations instant "[memory]" events with the running total. Categories and
// argument names are those of PyTorch's Kineto traces ("cpu_op",
// "user_annotation", "cpu_instant_event"), so TensorBoard's profile plugin
// (torch-tb-profiler) reads the file as it reads torch's.
nlohmann::json trace_events(const Recording& recording, const ProfileOptions& options) {
  const thread_event_lists& lists = recording.events;
  const LegacyEvent* start = nullptr;
  for (const auto& list : lists) {
    for (const auto& event : list) {
      if (!start && event.kind() == EventKind::Mark && std::string(event.name()) == "__start_profile") start = &event;
    }
  }
  nlohmann::json out = nlohmann::json::array();
  if (start == nullptr) return out;
  std::unordered_map<at::RecordFunctionHandle, const LegacyEvent*> open;
  int64_t allocated = 0;
  for (const auto& list : lists) {
    for (const auto& event : list) {
      switch (event.kind()) {
        case EventKind::PushRange: open[event.handle()] = &event; break;
        case EventKind::PopRange: {
          auto began = open.find(event.handle());
          if (began == open.end()) break;
          const LegacyEvent& push = *began->second;
          nlohmann::json args = nlohmann::json::object();
          if (options.record_shapes) args["Input Dims"] = push.shapes();
          // LegacyEvent::flops() is not const; the count is a plain field.
          const uint64_t flops = const_cast<LegacyEvent&>(push).flops();
          if (options.with_flops && flops > 0) args["flops"] = flops;
          if (options.with_stack && !push.stack().empty()) args["Call stack"] = terminated(push.stack(), ';');
          if (auto module = recording.modules.find(push.handle()); module != recording.modules.end()) {
            args["Module Hierarchy"] = module->second;
          }
          const std::string name = push.name();
          out.push_back({{"name", name},
                         {"ph", "X"},
                         {"cat", is_step_annotation(name) ? "user_annotation" : "cpu_op"},
                         {"ts", start->cpuElapsedUs(push)},
                         {"dur", push.cpuElapsedUs(event)},
                         {"tid", push.threadId()},
                         {"args", std::move(args)}});
          open.erase(began);
          break;
        }
        case EventKind::MemoryAlloc:
          if (options.profile_memory && event.cpuMemoryUsage() != 0) {
            allocated += event.cpuMemoryUsage();
            out.push_back({{"name", "[memory]"},
                           {"ph", "i"},
                           {"s", "t"},
                           {"cat", "cpu_instant_event"},
                           {"ts", start->cpuElapsedUs(event)},
                           {"tid", event.threadId()},
                           {"args",
                            {{"Device Type", 0},  // Kineto's: CPU 0, device id -1
                             {"Device Id", -1},
                             {"Bytes", event.cpuMemoryUsage()},
                             {"Total Allocated", allocated}}}});
          }
          break;
        case EventKind::Mark: break;
      }
    }
  }
  return out;
}

// Readers want the object form, and merging ranks needs one pid per rank with
// a name, so the events get this rank's pid and metadata.
std::string trace_event_document(nlohmann::json events, int process_index) {
  nlohmann::json out = nlohmann::json::array();
  const auto metadata = [&](const char* name, const nlohmann::json& tid, nlohmann::json args) {
    out.push_back({{"name", name}, {"ph", "M"}, {"pid", process_index}, {"tid", tid}, {"args", std::move(args)}});
  };
  metadata("process_name", 0, {{"name", "rank " + std::to_string(process_index)}});
  metadata("process_sort_index", 0, {{"sort_index", process_index}});
  std::set<std::string> threads;
  for (auto& event : events) {
    event["pid"] = process_index;
    if (threads.insert(event["tid"].dump()).second) {
      metadata("thread_name", event["tid"], {{"name", "thread " + event["tid"].dump()}});
    }
    out.push_back(std::move(event));
  }
  nlohmann::json document = {{"traceEvents", std::move(out)},
                             {"displayTimeUnit", "ms"},
                             {"otherData", {{"producer", "libaccel"}, {"process_index", process_index}}}};
  return document.dump();
}

// What a step does under a schedule (torch.profiler.ProfilerAction, with
// warm-up folded into waiting: the legacy profiler needs none).
enum class Action { None, Record, RecordAndSave };

Action scheduled_action(const ProfileSchedule& schedule, int64_t step) {
  if (schedule.active == 0) return Action::Record;
  if (step < schedule.skip_first) return Action::None;
  step -= schedule.skip_first;
  const int64_t cycle = schedule.wait + schedule.warmup + schedule.active;
  if (schedule.repeat > 0 && step / cycle >= schedule.repeat) return Action::None;
  const int64_t within = step % cycle;
  if (within < schedule.wait + schedule.warmup) return Action::None;
  return within == cycle - 1 ? Action::RecordAndSave : Action::Record;
}

// The range of the step now running, "ProfilerStep#<step>", as
// torch.profiler's step() opens one at each step while it records; it ends
// when destroyed. (A free function: Impl's members are exported with the
// accel:: API, this need not be.)
std::unique_ptr<at::RecordFunction> step_range_of(int64_t step) {
  auto range = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
  if (range->isActive()) range->before(kStepPrefix + std::to_string(step), c10::ArrayRef<const c10::IValue>{});
  return range;
}

}  // namespace

struct ProfileScope::Impl {
  explicit Impl(const ProfileOptions& options) : options(options) {
    if (scheduled_action(options.schedule, 0) != Action::None) start();
  }
  void start() {
    torch::autograd::profiler::enableProfilerLegacy(
        torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::CPU, options.record_shapes,
                                              options.profile_memory, options.with_stack, options.with_flops));
    if (options.with_modules) modules = std::make_unique<ModuleHierarchyRecorder>();
    recording = true;
    step_range = step_range_of(steps);
  }
  // Stops the profiler (on its own thread) and returns what it recorded.
  Recording stop() {
    step_range.reset();  // its destructor ends the range
    recording = false;
    Recording out{torch::autograd::profiler::disableProfilerLegacy(), {}};
    if (modules) out.modules = modules->take();
    modules.reset();
    return out;
  }
  std::unique_ptr<ModuleHierarchyRecorder> modules;
  std::unique_ptr<at::RecordFunction> step_range;
  std::thread::id owner = std::this_thread::get_id();
  ProfileOptions options;
  bool recording = false;
  bool written = false;  // a cycle's trace is in the file
  int64_t steps = 0;
};

namespace {

void write_trace(const std::string& path, int process_index, const Recording& recording,
                 const ProfileOptions& options) {
  detail::write_file_atomically(path, trace_event_document(trace_events(recording, options), process_index));
}

void check_schedule(const ProfileSchedule& schedule) {
  const std::pair<const char*, int64_t> fields[] = {{"wait", schedule.wait},
                                                    {"warmup", schedule.warmup},
                                                    {"active", schedule.active},
                                                    {"repeat", schedule.repeat},
                                                    {"skip_first", schedule.skip_first}};
  for (const auto& [name, value] : fields)
    require_arg(value >= 0,
                std::string("profile schedule: ") + name + " is " + std::to_string(value) + ", not a count of steps");
  require_arg(schedule.active > 0 ||
                  (schedule.wait == 0 && schedule.warmup == 0 && schedule.repeat == 0 && schedule.skip_first == 0),
              "profile schedule: active is 0, so no step would be recorded (set active >= 1, or no schedule)");
}

}  // namespace

ProfileScope::ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir)
    : ProfileScope(accelerator, output_trace_dir, ProfileOptions{}) {}

ProfileScope::ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir,
                           const ProfileOptions& options) {
  require_arg(!output_trace_dir.empty(), "profile: output_trace_dir is empty");
  check_schedule(options.schedule);
  require(!profiling, ErrorCode::State, "profile: a profile is already running on this thread");
  detail::make_dirs(output_trace_dir);
  process_index_ = accelerator.process_index();
  path_ = output_trace_dir + "/trace_" + std::to_string(process_index_) + ".json";
  {
    std::ofstream probe(path_);
    require(probe.good(), ErrorCode::IO, "profile: cannot open '" + path_ + "' for writing");
  }
  impl_ = std::make_unique<Impl>(options);
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
  if (impl->recording) {
    write_trace(path_, process_index_, impl->stop(), impl->options);
  } else if (!impl->written) {  // a schedule that never reached a recorded step: an empty trace
    write_trace(path_, process_index_, Recording{}, impl->options);
  }
}

bool ProfileScope::step() {
  if (!impl_) return false;
  require(impl_->owner == std::this_thread::get_id(), ErrorCode::State,
          "profile: step() on another thread than the one that began it (the profiler records per thread)");
  Impl& impl = *impl_;
  const Action done = scheduled_action(impl.options.schedule, impl.steps);
  const Action next = scheduled_action(impl.options.schedule, ++impl.steps);
  bool ready = false;
  // Without a schedule: one recording until finish(), its steps marked.
  if (impl.options.schedule.active != 0 && impl.recording && (done == Action::RecordAndSave || next == Action::None)) {
    write_trace(path_, process_index_, impl.stop(), impl.options);
    impl.written = true;
    ready = true;
  }
  if (!impl.recording && next != Action::None) {
    impl.start();
  } else if (impl.recording) {
    impl.step_range.reset();
    impl.step_range = step_range_of(impl.steps);
  }
  return ready;
}

int64_t ProfileScope::step_num() const { return impl_ ? impl_->steps : 0; }

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
