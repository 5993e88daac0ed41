// Gradient accumulation on one process: the sync_gradients rhythm, prepared
// optimizer no-ops on micro-steps, loss scaling by 1/k, and clipping.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "accel/accel.hpp"

namespace {

TEST(Accumulation, SyncsEveryKthMicroStepAndOnTheLastBatch) {
  accel::AcceleratorOptions options;
  options.gradient_accumulation_steps = 3;
  accel::Accelerator accelerator(options);
  torch::nn::Linear linear(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  accelerator.prepare(model);
  auto dataset = std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{at::randn({7, 2}), at::randn({7, 1})});
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = 1;
  accel::DataLoader loader(dataset, loader_options);
  accelerator.prepare(loader);
  std::vector<bool> syncs;
  while (auto batch = loader.next()) {
    auto scope = accelerator.accumulate(model);
    syncs.push_back(accelerator.sync_gradients());
  }
  EXPECT_EQ(syncs, (std::vector<bool>{false, false, true, false, false, true, true}));
}

TEST(Accumulation, KMicroBatchesEqualOneLargeBatch) {
  at::manual_seed(3);
  torch::nn::Linear a(4, 2), b(4, 2);
  {
    at::NoGradGuard no_grad;
    b->weight.copy_(a->weight);
    b->bias.copy_(a->bias);
  }
  accel::AcceleratorOptions options;
  options.gradient_accumulation_steps = 4;
  accel::Accelerator accelerator(options);
  accel::Model model = accel::Model::from_module(a);
  accelerator.prepare(model);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd));
  accelerator.prepare(optimizer);

  at::Tensor x = at::randn({16, 4}), y = at::randint(0, 2, {16}, at::kLong);
  at::Tensor before = a->weight.detach().clone();
  for (int micro = 0; micro < 4; ++micro) {
    auto scope = accelerator.accumulate(model);
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(x.narrow(0, micro * 4, 4)),
                                          y.narrow(0, micro * 4, 4));
    accelerator.backward(loss);
    optimizer.step();
    if (micro < 3) EXPECT_TRUE(at::equal(a->weight, before)) << "stepped on micro-step " << micro;
    optimizer.zero_grad();
  }
  accel::Model reference = accel::Model::from_module(b);
  accel::compute_loss(accel::LossKind::CrossEntropy, reference.forward(x), y).backward();
  at::Tensor expected = b->weight.detach() - 1e-3 * b->weight.grad();
  // One step of lr 1e-3: the two gradients (4 micro-means averaged against one
  // mean of 16 samples, products over 4 features) differ by at most
  // 2 (16 + 4) u |g|-ish, scaled by lr to ~1e-3 * 2.4e-6 |g|; the update's own
  // rounding is <= 2 u |w| (1.2e-7 |w|). rtol 1e-6 (17 u) covers that bound
  // 8x over in any summation order; atol 1e-7 covers weights near 0, where
  // the lr-scaled gradient error (~1e-9) is all there is.
  EXPECT_TRUE(at::allclose(a->weight, expected, 1e-6, 1e-7)) << (a->weight - expected).abs().max();
}

TEST(Accumulation, ClipGradNormReturnsTheNormAndClips) {
  accel::Accelerator accelerator;
  torch::nn::Linear linear(3, 1);
  accel::Model model = accel::Model::from_module(linear);
  accelerator.prepare(model);
  linear->weight.mutable_grad() = at::full({1, 3}, 4.0);
  linear->bias.mutable_grad() = at::full({1}, 2.0);
  double norm = accelerator.clip_grad_norm(model, 1.0);
  EXPECT_NEAR(norm, std::sqrt(3 * 16.0 + 4.0), 1e-5);
  double after =
      std::sqrt(linear->weight.grad().pow(2).sum().item<double>() + linear->bias.grad().pow(2).sum().item<double>());
  EXPECT_NEAR(after, 1.0, 1e-5);
  accelerator.clip_grad_value(model, 0.1);
  EXPECT_LE(linear->weight.grad().abs().max().item<float>(), 0.1f + 1e-7);
  EXPECT_THROW(accelerator.clip_grad_norm(model, -1.0), accel::Error);
}

TEST(ProcessControl, SingleProcessHelpers) {
  accel::Accelerator accelerator;
  at::Tensor rows = at::arange(5);
  EXPECT_TRUE(at::equal(accelerator.split_between_processes(rows), rows));
  EXPECT_TRUE(at::equal(accelerator.broadcast(rows), rows));
  auto objects = accelerator.gather_object("hello");
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_EQ(objects[0], "hello");
  EXPECT_FALSE(accelerator.check_trigger());
  accelerator.set_trigger();
  EXPECT_TRUE(accelerator.check_trigger());
  EXPECT_FALSE(accelerator.check_trigger());
  accelerator.main_process_first_begin();
  accelerator.main_process_first_end();
  EXPECT_EQ(accelerator.pad_across_processes(rows).sizes(), rows.sizes());
  // Accelerate: a dimension the tensor lacks leaves it as it is.
  EXPECT_TRUE(at::equal(accelerator.pad_across_processes(rows, rows.dim()), rows));
  EXPECT_TRUE(at::equal(accelerator.pad_across_processes(at::scalar_tensor(3.0), 0), at::scalar_tensor(3.0)));
}

}  // namespace

namespace {

TEST(Accumulation, SettingsComeFromAccelerateEnvironmentVariables) {
  setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "5", 1);
  setenv("ACCELERATE_MIXED_PRECISION", "bf16", 1);
  {
    accel::Accelerator accelerator;
    EXPECT_EQ(accelerator.gradient_accumulation_steps(), 5);
    EXPECT_EQ(accelerator.mixed_precision(), accel::MixedPrecision::Bf16);
  }
  {
    // The launcher's value wins over the code's, as Accelerate's parse_choice_from_env.
    accel::AcceleratorOptions options;
    options.gradient_accumulation_steps = 2;
    accel::Accelerator accelerator(options);
    EXPECT_EQ(accelerator.gradient_accumulation_steps(), 5);
  }
  for (const char* bad : {"five", "0", "-3", "99999999999999999999"}) {
    setenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", bad, 1);
    try {
      accel::Accelerator accelerator;
      ADD_FAILURE() << bad << " was accepted";
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("\"") + bad + "\""), std::string::npos) << e.what();
    }
  }
  unsetenv("ACCELERATE_GRADIENT_ACCUMULATION_STEPS");
  setenv("ACCELERATE_MIXED_PRECISION", "fp32", 1);
  EXPECT_THROW(accel::Accelerator{}, accel::Error);
  unsetenv("ACCELERATE_MIXED_PRECISION");
}

}  // namespace

namespace {

void expect_state(const std::function<void()>& call, const std::string& needle) {
  try {
    call();
    ADD_FAILURE() << "no error, expected STATE naming " << needle;
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::State) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Every scope's _end without its _begin is STATE, as autocast's and join's are.
TEST(Scopes, EndWithoutBeginIsAStateError) {
  accel::Accelerator accelerator;
  torch::nn::Linear linear(2, 1), other(2, 1);
  accel::Model model = accel::Model::from_module(linear);
  accel::Model second = accel::Model::from_module(other);
  expect_state([&] { accelerator.accumulate_end(model); }, "accumulate_end");
  expect_state([&] { accelerator.no_sync_end(model); }, "no_sync_end");
  expect_state([&] { accelerator.main_process_first_end(); }, "main_process_first_end");
  expect_state([&] { accelerator.local_main_process_first_end(); }, "local_main_process_first_end");
  expect_state([&] { accelerator.autocast_end(); }, "autocast_end");
  expect_state([&] { accelerator.join_uneven_inputs_end(); }, "join_uneven_inputs_end");

  accelerator.no_sync_begin(model);
  expect_state([&] { accelerator.no_sync_end(second); }, "no_sync_end");  // another model's scope
  expect_state([&] { accelerator.accumulate_end(model); }, "accumulate_end");
  accelerator.no_sync_end(model);
  expect_state([&] { accelerator.no_sync_end(model); }, "no_sync_end");  // closed once only

  accelerator.accumulate_begin(model);
  accelerator.accumulate_begin(model);  // nested scopes close one at a time
  accelerator.accumulate_end(model);
  accelerator.accumulate_end(model);
  expect_state([&] { accelerator.accumulate_end(model); }, "accumulate_end");
  { auto scope = accelerator.accumulate(model); }  // the RAII scope pairs itself
  expect_state([&] { accelerator.accumulate_end(model); }, "accumulate_end");
}

TEST(Scopes, BadScalerOptionsAreNamedUnderEveryPrecision) {
  struct Case {
    const char* name;
    std::function<void(accel::AcceleratorOptions&)> set;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<Case> cases = {
      {"scaler_growth_factor", [](auto& o) { o.scaler_growth_factor = 1.0; }},
      {"scaler_growth_factor", [](auto& o) { o.scaler_growth_factor = 0.0; }},
      {"scaler_growth_factor", [&](auto& o) { o.scaler_growth_factor = inf; }},
      {"scaler_backoff_factor", [](auto& o) { o.scaler_backoff_factor = 1.0; }},
      {"scaler_backoff_factor", [](auto& o) { o.scaler_backoff_factor = 0.0; }},
      {"scaler_backoff_factor", [](auto& o) { o.scaler_backoff_factor = -2.0; }},
      {"scaler_init_scale", [&](auto& o) { o.scaler_init_scale = nan; }},
      {"scaler_init_scale", [&](auto& o) { o.scaler_init_scale = inf; }},
      {"scaler_init_scale", [](auto& o) { o.scaler_init_scale = 0.0; }},
      {"scaler_growth_interval", [](auto& o) { o.scaler_growth_interval = 0; }},
      {"scaler_growth_interval", [](auto& o) { o.scaler_growth_interval = -3; }},
  };
  for (const auto& c : cases) {
    accel::AcceleratorOptions options;
    options.mixed_precision = accel::MixedPrecision::No;
    c.set(options);
    try {
      accel::Accelerator accelerator(options);
      ADD_FAILURE() << c.name << " accepted";
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
    }
  }
}

}  // namespace
