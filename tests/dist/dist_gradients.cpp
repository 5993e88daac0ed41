// Data-parallel correctness with real processes: after prepare every replica
// holds rank 0's weights, and after backward each rank's gradients equal those
// of one process on the concatenated batch. Also checks that an unarmed
// backward (no forward in training mode under grad) communicates nothing.
// Usage: dist_gradients [bucket_cap_mb]  (a tiny cap forces many buckets)
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"
#include "model/model_impl.hpp"
#include "state/accelerator_state.hpp"

namespace {

int rank_for_messages = -1;

void check(bool condition, const std::string& what) {
  if (!condition) {
    std::fprintf(stderr, "rank %d: check failed: %s\n", rank_for_messages, what.c_str());
    std::exit(1);
  }
}

const char* kSpec = R"([
  {"type": "Linear", "in_features": 12, "out_features": 32},
  {"type": "ReLU"},
  {"type": "Linear", "in_features": 32, "out_features": 16},
  {"type": "Tanh"},
  {"type": "Linear", "in_features": 16, "out_features": 5}
])";

double max_relative_error(const accel::Model& a, const accel::Model& b) {
  auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    at::Tensor ga = pa[i].grad(), gb = pb[i].grad();
    check(ga.defined() && gb.defined(), "gradient " + std::to_string(i) + " is defined");
    double err = (ga - gb).norm().item<double>() / std::max(gb.norm().item<double>(), 1e-12);
    worst = std::max(worst, err);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  if (argc > 1) options.bucket_cap_mb = std::atof(argv[1]);
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;
  check(world >= 2, "runs with at least 2 processes");

  // Different initial weights per rank: prepare must make them equal.
  at::manual_seed(1000 + rank);
  accel::Model model = accel::Model::from_json(kSpec);
  accelerator.prepare(model);
  for (auto& p : model.parameters()) {
    at::Tensor all = accelerator.gather(p.detach().reshape({1, -1}));
    for (int r = 1; r < world; ++r) check(at::equal(all[r], all[0]), "parameters equal rank 0's after prepare");
  }
  if (argc > 1) {
    auto* sync = model.impl().gradient_sync();
    check(sync != nullptr && sync->bucket_count() > 1, "a tiny bucket cap gives several buckets");
  }

  // The reference: one process, same weights, the concatenated batch.
  at::manual_seed(7);
  accel::Model reference = accel::Model::from_json(kSpec);
  {
    at::NoGradGuard no_grad;
    auto dst = reference.parameters(), src = model.parameters();
    for (size_t i = 0; i < dst.size(); ++i) dst[i].copy_(src[i]);
  }
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));
  accel::Optimizer reference_optimizer(reference, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));

  const int64_t per_rank = 6 + 0;
  for (int step = 0; step < 3; ++step) {
    at::manual_seed(50 + step);  // same full batch on every rank
    at::Tensor inputs = at::randn({per_rank * world, 12});
    at::Tensor targets = at::randint(0, 5, {per_rank * world}, at::kLong);
    at::Tensor mine = inputs.narrow(0, rank * per_rank, per_rank);
    at::Tensor my_targets = targets.narrow(0, rank * per_rank, per_rank);

    optimizer.zero_grad();
    reference_optimizer.zero_grad();
    accelerator.backward(accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(mine), my_targets));
    accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(inputs), targets).backward();
    double err = max_relative_error(model, reference);
    std::printf("rank %d step %d: max relative gradient error %.3g\n", rank, step, err);
    check(err < 1e-5, "gradients equal the single-process gradients on the concatenated batch");
    optimizer.step();
    reference_optimizer.step();
  }

  // Without a training-mode forward under grad nothing is armed: the backward stays local.
  auto& group = *accelerator.state()->process_group;
  uint64_t before = group.collectives_issued();
  {
    at::Tensor x = at::randn({per_rank, 12});
    model.train(false);
    at::Tensor loss = model.forward(x).sum();
    loss.backward();
  }
  check(group.collectives_issued() == before, "an unarmed backward issues no collective");
  accelerator.wait_for_everyone();
  std::printf("rank %d: gradients ok\n", rank);
  return 0;
}
