// load_checkpoint_and_dispatch: CPU and disk offload give the fully loaded
// model's greedy tokens, bad input is refused before anything changes, and a
// model four times its CPU budget generates within budget + largest layer.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "accel/big_model.hpp"
#include "accel/error.hpp"
#include "formats/tensor_io.hpp"
#include "big_model/dispatch_fixture.hpp"

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

using dispatch_fixture::generate;
using dispatch_fixture::gpt_spec;
using dispatch_fixture::save;
using dispatch_fixture::temp_dir;

const accel::DeviceMap kHalfOnDisk = {{"wte", "cpu"}, {"wpe", "cpu"},   {"h0", "cpu"},     {"h1", "disk"},
                                      {"h2", "disk"}, {"ln_f", "disk"}, {"logits", "disk"}};

TEST(Dispatch, CpuAndDiskOffloadGenerateTheFullModelsTokens) {
  const std::string dir = temp_dir("mixed");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto empty = accel::model_from_json_empty(gpt_spec(3, 64, 256));
  accel::load_checkpoint_and_dispatch(empty, checkpoint, kHalfOnDisk, dir + "/offload");
  EXPECT_EQ(generate(empty), generate(full));
  // Disk tensors are back on meta between forwards; cpu ones stay loaded.
  for (const auto& [name, p] : empty.named_parameters()) {
    EXPECT_EQ(p.is_meta(), name.rfind("wte", 0) != 0 && name.rfind("wpe", 0) != 0 && name.rfind("h0.", 0) != 0) << name;
  }
  // Same dtype: read from the checkpoint, so the folder holds only the index.
  std::ifstream in(dir + "/offload/offload_index.json");
  auto index = nlohmann::json::parse(in);
  EXPECT_EQ(index["logits.weight"]["safetensors_file"], checkpoint);
  EXPECT_EQ(index["logits.weight"]["shape"], nlohmann::json::array({256, 64}));
  EXPECT_FALSE(index.contains("h0.linear1.weight"));
  EXPECT_FALSE(fs::exists(dir + "/offload/logits.weight.safetensors"));
}

TEST(Dispatch, ACastIsWrittenToTheOffloadFolder) {
  const std::string dir = temp_dir("cast");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  auto empty = accel::model_from_json_empty(gpt_spec(3, 64, 256));
  accel::load_checkpoint_and_dispatch(empty, checkpoint, kHalfOnDisk, dir + "/offload", c10::kDouble);
  EXPECT_TRUE(fs::exists(dir + "/offload/logits.weight.safetensors"));
  std::ifstream in(dir + "/offload/offload_index.json");
  EXPECT_EQ(nlohmann::json::parse(in)["h1.linear1.weight"]["dtype"], "F64");
  at::Tensor ids = at::arange(8, at::kLong).unsqueeze(0);
  empty.train(false);
  full.train(false);
  // The reference is the full model widened to float64 too (its float32
  // weights, exactly): the same network in the same precision. Against the
  // float32 model the difference would be the float32 model's own rounding
  // (3 blocks of products over 64 to 256 terms), which depends on the CPU's
  // kernels and has no bound as simple as the old rtol 1e-4 / atol 1e-5. In
  // float64 the sides measured 0 on an AMD EPYC (AVX-512); 1e-9 is far above
  // float64 rounding (u = 1.1e-16 over sums of at most 256 terms) and far
  // below a wrong weight or cast (1e-4 and up).
  {
    at::NoGradGuard no_grad;
    for (auto& p : full.parameters()) p.set_data(p.to(at::kDouble));
    for (auto& [name, b] : full.named_buffers()) {
      if (b.is_floating_point()) b.set_data(b.to(at::kDouble));
    }
  }
  at::Tensor got = empty.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  at::Tensor want = full.forward(accel::Model::NamedTensors{{"input_ids", ids}})[0].second;
  EXPECT_EQ(got.scalar_type(), at::kDouble);
  EXPECT_EQ(want.scalar_type(), at::kDouble);
  const double worst = (got - want).abs().max().item<double>();
  std::printf("float64 dispatched vs float64 full model: worst error %g\n", worst);
  EXPECT_LE(worst, 1e-9);
}

// Runs fn, expecting an accel::Error of code whose message contains needle.
template <typename Fn>
void expect_error(Fn fn, accel::ErrorCode code, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Dispatch, BadInputIsRefusedBeforeAnythingIsLoadedOrWritten) {
  const std::string dir = temp_dir("bad");
  auto full = accel::Model::from_json(gpt_spec(3, 64, 256));
  const std::string checkpoint = save(full, dir + "/model.safetensors");
  std::vector<std::pair<std::string, at::Tensor>> partial;
  for (const auto& [name, t] : full.named_parameters()) {
    if (name != "h2.linear2.weight") partial.emplace_back(name, t);
  }
  std::ofstream(dir + "/partial.safetensors", std::ios::binary) << accel::detail::serialize_tensors(partial, {});
  std::ofstream(dir + "/a_file") << "x";
  auto empty = accel::model_from_json_empty(gpt_spec(3, 64, 256));
  using accel::ErrorCode;
  expect_error(
      [&] { accel::load_checkpoint_and_dispatch(empty, dir + "/partial.safetensors", kHalfOnDisk, dir + "/o1"); },
      ErrorCode::InvalidArgument, "has no tensor \"h2.linear2.weight\"");
  expect_error([&] { accel::load_checkpoint_and_dispatch(empty, checkpoint, kHalfOnDisk, dir + "/a_file/offload"); },
               ErrorCode::IO, "offload folder \"" + dir + "/a_file/offload\"");
  expect_error([&] { accel::load_checkpoint_and_dispatch(empty, checkpoint, kHalfOnDisk, ""); },
               ErrorCode::InvalidArgument, "no offload folder");
  accel::DeviceMap missing_layer(kHalfOnDisk.begin(), kHalfOnDisk.end() - 1);
  expect_error([&] { accel::load_checkpoint_and_dispatch(empty, checkpoint, missing_layer, dir + "/o2"); },
               ErrorCode::InvalidArgument, "logits.weight");
  for (const auto& [name, p] : empty.named_parameters()) EXPECT_TRUE(p.is_meta()) << name;
  EXPECT_FALSE(fs::exists(dir + "/o1"));
  EXPECT_FALSE(fs::exists(dir + "/o2"));
  // A sequential model cannot bring layers in one by one: disk is refused, cpu works.
  const std::string seq = R"({"layers": [{"type": "Linear", "in_features": 4, "out_features": 4}]})";
  auto seq_full = accel::Model::from_json(seq);
  auto seq_empty = accel::model_from_json_empty(seq);
  save(seq_full, dir + "/seq.safetensors");
  expect_error(
      [&] {
        accel::load_checkpoint_and_dispatch(seq_empty, dir + "/seq.safetensors", {{"", "disk"}}, dir + "/o3");
      },
      ErrorCode::Unsupported, "JSON graph");
  accel::load_checkpoint_and_dispatch(seq_empty, dir + "/seq.safetensors", {{"", "cpu"}});
  EXPECT_TRUE(at::equal(seq_empty.named_parameters()[0].second, seq_full.named_parameters()[0].second));
}

// --- peak memory, measured in a child process (this binary, re-run on one test) ---

int64_t status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
  }
  return -1;
}

constexpr int kLayers = 8, kDModel = 512, kVocab = 4096;

// Run only by RssStaysUnderBudgetPlusLargestLayer, with ACCEL_DISPATCH_RSS_DIR set.
TEST(DispatchRss, DISABLED_Child) {
  const char* dir = std::getenv("ACCEL_DISPATCH_RSS_DIR");
  ASSERT_NE(dir, nullptr);
  const int64_t budget = std::stoll(std::getenv("ACCEL_DISPATCH_RSS_BUDGET"));
  auto warm_up = accel::Model::from_json(gpt_spec(1, 8, 16));
  generate(warm_up);  // LibTorch's own start-up memory is not the model's
  const int64_t baseline = status_kb("VmHWM:");
  auto model = accel::model_from_json_empty(gpt_spec(kLayers, kDModel, kVocab));
  const int64_t built = status_kb("VmHWM:");
  auto map = accel::infer_auto_device_map(model, {{"cpu", budget}}, {"TransformerEncoderLayer"});
  accel::load_checkpoint_and_dispatch(model, std::string(dir) + "/model.safetensors", map,
                                      std::string(dir) + "/offload");
  const int64_t dispatched = status_kb("VmHWM:");
  auto tokens = generate(model);
  std::printf("built_kb: %lld\ndispatched_kb: %lld\n", static_cast<long long>(built),
              static_cast<long long>(dispatched));
  std::printf("map: %s\nbaseline_kb: %lld\npeak_kb: %lld\ntokens:", accel::device_map_to_json(map).c_str(),
              static_cast<long long>(baseline), static_cast<long long>(status_kb("VmHWM:")));
  for (int64_t t : tokens) std::printf(" %lld", static_cast<long long>(t));
  std::printf("\n");
}

TEST(DispatchRss, RssStaysUnderBudgetPlusLargestLayer) {
  const std::string dir = temp_dir("rss");
  const std::string spec = gpt_spec(kLayers, kDModel, kVocab);
  std::vector<int64_t> want;
  int64_t model_bytes = 0, largest = 0;
  {
    auto full = accel::Model::from_json(spec);
    save(full, dir + "/model.safetensors");
    want = generate(full);
    auto sizes = accel::compute_module_sizes(full);
    model_bytes = sizes[""];
    for (const char* layer : {"wte", "h0", "logits"}) largest = std::max(largest, sizes[layer]);
  }
  const int64_t budget = model_bytes / 4;
  const std::string command = "ACCEL_DISPATCH_RSS_DIR=" + dir + " ACCEL_DISPATCH_RSS_BUDGET=" + std::to_string(budget) +
                              " /proc/" + std::to_string(getpid()) +
                              "/exe --gtest_also_run_disabled_tests --gtest_filter=DispatchRss.DISABLED_Child";
  FILE* child = popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, child)) output.append(buffer, n);
  ASSERT_EQ(pclose(child), 0) << output;
  std::map<std::string, std::string> fields;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(": ");
    if (colon != std::string::npos) fields[line.substr(0, colon)] = line.substr(colon + 2);
  }
  std::string want_text;
  for (int64_t t : want) want_text += " " + std::to_string(t);
  EXPECT_EQ(" " + fields["tokens"], want_text) << output;
  const int64_t growth = (std::stoll(fields["peak_kb"]) - std::stoll(fields["baseline_kb"])) * 1024;
  std::printf("model %lld B, cpu budget %lld B, largest layer %lld B, peak RSS growth %lld B\n%s\n",
              static_cast<long long>(model_bytes), static_cast<long long>(budget), static_cast<long long>(largest),
              static_cast<long long>(growth), fields["map"].c_str());
  EXPECT_GT(model_bytes, 100'000'000);
  EXPECT_LT(growth, 2 * (budget + largest)) << output;
  EXPECT_LT(growth, model_bytes / 2) << output;  // far from loading the whole model
}

}  // namespace
