// The JSON spec's "init": GPT-2's N(0, std) weights and zero biases, drawn
// from a seeded generator, on every kind of layer it covers.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "accel/error.hpp"
#include "accel/model.hpp"

namespace {

using ::testing::HasSubstr;

// A small GPT (graph form) with an "init" at the top; large enough matrices
// (width 64, vocab 512) that sample moments sit close to the true ones.
std::string gpt(const std::string& init) {
  return R"({"init": )" + init + R"(,
    "inputs": ["input_ids"],
    "nodes": [
      {"name": "wte", "type": "Embedding", "num_embeddings": 512, "embedding_dim": 64, "padding_idx": 0},
      {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 64, "embedding_dim": 64, "batch_first": true},
      {"name": "h", "type": "Sequential", "layers": [{"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 2,
        "dim_feedforward": 256, "dropout": 0.0, "batch_first": true, "norm_first": true, "causal": true}]},
      {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 64},
      {"name": "logits", "type": "Linear", "in_features": 64, "out_features": 512, "bias": true, "weight": "wte.weight"}],
    "outputs": ["logits"]})";
}

std::string init_error(const std::string& init) {
  try {
    accel::Model::from_json(gpt(init));
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "init " << init << " was accepted";
  return "no error";
}

TEST(SpecInit, WeightsAreNormalWithTheStdAndBiasesZero) {
  accel::Model model = accel::Model::from_json(gpt(R"({"std": 0.02, "seed": 7})"));
  int weights = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    SCOPED_TRACE(name);
    bool is_norm = name.rfind("ln_f.", 0) == 0 || name.find(".norm") != std::string::npos;
    if (is_norm) {
      // LayerNorm keeps weight 1, bias 0: GPT-2's values and PyTorch's defaults.
      EXPECT_TRUE(at::all(p == (name.find("weight") != std::string::npos ? 1.0 : 0.0)).item<bool>());
    } else if (name.find("bias") != std::string::npos) {
      EXPECT_TRUE(at::all(p == 0).item<bool>());
    } else {
      ++weights;
      at::Tensor values = name == "wte.weight" ? p.slice(0, 1) : p;  // row 0 is the padding row
      // PyTorch's defaults (kaiming uniform, N(0, 1) embeddings) miss these bounds by far.
      EXPECT_NEAR(values.mean().item<double>(), 0.0, 0.002);
      EXPECT_NEAR(values.std().item<double>(), 0.02, 0.001);
    }
  }
  // wte, wpe, in_proj, out_proj, linear1, linear2 (the tied lm_head is wte).
  EXPECT_EQ(weights, 6);
  at::Tensor wte = model.named_parameters()[0].second;
  EXPECT_TRUE(at::all(wte[0] == 0).item<bool>()) << "the padding_idx row is zero, as GPT-2's _init_weights leaves it";
}

TEST(SpecInit, TheSeedFixesTheWeightsAndTheStdScalesThem) {
  auto first_weight = [](const std::string& init) {
    return accel::Model::from_json(gpt(init)).named_parameters()[1].second.clone();
  };
  at::Tensor a = first_weight(R"({"std": 0.02, "seed": 3})");
  EXPECT_TRUE(at::equal(a, first_weight(R"({"std": 0.02, "seed": 3})")));
  EXPECT_FALSE(at::equal(a, first_weight(R"({"std": 0.02, "seed": 4})")));
  // The same draw scaled: std is a factor on one standard normal sequence.
  EXPECT_TRUE(at::allclose(a * 5, first_weight(R"({"std": 0.1, "seed": 3})"), 1e-5, 1e-7));
  // Defaults: std 0.02, seed 0.
  EXPECT_TRUE(at::equal(first_weight("{}"), first_weight(R"({"std": 0.02, "seed": 0})")));
}

TEST(SpecInit, TheChainObjectFormTakesInitToo) {
  accel::Model model = accel::Model::from_json(
      R"({"init": {"std": 0.5, "seed": 1}, "layers": [{"type": "Linear", "in_features": 200, "out_features": 300}]})");
  at::Tensor weight = model.named_parameters()[0].second;
  EXPECT_NEAR(weight.std().item<double>(), 0.5, 0.01);
  EXPECT_TRUE(at::all(model.named_parameters()[1].second == 0).item<bool>());
}

TEST(SpecInit, BadInitNamesTheKeyAndValue) {
  EXPECT_THAT(init_error(R"({"std": -1})"), HasSubstr("\"std\" must be a positive finite number, got -1"));
  EXPECT_THAT(init_error(R"({"std": "0.02"})"), HasSubstr("got \"0.02\""));
  EXPECT_THAT(init_error(R"({"seed": -3})"), HasSubstr("\"seed\" must be a non-negative integer, got -3"));
  EXPECT_THAT(init_error(R"({"seed": 1.5})"), HasSubstr("got 1.5"));
  EXPECT_THAT(init_error(R"({"mean": 0})"), HasSubstr("unknown key \"mean\""));
  EXPECT_THAT(init_error("0.02"), HasSubstr("\"init\" must be an object"));
}

}  // namespace
