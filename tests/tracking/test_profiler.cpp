// profile(): the Chrome trace holds the operators the model ran.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/nn/modules/linear.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "accel/accelerator.hpp"
#include "accel/profiler.hpp"
#include "core/remove_tree.hpp"

namespace {

TEST(Profile, WritesAChromeTraceWithTheModelsOperators) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("accel_profile_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  accel::AcceleratorOptions options;
  options.cpu = true;
  accel::Accelerator accelerator(options);
  torch::nn::Linear linear(4, 3);
  std::string path;
  {
    accel::ProfileScope scope(accelerator, dir.string());
    path = scope.trace_path();
    EXPECT_THROW(accel::ProfileScope(accelerator, dir.string()), accel::Error);  // no nesting
    linear->forward(at::ones({2, 4})).sum().backward();
  }
  EXPECT_EQ(path, (dir / "trace_0.json").string());
  std::ifstream in(path);
  ASSERT_TRUE(in.good());
  const auto trace = nlohmann::json::parse(in);
  ASSERT_TRUE(trace.is_object()) << "Trace Event Format's object form, not LibTorch 1.13's bare array";
  const auto& events = trace.at("traceEvents");
  std::set<std::string> names;
  bool named_process = false;
  for (const auto& event : events) {
    EXPECT_EQ(event.at("pid"), 0) << "the rank is the pid";
    if (event.contains("name")) names.insert(event["name"].get<std::string>());
    if (event.value("ph", "") == "M" && event["name"] == "process_name") {
      named_process = event["args"]["name"] == "rank 0";
    }
  }
  EXPECT_TRUE(named_process);
  EXPECT_TRUE(names.count("aten::addmm") || names.count("aten::linear")) << "no linear operator in the trace";
  EXPECT_TRUE(names.count("aten::sum"));
  accel::detail::remove_tree(dir);
}

}  // namespace
