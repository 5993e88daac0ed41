// The TorchScript named forward (inputs bound to the forward's schema, outputs
// named by dict keys, NamedTuple fields or load-time names) and tied
// parameters, over the fixtures of make_torchscript_fixture.py.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "core/remove_tree.hpp"

namespace {

using Named = accel::Model::NamedTensors;

std::string fixture(const std::string& name) { return std::string(ACCEL_TEST_FILES) + "/model/files/" + name; }

std::vector<std::string> names_of(const Named& named) {
  std::vector<std::string> out;
  for (const auto& entry : named) out.push_back(entry.first);
  return out;
}

// The InvalidArgument message of body, or "" when it did not throw one.
template <class Body>
std::string invalid_argument(Body&& body) {
  try {
    body();
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

TEST(ScriptNamedForward, BindsInputsByNameAndNamesDictOutputsByKey) {
  accel::Model model = accel::Model::from_torchscript(fixture("named_dict.pt"));
  at::Tensor x = at::ones({3, 4}), mask = at::ones({3, 2});
  // Given in another order than the schema's (x, mask, bias, scale); bias and scale default.
  Named out = model.forward(Named{{"mask", mask}, {"x", x}});
  ASSERT_EQ(names_of(out), (std::vector<std::string>{"logits", "loss"}));
  EXPECT_TRUE(at::allclose(out[1].second, out[0].second.sum() * 2.0));
  Named with_bias = model.forward(Named{{"x", x}, {"mask", mask}, {"bias", at::ones({2})}});
  EXPECT_TRUE(at::allclose(with_bias[0].second, out[0].second + 1));
  with_bias[1].second.backward();
  for (auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
}

TEST(ScriptNamedForward, RefusesMissingUnknownAndMistypedInputsNamingThem) {
  accel::Model model = accel::Model::from_torchscript(fixture("named_dict.pt"));
  at::Tensor x = at::ones({3, 4}), mask = at::ones({3, 2});
  std::string missing = invalid_argument([&] { model.forward(Named{{"x", x}}); });
  EXPECT_NE(missing.find("missing input \"mask\""), std::string::npos) << missing;
  EXPECT_NE(missing.find("(x, mask, bias, scale)"), std::string::npos) << missing;
  EXPECT_NE(missing.find("given (x)"), std::string::npos) << missing;
  std::string unknown = invalid_argument([&] { model.forward(Named{{"x", x}, {"mask", mask}, {"labels", x}}); });
  EXPECT_NE(unknown.find("unknown input \"labels\""), std::string::npos) << unknown;
  std::string mistyped = invalid_argument([&] { model.forward(Named{{"x", x}, {"mask", mask}, {"scale", x}}); });
  EXPECT_NE(mistyped.find("input \"scale\" is a tensor but the model's forward declares it float"), std::string::npos)
      << mistyped;
  // Float ids into an embedding: the failure names the input and its dtype.
  accel::Model lm = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  std::string float_ids = invalid_argument([&] {
    lm.forward(Named{{"input_ids", at::ones({2, 3})}, {"labels", at::zeros({2, 3}, at::kLong)}});
  });
  EXPECT_NE(float_ids.find("input_ids [2, 3] Float"), std::string::npos) << float_ids;
  // The interpreter's cause, not its "The following operation failed" header.
  EXPECT_NE(float_ids.find("indices"), std::string::npos) << float_ids;
}

TEST(ScriptNamedForward, NamesNamedTupleFieldsAndPlainTuplesByPositionOrLoadTimeNames) {
  Named in{{"x", at::ones({2, 4})}, {"mask", at::ones({2, 2})}};
  Named fields = accel::Model::from_torchscript(fixture("named_tuple.pt")).forward(in);
  EXPECT_EQ(names_of(fields), (std::vector<std::string>{"loss", "logits"}));
  Named positional = accel::Model::from_torchscript(fixture("plain_tuple.pt")).forward(in);
  EXPECT_EQ(names_of(positional), (std::vector<std::string>{"0", "1"}));
  Named named = accel::Model::from_torchscript(fixture("plain_tuple.pt"), {"loss", "logits"}).forward(in);
  EXPECT_EQ(names_of(named), (std::vector<std::string>{"loss", "logits"}));
  EXPECT_TRUE(at::equal(named[1].second, positional[1].second));
  std::string count =
      invalid_argument([&] { accel::Model::from_torchscript(fixture("plain_tuple.pt"), {"loss"}).forward(in); });
  EXPECT_NE(count.find("returned 2 outputs but 1 output names were given (loss)"), std::string::npos) << count;
  std::string differ = invalid_argument([&] {
    accel::Model::from_torchscript(fixture("named_tuple.pt"), {"a", "b"}).forward(in);
  });
  EXPECT_NE(differ.find("named (loss, logits)"), std::string::npos) << differ;
  EXPECT_NE(invalid_argument([&] {
              accel::Model::from_torchscript(fixture("plain_tuple.pt"), {"a", "a"});
            }).find("\"a\" is given twice"),
            std::string::npos);
}

TEST(ScriptNamedForward, ATiedParameterIsListedAndSteppedOnce) {
  accel::Model model = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  auto params = model.named_parameters();
  ASSERT_EQ(names_of(params), (std::vector<std::string>{"wte.weight"}));  // head.weight is the same tensor
  EXPECT_EQ(model.num_parameters(), 10 * 4);
  at::Tensor before = params[0].second.detach().clone();
  accel::OptimizerOptions options;
  options.kind = accel::OptimizerKind::Sgd;
  options.lr = 0.5;
  accel::Optimizer optimizer(model, options);
  Named out = model.forward(Named{{"input_ids", at::tensor({1, 2, 3}, at::kLong).view({1, 3})},
                                  {"labels", at::tensor({2, 3, 4}, at::kLong).view({1, 3})}});
  out[0].second.backward();
  at::Tensor grad = params[0].second.grad().clone();
  optimizer.step();
  // SGD applied the gradient once: a second copy of the tied tensor in the
  // optimizer's groups would have moved it by 2 * lr * grad.
  EXPECT_TRUE(at::allclose(params[0].second.detach(), before - 0.5 * grad));
}

TEST(ScriptNamedForward, StateDictKeepsTiedTensorsOnceAndOnlyTheExportedNames) {
  accel::Model model = accel::Model::from_torchscript(fixture("tied_lm.pt"));
  auto buffers = model.named_buffers();
  EXPECT_EQ(names_of(buffers), (std::vector<std::string>{"mask", "steps"}));
  accel::Accelerator accelerator;
  // The sidecar lists wte.weight, head.weight and steps (not the non-persistent mask);
  // head.weight is wte.weight, so it is written once, under the first name.
  EXPECT_EQ(names_of(accelerator.get_state_dict(model)), (std::vector<std::string>{"steps", "wte.weight"}));
  std::string dir = testing::TempDir() + "/tied_lm_saved";
  accelerator.save_model(model, dir);
  accel::LoadReport report = accelerator.load_checkpoint_in_model(model, dir + "/model.safetensors");
  // mask is not saved (as transformers does) and so not expected back either.
  EXPECT_TRUE(report.unexpected_keys.empty());
  EXPECT_TRUE(report.missing_keys.empty());
  accel::detail::remove_tree(dir);  // not std::filesystem::remove_all (docs/gpu.md)
}

}  // namespace
