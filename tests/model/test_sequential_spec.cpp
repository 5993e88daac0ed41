#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/pooling.h>

#include "accel/error.hpp"
#include "model/sequential_spec.hpp"

namespace {

using accel::detail::build_sequential;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string error_of(const std::string& spec) {
  try {
    build_sequential(spec);
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(SequentialSpec, BuildsAccelerateMnistCnnWithPyTorchNames) {
  auto net = build_sequential(R"({"layers": [
    {"type": "Conv2d", "in_channels": 1, "out_channels": 8, "kernel_size": 3},
    {"type": "MaxPool2d", "kernel_size": 2, "stride": 2},
    {"type": "Conv2d", "in_channels": 8, "out_channels": 4, "kernel_size": [5, 5]},
    {"type": "MaxPool2d", "kernel_size": 2},
    {"type": "Dropout2d", "p": 0.1},
    {"type": "AdaptiveMaxPool2d", "output_size": [1, 1]},
    {"type": "Flatten"},
    {"type": "Linear", "in_features": 4, "out_features": 6},
    {"type": "ReLU"},
    {"type": "Linear", "in_features": 6, "out_features": 10}]})");
  EXPECT_EQ(net->forward(at::randn({3, 1, 28, 28})).sizes(), (std::vector<int64_t>{3, 10}));
  std::vector<std::string> names;
  int64_t count = 0;
  for (const auto& item : net->named_parameters()) {
    names.push_back(item.key());
    count += item.value().numel();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "7.weight", "7.bias",
                                             "9.weight", "9.bias"}));
  EXPECT_EQ(count, (8 * 9 + 8) + (4 * 8 * 25 + 4) + (4 * 6 + 6) + (6 * 10 + 10));
}

TEST(SequentialSpec, EveryLayerTypeRuns) {
  struct Case {
    const char* spec;
    std::vector<int64_t> input;
    bool integer_input = false;
  };
  std::vector<Case> cases = {
      {R"([{"type": "AvgPool2d", "kernel_size": 2}])", {1, 2, 4, 4}},
      {R"([{"type": "AdaptiveAvgPool2d", "output_size": 2}])", {1, 2, 5, 5}},
      {R"([{"type": "Dropout"}])", {3, 4}},
      {R"([{"type": "GELU", "approximate": "tanh"}, {"type": "Tanh"}, {"type": "Sigmoid"}])", {3, 4}},
      {R"([{"type": "BatchNorm1d", "num_features": 4}])", {3, 4}},
      {R"([{"type": "BatchNorm2d", "num_features": 2}])", {3, 2, 4, 4}},
      {R"([{"type": "LayerNorm", "normalized_shape": [4]}])", {3, 4}},
      {R"([{"type": "Embedding", "num_embeddings": 10, "embedding_dim": 3, "padding_idx": 0}])", {2, 5}, true},
      {R"([{"type": "Conv2d", "in_channels": 2, "out_channels": 2, "kernel_size": 3, "padding": "same"}])", {1, 2, 6, 6}},
      {R"([{"type": "LogSoftmax", "dim": 1}, {"type": "Softmax"}])", {3, 4}},
  };
  for (const auto& c : cases) {
    auto net = build_sequential(c.spec);
    at::Tensor input = c.integer_input ? at::randint(0, 10, c.input, at::kLong) : at::randn(c.input);
    EXPECT_NO_THROW(net->forward(input)) << c.spec;
  }
}

TEST(SequentialSpec, DefaultsArePyTorchs) {
  auto net = build_sequential(R"([{"type": "MaxPool2d", "kernel_size": 3}, {"type": "Dropout"}])");
  auto pool = net[0]->as<torch::nn::MaxPool2d>();
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ((*pool->options.stride())[0], 3);
  EXPECT_EQ(net[1]->as<torch::nn::Dropout>()->options.p(), 0.5);
}

TEST(SequentialSpec, ErrorsNameTheLayerAndArgument) {
  EXPECT_THAT(error_of("[{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(error_of(R"({"type": "ReLU"})"), HasSubstr("must be a JSON array"));
  EXPECT_THAT(error_of("[]"), HasSubstr("no layers"));
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, {"type": "Conv3x"}])"),
              HasSubstr("layer 1: unknown layer type \"Conv3x\""));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "kernel_size": 3}])"),
              HasSubstr("layer 0 (Conv2d): missing required argument \"out_channels\""));
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, {"type": "ReLU"}, {"type": "Linear", "in_features": -4, "out_features": 2}])"),
              AllOf(HasSubstr("layer 2 (Linear)"), HasSubstr("\"in_features\""), HasSubstr("-4")));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": "8", "out_features": 2}])"),
              HasSubstr("must be an integer, got \"8\""));
  EXPECT_THAT(error_of(R"([{"type": "Dropout", "p": 1.5}])"), AllOf(HasSubstr("\"p\""), HasSubstr("1.5")));
  EXPECT_THAT(error_of(R"([{"type": "ReLU", "inplace_x": true}])"),
              HasSubstr("layer 0 (ReLU): unknown argument \"inplace_x\""));
  EXPECT_THAT(error_of(R"([{"type": "MaxPool2d", "kernel_size": [2, 2, 2]}])"), HasSubstr("list of 2 integers"));
  EXPECT_THAT(error_of(R"([{"type": "GELU", "approximate": "fast"}])"), HasSubstr("\"fast\""));
  EXPECT_THAT(error_of(R"([{"type": "Embedding", "num_embeddings": 3, "embedding_dim": 2, "padding_idx": 5}])"),
              HasSubstr("padding_idx"));
}

}  // namespace
