// Empty models, module sizes and device maps against Accelerate 0.22.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <malloc.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "formats/tensor_io.hpp"

namespace {

using accel::DeviceMap;

// The torch twin used for the expected values below (Accelerate 0.22, torch 1.13):
//   class GPT(nn.Module):
//     def __init__(s):
//       super().__init__(); s.wte = nn.Embedding(256, 64)
//       s.h = nn.Sequential(*[nn.TransformerEncoderLayer(64, 4, 256, batch_first=True) for _ in range(4)])
//       s.ln_f = nn.LayerNorm(64); s.logits = nn.Linear(64, 256, bias=False)
//   with init_empty_weights(): m = GPT()
//   infer_auto_device_map(m, max_memory=..., no_split_module_classes=...)
std::string gpt_spec(int layers) {
  std::string h;
  for (int i = 0; i < layers; ++i) {
    h +=
        std::string(i ? "," : "") +
        R"({"type": "TransformerEncoderLayer", "d_model": 64, "nhead": 4, "dim_feedforward": 256, "batch_first": true})";
  }
  return R"({"inputs": ["input_ids"], "nodes": [
    {"name": "wte", "type": "Embedding", "num_embeddings": 256, "embedding_dim": 64},
    {"name": "h", "type": "Sequential", "layers": [)" +
         h + R"(]},
    {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 64},
    {"name": "logits", "type": "Linear", "in_features": 64, "out_features": 256, "bias": false}],
    "outputs": ["logits"]})";
}

std::map<std::string, std::string> as_map(const DeviceMap& map) { return {map.begin(), map.end()}; }

DeviceMap infer(const std::string& max_memory, std::vector<std::string> no_split = {}) {
  auto model = accel::model_from_json_empty(gpt_spec(4));
  return accel::infer_auto_device_map(model, accel::parse_max_memory(max_memory), no_split);
}

TEST(EmptyModel, ParametersAreOnMetaAndSizesMatchPyTorch) {
  auto model = accel::model_from_json_empty(gpt_spec(4));
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  auto sizes = accel::compute_module_sizes(model);
  // compute_module_sizes(m) of the twin: 931328, h.0 199936, wte 65536, h.0.linear1 66560.
  EXPECT_EQ(sizes.at(""), 931328);
  EXPECT_EQ(sizes.at("h.0"), 199936);
  EXPECT_EQ(sizes.at("wte"), 65536);
  EXPECT_EQ(sizes.at("h.0.linear1"), 66560);
  EXPECT_EQ(accel::compute_module_sizes(model, c10::kHalf).at(""), 931328 / 2);
}

TEST(EmptyModel, BuildingAHugeSpecAllocatesNothing) {
  // 16 layers of d_model 1024 are ~400 MB of float32 weights; empty, what
  // stays allocated must be under two layers (~24 MB each). malloc_trim first:
  // glibc keeps freed layers' pages, which is not memory the model holds.
  auto rss_kb = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return 0L;
  };
  std::string h;
  for (int i = 0; i < 16; ++i) {
    h +=
        std::string(i ? "," : "") +
        R"({"type": "TransformerEncoderLayer", "d_model": 1024, "nhead": 8, "dim_feedforward": 1024, "batch_first": true})";
  }
  const long before = rss_kb();
  auto model = accel::model_from_json_empty(R"({"layers": [)" + h + "]}");
  malloc_trim(0);
  const long grown_mb = (rss_kb() - before) / 1024;
  EXPECT_GT(accel::compute_module_sizes(model).at(""), 400'000'000);
  EXPECT_LT(grown_mb, 40) << "RSS grew by " << grown_mb << " MB building an empty model";
}

TEST(DeviceMap, InferMatchesAccelerate) {
  // {"cpu": 300000}, no_split []: the cpu keeps room for the largest leaf (h.0.self_attn).
  EXPECT_EQ(as_map(infer(R"({"cpu": 300000})")), (std::map<std::string, std::string>{{"wte", "cpu"},
                                                                                     {"h.0.self_attn", "cpu"},
                                                                                     {"h.0.linear1", "cpu"},
                                                                                     {"h.0.dropout", "cpu"},
                                                                                     {"h.0.linear2", "disk"},
                                                                                     {"h.0.norm1", "disk"},
                                                                                     {"h.0.norm2", "disk"},
                                                                                     {"h.0.dropout1", "disk"},
                                                                                     {"h.0.dropout2", "disk"},
                                                                                     {"h.1", "disk"},
                                                                                     {"h.2", "disk"},
                                                                                     {"h.3", "disk"},
                                                                                     {"ln_f", "disk"},
                                                                                     {"logits", "disk"}}));
  // {"cpu": 300000}, ["TransformerEncoderLayer"]: wte cpu, ln_f disk, logits disk, h disk (cleaned last).
  EXPECT_EQ(infer(R"({"cpu": 300000})", {"TransformerEncoderLayer"}),
            (DeviceMap{{"wte", "cpu"}, {"ln_f", "disk"}, {"logits", "disk"}, {"h", "disk"}}));
  // {"cpu": 500000}, ["TransformerEncoderLayer"].
  EXPECT_EQ(as_map(infer(R"({"cpu": "500KB"})", {"TransformerEncoderLayer"})),
            (std::map<std::string, std::string>{{"wte", "cpu"},
                                                {"h.0", "cpu"},
                                                {"h.1", "disk"},
                                                {"h.2", "disk"},
                                                {"h.3", "disk"},
                                                {"ln_f", "disk"},
                                                {"logits", "disk"}}));
  // {"cpu": 10**9}: everything fits, so the whole model is one entry.
  EXPECT_EQ(infer(R"({"cpu": "1GB"})"), (DeviceMap{{"", "cpu"}}));
}

TEST(DeviceMap, BudgetSmallerThanTheLargestLayerIsRefusedNamingIt) {
  try {
    infer(R"({"cpu": 150000})", {"TransformerEncoderLayer"});
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("\"h.0\" (199936 bytes)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(accel::parse_max_memory(R"({"tpu": 1})"), accel::Error);
  EXPECT_THROW(accel::parse_max_memory(R"({"cpu": "12 parsecs"})"), accel::Error);
}

TEST(DeviceMap, ParseMaxMemoryOrdersGpusThenCpuThenDisk) {
  auto parsed = accel::parse_max_memory(R"({"disk": 1, "cpu": "2KiB", "cuda:1": "1MB", "0": 5})");
  EXPECT_EQ(parsed, (std::vector<std::pair<std::string, int64_t>>{
                        {"cuda:0", 5}, {"cuda:1", 1000000}, {"cpu", 2048}, {"disk", 1}}));
}

TEST(DeviceMap, VerifyNamesTheBadEntry) {
  auto model = accel::model_from_json_empty(gpt_spec(2));
  auto message = [&](const std::string& map) {
    try {
      accel::verify_device_map(model, accel::device_map_from_json(map));
    } catch (const accel::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"({"wte": "cpu", "h": "disk", "ln_f": "cpu", "logits": "cpu"})"), "no error");
  EXPECT_EQ(message(R"({"": "cpu"})"), "no error");
  EXPECT_NE(message(R"({"wte": "cpu", "h.7": "disk", "ln_f": "cpu", "logits": "cpu"})").find("\"h.7\" names no module"),
            std::string::npos);
  EXPECT_NE(message(R"({"wte": "cpu", "h": "disk", "logits": "cpu"})").find("\"ln_f.weight\" is not placed"),
            std::string::npos);
  EXPECT_NE(
      message(R"({"wte": "cpu", "h": "disk", "h.0": "cpu", "ln_f": "cpu", "logits": "cpu"})").find("covered twice"),
      std::string::npos);
  EXPECT_NE(message(R"({"": "cuda:7"})").find("\"cuda:7\""), std::string::npos);
  EXPECT_NE(message(R"({"": "tpu"})").find("unknown device \"tpu\""), std::string::npos);
  EXPECT_NE(message(R"({"": 3})").find("expected a device string"), std::string::npos);
}

}  // namespace

namespace {

std::string write_checkpoint(const accel::Model& model, const std::string& leave_out) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& list : {model.named_parameters(), model.named_buffers()}) {
    for (const auto& [name, t] : list) {
      if (name != leave_out) tensors.emplace_back(name, t);
    }
  }
  const std::string path =
      ::testing::TempDir() + "/big_model_" + (leave_out.empty() ? "full" : "partial") + ".safetensors";
  std::ofstream(path, std::ios::binary) << accel::detail::serialize_tensors(tensors, {});
  return path;
}

TEST(Materialize, EmptyModelFromSafetensorsGivesTheFullModelsOutputs) {
  at::manual_seed(0);
  auto full = accel::Model::from_json(gpt_spec(2));
  auto empty = accel::model_from_json_empty(gpt_spec(2));
  accel::materialize(empty, write_checkpoint(full, ""));
  full.train(false);
  empty.train(false);
  for (const auto& [name, p] : empty.named_parameters()) EXPECT_FALSE(p.is_meta()) << name;
  at::Tensor ids = at::arange(16, at::kLong).reshape({2, 8});
  auto want = full.forward(accel::Model::NamedTensors{{"input_ids", ids}});
  auto got = empty.forward(accel::Model::NamedTensors{{"input_ids", ids}});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(at::equal(got[0].second, want[0].second));
}

TEST(Materialize, AMissingTensorIsNamedAndNothingChanges) {
  auto full = accel::Model::from_json(gpt_spec(2));
  auto empty = accel::model_from_json_empty(gpt_spec(2));
  try {
    accel::materialize(empty, write_checkpoint(full, "ln_f.weight"));
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("has no tensor \"ln_f.weight\""), std::string::npos) << e.what();
  }
  for (const auto& [name, p] : empty.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  try {
    accel::materialize(empty, "/nonexistent/model.safetensors");
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.safetensors"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

TEST(Materialize, ReadsAShardedIndex) {
  auto full = accel::Model::from_json(gpt_spec(1));
  std::vector<std::pair<std::string, at::Tensor>> first, second;
  nlohmann::json weight_map;
  for (const auto& list : {full.named_parameters(), full.named_buffers()}) {
    for (const auto& [name, t] : list) {
      const bool in_first = name.rfind("h.", 0) == 0;
      (in_first ? first : second).emplace_back(name, t);
      weight_map[name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    }
  }
  const std::string dir = ::testing::TempDir() + "/big_model_sharded";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/model-00001-of-00002.safetensors", std::ios::binary)
      << accel::detail::serialize_tensors(first, {});
  std::ofstream(dir + "/model-00002-of-00002.safetensors", std::ios::binary)
      << accel::detail::serialize_tensors(second, {});
  std::ofstream(dir + "/model.safetensors.index.json") << nlohmann::json{{"weight_map", weight_map}}.dump();
  auto empty = accel::model_from_json_empty(gpt_spec(1));
  accel::materialize(empty, dir, c10::kDouble);
  const auto want = full.named_parameters();
  const auto got = empty.named_parameters();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].second.scalar_type(), at::kDouble) << got[i].first;
    EXPECT_TRUE(at::equal(got[i].second, want[i].second.to(at::kDouble))) << got[i].first;
  }
}

}  // namespace
