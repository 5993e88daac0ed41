// profile(): the Chrome trace holds the operators the model ran, with what
// ProfileOptions asks for.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/modules/linear.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <vector>

#include "accel/accelerator.hpp"
#include "accel/profiler.hpp"
#include "core/remove_tree.hpp"

namespace {

accel::AcceleratorOptions cpu_options() {
  accel::AcceleratorOptions options;
  options.cpu = true;
  return options;
}

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

// with_stack and with_modules (ProfileKwargs): an operator a TorchScript
// model runs carries the source line that called it and the submodules it
// ran in; without the options, neither.
TEST(Profile, TorchScriptOperatorsCarryTheirStackAndModuleHierarchy) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("accel_profile_modules_" + std::to_string(::getpid()));
  accel::detail::remove_tree(dir);
  torch::jit::Module block("Block");
  block.define("def forward(self, x):\n    y = x + 1\n    return y.relu()\n");  // relu on line 3
  torch::jit::Module net("Net");
  net.register_module("block", block);
  net.define("def forward(self, x):\n    return self.block.forward(x).neg()\n");
  accel::Accelerator accelerator(cpu_options());
  // The relu's args in a trace recorded with the two options set (or not).
  auto relu_args = [&](bool with_them) {
    accel::ProfileOptions what;
    what.with_stack = with_them;
    what.with_modules = with_them;
    std::string path;
    {
      accel::ProfileScope scope(accelerator, dir.string(), what);
      path = scope.trace_path();
      net.forward({at::ones({2})});
    }
    std::ifstream in(path);
    const auto trace = nlohmann::json::parse(in);
    for (const auto& event : trace.at("traceEvents"))
      if (event.value("name", "") == "aten::relu") return event.at("args");
    ADD_FAILURE() << "no aten::relu in the trace";
    return nlohmann::json::object();
  };
  const auto args = relu_args(true);
  ASSERT_TRUE(args.contains("Module Hierarchy")) << args.dump();
  // Both as torch.profiler (2.x, Kineto) writes them for the same module.
  const auto hierarchy = args["Module Hierarchy"].get<std::string>();
  EXPECT_EQ(hierarchy, "TOP(Net)::forward.block(Block)::forward.");
  ASSERT_TRUE(args.contains("Call stack")) << args.dump();
  // The block's line (3) first, then Net's call of the block (line 2).
  EXPECT_EQ(args["Call stack"], "<string>(3): forward;<string>(2): forward;");
  std::cout << "relu: Module Hierarchy \"" << hierarchy << "\", Call stack \"" << args["Call stack"].get<std::string>()
            << "\"\n";
  const auto plain = relu_args(false);
  EXPECT_FALSE(plain.contains("Module Hierarchy") || plain.contains("Call stack")) << plain.dump();
  accel::detail::remove_tree(dir);
}

// The input sizes of the aten::neg calls in a trace: step k of the scheduled
// tests below negates a tensor of k + 1 elements, so they say which steps were recorded.
std::set<int64_t> recorded_steps(const std::string& path) {
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::set<int64_t> steps;
  for (const auto& event : trace.at("traceEvents"))
    if (event.value("name", "") == "aten::neg")
      steps.insert(event.at("args").at("Input Dims").at(0).at(0).get<int64_t>() - 1);
  return steps;
}

// A CPU accelerator, a trace folder, and the inputs of steps 0..9 (made before
// any profile, so that only the steps' aten::neg calls tell them apart).
struct ScheduledProfile : ::testing::Test {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("accel_profile_" + std::to_string(::getpid()));
  accel::Accelerator accelerator{cpu_options()};
  accel::ProfileOptions what;
  std::vector<at::Tensor> inputs;
  void SetUp() override {
    accel::detail::remove_tree(dir);
    what.record_shapes = true;
    for (int64_t step = 0; step < 10; ++step) inputs.push_back(at::zeros({step + 1}));
  }
  void TearDown() override { accel::detail::remove_tree(dir); }
};

// torch.profiler.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2)
// over 10 steps: steps 0 skipped; cycles [1 wait, 2 warm-up, 3-4 recorded] and
// [5, 6, 7-8]; step 9 past the repeats. PyTorch calls on_trace_ready after steps 4 and 8.
TEST_F(ScheduledProfile, RecordsItsActiveStepsAndWritesEachCycle) {
  what.schedule = accel::ProfileSchedule{1, 1, 2, 2, 1};
  accel::ProfileScope scope(accelerator, dir.string(), what);
  std::vector<int64_t> ready;
  std::set<int64_t> first_cycle;
  for (int64_t step = 0; step < 10; ++step) {
    at::neg(inputs[step]);
    if (scope.step()) {
      ready.push_back(step);
      if (first_cycle.empty()) first_cycle = recorded_steps(scope.trace_path());
    }
  }
  EXPECT_EQ(ready, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(first_cycle, (std::set<int64_t>{3, 4}));
  EXPECT_EQ(scope.step_num(), 10);
  scope.finish();
  EXPECT_EQ(recorded_steps(scope.trace_path()), (std::set<int64_t>{7, 8}));  // the last finished cycle
}

TEST_F(ScheduledProfile, FinishWritesACycleStillRecordingAndBadSchedulesAreNamed) {
  what.schedule = accel::ProfileSchedule{0, 0, 3, 0, 0};
  {
    accel::ProfileScope scope(accelerator, dir.string(), what);
    for (int64_t step = 0; step < 5; ++step) {
      at::neg(inputs[step]);
      EXPECT_EQ(scope.step(), step == 2);
    }
    at::neg(inputs[5]);  // step 5, in the second cycle
  }
  EXPECT_EQ(recorded_steps((dir / "trace_0.json").string()), (std::set<int64_t>{3, 4, 5}));
  for (const auto& bad : {accel::ProfileSchedule{-1, 0, 1, 0, 0}, accel::ProfileSchedule{2, 0, 0, 0, 0}}) {
    what.schedule = bad;
    try {
      accel::ProfileScope scope(accelerator, dir.string(), what);
      FAIL() << "no error";
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(bad.wait < 0 ? "wait is -1" : "active is 0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
