// Tensor parallelism without processes: plans parse and match as transformers'
// do, parameters cut into shards and back, bad plans refused before anything
// changes (a group of one stands in for the real one; no collective runs).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "accel/error.hpp"
#include "accel/model.hpp"
#include "model/model_impl.hpp"
#include "model/nn_module_of.hpp"
#include "model/tensor_parallel_split.hpp"
#include "parallel/tensor_parallel.hpp"
#include "parallel/tp_plan.hpp"

namespace {

using accel::detail::TensorSplit;
using accel::detail::TpStyle;

std::string error_of_plan(const std::string& text) {
  try {
    accel::detail::parse_tp_plan(nlohmann::json::parse(text));
  } catch (const accel::Error& e) {
    return e.what();
  }
  return "";
}

TEST(TpPlan, ParsesTransformersVocabularyAndMatchesOneComponentPerStar) {
  auto plan = accel::detail::parse_tp_plan(
      nlohmann::json::parse(R"({"h.*.self_attn": "colwise", "h.*.linear2": "rowwise", "lm_head": "colwise_rep"})"));
  ASSERT_EQ(plan.size(), 3u);  // in the JSON object's (sorted) order
  EXPECT_EQ(plan[0].pattern, "h.*.linear2");
  EXPECT_EQ(plan[0].style, TpStyle::Rowwise);
  EXPECT_EQ(plan[1].style, TpStyle::Colwise);
  EXPECT_EQ(plan[2].style, TpStyle::ColwiseRep);
  EXPECT_TRUE(accel::detail::tp_pattern_matches("h.*.linear1", "h.0.linear1"));
  EXPECT_FALSE(accel::detail::tp_pattern_matches("h.*.linear1", "h.0.x.linear1"));
  EXPECT_FALSE(accel::detail::tp_pattern_matches("h.*.linear1", "h.0.linear2"));
  EXPECT_NE(error_of_plan(R"({"h.0.linear1": "columnwise"})").find("unknown style \"columnwise\" (known: colwise"),
            std::string::npos);
  EXPECT_NE(error_of_plan(R"({"h..linear1": "colwise"})").find("an empty name component"), std::string::npos);
  EXPECT_NE(error_of_plan(R"({"h.0.linear1": 1})").find("the style must be a string"), std::string::npos);
  EXPECT_NE(error_of_plan(R"(["colwise"])").find("tp_plan must be an object"), std::string::npos);
}

TEST(TensorSplit, ShardsPutBackTogetherAndPackedBlocksKeepTheirHeads) {
  at::Tensor full = at::arange(24, at::kFloat).reshape({6, 4});
  const TensorSplit packed{0, 3};  // q, k, v rows of two each
  at::Tensor first = accel::detail::shard_of(full, packed, 2, 0);
  EXPECT_TRUE(at::equal(first, at::cat({full.narrow(0, 0, 1), full.narrow(0, 2, 1), full.narrow(0, 4, 1)})));
  std::vector<at::Tensor> shards{first, accel::detail::shard_of(full, packed, 2, 1)};
  EXPECT_TRUE(at::equal(accel::detail::unshard(shards, packed), full));
  const TensorSplit columns{1, 1};
  std::vector<at::Tensor> quarters;
  for (int64_t r = 0; r < 4; ++r) quarters.push_back(accel::detail::shard_of(full, columns, 4, r));
  EXPECT_TRUE(at::equal(accel::detail::unshard(quarters, columns), full));
  EXPECT_FALSE(accel::detail::can_split(full, packed, 4));
  EXPECT_TRUE(accel::detail::can_split(full, columns, 4));
}

// whole_runs: every run of a shard's rows is the same rows of the whole
// tensor (checked against shard_of), whatever the block boundaries it crosses.
TEST(TensorSplit, RunsOfAShardLieWhereShardOfTookThem) {
  const at::Tensor full = at::arange(12 * 2, at::kFloat).reshape({12, 2});
  for (const TensorSplit split : {TensorSplit{0, 1}, TensorSplit{0, 3}}) {
    for (int64_t rank = 0; rank < 2; ++rank) {
      const at::Tensor shard = accel::detail::shard_of(full, split, 2, rank);
      for (int64_t begin = 0; begin < 6; ++begin) {
        for (int64_t length = 1; begin + length <= 6; ++length) {
          int64_t covered = begin;
          for (const auto& run : accel::detail::whole_runs(begin, length, 6, split, 2, rank)) {
            EXPECT_EQ(run.shard_begin, covered);
            EXPECT_TRUE(
                at::equal(shard.narrow(0, run.shard_begin, run.length), full.narrow(0, run.whole_begin, run.length)))
                << "blocks " << split.blocks << " rank " << rank << " rows " << begin << "+" << length;
            covered += run.length;
          }
          EXPECT_EQ(covered, begin + length);
        }
      }
    }
  }
  // Packed q, k, v (3 blocks of 4 rows, 2 per rank): rows 1..2 of rank 1's
  // shard are row 3 (the end of q's block) and row 6 (the start of k's).
  const auto runs = accel::detail::whole_runs(1, 2, 6, TensorSplit{0, 3}, 2, 1);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].whole_begin, 3);
  EXPECT_EQ(runs[1].whole_begin, 6);
}

constexpr const char* kBlock = R"({"type": "TransformerEncoderLayer", "d_model": 8, "nhead": 2,
  "dim_feedforward": 16, "dropout": 0.0, "batch_first": true})";

// Splits with the built-in plan, or plan; returns the error ("" when none)
// and checks that a refused split changed nothing. No collective runs while
// splitting, so a slot without a group is enough to cut.
std::string split(accel::Model& model, int64_t size, const std::optional<std::string>& plan = std::nullopt,
                  accel::ErrorCode* code = nullptr) {
  auto before = model.named_parameters();
  std::string message;
  try {
    std::optional<accel::detail::TpPlan> parsed;
    if (plan) parsed = accel::detail::parse_tp_plan(nlohmann::json::parse(*plan));
    accel::detail::split_for_tensor_parallel(*accel::detail::nn_module_of(model.impl()), parsed,
                                             accel::detail::TensorParallelSlot{nullptr, size, 1});
  } catch (const accel::Error& e) {
    message = e.what();
    if (code) *code = e.code();
    auto after = model.named_parameters();
    for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].second.sizes(), after[i].second.sizes());
  }
  return message;
}

TEST(TensorParallelSplit, TheBuiltInPlanSplitsAttentionByHeadsAndTheFeedForwardBlock) {
  accel::Model model = accel::Model::from_json(std::string("[") + kBlock + "]");
  at::Tensor in_proj = model.named_parameters().at(0).second.detach().clone();
  ASSERT_EQ(split(model, 2), "");
  std::map<std::string, at::Tensor> params;
  for (auto& [name, p] : model.named_parameters()) params[name] = p;
  EXPECT_EQ(params["0.self_attn.in_proj_weight"].sizes(), (std::vector<int64_t>{12, 8}));
  EXPECT_EQ(params["0.self_attn.out_proj.weight"].sizes(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(params["0.self_attn.out_proj.bias"].sizes(), (std::vector<int64_t>{8}));  // added once, whole
  EXPECT_EQ(params["0.linear1.weight"].sizes(), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(params["0.linear1.bias"].sizes(), (std::vector<int64_t>{8}));
  EXPECT_EQ(params["0.linear2.weight"].sizes(), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(params["0.norm1.weight"].sizes(), (std::vector<int64_t>{8}));
  // Rank 1 of 2 keeps the second head of each of q, k and v.
  EXPECT_TRUE(at::equal(params["0.self_attn.in_proj_weight"], accel::detail::shard_of(in_proj, {0, 3}, 2, 1)));
}

TEST(TensorParallelSplit, BadPlansAreRefusedBeforeAnythingChanges) {
  accel::ErrorCode code{};
  accel::Model model = accel::Model::from_json(std::string("[") + kBlock + ", " + kBlock + "]");
  EXPECT_NE(split(model, 4, std::nullopt, &code).find("tp_size 4 does not divide its num_heads 2"), std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  EXPECT_NE(split(model, 2, R"({"*.self_attn": "colwise"})").find("needs \"0.self_attn.out_proj\" to be rowwise"),
            std::string::npos);
  EXPECT_NE(split(model, 2, R"({"*.linear2": "rowwise", "*.linear1": "rowwise"})")
                .find("a transformer layer's linear1 is \"colwise\""),
            std::string::npos);
  EXPECT_NE(split(model, 2, R"({"2.linear1": "colwise"})")
                .find("matches no module of the model (modules it can split: "
                      "0.linear1, 0.linear2, 0.self_attn"),
            std::string::npos);
  EXPECT_NE(split(model, 2, R"({"0.linear1": "colwise", "*.linear1": "rowwise"})").find("is matched by"),
            std::string::npos);
  EXPECT_NE(split(model, 2, R"({"0.norm1": "colwise"})", &code).find("is a LayerNorm"), std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::Unsupported);
  EXPECT_NE(split(model, 2, R"({"0.linear1": "sequence_parallel"})", &code)
                .find("is a Linear; sequence_parallel applies to LayerNorm modules"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  accel::Model mlp = accel::Model::from_json(R"([{"type": "Linear", "in_features": 4, "out_features": 4}])");
  EXPECT_NE(split(mlp, 2, std::nullopt, &code).find("the model has nothing libaccel can split"), std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::Unsupported);
}

TEST(TensorParallelDropout, EachRankAppliesItsBlockOfTheWholeLayersMask) {
  at::manual_seed(3);
  const at::Tensor full = at::randn({2, 4, 3, 6});  // [N, heads, L, S]: 2 heads a rank
  at::manual_seed(11);
  const at::Tensor expected = at::dropout(full, 0.25, /*train=*/true);
  const double after_whole = at::rand({1}).item<double>();  // where the generator went on
  for (int64_t rank = 0; rank < 2; ++rank) {
    at::manual_seed(11);
    const at::Tensor block = full.narrow(1, 2 * rank, 2);
    const at::Tensor got = accel::detail::dropout_of_block(block, 0.25, true, 1, rank, 2);
    EXPECT_TRUE(at::equal(got, expected.narrow(1, 2 * rank, 2))) << "rank " << rank;
    EXPECT_EQ(at::rand({1}).item<double>(), after_whole) << "the generator moved on as the whole dropout moves it";
  }
  // Feature blocks along the last dimension, and the identities.
  at::manual_seed(11);
  const at::Tensor features = at::dropout(full, 0.5, true);
  at::manual_seed(11);
  EXPECT_TRUE(at::equal(accel::detail::dropout_of_block(full.narrow(-1, 3, 3), 0.5, true, -1, 1, 2),
                        features.narrow(-1, 3, 3)));
  EXPECT_TRUE(at::equal(accel::detail::dropout_of_block(full, 0.5, /*training=*/false, 1, 0, 2), full));
  EXPECT_TRUE(at::equal(accel::detail::dropout_of_block(full, 0.0, true, 1, 0, 2), full));
  EXPECT_EQ(accel::detail::dropout_of_block(full, 1.0, true, 1, 0, 2).abs().sum().item<double>(), 0.0);
}

// A graph's vocabulary: the embedding split by rows, its tied head by columns.
std::string tiny_lm(const std::string& outputs, const std::string& plan) {
  return R"({"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [
    {"name": "wte", "type": "Embedding", "num_embeddings": 16, "embedding_dim": 8},
    {"name": "h", "type": "TransformerEncoderLayer", "d_model": 8, "nhead": 2, "dim_feedforward": 16,
     "dropout": 0.0, "batch_first": true},
    {"name": "logits", "type": "Linear", "in_features": 8, "out_features": 16, "weight": "wte.weight"},
    {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": )" +
         outputs + R"(, "tp_plan": )" + plan + "}";
}

TEST(TensorParallelSplit, GraphNodesSplitByVocabularyAndTheirChecks) {
  accel::ErrorCode code{};
  const std::string blocks = R"("h.self_attn": "colwise", "h.self_attn.out_proj": "rowwise", "h.linear1": "colwise",
    "h.linear2": "rowwise")";
  accel::Model model = accel::Model::from_json(tiny_lm(R"(["loss"])", "{" + blocks + R"(, "wte": "rowwise",
    "logits": "colwise"})"));
  auto plan =
      accel::detail::parse_tp_plan(nlohmann::json::parse("{" + blocks + R"(, "wte": "rowwise", "logits": "colwise"})"));
  accel::detail::ParameterSplits made = accel::detail::split_for_tensor_parallel(
      *accel::detail::nn_module_of(model.impl()), plan, accel::detail::TensorParallelSlot{nullptr, 2, 0});
  std::map<std::string, at::Tensor> params;
  for (auto& [name, p] : model.named_parameters()) params[name] = p;
  EXPECT_EQ(params["wte.weight"].sizes(), (std::vector<int64_t>{8, 8}));  // tied: cut once
  EXPECT_EQ(params["logits.bias"].sizes(), (std::vector<int64_t>{8}));
  size_t vocabulary_entries = 0;
  for (const auto& [name, how] : made) vocabulary_entries += name == "wte.weight" || name == "logits.bias";
  EXPECT_EQ(vocabulary_entries, 2u);  // the tied head's weight is wte's (not a parameter of its own)

  auto refused = [&](const std::string& outputs, const std::string& entries) {
    accel::Model m = accel::Model::from_json(tiny_lm(outputs, "{" + blocks + entries + "}"));
    return split(m, 2, "{" + blocks + entries + "}", &code);
  };
  EXPECT_NE(refused(R"(["loss"])", R"(, "wte": "rowwise")").find("\"logits.weight\" is tied to \"wte.weight\""),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  EXPECT_NE(refused(R"(["logits", "loss"])", R"(, "wte": "rowwise", "logits": "colwise")")
                .find("\"logits\" (colwise) leaves its output split by columns, but the graph returns it"),
            std::string::npos);
  EXPECT_EQ(refused(R"(["logits", "loss"])", R"(, "wte": "rowwise", "logits": "colwise_rep")"), "");
  EXPECT_NE(refused(R"(["loss"])", R"(, "wte": "colwise", "logits": "colwise")").find("an Embedding node is split"),
            std::string::npos);
  EXPECT_NE(split(model, 3, std::nullopt, &code).find("does not divide"), std::string::npos);
}

// Sequence parallelism's entries: a transformer layer's norm1 and norm2
// together, on a layer the plan splits, that is a node of a graph; or a
// LayerNorm node. Refused entries change nothing.
TEST(TensorParallelSplit, SequenceParallelEntriesAreCheckedBeforeAnythingChanges) {
  accel::ErrorCode code{};
  const std::string blocks = R"("h.self_attn": "colwise", "h.self_attn.out_proj": "rowwise", "h.linear1": "colwise",
    "h.linear2": "rowwise")";
  auto attempt = [&](const std::string& entries) {
    const std::string plan = "{" + entries + "}";
    accel::Model m = accel::Model::from_json(tiny_lm(R"(["loss"])", plan));
    return split(m, 2, plan, &code);
  };
  EXPECT_EQ(attempt(blocks + R"(, "h.norm1": "sequence_parallel", "h.norm2": "sequence_parallel")"), "");
  EXPECT_NE(attempt(blocks + R"(, "h.norm1": "sequence_parallel")").find("needs \"h.norm2\" to be sequence_parallel"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
  EXPECT_NE(attempt(R"("h.norm1": "sequence_parallel", "h.norm2": "sequence_parallel")")
                .find("needs \"h.self_attn\" to be colwise, got no entry"),
            std::string::npos);
  const std::string linear = attempt(blocks + R"(, "logits": "sequence_parallel")");
  EXPECT_NE(linear.find("\"logits\" (sequence_parallel) is a Linear"), std::string::npos) << linear;
  // Not a node of a graph: nothing would cut its input into blocks.
  accel::Model chain = accel::Model::from_json(std::string("[") + kBlock + "]");
  EXPECT_NE(split(chain, 2,
                  R"({"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise", "*.linear1": "colwise",
                      "*.linear2": "rowwise", "*.norm1": "sequence_parallel", "*.norm2": "sequence_parallel"})",
                  &code)
                .find("must be a node of a graph spec"),
            std::string::npos);
  EXPECT_EQ(code, accel::ErrorCode::InvalidArgument);
}

}  // namespace
