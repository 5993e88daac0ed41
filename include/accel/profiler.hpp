// libaccel C++ API: profile a stretch of training with LibTorch's autograd
// profiler (Accelerate's accelerator.profile()).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace accel {

class Accelerator;

// torch.profiler.schedule (Accelerate's ProfileKwargs.schedule_option), counted
// by ProfileScope::step(): after skip_first steps, cycles of `wait` unrecorded
// steps, `warmup` steps, then `active` recorded ones, `repeat` times (0: until
// the profile ends). LibTorch's legacy profiler needs no warm-up, so warm-up
// steps are not recorded either. active == 0: no schedule, every step recorded.
struct ProfileSchedule {
  int64_t wait = 0;
  int64_t warmup = 0;
  int64_t active = 0;
  int64_t repeat = 0;
  int64_t skip_first = 0;
};

// What a profile records besides each operator's name, thread and time
// (Accelerate's ProfileKwargs): each operator's input shapes ("Input Dims" in
// its args), every CPU allocation and free ("[memory]" instant events with
// "Bytes" and "Total Allocated", as PyTorch's traces write them), and the
// floating-point operations of the operators LibTorch counts (matmuls,
// convolutions: "flops" in their args). For operators a TorchScript model
// runs, also the model's source lines that called them, innermost first
// (with_stack: "Call stack" in their args, "net.py(5): forward;net.py(10): forward;")
// and the chain of submodules they ran in (with_modules: "Module Hierarchy",
// "TOP(Net)::forward.block(Block)::forward."), written as torch.profiler
// writes them; C++ modules and JSON-spec models have neither.
struct ProfileOptions {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_flops = false;
  bool with_stack = false;
  bool with_modules = false;
  ProfileSchedule schedule;
};

// Records every operator run on this thread while alive and, at finish() or
// when destroyed, writes a trace in the Trace Event Format (chrome://tracing,
// Perfetto, viztracer --combine) to output_trace_dir/trace_<process_index>.json,
// one file per rank: {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {...}}, each rank its own pid (its process index) with
// process_name "rank N" and thread_name metadata, so per-rank files merge into
// one timeline. Every rank records its own; nothing is communicated. Throws IO
// when the directory cannot be created or the file opened; State when a
// profile is already running on this thread; InvalidArgument naming a
// negative schedule value, or one set without `active`.
//
// With a schedule, the trace file holds the last finished cycle: each cycle's
// end writes it (step() then returns true, where Accelerate calls
// on_trace_ready), and finish() writes a cycle still recording.
class ProfileScope {
 public:
  ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir);
  ProfileScope(const Accelerator& accelerator, const std::string& output_trace_dir, const ProfileOptions& options);
  // Stops recording and writes the trace (atomically). Throws IO naming the
  // file when it cannot be written; State, leaving the profile running, when
  // called on another thread than the constructor's. Later calls do nothing.
  void finish();
  // The end of a training step (torch.profiler's prof.step()): advances the
  // schedule. Returns true when a cycle just ended and its trace was written.
  // Without a schedule it only counts. Throws as finish().
  bool step();
  // Steps counted so far.
  int64_t step_num() const;
  // Whether it still records (not finished, or refused on another thread).
  bool running() const { return impl_ != nullptr; }
  // Calls finish(), swallowing its error (a destructor must not throw). On
  // another thread than the constructor's the trace is lost and the recorder
  // is left to its thread rather than stopped from this one.
  ~ProfileScope();
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;
  const std::string& trace_path() const { return path_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string path_;
  int process_index_ = 0;
};

}  // namespace accel
