// Data-parallel correctness with real processes: after prepare every replica
// holds rank 0's weights, and after backward each rank's gradients equal those
// of one process on the concatenated batch. Also checks that an unarmed
// backward (no forward in training mode under grad) communicates nothing.
// Usage: dist_gradients [bucket_cap_mb | views | fp16 | bf16 | unused]
//   bucket_cap_mb: a tiny cap forces many buckets; views: gradients as bucket
//   views; fp16/bf16: compressed allreduce (looser tolerance); unused: a
//   parameter without gradient is an error naming it, unless
//   find_unused_parameters.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "accel/accel.hpp"
#include "model/model_impl.hpp"
#include "accelerator/accelerator_state.hpp"
#include "dist_checks.hpp"
#include "float64_reference.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;
using float64_reference::widen;

const char* kSpec = R"([
  {"type": "Linear", "in_features": 12, "out_features": 32},
  {"type": "ReLU"},
  {"type": "Linear", "in_features": 32, "out_features": 16},
  {"type": "Tanh"},
  {"type": "Linear", "in_features": 16, "out_features": 5}
])";

// The largest ||ga - gb|| / tolerance_i over the parameters (1 = at the
// tolerance), where tolerance_i = relative * ||gb_i|| + absolute[i].
double max_error_ratio(const accel::Model& a, const accel::Model& b, double relative,
                       const std::vector<double>& absolute, double* worst_relative) {
  auto pa = a.parameters(), pb = b.parameters();
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    at::Tensor ga = pa[i].grad(), gb = pb[i].grad();
    check(ga.defined() && gb.defined(), "gradient " + std::to_string(i) + " is defined");
    const double diff = (ga - gb).norm().item<double>(), norm = gb.norm().item<double>();
    *worst_relative = std::max(*worst_relative, diff / std::max(norm, 1e-300));
    worst = std::max(worst, diff / (relative * norm + absolute[i]));
  }
  return worst;
}

// A model whose second layer is used only when asked: an "unused parameter" case.
struct Branchy : torch::nn::Module {
  torch::nn::Linear used{nullptr}, spare{nullptr};
  Branchy() {
    used = register_module("used", torch::nn::Linear(4, 2));
    spare = register_module("spare", torch::nn::Linear(4, 2));
  }
};

// Unused parameters: an error naming them by default, fine with find_unused_parameters.
int check_unused(int argc, char** argv) {
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.find_unused_parameters = argc > 2;
  accel::Accelerator accelerator(options);
  rank_for_messages = accelerator.process_index();
  auto module = std::make_shared<Branchy>();
  accel::Model model = accel::Model::from_module(module, [module](const at::Tensor& x) { return module->used(x); });
  accelerator.prepare(model);
  at::Tensor loss = model.forward(at::randn({3, 4})).sum();
  try {
    accelerator.backward(loss);
    check(options.find_unused_parameters, "an unused parameter without find_unused_parameters is an error");
  } catch (const accel::Error& error) {
    std::string message = error.what();
    check(!options.find_unused_parameters, "find_unused_parameters allows unused parameters: " + message);
    check(message.find("spare.weight") != std::string::npos && message.find("spare.bias") != std::string::npos &&
              message.find("find_unused_parameters") != std::string::npos,
          "the error names the unused parameters and the option: " + message);
  }
  // The collectives stayed in step: one more synced backward works everywhere.
  accelerator.wait_for_everyone();
  std::printf("rank %d: unused parameters (find_unused_parameters=%d) ok\n", accelerator.process_index(),
              options.find_unused_parameters ? 1 : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "unused") return check_unused(argc, argv);
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  // How far the synced gradients may be from the reference's, normwise per
  // parameter. Without a comm hook both sides run in float64 (the models and
  // the data widened exactly from their float32 draws): the processes' batch
  // means averaged by an allreduce against one mean over the concatenated
  // batch differ only in summation order, which in float32 left 1.6e-7 on an
  // AMD EPYC (AVX-512) (~3 u) but has no bound independent of the kernels' order
  // and of cancellation across samples; in float64 the same leaves ~1e-15, and
  // 1e-10 is 1e5 over that and 1e9 below a real difference (a missing division
  // by the world size: 0.5 or more).
  // A 16-bit hook (half_u = 2^-11 for fp16, 2^-8 for bf16) rounds each
  // process's g_r / W into 16 bits and sums the W of them in 16 bits: at most
  // W roundings of values bounded by sum_r |g_r| / W, so
  // ||error|| <= half_u * sum_r ||g_r||, computed below from the processes'
  // own gradients (cancellation across processes makes it larger than
  // half_u ||g||), plus float32 rounding (1e-5 relative: ~100x the float32
  // difference measured above). Measured on an AMD EPYC (AVX-512): fp16 6.3e-4
  // relative; Gloo on LibTorch 1.13 refuses bf16.
  double relative = 1e-10, half_u = 0;
  at::ScalarType dtype = at::kDouble;
  if (mode == "copies") {
    options.gradient_as_bucket_view = false;
  } else if (mode == "fp16") {
    options.comm_hook = accel::CommHook::Fp16;
    relative = 1e-5, half_u = std::ldexp(1.0, -11), dtype = at::kFloat;
  } else if (mode == "bf16") {
    options.comm_hook = accel::CommHook::Bf16;
    relative = 1e-5, half_u = std::ldexp(1.0, -8), dtype = at::kFloat;
  } else if (!mode.empty()) {
    options.bucket_cap_mb = std::atof(argv[1]);
  }
  const bool tiny_buckets = !mode.empty() && options.bucket_cap_mb < 1;
  std::unique_ptr<accel::Accelerator> created;
  try {
    created = std::make_unique<accel::Accelerator>(options);
  } catch (const accel::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  accel::Accelerator& accelerator = *created;
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;
  check(world >= 2, "runs with at least 2 processes");

  // Different initial weights per rank: prepare must make them equal.
  at::manual_seed(1000 + rank);
  accel::Model model = accel::Model::from_json(kSpec);
  if (dtype == at::kDouble) widen(model);
  try {
    accelerator.prepare(model);
  } catch (const accel::Error& error) {
    // A backend without 16-bit reductions must say so, on every rank alike.
    check(error.code() == accel::ErrorCode::Unsupported && options.comm_hook != accel::CommHook::None,
          std::string("prepare failed: ") + error.what());
    std::printf("rank %d: %s (reported as UNSUPPORTED)\n", rank, error.what());
    return 0;
  }
  for (auto& p : model.parameters()) {
    at::Tensor all = accelerator.gather(p.detach().reshape({1, -1}));
    for (int r = 1; r < world; ++r) check(at::equal(all[r], all[0]), "parameters equal rank 0's after prepare");
  }
  if (tiny_buckets) {
    auto* sync = model.impl().gradient_sync();
    check(sync != nullptr && sync->bucket_count() > 1, "a tiny bucket cap gives several buckets");
  }
  {
    // A forward that fails (wrong input width) leaves gradient sync unarmed.
    auto* sync = model.impl().gradient_sync();
    bool threw = false;
    try {
      model.forward(at::ones({2, 3}));
    } catch (const accel::Error&) {
      threw = true;
    }
    check(threw && sync != nullptr && !sync->armed(), "a failed forward does not arm gradient sync");
  }

  // The reference: one process, same weights, the concatenated batch.
  at::manual_seed(7);
  accel::Model reference = accel::Model::from_json(kSpec);
  if (dtype == at::kDouble) widen(reference);
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
    at::Tensor inputs = at::randn({per_rank * world, 12}).to(dtype);
    at::Tensor targets = at::randint(0, 5, {per_rank * world}, at::kLong);
    at::Tensor mine = inputs.narrow(0, rank * per_rank, per_rank);
    at::Tensor my_targets = targets.narrow(0, rank * per_rank, per_rank);

    // sum_r ||g_r||: each process's own batch-mean gradient, on the reference.
    auto reference_params = reference.parameters();
    std::vector<double> absolute(reference_params.size(), 0.0);
    if (half_u > 0) {
      for (int r = 0; r < world; ++r) {
        reference_optimizer.zero_grad();
        accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(inputs.narrow(0, r * per_rank, per_rank)),
                            targets.narrow(0, r * per_rank, per_rank))
            .backward();
        for (size_t i = 0; i < absolute.size(); ++i) {
          absolute[i] += half_u * reference_params[i].grad().norm().item<double>();
        }
      }
    }
    optimizer.zero_grad();
    reference_optimizer.zero_grad();
    accelerator.backward(accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(mine), my_targets));
    accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(inputs), targets).backward();
    double err = 0;
    const double ratio = max_error_ratio(model, reference, relative, absolute, &err);
    std::printf("rank %d step %d (%s): max relative gradient error %.3g, %.3g of the tolerance\n", rank, step,
                dtype == at::kDouble ? "float64" : "float32", err, ratio);
    check(ratio <= 1, "gradients equal the single-process gradients on the concatenated batch");
    {
      // Views share their bucket's storage; copies each own theirs.
      auto* sync = model.impl().gradient_sync();
      check(sync != nullptr, "gradient sync installed");
      std::set<const void*> storages;
      size_t grads = 0;
      for (const auto& p : model.parameters()) {
        if (!p.grad().defined()) continue;
        storages.insert(p.grad().storage().data());
        ++grads;
      }
      if (options.gradient_as_bucket_view) {
        check(storages.size() == sync->bucket_count(), "gradients are views into the buckets");
      } else {
        check(storages.size() == grads, "gradients are separate tensors (gradient_as_bucket_view=false)");
      }
    }
    optimizer.step();
    reference_optimizer.step();
  }

  // Without a training-mode forward under grad nothing is armed: the backward stays local.
  auto& group = *accelerator.state()->process_group;
  uint64_t before = group.collectives_issued();
  {
    at::Tensor x = at::randn({per_rank, 12}).to(dtype);
    model.train(false);
    at::Tensor loss = model.forward(x).sum();
    loss.backward();
  }
  check(group.collectives_issued() == before, "an unarmed backward issues no collective");
  accelerator.wait_for_everyone();
  std::printf("rank %d: gradients ok\n", rank);
  return 0;
}
