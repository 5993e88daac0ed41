// A small one-process training setup whose every piece of state save_state
// covers, shared by the checkpoint tests.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "accel/accel.hpp"
#include "core/remove_tree.hpp"

namespace accel::test {

inline const char* kSpec = R"([{"type": "Linear", "in_features": 6, "out_features": 16}, {"type": "Dropout", "p": 0.3},
                        {"type": "Linear", "in_features": 16, "out_features": 3}])";

inline std::string fresh_dir(const std::string& name) {
  std::string dir = ::testing::TempDir() + "ckpt_" + name;
  accel::detail::remove_tree(dir);
  return dir;
}

inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& error) {
    return error.what();
  }
  return "no error";
}

// A small training setup whose every piece of state save_state covers.
struct TrainingRun {
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kSpec);
  accel::Optimizer optimizer{model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW)};
  accel::Scheduler scheduler{optimizer, [] {
                               accel::SchedulerOptions o;
                               o.kind = accel::SchedulerKind::CosineWarmup;
                               o.num_warmup_steps = 3;
                               o.num_training_steps = 40;
                               return o;
                             }()};
  accel::DataLoader loader;
  int64_t steps = 0;

  explicit TrainingRun(const accel::AcceleratorOptions& options = {})
      : accelerator(options), loader(dataset(), [] {
          accel::DataLoaderOptions o;
          o.batch_size = 4;
          o.shuffle = true;
          o.seed = 3;
          return o;
        }()) {
    accelerator.prepare(model);
    accelerator.prepare(optimizer);
    accelerator.prepare(scheduler);
    accelerator.prepare(loader);
    accelerator.register_for_checkpointing(
        {[this] { return std::to_string(steps); }, [this](const std::string& b) { steps = std::stoll(b); }});
  }
  static std::shared_ptr<accel::Dataset> dataset() {
    at::manual_seed(11);
    return std::make_shared<accel::TensorDataset>(
        std::vector<at::Tensor>{at::randn({30, 6}), at::randint(0, 3, {30}, at::kLong)});
  }
  void train(int64_t until) {
    while (steps < until) {
      auto batch = loader.next();
      if (!batch) continue;
      optimizer.zero_grad();
      accelerator.backward(accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]));
      optimizer.step();
      scheduler.step();
      ++steps;
    }
  }
};

}  // namespace accel::test
