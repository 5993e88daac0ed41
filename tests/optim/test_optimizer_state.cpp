// Optimizer state in PyTorch's state_dict structure: every kind resumes
// bitwise, the layout has PyTorch's keys, bad state is refused before anything
// changes, and the LibTorch archives of older checkpoints still load.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/serialize/archive.h>

#include <sstream>

#include "accel/error.hpp"
#include "accel/loss.hpp"
#include "accel/optimizer.hpp"
#include "optim/optimizer_state.hpp"

namespace {

struct OptimizerRun {
  torch::nn::Linear linear{3, 2};
  accel::Model model = accel::Model::from_module(linear);
  accel::Optimizer optimizer;
  at::Tensor x = at::randn({16, 3}), y = at::randn({16, 2});

  explicit OptimizerRun(const accel::OptimizerOptions& options) : optimizer(model, options) {}
  void steps(int n) {
    for (int i = 0; i < n; ++i) {
      optimizer.zero_grad();
      accel::compute_loss(accel::LossKind::Mse, model.forward(x), y).backward();
      optimizer.step();
    }
  }
  std::vector<at::Tensor> parameters() const {
    std::vector<at::Tensor> out;
    for (auto& p : model.parameters()) out.push_back(p.detach().clone());
    return out;
  }
  void set_parameters(const std::vector<at::Tensor>& values) {
    at::NoGradGuard no_grad;
    auto params = model.parameters();
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(values[i]);
  }
};

std::vector<accel::OptimizerOptions> every_kind() {
  std::vector<accel::OptimizerOptions> all;
  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.momentum = 0.9;
  all.push_back(sgd);
  auto adam = accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam);
  adam.amsgrad = true;
  all.push_back(adam);
  all.push_back(accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  auto rmsprop = accel::OptimizerOptions::defaults(accel::OptimizerKind::RmsProp);
  rmsprop.momentum = 0.5;
  rmsprop.centered = true;
  all.push_back(rmsprop);
  all.push_back(accel::OptimizerOptions::defaults(accel::OptimizerKind::Adagrad));
  return all;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const accel::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(OptimizerState, EveryKindResumesBitwise) {
  for (const auto& options : every_kind()) {
    at::manual_seed(7);
    OptimizerRun run(options);
    run.steps(3);
    const std::string saved = run.optimizer.state_bytes();
    const auto at_three = run.parameters();
    run.steps(2);
    const auto expected = run.parameters();

    at::manual_seed(8);
    OptimizerRun other(options);  // fresh state, other weights
    other.x = run.x;
    other.y = run.y;
    other.set_parameters(at_three);
    other.optimizer.load_state_bytes(saved);
    other.steps(2);
    auto got = other.parameters();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(at::equal(got[i], expected[i])) << "kind " << static_cast<int>(options.kind);
    }
  }
}

TEST(OptimizerState, HasPyTorchsStructureAndKeys) {
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 0.25;
  OptimizerRun run(options);
  run.steps(2);
  c10::IValue dict = accel::detail::unpickle_state_dict(run.optimizer.state_bytes(), "test");
  auto top = dict.toGenericDict();
  auto state = top.at("state").toGenericDict();
  ASSERT_EQ(state.size(), 2u);  // weight and bias, numbered 0 and 1
  auto first = state.at(int64_t{0}).toGenericDict();
  EXPECT_EQ(first.at("step").toTensor().item<double>(), 2.0);
  EXPECT_EQ(first.at("exp_avg").toTensor().sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(first.contains("exp_avg_sq"));
  auto group = top.at("param_groups").toListRef()[0].toGenericDict();
  EXPECT_EQ(group.at("lr").toDouble(), 0.25);
  EXPECT_EQ(group.at("params").toIntVector(), (std::vector<int64_t>{0, 1}));
  auto betas = group.at("betas").toTupleRef().elements();
  EXPECT_EQ(betas[0].toDouble(), 0.9);
  EXPECT_FALSE(group.at("amsgrad").toBool());
}

TEST(OptimizerState, BadStateIsRefusedAndNothingChanges) {
  OptimizerRun run(accel::OptimizerOptions::defaults(accel::OptimizerKind::Adam));
  run.steps(2);
  const std::string before = run.optimizer.state_bytes();
  auto edited = [&](const std::function<void(c10::impl::GenericDict&)>& edit) {
    c10::IValue dict = accel::detail::unpickle_state_dict(before, "test");
    auto top = dict.toGenericDict();
    edit(top);
    return accel::detail::pickle_state_dict(top);
  };
  struct Case {
    std::string bytes, expected;
  };
  std::vector<Case> cases{
      {"not a pickle", "Adam state: not a PyTorch pickle of plain data"},
      {edited([](auto& top) {
         top.at("state").toGenericDict().at(int64_t{1}).toGenericDict().insert_or_assign("exp_avg", at::zeros({5}));
       }),
       "state[1][\"exp_avg\"] has shape [5], its parameter has [2]"},
      {edited(
           [](auto& top) { (void)top.at("state").toGenericDict().at(int64_t{0}).toGenericDict().erase("exp_avg_sq"); }),
       "state[0] lacks \"exp_avg_sq\""},
      {edited([](auto& top) {
         top.at("state").toGenericDict().at(int64_t{0}).toGenericDict().insert_or_assign("step", at::scalar_tensor(-1));
       }),
       "state[0][\"step\"] is -1"},
      {edited([](auto& top) {
         top.at("param_groups").toListRef()[0].toGenericDict().insert_or_assign("lr", std::string("fast"));
       }),
       "param_groups[0][\"lr\"] is a String, not a number"},
      {edited([](auto& top) {
         top.at("state").toGenericDict().insert(int64_t{9}, top.at("state").toGenericDict().at(int64_t{0}));
       }),
       "state[9] is for a parameter index no group lists"},
  };
  run.steps(1);
  const std::string current = run.optimizer.state_bytes();
  for (const Case& c : cases) {
    std::string message = error_of([&] { run.optimizer.load_state_bytes(c.bytes); });
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(run.optimizer.state_bytes(), current);
  }
}

TEST(OptimizerState, OlderLibTorchArchivesStillLoad) {
  OptimizerRun run(accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  run.steps(3);
  torch::serialize::OutputArchive archive;  // what libaccel wrote before PyTorch's format
  run.optimizer.torch_optimizer().save(archive);
  std::ostringstream out;
  archive.save_to(out);
  const std::string legacy = out.str();
  ASSERT_TRUE(accel::detail::is_legacy_optimizer_archive(legacy));
  const std::string expected = run.optimizer.state_bytes();
  run.steps(2);
  run.optimizer.load_state_bytes(legacy);
  EXPECT_EQ(run.optimizer.state_bytes(), expected);
}
