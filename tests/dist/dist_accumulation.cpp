// Gradient accumulation across real processes: N processes with k=4
// accumulation end an epoch with the same parameters as one process taking the
// same samples as one large batch per optimizer step, and micro-steps that do
// not sync issue no collective at all (each does under sync_each_batch).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"
#include "accelerator/accelerator_state.hpp"
#include "dist_checks.hpp"
#include "float64_reference.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;
using float64_reference::kSgdTolerance;
using float64_reference::widen;

const char* kSpec = R"([{"type": "Linear", "in_features": 6, "out_features": 8}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 8, "out_features": 3}])";

}  // namespace

// Modes: (none); sync_each_batch: every micro-step allreduces, with the same
// result; launcher_steps: the code asks for 2 steps and `accel launch
// --gradient_accumulation_steps 4` wins, as in Accelerate.
int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  constexpr int64_t kSteps = 4, kBatch = 2, kSamples = 96;
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.gradient_accumulation_steps = mode == "launcher_steps" ? 2 : kSteps;
  options.sync_each_batch = mode == "sync_each_batch";
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;
  check(accelerator.gradient_accumulation_steps() == kSteps,
        "gradient_accumulation_steps is " + std::to_string(accelerator.gradient_accumulation_steps()));

  at::manual_seed(5);  // same data everywhere
  at::Tensor x = at::randn({kSamples, 6}).to(at::kDouble), y = at::randint(0, 3, {kSamples}, at::kLong);
  at::manual_seed(6);  // same initial weights for the model and the reference
  accel::Model model = accel::Model::from_json(kSpec);
  at::manual_seed(6);
  accel::Model reference = accel::Model::from_json(kSpec);
  widen(model);  // float64: see kSgdTolerance
  widen(reference);

  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.lr = 0.5;
  accel::Optimizer optimizer(model, sgd);
  accel::Optimizer reference_optimizer(reference, sgd);
  auto dataset = std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y});
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = kBatch;
  accel::DataLoader loader(dataset, loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(loader);

  auto& group = *accelerator.state()->process_group;
  int micro = 0, synced = 0;
  while (auto batch = loader.next()) {
    auto scope = accelerator.accumulate(model);
    uint64_t before = group.collectives_issued();
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]);
    accelerator.backward(loss);
    bool communicated = group.collectives_issued() > before;
    check(communicated == (accelerator.sync_gradients() || options.sync_each_batch),
          "micro-step " + std::to_string(micro) + ": communicated iff sync_gradients (or sync_each_batch)");
    synced += accelerator.sync_gradients() ? 1 : 0;
    optimizer.step();
    optimizer.zero_grad();
    ++micro;
  }
  check(synced == kSamples / (kBatch * kSteps * world), "one sync per window");

  // The reference takes each window's samples (k micro-batches of every process) at once.
  const int64_t per_update = kBatch * kSteps * world;
  for (int64_t start = 0; start < kSamples; start += per_update) {
    reference_optimizer.zero_grad();
    accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(x.narrow(0, start, per_update)),
                        y.narrow(0, start, per_update))
        .backward();
    reference_optimizer.step();
  }
  auto got = model.parameters(), want = reference.parameters();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, (got[i] - want[i]).abs().max().item<double>());
  std::printf("rank %d: float64 parameters vs the reference: worst error %g (tolerance %g)\n", rank, worst,
              kSgdTolerance);
  for (size_t i = 0; i < got.size(); ++i) {
    double err = (got[i] - want[i]).abs().max().item<double>();
    check(err < kSgdTolerance, "parameter " + std::to_string(i) + " equals the single-process large-batch run (err " +
                                   std::to_string(err) + ")");
  }
  std::printf("rank %d: accumulation ok over %d micro-steps, %d syncs\n", rank, micro, synced);
  return 0;
}
