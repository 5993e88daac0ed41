// One training run, in pieces, for the resume tests (run_resume.sh):
//   checkpoint_resume full   OUT N         train N steps, save the parameters to OUT
//   checkpoint_resume first  DIR k         train k steps, save_state(DIR)
//   checkpoint_resume again  DIR k2        load DIR, train to k2, save_state(DIR) (killed mid-save by the test)
//   checkpoint_resume resume DIR OUT N     load DIR, train to N, save the parameters to OUT
// Shuffled data, dropout (RNG), AdamW, a warmup schedule and a step counter
// registered for checkpointing: a resumed run must end bitwise equal to `full`.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"

namespace {

const char* kSpec = R"([{"type": "Linear", "in_features": 8, "out_features": 32}, {"type": "ReLU"},
                        {"type": "Dropout", "p": 0.2}, {"type": "Linear", "in_features": 32, "out_features": 4}])";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: checkpoint_resume full|first|again|resume ...\n");
    return 2;
  }
  std::string mode = argv[1];
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(60);
  accel::Accelerator accelerator(options);
  accelerator.set_seed(mode == "full" || mode == "first" ? 5 : 1234);  // resumed runs must not depend on it

  at::Generator data_rng = at::make_generator<at::CPUGeneratorImpl>(77);
  at::Tensor x = at::randn({52, 8}, data_rng), y = at::randint(0, 4, {52}, data_rng, at::kLong);
  accel::Model model = accel::Model::from_json(kSpec);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accel::SchedulerOptions schedule;
  schedule.kind = accel::SchedulerKind::LinearWarmup;
  schedule.num_warmup_steps = 4;
  schedule.num_training_steps = 60;
  accel::Scheduler scheduler(optimizer, schedule);
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = 3;
  loader_options.shuffle = true;
  loader_options.seed = 21;
  accel::DataLoader loader(std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(scheduler);
  accelerator.prepare(loader);
  int64_t step = 0;
  accelerator.register_for_checkpointing(
      {[&] { return std::to_string(step); }, [&](const std::string& bytes) { step = std::stoll(bytes); }});

  auto train_until = [&](int64_t until) {
    while (step < until) {
      auto batch = loader.next();
      if (!batch) continue;  // next epoch
      optimizer.zero_grad();
      at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]);
      accelerator.backward(loss);
      optimizer.step();
      scheduler.step();
      ++step;
    }
  };

  if (mode == "full") {
    train_until(std::atol(argv[3]));
    accelerator.save(accelerator.get_state_dict(model), argv[2]);
  } else if (mode == "first") {
    train_until(std::atol(argv[3]));
    accelerator.save_state(argv[2]);
  } else if (mode == "again") {
    accelerator.load_state(argv[2]);
    train_until(std::atol(argv[3]));
    accelerator.save_state(argv[2]);
  } else if (mode == "resume") {
    accelerator.load_state(argv[2]);
    std::printf("rank %d: resumed at step %lld\n", accelerator.process_index(), static_cast<long long>(step));
    train_until(std::atol(argv[4]));
    accelerator.save(accelerator.get_state_dict(model), argv[3]);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  accelerator.wait_for_everyone();
  return 0;
}
