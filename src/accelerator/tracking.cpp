// Accelerator's tracking calls: trackers exist on the main process only.
#include <algorithm>
#include <exception>

#include "accel/accelerator.hpp"
#include "accelerator/accelerator_state.hpp"
#include "core/json.hpp"
#include "tracking/builtin_trackers.hpp"
#include "tracking/tracker_registry.hpp"

namespace accel {
namespace detail {

TrackerRegistry::~TrackerRegistry() {
  if (!started || finished) return;
  for (auto& tracker : running) {
    try {
      tracker->finish();
    } catch (...) {
      // A destructor must not throw; end_training() reports these errors.
    }
  }
}

std::vector<std::string> resolve_tracker_names(const std::vector<std::string>& log_with) {
  std::vector<std::string> names;
  const auto builtins = builtin_tracker_names();
  for (const auto& name : log_with) {
    if (name == "all") {
      for (const auto& builtin : builtins)
        if (builtin_tracker_available(builtin) && std::find(names.begin(), names.end(), builtin) == names.end())
          names.push_back(builtin);
      continue;
    }
    if (std::find(builtins.begin(), builtins.end(), name) == builtins.end()) {
      std::string known;
      for (const auto& builtin : builtins) known += (known.empty() ? "" : ", ") + builtin;
      fail(ErrorCode::InvalidArgument, "unknown tracker '" + name + "' in log_with (known: " + known + ", all)");
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

namespace {

TrackerRegistry& registry(AcceleratorState& state) {
  if (!state.trackers) state.trackers = std::make_shared<TrackerRegistry>();
  return *state.trackers;
}

std::string logging_dir(const ProjectConfiguration& project) {
  if (!project.logging_dir.empty()) return project.logging_dir;
  return (project.project_dir.empty() ? std::string(".") : project.project_dir) + "/logs";
}

// init_kwargs_json: "" or {"<builtin tracker>": {...}}; checked on every rank.
nlohmann::json parse_init_kwargs(const std::string& text) {
  if (text.empty()) return nlohmann::json::object();
  auto json = parse_json(text, "init_kwargs_json", ErrorCode::InvalidArgument);
  require_arg(json.is_object(), "init_kwargs_json is not a JSON object: " + describe_json(json));
  const auto builtins = builtin_tracker_names();
  for (const auto& item : json.items())
    require_arg(std::find(builtins.begin(), builtins.end(), item.key()) != builtins.end(),
                "init_kwargs names '" + item.key() + "', which is not a built-in tracker");
  return json;
}

}  // namespace
}  // namespace detail

void Accelerator::add_tracker(std::shared_ptr<Tracker> tracker) {
  require_arg(tracker != nullptr, "add_tracker: tracker is null");
  auto& reg = detail::registry(*state_);
  require(!reg.started, ErrorCode::State, "add_tracker('" + tracker->name() + "') after init_trackers");
  for (const auto& other : reg.added)
    require_arg(other->name() != tracker->name(), "a tracker named '" + tracker->name() + "' was already added");
  reg.added.push_back(std::move(tracker));
}

void Accelerator::init_trackers(const std::string& project_name, const TrackerConfig& config) {
  init_trackers(project_name, config, "");
}

void Accelerator::init_trackers(const std::string& project_name, const TrackerConfig& config,
                                const std::string& init_kwargs_json) {
  require_arg(!project_name.empty(), "init_trackers: project_name is empty");
  const auto init_kwargs = detail::parse_init_kwargs(init_kwargs_json);
  auto names = detail::resolve_tracker_names(state_->log_with);  // every rank reports bad names
  auto& reg = detail::registry(*state_);
  require(!reg.started, ErrorCode::State, "init_trackers called twice (project '" + project_name + "')");
  // Every rank builds the trackers, which checks their init_kwargs (also of a
  // tracker missing from log_with: Accelerate ignores those, but a wrong option
  // is still a mistake) and creates no file; only the main process starts them.
  const std::string dir = detail::logging_dir(state_->project);
  std::vector<std::shared_ptr<Tracker>> trackers;
  for (const auto& name : names) {
    auto kwargs = init_kwargs.find(name);
    trackers.push_back(
        detail::make_builtin_tracker(name, dir, kwargs == init_kwargs.end() ? nlohmann::json() : *kwargs));
  }
  for (const auto& [name, kwargs] : init_kwargs.items())
    if (std::find(names.begin(), names.end(), name) == names.end()) detail::make_builtin_tracker(name, dir, kwargs);
  if (!is_main_process()) {
    reg.started = true;
    return;
  }
  // Nothing is committed until every tracker started, so a failure (a bad
  // MLFLOW_TRACKING_URI, an unreachable server) can be fixed and retried.
  // A tracker that replaces its last run's files as it starts goes last.
  for (const auto& tracker : reg.added) trackers.push_back(tracker);
  std::stable_partition(trackers.begin(), trackers.end(), [](const std::shared_ptr<Tracker>& tracker) {
    return !detail::replaces_last_run_at_start(*tracker);
  });
  for (size_t i = 0; i < trackers.size(); ++i) {
    try {
      trackers[i]->init(project_name, config);
    } catch (...) {
      for (size_t j = 0; j < i; ++j) {
        try {
          trackers[j]->finish();  // close the runs already opened
        } catch (...) {
          // The first error is the one the caller needs.
        }
      }
      throw;
    }
  }
  reg.running = std::move(trackers);
  reg.started = true;
}

void Accelerator::log(const Scalars& values, std::optional<int64_t> step) {
  if (!state_->trackers || state_->trackers->finished) return;
  for (const auto& tracker : state_->trackers->running) tracker->log(values, step);
}

void Accelerator::log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) {
  if (!state_->trackers || state_->trackers->finished) return;
  for (const auto& tracker : state_->trackers->running) tracker->log_text(tag, text, step);
}

namespace {

// The tracker log_to and log_text_to write to, or nullptr where Accelerate's
// get_tracker gives a blank tracker: no tracker runs in this process (other
// ranks, before init_trackers, an empty log_with, after end_training).
Tracker* tracker_for(const detail::AcceleratorState& state, const std::string& name) {
  if (!state.trackers || state.trackers->finished || state.trackers->running.empty()) return nullptr;
  std::string names;
  for (const auto& tracker : state.trackers->running) {
    if (tracker->name() == name) return tracker.get();
    names += (names.empty() ? "" : ", ") + tracker->name();
  }
  fail(ErrorCode::InvalidArgument, "no running tracker is called '" + name + "' (running: " + names + ")");
}

}  // namespace

void Accelerator::log_to(const std::string& tracker, const Scalars& values, std::optional<int64_t> step) {
  if (Tracker* found = tracker_for(*state_, tracker)) found->log(values, step);
}

void Accelerator::log_text_to(const std::string& tracker, const std::string& tag, const std::string& text,
                              std::optional<int64_t> step) {
  if (Tracker* found = tracker_for(*state_, tracker)) found->log_text(tag, text, step);
}

Tracker* Accelerator::get_tracker(const std::string& name) const {
  if (!state_->trackers) return nullptr;
  for (const auto& tracker : state_->trackers->running)
    if (tracker->name() == name) return tracker.get();
  return nullptr;
}

void Accelerator::end_training() {
  if (!state_->trackers || state_->trackers->finished) return;
  auto& reg = *state_->trackers;
  reg.finished = true;
  // One tracker's failure (an unreachable MLflow server) must not leave the others unflushed.
  std::exception_ptr first;
  for (const auto& tracker : reg.running) {
    try {
      tracker->finish();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace accel
