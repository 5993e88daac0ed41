// Balanced budgets over several GPUs (Accelerate 1.x's get_balanced_memory). The
// expected values are Accelerate 1.15's on the torch twins below (its own test's
// ModelForTest, and a nested one); the budgets are plain numbers, so no GPU is needed.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <utility>
#include <vector>

#include "accel/big_model.hpp"
#include "accel/error.hpp"

namespace {

using Budgets = std::vector<std::pair<std::string, int64_t>>;

// class ModelForTest(nn.Module): linear1 = Linear(3, 4); batchnorm = BatchNorm1d(4); linear2 = Linear(4, 5)
// Sizes: linear1 64, batchnorm 72 (num_batches_tracked is an int64), linear2 100; 236 in all.
struct ModelForTestImpl : torch::nn::Module {
  ModelForTestImpl()
      : linear1(register_module("linear1", torch::nn::Linear(3, 4))),
        batchnorm(register_module("batchnorm", torch::nn::BatchNorm1d(4))),
        linear2(register_module("linear2", torch::nn::Linear(4, 5))) {}
  at::Tensor forward(const at::Tensor& x) { return linear2(batchnorm(linear1(x))); }
  torch::nn::Linear linear1;
  torch::nn::BatchNorm1d batchnorm;
  torch::nn::Linear linear2;
};
TORCH_MODULE(ModelForTest);

// class Nest(nn.Module): block = Sequential(Linear(8, 8), Linear(8, 8)); head = Linear(8, 2);
//                        block2 = Sequential(Linear(8, 8), Linear(8, 16))
struct NestImpl : torch::nn::Module {
  NestImpl()
      : block(register_module("block", torch::nn::Sequential(torch::nn::Linear(8, 8), torch::nn::Linear(8, 8)))),
        head(register_module("head", torch::nn::Linear(8, 2))),
        block2(register_module("block2", torch::nn::Sequential(torch::nn::Linear(8, 8), torch::nn::Linear(8, 16)))) {}
  at::Tensor forward(const at::Tensor& x) { return head(block2->forward<at::Tensor>(block->forward<at::Tensor>(x))); }
  torch::nn::Sequential block;
  torch::nn::Linear head;
  torch::nn::Sequential block2;
};
TORCH_MODULE(Nest);

Budgets balanced(const accel::Model& model, const std::string& max_memory, bool low_zero = false,
                 std::vector<std::string> no_split = {}, c10::optional<c10::ScalarType> dtype = {}) {
  return accel::balanced_memory(model, accel::parse_max_memory(max_memory), no_split, dtype, low_zero);
}

TEST(BalancedMemory, MatchesAccelerateOnItsOwnTestModel) {
  auto model = accel::Model::from_module(ModelForTest());
  ASSERT_EQ(accel::compute_module_sizes(model).at(""), 236);
  // A share of 236 / 2 = 118 plus 1.25 x the mean final module (236 / 3 = 78): 215.
  EXPECT_EQ(balanced(model, R"({"0": 200, "1": 200})"), (Budgets{{"cuda:0", 200}, {"cuda:1", 200}}));
  EXPECT_EQ(balanced(model, R"({"0": 200, "2": 200})"), (Budgets{{"cuda:0", 200}, {"cuda:2", 200}}));
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 300})"), (Budgets{{"cuda:0", 215}, {"cuda:1", 300}}));
  // The last GPU keeps all it has, so nothing spills to the CPU for want of a margin.
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 500})"), (Budgets{{"cuda:0", 215}, {"cuda:1", 500}}));
  EXPECT_EQ(balanced(model, R"({"0": 300, "cpu": 1000})"), (Budgets{{"cuda:0", 300}, {"cpu", 1000}}));
  // A GPU without room does not count.
  EXPECT_EQ(balanced(model, R"({"0": 0, "1": 300, "2": 300})"),
            (Budgets{{"cuda:0", 0}, {"cuda:1", 215}, {"cuda:2", 300}}));
  EXPECT_EQ(balanced(model, R"({"0": 0, "cpu": 100})"), (Budgets{{"cuda:0", 0}, {"cpu", 100}}));
  EXPECT_EQ(balanced(model, R"({"cpu": 1000})"), (Budgets{{"cpu", 1000}}));
}

TEST(BalancedMemory, LowZeroLeavesGpuZeroWhatTheOthersCannotHold) {
  auto model = accel::Model::from_module(ModelForTest());
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 300, "2": 300})", true),
            (Budgets{{"cuda:0", 0}, {"cuda:1", 215}, {"cuda:2", 300}}));
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 300})", true), (Budgets{{"cuda:0", 0}, {"cuda:1", 300}}));
  // 236 - (100 + 100) = 36 bytes stay on GPU 0.
  EXPECT_EQ(balanced(model, R"({"0": 1000, "1": 100, "2": 100})", true),
            (Budgets{{"cuda:0", 36}, {"cuda:1", 100}, {"cuda:2", 100}}));
}

TEST(BalancedMemory, NoSplitBlocksAndDtypeWidenTheMargin) {
  auto model = accel::Model::from_module(ModelForTest());
  // BatchNorm1d's 72 < the mean 78: the margin stays 97.
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 300})", false, {"BatchNorm1d"}),
            (Budgets{{"cuda:0", 215}, {"cuda:1", 300}}));
  // float16: 32 + 32 + 8 (the int64 counter is never cast) + 50 = 122; 122 / 3 = 40, mean 40 -> 40 + 50.
  EXPECT_EQ(accel::compute_module_sizes(model, c10::kHalf).at(""), 122);
  EXPECT_EQ(balanced(model, R"({"0": 300, "1": 300, "2": 300})", false, {"Linear"}, c10::kHalf),
            (Budgets{{"cuda:0", 90}, {"cuda:1", 90}, {"cuda:2", 300}}));

  auto nest = accel::Model::from_module(Nest());
  // 1512 bytes (block 576, head 72, block2 864); 1512 / 3 = 504 plus 1.25 x the first
  // Sequential's 576 (it beats the mean final module, 1512 / 5 = 302): 504 + 720.
  EXPECT_EQ(balanced(nest, R"({"0": 2000, "1": 2000, "2": 2000})", false, {"Sequential"}),
            (Budgets{{"cuda:0", 1224}, {"cuda:1", 1224}, {"cuda:2", 2000}}));
  // low_zero: 1512 / 2 = 756 plus int(1.25 x 302) = 377 over GPUs 1 and 2; GPU 0 gets nothing.
  EXPECT_EQ(balanced(nest, R"({"0": 2000, "1": 2000, "2": 2000})", true),
            (Budgets{{"cuda:0", 0}, {"cuda:1", 1133}, {"cuda:2", 2000}}));
}

TEST(BalancedMemory, DeviceMapStringsAreAccelerates) {
  auto model = accel::Model::from_module(ModelForTest());
  // This small model fits the first device: the CPU without a GPU, else GPU 0 (whatever
  // ACCELERATE_USE_CPU says: Accelerate's device_map strings read the devices present).
  const std::string first = torch::cuda::is_available() ? "cuda:0" : "cpu";
  for (const char* strategy : {"\"auto\"", "\"balanced\"", "\"balanced_low_0\"", "\"sequential\""}) {
    EXPECT_EQ(accel::resolve_device_map(model, strategy), (accel::DeviceMap{{"", first}})) << strategy;
  }
  // No map is Accelerate's None; an empty object would read as one, so it is refused.
  EXPECT_TRUE(accel::resolve_device_map(model, "").empty());
  EXPECT_THROW(accel::resolve_device_map(model, "{}"), accel::Error);
  try {
    accel::resolve_device_map(model, "\"balanced_low_1\"");
    FAIL() << "no error";
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("\"balanced_low_1\" is not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
