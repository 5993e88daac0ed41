// A training program that survives `accel launch --max_restarts`: at start it
// loads its newest automatic checkpoint when there is one, and it saves one
// every SAVE_EVERY steps. Restarted after a crash, it continues where the last
// checkpoint left off and ends exactly where an uninterrupted run ends.
//   restartable_training PROJECT_DIR OUT STEPS SAVE_EVERY
// writes the final parameters to OUT (safetensors). For the test, with
// ACCEL_TEST_CRASH_AT_STEP=K and ACCEL_TEST_CRASH_MARKER=FILE, rank 1 kills
// itself with SIGKILL at step K unless FILE exists (it creates it first), so the
// crash happens in the first attempt only. ACCEL_TEST_TIMEOUT_S sets the
// rendezvous and collective timeout (default 60 s). For the elastic tests,
// ACCEL_TEST_STEP_DELAY_MS slows every step down (so a node can be killed or
// added mid-run) and ACCEL_TEST_KEEP_CHECKPOINTS=1 keeps every checkpoint (so the
// one a restarted world resumed from can be replayed); the resumed checkpoint is
// named on stdout.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "accel/accel.hpp"

namespace {

const char* kSpec = R"([{"type": "Linear", "in_features": 8, "out_features": 16}, {"type": "ReLU"},
                        {"type": "Dropout", "p": 0.1}, {"type": "Linear", "in_features": 16, "out_features": 3}])";

void crash_once_if_asked(int rank, int64_t step) {
  const char* at = std::getenv("ACCEL_TEST_CRASH_AT_STEP");
  const char* marker = std::getenv("ACCEL_TEST_CRASH_MARKER");
  if (rank != 1 || at == nullptr || marker == nullptr || std::atoll(at) != step) return;
  if (std::filesystem::exists(marker)) return;
  std::ofstream(marker) << "crashed at step " << step << "\n";
  std::fprintf(stderr, "rank %d: crashing at step %lld\n", rank, static_cast<long long>(step));
  ::kill(::getpid(), SIGKILL);
}

}  // namespace

int train(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: restartable_training PROJECT_DIR OUT STEPS SAVE_EVERY\n");
    return 2;
  }
  const std::string project_dir = argv[1], out = argv[2];
  const int64_t steps = std::atoll(argv[3]), save_every = std::atoll(argv[4]);

  accel::AcceleratorOptions options;
  const char* timeout = std::getenv("ACCEL_TEST_TIMEOUT_S");
  options.timeout = std::chrono::seconds(timeout != nullptr ? std::atoi(timeout) : 60);
  options.project.project_dir = project_dir;
  options.project.automatic_checkpoint_naming = true;
  options.project.total_limit = std::getenv("ACCEL_TEST_KEEP_CHECKPOINTS") != nullptr ? 0 : 2;
  const char* delay = std::getenv("ACCEL_TEST_STEP_DELAY_MS");
  const auto step_delay = std::chrono::milliseconds(delay != nullptr ? std::atoi(delay) : 0);
  accel::Accelerator accelerator(options);
  accelerator.set_seed(3);

  at::Generator data_rng = at::make_generator<at::CPUGeneratorImpl>(11);
  at::Tensor x = at::randn({40, 8}, data_rng), y = at::randint(0, 3, {40}, data_rng, at::kLong);
  accel::Model model = accel::Model::from_json(kSpec);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = 4;
  loader_options.shuffle = true;
  loader_options.seed = 8;
  accel::DataLoader loader(std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(loader);
  int64_t step = 0;
  accelerator.register_for_checkpointing(
      {[&] { return std::to_string(step); }, [&](const std::string& bytes) { step = std::stoll(bytes); }});

  // The newest checkpoint, if an earlier attempt left one.
  std::error_code none;
  if (!std::filesystem::is_empty(project_dir + "/checkpoints", none) && !none) {
    // The newest, as load_state() picks it: the highest checkpoint_<i>.
    int64_t newest = -1;
    for (const auto& entry : std::filesystem::directory_iterator(project_dir + "/checkpoints")) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("checkpoint_", 0) == 0) newest = std::max<int64_t>(newest, std::atoll(name.c_str() + 11));
    }
    accelerator.load_state();
    std::printf("rank %d of %d: resumed at step %lld from checkpoint_%lld\n", accelerator.process_index(),
                accelerator.num_processes(), static_cast<long long>(step), static_cast<long long>(newest));
    std::fflush(stdout);
  }

  while (step < steps) {
    auto batch = loader.next();
    if (!batch) continue;  // next epoch
    crash_once_if_asked(accelerator.process_index(), step);
    if (step_delay.count() > 0) std::this_thread::sleep_for(step_delay);
    optimizer.zero_grad();
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]);
    accelerator.backward(loss);
    optimizer.step();
    ++step;
    if (step % save_every == 0) accelerator.save_state();
  }
  accelerator.save(accelerator.get_state_dict(model), out);
  accelerator.wait_for_everyone();
  return 0;
}

int main(int argc, char** argv) {
  try {
    return train(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "restartable_training: %s\n", error.what());
    return 1;
  }
}
