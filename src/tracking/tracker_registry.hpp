// The trackers of one Accelerator: those added by the user and the running ones.
#pragma once

#include <memory>
#include <vector>

#include "accel/tracking.hpp"

namespace accel::detail {

class TrackerRegistry {
 public:
  ~TrackerRegistry();                             // finishes running trackers when end_training was never called
  std::vector<std::shared_ptr<Tracker>> added;    // add_tracker(), waiting for init_trackers
  std::vector<std::shared_ptr<Tracker>> running;  // started by init_trackers
  bool started = false;
  bool finished = false;
};

// Expands "all" and rejects unknown or repeated names (InvalidArgument naming it).
std::vector<std::string> resolve_tracker_names(const std::vector<std::string>& log_with);

}  // namespace accel::detail
