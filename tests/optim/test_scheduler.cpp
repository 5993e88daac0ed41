// Schedulers against PyTorch's own (tests/optim/files/make_scheduler_table.py),
// and the prepared scheduler's Accelerate stepping rule.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/scheduler.hpp"

namespace {

accel::SchedulerKind kind_named(const std::string& name) {
  static const std::map<std::string, accel::SchedulerKind> kinds = {
      {"step", accel::SchedulerKind::Step},
      {"multistep", accel::SchedulerKind::MultiStep},
      {"exponential", accel::SchedulerKind::Exponential},
      {"cosine_annealing", accel::SchedulerKind::CosineAnnealing},
      {"linear", accel::SchedulerKind::Linear},
      {"constant", accel::SchedulerKind::Constant},
      {"polynomial", accel::SchedulerKind::Polynomial},
      {"one_cycle", accel::SchedulerKind::OneCycle},
      {"linear_warmup", accel::SchedulerKind::LinearWarmup},
      {"cosine_warmup", accel::SchedulerKind::CosineWarmup},
      {"reduce_on_plateau", accel::SchedulerKind::ReduceOnPlateau},
  };
  return kinds.at(name);
}

accel::SchedulerOptions options_from(const nlohmann::json& row) {
  auto o = accel::SchedulerOptions::defaults(kind_named(row["kind"]));
  const auto& p = row["params"];
  auto get = [&](const char* key, auto& field) {
    if (p.contains(key)) field = p[key].get<std::decay_t<decltype(field)>>();
  };
  get("step_size", o.step_size);
  get("gamma", o.gamma);
  get("milestones", o.milestones);
  get("t_max", o.t_max);
  get("eta_min", o.eta_min);
  get("start_factor", o.start_factor);
  get("end_factor", o.end_factor);
  get("total_iters", o.total_iters);
  get("factor", o.factor);
  get("power", o.power);
  get("max_lr", o.max_lr);
  get("total_steps", o.total_steps);
  get("pct_start", o.pct_start);
  get("anneal_strategy", o.anneal_strategy);
  get("div_factor", o.div_factor);
  get("final_div_factor", o.final_div_factor);
  get("three_phase", o.three_phase);
  get("num_warmup_steps", o.num_warmup_steps);
  get("num_training_steps", o.num_training_steps);
  get("num_cycles", o.num_cycles);
  get("mode", o.mode);
  get("patience", o.patience);
  get("threshold", o.threshold);
  get("threshold_mode", o.threshold_mode);
  get("cooldown", o.cooldown);
  get("min_lr", o.min_lr);
  get("eps", o.eps);
  return o;
}

accel::Optimizer sgd(double lr) {
  torch::nn::Linear linear(1, 1);
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  options.lr = lr;
  return accel::Optimizer(accel::Model::from_module(linear), options);
}

TEST(Scheduler, MatchesPyTorchTo1e6Relative) {
  std::ifstream in(std::string(ACCEL_TEST_FILES) + "/optim/files/scheduler_lrs.json");
  ASSERT_TRUE(in.good());
  nlohmann::json table = nlohmann::json::parse(in);
  std::vector<double> metrics = table["metrics"];
  for (const auto& row : table["cases"]) {
    accel::Optimizer optimizer = sgd(row["base_lr"]);
    accel::Scheduler scheduler(optimizer, options_from(row));
    std::vector<double> expected = row["lrs"];
    for (size_t t = 0; t < expected.size(); ++t) {
      if (t > 0) {
        if (row["kind"] == "reduce_on_plateau")
          scheduler.step(metrics[t - 1]);
        else
          scheduler.step();
      }
      double got = scheduler.last_lr();
      EXPECT_NEAR(got, expected[t], 1e-6 * std::max(std::abs(expected[t]), 1e-9))
          << row["kind"] << " " << row["params"].dump() << " at step " << t;
    }
  }
}

TEST(Scheduler, PreparedSchedulerFollowsAccelerate) {
  accel::Optimizer optimizer = sgd(1.0);
  auto options = accel::SchedulerOptions::defaults(accel::SchedulerKind::Exponential);
  options.gamma = 0.5;
  accel::Scheduler scheduler(optimizer, options);
  auto gradient = std::make_shared<accel::GradientState>();
  scheduler.bind(gradient, 2, /*split_batches=*/false, /*adjust_scheduler=*/false);
  scheduler.step();  // two processes: two steps per call
  EXPECT_EQ(scheduler.last_epoch(), 2);
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 0.25);
  gradient->sync_gradients = false;  // accumulation micro-step: the optimizer did not step
  scheduler.step();
  EXPECT_EQ(scheduler.last_epoch(), 2);

  auto unlinked = options;
  unlinked.step_with_optimizer = false;
  accel::Optimizer other = sgd(1.0);
  accel::Scheduler plain(other, unlinked);
  plain.bind(gradient, 2, false, false);
  plain.step();
  EXPECT_EQ(plain.last_epoch(), 1);

  // The accelerator's step_scheduler_with_optimizer = false does the same for
  // a scheduler that asks to step with its optimizer: once per call, also on
  // a micro-step.
  accel::Optimizer third = sgd(1.0);
  accel::Scheduler unlinked_by_accelerator(third, options);
  unlinked_by_accelerator.bind(gradient, 2, false, false, /*step_with_optimizer=*/false);
  unlinked_by_accelerator.step();
  EXPECT_EQ(unlinked_by_accelerator.last_epoch(), 1);
  EXPECT_DOUBLE_EQ(unlinked_by_accelerator.last_lr(), 0.5);
}

// Accelerate's AcceleratedScheduler: under split_batches the loader's batches
// are not multiplied by the processes, so one step per optimizer step.
TEST(Scheduler, SplitBatchesStepsOncePerOptimizerStep) {
  accel::Optimizer optimizer = sgd(1.0);
  auto options = accel::SchedulerOptions::defaults(accel::SchedulerKind::Exponential);
  options.gamma = 0.5;
  accel::Scheduler scheduler(optimizer, options);
  auto gradient = std::make_shared<accel::GradientState>();
  scheduler.bind(gradient, 4, /*split_batches=*/true, false);
  scheduler.step();
  EXPECT_EQ(scheduler.last_epoch(), 1);
  EXPECT_DOUBLE_EQ(scheduler.last_lr(), 0.5);

  // OneCycle: several steps per call stop at total_steps; a single one past it fails, as PyTorch's.
  auto cycle = accel::SchedulerOptions::defaults(accel::SchedulerKind::OneCycle);
  cycle.total_steps = 3;
  accel::Optimizer a = sgd(1.0), b = sgd(1.0);
  accel::Scheduler capped(a, cycle), split(b, cycle);
  capped.bind(gradient, 2, false, false);
  split.bind(gradient, 2, true, false);
  for (int i = 0; i < 3; ++i) capped.step();
  EXPECT_EQ(capped.last_epoch(), 3);
  for (int i = 0; i < 3; ++i) split.step();
  EXPECT_EQ(split.last_epoch(), 3);
  EXPECT_THROW(split.step(), accel::Error);
}

// adjust_scheduler: calls on micro-steps count towards OneCycle's cap (as
// Accelerate bumps PyTorch's _step_count); the count is saved with the state.
TEST(Scheduler, AdjustSchedulerCountsMicroStepsTowardsOneCycle) {
  auto cycle = accel::SchedulerOptions::defaults(accel::SchedulerKind::OneCycle);
  cycle.total_steps = 4;
  auto gradient = std::make_shared<accel::GradientState>();
  accel::Optimizer a = sgd(1.0), b = sgd(1.0);
  accel::Scheduler adjusted(a, cycle), plain(b, cycle);
  adjusted.bind(gradient, 2, false, /*adjust_scheduler=*/true);
  plain.bind(gradient, 2, false, false);
  gradient->sync_gradients = false;
  adjusted.step();
  plain.step();
  gradient->sync_gradients = true;
  adjusted.step();
  plain.step();
  EXPECT_EQ(plain.last_epoch(), 2);
  EXPECT_EQ(adjusted.last_epoch(), 2);
  adjusted.step();  // one micro-step counted: only one more step fits under total_steps 4
  plain.step();
  EXPECT_EQ(plain.last_epoch(), 4);
  EXPECT_EQ(adjusted.last_epoch(), 3);

  accel::Optimizer c = sgd(1.0);
  accel::Scheduler restored(c, cycle);
  restored.bind(gradient, 2, false, true);
  std::string saved = adjusted.state_json();
  restored.load_state_json(saved);
  restored.step();
  EXPECT_EQ(restored.last_epoch(), 3);  // at the cap already, as the saved one
}

TEST(Scheduler, RejectsBadOptionsAndMisuse) {
  accel::Optimizer optimizer = sgd(0.1);
  auto bad = accel::SchedulerOptions::defaults(accel::SchedulerKind::Step);
  bad.step_size = 0;
  EXPECT_THROW(accel::Scheduler(optimizer, bad), accel::Error);
  auto cycle = accel::SchedulerOptions::defaults(accel::SchedulerKind::OneCycle);
  cycle.total_steps = 2;
  accel::Scheduler one_cycle(optimizer, cycle);
  one_cycle.step();
  one_cycle.step();
  EXPECT_THROW(one_cycle.step(), accel::Error);  // PyTorch raises past total_steps too
  EXPECT_THROW(one_cycle.step(0.5), accel::Error);
  accel::Scheduler plateau(optimizer, accel::SchedulerOptions::defaults(accel::SchedulerKind::ReduceOnPlateau));
  EXPECT_THROW(plateau.step(), accel::Error);
}

}  // namespace
