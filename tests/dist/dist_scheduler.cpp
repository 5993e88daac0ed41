// Accelerate's tests/test_scheduler.py (lambda_test, one_cycle_test) over real
// processes: a prepared scheduler steps num_processes times per optimizer step,
// once under split_batches (the batches are not multiplied by the processes),
// never when the optimizer did not step, and exactly once per call with
// step_with_optimizer false. PyTorch's LambdaLR(lambda n: 1 - n / 10) is our
// Linear kind from factor 1 to 0 over 10 steps; OneCycleLR(max_lr=0.01,
// steps_per_epoch=2, epochs=1) is OneCycle with total_steps 2.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

// "The optimizer did not step": an accumulation micro-step that does not sync
// (Accelerate's test flags the fp16 overflow instead; both make it skip).
template <class Step>
void on_a_micro_step(accel::Accelerator& accelerator, accel::Model& model, Step&& step) {
  accelerator.accumulate_begin(model);
  check(!accelerator.sync_gradients(), "the first micro-step of 2 does not sync");
  step();
  accelerator.accumulate_end(model);
  accelerator.accumulate_begin(model);  // completes the window: the next call syncs again
  accelerator.accumulate_end(model);
}

}  // namespace

int main(int argc, char** argv) {
  const bool split = argc > 1 && std::string(argv[1]) == "split";
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.dataloader.split_batches = split;
  options.gradient_accumulation_steps = 2;
  accel::Accelerator accelerator(options);
  rank_for_messages = accelerator.process_index();
  const int n = accelerator.num_processes();
  accel::Model model = accel::Model::from_json(R"([{"type": "Linear", "in_features": 2, "out_features": 4}])");
  accelerator.prepare(model);

  for (bool with_optimizer : {true, false}) {
    const std::string label =
        std::string(split ? "split_batches " : "") + "step_with_optimizer=" + (with_optimizer ? "true" : "false");
    auto adamw = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
    adamw.lr = 1.0;
    accel::Optimizer optimizer(model, adamw);
    accelerator.prepare(optimizer);

    auto lambda = accel::SchedulerOptions::defaults(accel::SchedulerKind::Linear);
    lambda.start_factor = 1.0;
    lambda.end_factor = 0.0;
    lambda.total_iters = 10;
    lambda.step_with_optimizer = with_optimizer;
    accel::Scheduler linear(optimizer, lambda);
    accelerator.prepare(linear);
    linear.step();  // the optimizer has stepped
    double expected = 1.0 - (with_optimizer && !split ? n : 1) / 10.0;
    check(std::abs(linear.last_lr() - expected) < 1e-12, label + ": lambda lr " + std::to_string(linear.last_lr()) +
                                                             " after one step, want " + std::to_string(expected));
    on_a_micro_step(accelerator, model, [&] { linear.step(); });
    if (!with_optimizer) expected = 1.0 - 2 / 10.0;
    check(std::abs(linear.last_lr() - expected) < 1e-12, label + ": lambda lr " + std::to_string(linear.last_lr()) +
                                                             " after a skipped step, want " + std::to_string(expected));

    accel::Optimizer cycle_optimizer(model, adamw);
    accelerator.prepare(cycle_optimizer);
    auto cycle = accel::SchedulerOptions::defaults(accel::SchedulerKind::OneCycle);
    cycle.max_lr = 0.01;
    cycle.total_steps = 2;
    cycle.step_with_optimizer = with_optimizer;
    accel::Scheduler one_cycle(cycle_optimizer, cycle);
    accelerator.prepare(one_cycle);
    one_cycle.step();
    // Per process steps stop at total_steps (Accelerate's OneCycle special case).
    const int64_t want = !with_optimizer || split ? 1 : std::min<int64_t>(n, cycle.total_steps);
    check(one_cycle.last_epoch() == want, label + ": one-cycle last_epoch " + std::to_string(one_cycle.last_epoch()) +
                                              ", want " + std::to_string(want));
  }
  std::printf("rank %d: scheduler parity ok on %d processes%s\n", rank_for_messages, n,
              split ? " (split_batches)" : "");
  return 0;
}
