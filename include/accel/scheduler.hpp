// libaccel C++ API: learning-rate schedulers matching PyTorch's.
//
// A scheduler sets its optimizer's learning rate on every step(). Once
// prepared by an Accelerator it follows Accelerate: it steps only when the
// optimizer really stepped (a sync step that was not skipped by the fp16 loss
// scaler), and advances num_processes steps per call so a schedule written for
// one process keeps its shape (unless step_with_optimizer is false). Under
// split_batches the batches are not multiplied by the processes, so it steps
// once per optimizer step. Without split_batches OneCycle stops at total_steps
// instead of failing (Accelerate's special case).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "accel/checkpoint.hpp"
#include "accel/optimizer.hpp"

namespace accel {

struct GradientState;

enum class SchedulerKind {
  Step = 1,              // lr * gamma^(t / step_size)
  MultiStep = 2,         // lr * gamma^(milestones passed)
  Exponential = 3,       // lr * gamma^t
  CosineAnnealing = 4,   // eta_min + (lr - eta_min) (1 + cos(pi t / t_max)) / 2
  Linear = 5,            // factor from start_factor to end_factor over total_iters
  Constant = 6,          // lr * factor until total_iters
  Polynomial = 7,        // lr (1 - t / total_iters)^power
  OneCycle = 8,          // up to max_lr then down (cos or linear, two or three phases)
  LinearWarmup = 9,      // linear warmup, then linear decay to 0 at num_training_steps
  CosineWarmup = 10,     // linear warmup, then cosine decay with num_cycles
  ReduceOnPlateau = 11,  // lr * factor when a metric stops improving
};

struct SchedulerOptions {
  SchedulerKind kind = SchedulerKind::Step;
  int64_t step_size = 1;
  double gamma = 0.1;
  std::vector<int64_t> milestones;
  int64_t t_max = 1;
  double eta_min = 0.0;
  double start_factor = 1.0 / 3;
  double end_factor = 1.0;
  int64_t total_iters = 5;
  double factor = 1.0 / 3;  // Constant; ReduceOnPlateau's defaults to 0.1
  double power = 1.0;
  double max_lr = 0.1;
  int64_t total_steps = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
  int64_t num_warmup_steps = 0;
  int64_t num_training_steps = 0;
  double num_cycles = 0.5;
  std::string mode = "min";  // ReduceOnPlateau: "min" or "max"
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel" or "abs"
  int64_t cooldown = 0;
  double min_lr = 0.0;
  double eps = 1e-8;
  // Accelerate's step_scheduler_with_optimizer: false steps exactly once per call.
  bool step_with_optimizer = true;

  // PyTorch's defaults for kind.
  static SchedulerOptions defaults(SchedulerKind kind);
};

class Scheduler {
 public:
  // Throws InvalidArgument naming a bad option.
  Scheduler(Optimizer& optimizer, const SchedulerOptions& options);
  ~Scheduler();
  Scheduler(Scheduler&&) noexcept;
  Scheduler& operator=(Scheduler&&) noexcept;

  // One scheduler step (ReduceOnPlateau needs step(metric)).
  void step();
  void step(double metric);
  double last_lr() const;
  // Steps taken so far (PyTorch's last_epoch).
  int64_t last_epoch() const;
  const SchedulerOptions& options() const;
  // The scheduler's position (steps taken, base and current learning rates,
  // ReduceOnPlateau's counters) as JSON, and back (applies the learning rates).
  std::string state_json() const;
  void load_state_json(const std::string& json);
  std::weak_ptr<const void> lifetime() const;
  // Save and load for save_state/load_state, valid across moves while
  // lifetime() has not expired: save writes PyTorch's state_dict() of the
  // corresponding torch.optim.lr_scheduler class as a pickle (scheduler.bin);
  // load reads that (from libaccel or Python) or the JSON of older checkpoints,
  // and throws InvalidArgument for another kind or other hyperparameters.
  CheckpointObject checkpoint_object() const;

  // Used by Accelerator::prepare. adjust_scheduler: calls on accumulation
  // micro-steps count towards OneCycle's total_steps cap (Accelerate's
  // GradientAccumulationPlugin.adjust_scheduler). step_with_optimizer false
  // (the accelerator's step_scheduler_with_optimizer) makes every call one
  // step, as the scheduler's own step_with_optimizer = false does.
  void bind(std::shared_ptr<GradientState> gradient_state, int num_processes, bool split_batches, bool adjust_scheduler,
            bool step_with_optimizer = true);

 private:
  struct Impl;
  static std::string save_json(Impl& impl);
  static void load_json(Impl& impl, const std::string& json);
  static std::string save_pickle(Impl& impl);
  static void load_bytes(Impl& impl, const std::string& bytes);
  std::unique_ptr<Impl> impl_;
};

}  // namespace accel
