#include <ATen/autocast_mode.h>
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include <map>
#include <string>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "accel/loss.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "precision/dtype_recording_model.hpp"

namespace {

std::string fixture(const std::string& name) { return std::string(ACCEL_TEST_FILES) + "/model/files/" + name; }

TEST(Model, LoadsTorchScriptSavedByPyTorchAndTrainsIt) {
  accel::Model model = accel::Model::from_torchscript(fixture("tiny_mlp.pt"));
  EXPECT_EQ(model.num_parameters(), 4 * 8 + 8 + 8 * 3 + 3);
  at::Tensor out = model.forward(at::ones({1, 4}));
  // Output printed by make_torchscript_fixture.py when the file was saved,
  // on whatever CPU that was: two float32 evaluations of fc2(relu(fc1(x))),
  // each product over K terms plus its bias within 2 (K + 1) u (|a|.|b| +
  // |bias|) of the other, fc1's passed on through |fc2.weight| (relu's slope
  // <= 1). From the weights: 1.7e-6 and 1.3e-6 for these two outputs, above
  // the fixed 1e-6 this replaced. Measured on an AMD EPYC (AVX-512): 0.
  std::map<std::string, at::Tensor> w;
  for (auto& [name, p] : model.named_parameters()) w[name] = p.detach().to(at::kDouble);
  const double u = 0x1p-24;
  const at::Tensor x = at::ones({1, 4}, at::kDouble);
  const at::Tensor h = at::relu(at::addmm(w["fc1.bias"], x, w["fc1.weight"].t()));
  const at::Tensor bound_h = 2 * 5 * u * at::addmm(w["fc1.bias"].abs(), x, w["fc1.weight"].abs().t());
  const at::Tensor bound = at::mm(bound_h, w["fc2.weight"].abs().t()) +
                           2 * 9 * u * at::addmm(w["fc2.bias"].abs(), h, w["fc2.weight"].abs().t());
  EXPECT_NEAR(out[0][0].item<float>(), -0.011193826794624329, bound[0][0].item<double>());
  EXPECT_NEAR(out[0][2].item<float>(), 0.13667157292366028, bound[0][2].item<double>());
  at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, out, at::tensor({2}, at::kLong));
  loss.backward();
  for (auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
}

TEST(Model, MissingTorchScriptIsAnIoError) {
  try {
    accel::Model::from_torchscript("/nonexistent/m.pt");
    FAIL();
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/m.pt"), std::string::npos);
  }
}

TEST(Model, WrapsATorchModule) {
  torch::nn::Linear linear(3, 2);
  accel::Model model = accel::Model::from_module(linear);
  EXPECT_EQ(model.num_parameters(), 8);
  EXPECT_EQ(model.forward(at::ones({5, 3})).sizes(), (std::vector<int64_t>{5, 2}));
  model.train(false);
  EXPECT_FALSE(model.is_training());
}

TEST(Model, NamedForwardOfAOneTensorModelTakesOneInputAndNamesTheOutput) {
  torch::nn::Linear linear(3, 2);
  accel::Model model = accel::Model::from_module(linear);
  auto outputs = model.forward(accel::Model::NamedTensors{{"x", at::ones({5, 3})}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].first, "output");
  EXPECT_TRUE(at::equal(outputs[0].second, model.forward(at::ones({5, 3}))));
  EXPECT_THROW(model.forward(accel::Model::NamedTensors{{"x", at::ones({5, 3})}, {"y", at::ones({5, 3})}}),
               accel::Error);
}

TEST(Model, NamedForwardChecksTheInputsBeforeRunning) {
  torch::nn::Linear linear(3, 2);
  int calls = 0;
  accel::Model model = accel::Model::from_module(linear.ptr(), nullptr, [&](const accel::Model::NamedTensors& in) {
    ++calls;
    return accel::Model::NamedTensors{{"sum", in[0].second + in[1].second}};
  });
  auto error_of = [&](const accel::Model::NamedTensors& in) -> std::string {
    try {
      model.forward(in);
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of({{"a", at::ones({2})}, {"a", at::ones({2})}}).find("\"a\" is given twice"), std::string::npos);
  EXPECT_NE(error_of({{"a", at::ones({2})}, {"b", at::Tensor()}}).find("\"b\" is undefined"), std::string::npos);
  EXPECT_NE(error_of({}).find("no inputs"), std::string::npos);
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(model.forward(at::ones({2})), accel::Error) << "no one-tensor forward";
  auto out = model.forward(accel::Model::NamedTensors{{"a", at::ones({2})}, {"b", at::ones({2})}});
  EXPECT_EQ(out[0].first, "sum");
  EXPECT_TRUE(at::equal(out[0].second, at::full({2}, 2.0)));
}

TEST(Model, SingleProcessPrepareKeepsWeightsAndAddsNoSync) {
  accel::Accelerator accelerator;
  torch::nn::Linear linear(3, 2);
  at::Tensor before = linear->weight.detach().clone();
  accel::Model model = accel::Model::from_module(linear);
  accelerator.prepare(model);
  EXPECT_TRUE(model.is_prepared());
  EXPECT_TRUE(at::equal(linear->weight, before));
  EXPECT_THROW(accelerator.prepare(model), accel::Error);
}

TEST(Model, Bf16AutocastRunsMatmulsInBf16AndReturnsFloat32) {
  accel::AcceleratorOptions options;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  accel::Accelerator accelerator(options);
  torch::nn::Linear linear(4, 4);
  at::ScalarType inside = at::kFloat;
  accel::Model model = accel_test::dtype_recording_model(linear, inside);
  accelerator.prepare(model);
  at::Tensor out = model.forward(at::randn({2, 4}));
  EXPECT_EQ(inside, at::kBFloat16);
  EXPECT_EQ(out.scalar_type(), at::kFloat);

  // ... and still trains.
  auto adam = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
  adam.lr = 0.05;
  accel::Optimizer optimizer(model, adam);
  accelerator.prepare(optimizer);
  at::manual_seed(1);
  at::Tensor x = at::randn({64, 4}), y = (x.sum(1) > 0).to(at::kLong);
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    optimizer.zero_grad();
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(x).narrow(1, 0, 2), y);
    accelerator.backward(loss);
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.7 * first);
}

TEST(Loss, ChecksShapesAndDtypes) {
  at::Tensor logits = at::randn({4, 3});
  EXPECT_NO_THROW(accel::compute_loss(accel::LossKind::CrossEntropy, logits, at::zeros({4}, at::kLong)));
  EXPECT_THROW(accel::compute_loss(accel::LossKind::CrossEntropy, logits, at::zeros({3}, at::kLong)), accel::Error);
  EXPECT_THROW(accel::compute_loss(accel::LossKind::Nll, logits, at::zeros({4})), accel::Error);
  EXPECT_THROW(accel::compute_loss(accel::LossKind::CrossEntropy, logits, at::full({4}, 7, at::kLong)), accel::Error);
  EXPECT_NEAR(accel::compute_loss(accel::LossKind::Mse, at::ones({2, 2}), at::zeros({2, 2})).item<float>(), 1.0, 1e-6);
  EXPECT_NO_THROW(accel::compute_loss(accel::LossKind::BceWithLogits, logits, at::zeros({4, 3})));
}

}  // namespace

namespace {

TEST(Autocast, ScopeOutsideTheModelRunsBf16AndNests) {
  accel::AcceleratorOptions options;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  accel::Accelerator accelerator(options);
  at::Tensor a = at::randn({4, 4}), b = at::randn({4, 4});
  accelerator.autocast_begin();
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
  accelerator.autocast_begin(false);
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  accelerator.autocast_end();
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
  accelerator.autocast_end();
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  EXPECT_THROW(accelerator.autocast_end(), accel::Error);
}

// AutocastKwargs(enabled=False, cache_enabled=False) at creation: scopes
// opened without saying otherwise run float32; an explicit handler still
// turns autocast on; the cast cache is switched inside and restored after.
TEST(Autocast, KwargsAtCreationDecideTheDefaultScope) {
  accel::AcceleratorOptions options;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  options.autocast_enabled = false;
  options.autocast_cache_enabled = false;
  accel::Accelerator accelerator(options);
  at::Tensor a = at::randn({4, 4}), b = at::randn({4, 4});
  const bool cache_before = at::autocast::is_autocast_cache_enabled();
  accelerator.autocast_begin();
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kFloat);
  EXPECT_FALSE(at::autocast::is_autocast_cache_enabled());
  accelerator.autocast_begin(true);
  EXPECT_EQ(at::mm(a, b).scalar_type(), at::kBFloat16);
  accelerator.autocast_end();
  accelerator.autocast_end();
  EXPECT_EQ(at::autocast::is_autocast_cache_enabled(), cache_before);
}

}  // namespace
