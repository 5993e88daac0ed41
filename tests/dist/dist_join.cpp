// join_uneven_inputs across real processes: with even_batches = false the
// processes get different numbers of batches; the ones that run out answer the
// others' gradient allreduces until all are done, nobody hangs, and each
// update averages only the gradients of the processes still training — the
// same parameters as one process taking each round's batches at once.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"
#include "dist_checks.hpp"
#include "float64_reference.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;
using float64_reference::kSgdTolerance;
using float64_reference::widen;

const char* kSpec = R"([{"type": "Linear", "in_features": 5, "out_features": 7}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 7, "out_features": 3}])";

}  // namespace

int main() {
  constexpr int64_t kBatch = 2, kSamples = 22;  // 11 batches: uneven over 2, 3 or 4 processes
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.dataloader.even_batches = false;
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;

  at::manual_seed(3);
  at::Tensor x = at::randn({kSamples, 5}).to(at::kDouble), y = at::randint(0, 3, {kSamples}, at::kLong);
  at::manual_seed(4);
  accel::Model model = accel::Model::from_json(kSpec);
  at::manual_seed(4);
  accel::Model reference = accel::Model::from_json(kSpec);
  widen(model);  // float64: see kSgdTolerance
  widen(reference);
  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.lr = 0.3;
  accel::Optimizer optimizer(model, sgd), reference_optimizer(reference, sgd);
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = kBatch;
  accel::DataLoader loader(std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(loader);

  int steps = 0;
  accelerator.join_uneven_inputs_begin();
  while (auto batch = loader.next()) {
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward((*batch)[0]), (*batch)[1]);
    accelerator.backward(loss);
    optimizer.step();
    optimizer.zero_grad();
    ++steps;
  }
  accelerator.join_uneven_inputs_end();
  const int64_t batches = (kSamples + kBatch - 1) / kBatch;
  check(steps == (batches - rank + world - 1) / world, "this process's share of the uneven batches");

  // Round r: batches r*world .. r*world+world-1 (those that exist), at once.
  for (int64_t first = 0; first < batches; first += world) {
    int64_t count = std::min<int64_t>(world, batches - first);
    reference_optimizer.zero_grad();
    accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(x.narrow(0, first * kBatch, count * kBatch)),
                        y.narrow(0, first * kBatch, count * kBatch))
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
    check(err < kSgdTolerance,
          "parameter " + std::to_string(i) + " equals the round-by-round reference (err " + std::to_string(err) + ")");
  }
  std::printf("rank %d: join ok after %d steps of %lld batches\n", rank, steps, static_cast<long long>(batches));
  return 0;
}
