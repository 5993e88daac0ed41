// libaccel C++ API: profile a stretch of training with LibTorch's autograd
// profiler (Accelerate's accelerator.profile()).
#pragma once

#include <memory>
#include <string>

namespace accel {

class Accelerator;

// Records every operator run on this thread while alive and, when destroyed,
// writes a Chrome trace (chrome://tracing, Perfetto) to
// output_trace_dir/trace_<process_index>.json, one file per rank. Every rank
// records its own; nothing is communicated. Throws IO when the directory
// cannot be created or the file opened; State when a profile is already running.
class ProfileScope {
 public:
  ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir);
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
  const std::string& trace_path() const { return path_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
};

}  // namespace accel
