// The graph form of the JSON model spec and its sequence layers: parameter
// names as PyTorch's, shapes, masks, weight tying, the causal LM loss, and the
// errors that name the node and the value.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <string>
#include <vector>

#include "accel/accelerator.hpp"
#include "accel/error.hpp"
#include "accel/model.hpp"
#include "model/sequential_spec.hpp"

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Named = accel::Model::NamedTensors;
using Shape = std::vector<int64_t>;

std::string error_of(const std::string& spec) {
  try {
    accel::Model::from_json(spec);
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "spec threw a non-accel exception: " << e.what();
    return "wrong exception";
  }
  ADD_FAILURE() << "spec " << spec << " was accepted";
  return "no error";
}

std::string forward_error(accel::Model& model, const Named& inputs) {
  try {
    model.forward(inputs);
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "forward threw a non-accel exception: " << e.what();
    return "wrong exception";
  }
  ADD_FAILURE() << "forward was accepted";
  return "no error";
}

std::vector<std::string> names_of(const accel::Model& model) {
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  return names;
}

at::Tensor output(const Named& outputs, const std::string& name) {
  for (const auto& [n, t] : outputs) {
    if (n == name) return t;
  }
  return at::Tensor();
}

// One layer as a one-node chain (the array form), so names are "0.<param>".
accel::Model layer(const std::string& json) { return accel::Model::from_json("[" + json + "]"); }

// A GPT: token and positional embeddings, causal pre-norm blocks, final norm,
// an lm head tied to the token embedding, and the shifted LM loss.
std::string gpt_spec(int blocks = 2, int width = 16, int vocab = 32, int positions = 12) {
  std::string block = R"({"type": "TransformerEncoderLayer", "d_model": W, "nhead": 2, "dim_feedforward": F,
      "dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true})";
  std::string w = std::to_string(width);
  block.replace(block.find('W'), 1, w);
  block.replace(block.find('F'), 1, std::to_string(4 * width));
  std::string layers;
  for (int i = 0; i < blocks; ++i) layers += (i ? ", " : "") + block;
  return R"({"inputs": ["input_ids", {"name": "attention_mask", "optional": true}, {"name": "labels", "optional": true}],
    "nodes": [
      {"name": "wte", "type": "Embedding", "num_embeddings": )" +
         std::to_string(vocab) + R"(, "embedding_dim": )" + w + R"(, "input": "input_ids"},
      {"name": "wpe", "type": "PositionalEmbedding", "num_positions": )" +
         std::to_string(positions) + R"(, "embedding_dim": )" + w + R"(, "batch_first": true},
      {"name": "h", "type": "Sequential", "layers": [)" +
         layers + R"(], "input": ["wpe", "attention_mask"]},
      {"name": "ln_f", "type": "LayerNorm", "normalized_shape": )" +
         w + R"(},
      {"name": "logits", "type": "Linear", "in_features": )" +
         w + R"(, "out_features": )" + std::to_string(vocab) + R"(, "bias": false, "weight": "wte.weight"},
      {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}],
    "outputs": ["logits", "loss"]})";
}

TEST(SpecSequenceLayers, PositionalEmbeddingAddsItsRowsAndRefusesLongerSequences) {
  accel::Model model =
      layer(R"({"type": "PositionalEmbedding", "num_positions": 6, "embedding_dim": 4, "batch_first": true})");
  ASSERT_THAT(names_of(model), ElementsAre("0.weight"));
  at::Tensor weight = model.named_parameters()[0].second;
  at::Tensor x = at::randn({2, 5, 4});
  EXPECT_TRUE(at::allclose(model.forward(x), x + weight.slice(0, 0, 5).unsqueeze(0)));
  // Sequence-first, PyTorch's default layout: positions run along dim 0.
  accel::Model seq_first = layer(R"({"type": "PositionalEmbedding", "num_positions": 6, "embedding_dim": 4})");
  at::Tensor w2 = seq_first.named_parameters()[0].second;
  EXPECT_TRUE(at::allclose(seq_first.forward(x), x + w2.slice(0, 0, 2).unsqueeze(1)));
  EXPECT_THAT(
      forward_error(model, {{"x", at::randn({1, 7, 4})}}),
      AllOf(HasSubstr("layer 0 (PositionalEmbedding)"), HasSubstr("sequence length 7"), HasSubstr("num_positions 6")));
}

TEST(SpecSequenceLayers, MultiheadAttentionHasPyTorchNamesAndShapes) {
  accel::Model model = layer(R"({"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2, "batch_first": true})");
  EXPECT_THAT(names_of(model),
              ElementsAre("0.in_proj_weight", "0.in_proj_bias", "0.out_proj.weight", "0.out_proj.bias"));
  EXPECT_EQ(model.named_parameters()[0].second.sizes(), (Shape{24, 8}));
  EXPECT_EQ(model.forward(at::randn({3, 5, 8})).sizes(), (Shape{3, 5, 8}));
  EXPECT_EQ(model.forward(at::randn({5, 8})).sizes(), (Shape{5, 8}));  // unbatched
  EXPECT_THAT(
      error_of(R"([{"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 3}])"),
      AllOf(HasSubstr("layer 0 (MultiheadAttention)"), HasSubstr("\"num_heads\" must divide embed_dim (8), got 3")));
  EXPECT_THAT(error_of(R"([{"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2, "add_bias_kv": true}])"),
              HasSubstr("\"add_bias_kv\" is not supported"));
  EXPECT_THAT(error_of(R"([{"type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2, "kdim": 4}])"),
              HasSubstr("\"kdim\" must be null or embed_dim (8)"));
  EXPECT_THAT(forward_error(model, {{"x", at::randn({2, 5, 6})}}),
              AllOf(HasSubstr("model width 8"), HasSubstr("[2, 5, 6]")));
}

TEST(SpecSequenceLayers, CausalAttentionIgnoresLaterTokensAndPaddingIgnoresMaskedKeys) {
  accel::Model model = accel::Model::from_json(R"({"inputs": ["x", "attention_mask"], "nodes": [
      {"name": "attn", "type": "MultiheadAttention", "embed_dim": 8, "num_heads": 2, "batch_first": true,
       "causal": true, "input": ["x", "attention_mask"]}], "outputs": ["attn"]})");
  at::Tensor x = at::randn({1, 5, 8});
  at::Tensor changed = x.clone();
  changed.select(1, 4).fill_(3.0);  // the last token
  at::Tensor all = at::ones({1, 5}, at::kLong);
  at::Tensor a = output(model.forward(Named{{"x", x}, {"attention_mask", all}}), "attn");
  at::Tensor b = output(model.forward(Named{{"x", changed}, {"attention_mask", all}}), "attn");
  EXPECT_TRUE(at::allclose(a.slice(1, 0, 4), b.slice(1, 0, 4)));
  EXPECT_FALSE(at::allclose(a.select(1, 4), b.select(1, 4)));
  // A padded key: changing it changes no output once the mask hides it.
  at::Tensor mask = at::ones({1, 5}, at::kLong);
  mask.index_put_({0, 2}, 0);
  at::Tensor moved = x.clone();
  moved.select(1, 2).fill_(-2.0);
  at::Tensor c = output(model.forward(Named{{"x", x}, {"attention_mask", mask}}), "attn");
  at::Tensor d = output(model.forward(Named{{"x", moved}, {"attention_mask", mask}}), "attn");
  EXPECT_TRUE(at::allclose(c.select(1, 4), d.select(1, 4)));
  // Left padding under a causal mask leaves position 0 no visible key: as in
  // transformers, it averages instead of turning NaN (PyTorch's -inf would).
  at::Tensor left = at::ones({1, 5}, at::kLong);
  left.index_put_({0, 0}, 0);
  at::Tensor e = output(model.forward(Named{{"x", x}, {"attention_mask", left}}), "attn");
  EXPECT_TRUE(at::isfinite(e).all().item<bool>());
  EXPECT_THAT(forward_error(model, {{"x", x}, {"attention_mask", at::ones({1, 4})}}),
              AllOf(HasSubstr("node \"attn\" (MultiheadAttention)"), HasSubstr("attention_mask must have shape [1, 5]"),
                    HasSubstr("got [1, 4]")));
}

TEST(SpecSequenceLayers, TransformerLayersHavePyTorchNamesInPyTorchOrder) {
  accel::Model encoder =
      layer(R"({"type": "TransformerEncoderLayer", "d_model": 8, "nhead": 2, "dim_feedforward": 16})");
  EXPECT_THAT(names_of(encoder),
              ElementsAre("0.self_attn.in_proj_weight", "0.self_attn.in_proj_bias", "0.self_attn.out_proj.weight",
                          "0.self_attn.out_proj.bias", "0.linear1.weight", "0.linear1.bias", "0.linear2.weight",
                          "0.linear2.bias", "0.norm1.weight", "0.norm1.bias", "0.norm2.weight", "0.norm2.bias"));
  encoder.train(false);
  EXPECT_EQ(encoder.forward(at::randn({5, 3, 8})).sizes(), (Shape{5, 3, 8}));  // [L, N, E]: batch_first false
  accel::Model decoder = accel::Model::from_json(R"({"inputs": ["tgt", "memory"], "nodes": [
      {"name": "dec", "type": "TransformerDecoderLayer", "d_model": 8, "nhead": 2, "dim_feedforward": 16,
       "batch_first": true, "norm_first": true, "input": ["tgt", "memory"]}], "outputs": ["dec"]})");
  std::vector<std::string> names = names_of(decoder);
  EXPECT_EQ(names.size(), 18u);
  EXPECT_EQ(names[4], "dec.multihead_attn.in_proj_weight");
  EXPECT_EQ(names.back(), "dec.norm3.bias");
  at::Tensor out =
      output(decoder.forward(Named{{"tgt", at::randn({2, 4, 8})}, {"memory", at::randn({2, 7, 8})}}), "dec");
  EXPECT_EQ(out.sizes(), (Shape{2, 4, 8}));
  accel::Model lone = layer(R"({"type": "TransformerDecoderLayer", "d_model": 8, "nhead": 2})");
  EXPECT_THAT(forward_error(lone, {{"x", at::randn({2, 4, 8})}}), HasSubstr("needs the encoder's memory"));
  EXPECT_THAT(error_of(R"([{"type": "TransformerEncoderLayer", "d_model": 8, "nhead": 2, "activation": "swish"}])"),
              AllOf(HasSubstr("layer 0 (TransformerEncoderLayer)"), HasSubstr("\"activation\""), HasSubstr("swish")));
}

TEST(SpecSequenceLayers, Conv1dLstmAndGruKeepPyTorchNamesAndReturnTheOutputSequence) {
  accel::Model conv = layer(R"({"type": "Conv1d", "in_channels": 3, "out_channels": 5, "kernel_size": 3})");
  EXPECT_THAT(names_of(conv), ElementsAre("0.weight", "0.bias"));
  EXPECT_EQ(conv.forward(at::randn({2, 3, 10})).sizes(), (Shape{2, 5, 8}));
  accel::Model same =
      layer(R"({"type": "Conv1d", "in_channels": 3, "out_channels": 5, "kernel_size": 3, "padding": "same"})");
  EXPECT_EQ(same.forward(at::randn({2, 3, 10})).sizes(), (Shape{2, 5, 10}));
  accel::Model lstm = layer(R"({"type": "LSTM", "input_size": 4, "hidden_size": 6, "batch_first": true})");
  EXPECT_THAT(names_of(lstm), ElementsAre("0.weight_ih_l0", "0.weight_hh_l0", "0.bias_ih_l0", "0.bias_hh_l0"));
  EXPECT_EQ(lstm.forward(at::randn({2, 7, 4})).sizes(), (Shape{2, 7, 6}));
  accel::Model gru =
      layer(R"({"type": "GRU", "input_size": 4, "hidden_size": 6, "num_layers": 2, "bidirectional": true})");
  EXPECT_EQ(gru.forward(at::randn({7, 2, 4})).sizes(), (Shape{7, 2, 12}));
  EXPECT_THAT(error_of(R"([{"type": "LSTM", "input_size": 4, "hidden_size": 6, "proj_size": 6}])"),
              HasSubstr("\"proj_size\" must be smaller than hidden_size (6), got 6"));
  EXPECT_THAT(
      error_of(
          R"([{"type": "Conv1d", "in_channels": 3, "out_channels": 5, "kernel_size": 3, "stride": 2, "padding": "same"}])"),
      HasSubstr("\"same\" needs stride 1"));
}

TEST(SpecGraph, GptHasTransformersStyleNamesTiesItsHeadAndReturnsLossOnlyWithLabels) {
  accel::Model model = accel::Model::from_json(gpt_spec());
  std::vector<std::string> names = names_of(model);
  EXPECT_EQ(names.front(), "wte.weight");
  EXPECT_EQ(names[1], "wpe.weight");
  EXPECT_EQ(names[2], "h.0.self_attn.in_proj_weight");
  EXPECT_EQ(names.back(), "ln_f.bias");
  // Tied: the head's weight is wte.weight, listed once, as PyTorch's named_parameters() does.
  for (const auto& name : names) EXPECT_EQ(name.rfind("logits", 0), std::string::npos) << name;
  at::Tensor ids = at::randint(0, 32, {2, 10}, at::kLong);
  Named out = model.forward(Named{{"input_ids", ids}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "logits");
  EXPECT_EQ(out[0].second.sizes(), (Shape{2, 10, 32}));
  EXPECT_EQ(model.forward(ids).sizes(), (Shape{2, 10, 32}));  // one required input: the one-tensor forward works

  at::Tensor labels = ids.clone();
  labels.index_put_({0, at::indexing::Slice(6, at::indexing::None)}, -100);
  Named with_loss = model.forward(Named{{"input_ids", ids}, {"labels", labels}});
  ASSERT_EQ(with_loss.size(), 2u);
  at::Tensor logits = output(with_loss, "logits");
  // transformers' GPT2LMHeadModel: shift by one, ignore -100, mean over the rest.
  at::Tensor expected =
      at::cross_entropy_loss(logits.slice(1, 0, 9).reshape({-1, 32}), labels.slice(1, 1).reshape({-1}));
  EXPECT_TRUE(at::allclose(output(with_loss, "loss"), expected));
  output(with_loss, "loss").backward();
  at::Tensor wte_grad = model.named_parameters()[0].second.grad();
  ASSERT_TRUE(wte_grad.defined());
  // A token absent from the input gets gradient only through the tied head.
  at::Tensor present = at::zeros({32}, at::kBool).index_fill_(0, ids.reshape({-1}), true);
  ASSERT_FALSE(present.all().item<bool>());
  EXPECT_GT(wte_grad.index({present.logical_not()}).abs().sum().item<double>(), 0.0);
}

TEST(SpecGraph, ResidualAddConcatAndNamedSubmodules) {
  accel::Model model = accel::Model::from_json(R"({"inputs": ["x"], "nodes": [
      {"name": "block", "type": "Residual", "layers": [
         {"name": "fc", "type": "Linear", "in_features": 4, "out_features": 4}, {"type": "Tanh"}]},
      {"name": "other", "type": "Linear", "in_features": 4, "out_features": 4, "input": "x"},
      {"name": "sum", "type": "Add", "input": ["block", "other"]},
      {"name": "cat", "type": "Concat", "input": ["sum", "x"], "dim": -1}], "outputs": ["cat", "sum"]})");
  EXPECT_THAT(names_of(model), ElementsAre("block.fc.weight", "block.fc.bias", "other.weight", "other.bias"));
  at::Tensor x = at::randn({3, 4});
  auto params = model.named_parameters();
  at::Tensor block = x + at::tanh(at::linear(x, params[0].second, params[1].second));
  at::Tensor sum = block + at::linear(x, params[2].second, params[3].second);
  Named out = model.forward(Named{{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, "cat");
  EXPECT_TRUE(at::allclose(out[0].second, at::cat({sum, x}, -1)));
  EXPECT_TRUE(at::allclose(out[1].second, sum));
}

TEST(SpecGraph, ForwardNamesUnknownMissingAndBadInputs) {
  accel::Model model = accel::Model::from_json(gpt_spec());
  at::Tensor ids = at::randint(0, 32, {2, 10}, at::kLong);
  EXPECT_THAT(forward_error(model, {{"input_idz", ids}}),
              AllOf(HasSubstr("unknown input \"input_idz\""), HasSubstr("input_ids, attention_mask (optional)")));
  EXPECT_THAT(forward_error(model, {{"labels", ids}}), HasSubstr("missing input \"input_ids\""));
  EXPECT_THAT(
      forward_error(model, {{"input_ids", ids.to(at::kFloat)}}),
      AllOf(HasSubstr("node \"wte\" (Embedding)"), HasSubstr("\"input_ids\" must hold integer ids, got Float")));
  EXPECT_THAT(forward_error(model, {{"input_ids", ids + 40}}), AllOf(HasSubstr("ids in [0, 32)"), HasSubstr("got ")));
  EXPECT_THAT(forward_error(model, {{"input_ids", at::zeros({1, 13}, at::kLong)}}),
              AllOf(HasSubstr("node \"wpe\" (PositionalEmbedding)"), HasSubstr("sequence length 13"),
                    HasSubstr("num_positions 12")));
  EXPECT_THAT(forward_error(model, {{"input_ids", ids}, {"labels", ids.to(at::kFloat)}}),
              AllOf(HasSubstr("node \"loss\" (CausalLMLoss)"), HasSubstr("integer token ids, got Float")));
  EXPECT_THAT(forward_error(model, {{"input_ids", ids}, {"labels", ids.slice(1, 0, 4)}}),
              AllOf(HasSubstr("labels must have shape [2, 10]"), HasSubstr("got [2, 4]")));
}

TEST(SpecGraph, BadGraphsNameTheNodeAndTheValue) {
  const std::string lin = R"("type": "Linear", "in_features": 4, "out_features": 4)";
  EXPECT_THAT(
      error_of(R"({"inputs": ["x"], "nodes": [{"name": "a", )" + lin + R"(, "input": "y"}], "outputs": ["a"]})"),
      AllOf(HasSubstr("node \"a\" (Linear)"), HasSubstr("input \"y\" names no graph input and no node")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "a", )" + lin + R"(, "input": "b"},
                 {"name": "b", )" +
                       lin + R"(, "input": "a"}], "outputs": ["b"]})"),
              AllOf(HasSubstr("cycle"), HasSubstr("\"a\" -> \"b\" -> \"a\"")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "a", )" + lin + R"(}], "outputs": ["logits"]})"),
              HasSubstr("output \"logits\" names no node"));
  EXPECT_THAT(
      error_of(
          R"({"inputs": ["x"], "nodes": [{"name": "e", "type": "Embedding", "num_embeddings": 10, "embedding_dim": 4},
                 {"name": "head", "type": "Linear", "in_features": 4, "out_features": 12, "weight": "e.weight"}], "outputs": ["head"]})"),
      AllOf(HasSubstr("node \"head\" (Linear)"), HasSubstr("\"e.weight\" of shape [10, 4]"), HasSubstr("[12, 4]")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "head", )" + lin +
                       R"(, "weight": "nope.weight"}], "outputs": ["head"]})"),
              AllOf(HasSubstr("node \"head\" (Linear)"), HasSubstr("\"nope.weight\", which names no parameter")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "a", )" + lin +
                       R"(}, {"name": "a", "type": "ReLU"}], "outputs": ["a"]})"),
              AllOf(HasSubstr("node \"a\""), HasSubstr("used twice")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "a.b", )" + lin + R"(}], "outputs": ["a.b"]})"),
              HasSubstr("no \".\", got \"a.b\""));
  EXPECT_THAT(error_of(R"({"inputs": ["x", "y"], "nodes": [{"name": "a", )" + lin +
                       R"(, "input": ["x", "y"]}], "outputs": ["a"]})"),
              AllOf(HasSubstr("node \"a\" (Linear)"), HasSubstr("takes at most 1 input(s), got 2")));
  EXPECT_THAT(
      error_of(
          R"({"inputs": ["x"], "nodes": [{"name": "h", "type": "Sequential", "layers": [{"type": "Linear", "in_features": 0, "out_features": 4}]}], "outputs": ["h"]})"),
      AllOf(HasSubstr("node \"h\" layer 0 (Linear)"), HasSubstr("\"in_features\"")));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "l", "type": "CausalLMLoss"}], "outputs": ["l"]})"),
              HasSubstr("must name the logits and the labels"));
  EXPECT_THAT(error_of(R"({"inputs": ["x"], "nodes": [{"name": "a", )" + lin + R"(}], "outputs": ["a"], "extra": 1})"),
              HasSubstr("unknown key \"extra\""));
  // The old forms still parse as chains.
  EXPECT_NO_THROW(accel::Model::from_json(R"({"layers": [{)" + lin + R"(}]})"));
}

TEST(SpecGraph, PreparedGptRunsMaskedAttentionUnderBf16Autocast) {
  accel::AcceleratorOptions options;
  options.mixed_precision = accel::MixedPrecision::Bf16;
  accel::Accelerator accelerator(options);
  accel::Model model = accel::Model::from_json(gpt_spec());
  accelerator.prepare(model);
  at::Tensor ids = at::randint(0, 32, {2, 10}, at::kLong);
  at::Tensor mask = at::ones({2, 10}, at::kLong);
  mask.index_put_({1, at::indexing::Slice(0, 3)}, 0);  // left padding: masked bf16 scores
  Named out = model.forward(Named{{"input_ids", ids}, {"attention_mask", mask}, {"labels", ids}});
  EXPECT_EQ(output(out, "logits").scalar_type(), at::kFloat);
  EXPECT_TRUE(at::isfinite(output(out, "logits")).all().item<bool>());
  EXPECT_TRUE(std::isfinite(output(out, "loss").item<double>()));
}

TEST(SpecGraph, JsonGptLearnsAShortByteSequence) {
  at::manual_seed(0);
  accel::Model model = accel::Model::from_json(gpt_spec(2, 32, 256, 32));
  const std::string text = "the quick brown fox jumps over the lazy dog";
  at::Tensor ids = at::empty({1, 24}, at::kLong);
  for (int64_t i = 0; i < 24; ++i) ids.index_put_({0, i}, static_cast<int64_t>(static_cast<unsigned char>(text[i])));
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    optimizer.zero_grad();
    at::Tensor loss = output(model.forward(Named{{"input_ids", ids}, {"labels", ids}}), "loss");
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.5) << "first " << first << ", last " << last;
}

}  // namespace
