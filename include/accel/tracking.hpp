// libaccel C++ API: experiment trackers (Accelerate's log_with / init_trackers / log).
//
// Trackers run on the main process only: init_trackers, log and end_training
// are no-ops on the other ranks, so a training loop calls them everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace accel {

// One hyperparameter value from init_trackers(config).
using ConfigValue = std::variant<double, std::string>;
using TrackerConfig = std::map<std::string, ConfigValue>;
// Scalars of one log() call, by tag.
using Scalars = std::map<std::string, double>;

// Base of every tracker, built-in or the user's (Accelerate's GeneralTracker).
// Methods may throw accel::Error; the Accelerator passes it to the caller.
class Tracker {
 public:
  virtual ~Tracker() = default;
  virtual std::string name() const = 0;
  // Starts a run called run_name (the project name) and records its hyperparameters.
  virtual void init(const std::string& run_name, const TrackerConfig& config) = 0;
  // Records one step's scalars; step is unset when the caller gave none.
  virtual void log(const Scalars& values, std::optional<int64_t> step) = 0;
  // Records a text value; trackers without text support ignore it.
  virtual void log_text(const std::string& tag, const std::string& text, std::optional<int64_t> step) {}
  // Flushes and closes the run; called once by end_training().
  virtual void finish() = 0;
};

// "jsonl", "csv", "tensorboard", "mlflow", "wandb", "dvclive", "trackio", "aim", "comet_ml":
// what log_with={"all"} picks (aim only where librocksdb can be loaded).
std::vector<std::string> builtin_tracker_names();

// A built-in tracker writing under logging_dir. Throws InvalidArgument naming
// an unknown name and listing the known ones.
std::unique_ptr<Tracker> make_builtin_tracker(const std::string& name, const std::string& logging_dir);

}  // namespace accel
