#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>

#include <string>
#include <vector>

#include "accel/error.hpp"
#include "model/sequential_spec.hpp"

namespace {

using accel::detail::build_sequential;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Shape = std::vector<int64_t>;

// The message of the accel::Error that building `spec` throws; any other
// exception type fails the test, since none may escape build_sequential.
std::string error_of(const std::string& spec) {
  try {
    build_sequential(spec);
  } catch (const accel::Error& e) {
    EXPECT_EQ(e.code(), accel::ErrorCode::InvalidArgument) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "spec " << spec << " threw a non-accel exception: " << e.what();
    return "wrong exception";
  }
  ADD_FAILURE() << "spec " << spec << " was accepted";
  return "no error";
}

std::vector<std::string> parameter_names(const torch::nn::Sequential& net) {
  std::vector<std::string> names;
  for (const auto& item : net->named_parameters()) names.push_back(item.key());
  return names;
}

Shape shape_of(const torch::ExpandingArray<2>& sizes) { return at::IntArrayRef(sizes).vec(); }

// PyTorch's examples/mnist Net (the model of Accelerate's MNIST example),
// written as an nn.Sequential.
constexpr const char* kMnistCnn = R"({"layers": [
  {"type": "Conv2d", "in_channels": 1, "out_channels": 32, "kernel_size": 3, "stride": 1},
  {"type": "ReLU"},
  {"type": "Conv2d", "in_channels": 32, "out_channels": 64, "kernel_size": [3, 3]},
  {"type": "ReLU"},
  {"type": "MaxPool2d", "kernel_size": 2},
  {"type": "Dropout", "p": 0.25},
  {"type": "Flatten", "start_dim": 1},
  {"type": "Linear", "in_features": 9216, "out_features": 128},
  {"type": "ReLU"},
  {"type": "Dropout", "p": 0.5},
  {"type": "Linear", "in_features": 128, "out_features": 10},
  {"type": "LogSoftmax", "dim": 1}]})";

TEST(SequentialSpec, MnistCnnHasPyTorchsShapeNamesAndCounts) {
  auto net = build_sequential(kMnistCnn);

  at::Tensor output = net->forward(at::randn({3, 1, 28, 28}));
  EXPECT_EQ(output.sizes(), (Shape{3, 10}));
  EXPECT_TRUE(at::allclose(output.exp().sum(1), at::ones({3})));

  std::vector<std::string> child_names;
  for (const auto& child : net->named_children()) child_names.push_back(child.key());
  EXPECT_EQ(child_names, (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"}));

  EXPECT_EQ(parameter_names(net), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias", "7.weight",
                                                            "7.bias", "10.weight", "10.bias"}));
  auto parameters = net->named_parameters();
  EXPECT_EQ(parameters["0.weight"].sizes(), (Shape{32, 1, 3, 3}));
  EXPECT_EQ(parameters["2.weight"].sizes(), (Shape{64, 32, 3, 3}));
  EXPECT_EQ(parameters["7.weight"].sizes(), (Shape{128, 9216}));
  EXPECT_EQ(parameters["10.weight"].sizes(), (Shape{10, 128}));

  int64_t count = 0;
  for (const auto& parameter : net->parameters()) count += parameter.numel();
  const int64_t conv1 = 32 * 1 * 3 * 3 + 32;
  const int64_t conv2 = 64 * 32 * 3 * 3 + 64;
  const int64_t fc1 = 9216 * 128 + 128;  // 64 channels * 12 * 12 after the pool
  const int64_t fc2 = 128 * 10 + 10;
  EXPECT_EQ(count, conv1 + conv2 + fc1 + fc2);
  EXPECT_EQ(count, 1199882);  // what sum(p.numel() for p in Net().parameters()) prints in Python
}

TEST(SequentialSpec, BareArrayAndLayersObjectBuildTheSameModel) {
  const std::string layers =
      R"([{"type": "Linear", "in_features": 4, "out_features": 3}, {"type": "Tanh"},
          {"type": "Linear", "in_features": 3, "out_features": 2, "bias": false}])";
  auto from_array = build_sequential(layers);
  auto from_object = build_sequential(R"({"layers": )" + layers + "}");
  std::vector<std::string> expected{"0.weight", "0.bias", "2.weight"};
  EXPECT_EQ(parameter_names(from_array), expected);
  EXPECT_EQ(parameter_names(from_object), expected);
}

TEST(SequentialSpec, BatchNormBuffersHavePyTorchsStateDictNames) {
  auto net = build_sequential(R"([{"type": "Conv2d", "in_channels": 3, "out_channels": 4, "kernel_size": 1},
                                  {"type": "BatchNorm2d", "num_features": 4}])");
  std::vector<std::string> buffers;
  for (const auto& item : net->named_buffers()) buffers.push_back(item.key());
  EXPECT_EQ(buffers, (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(parameter_names(net), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"}));
}

TEST(SequentialSpec, EveryLayerTypeBuildsAndRunsForward) {
  struct Case {
    const char* spec;
    Shape input;
    Shape expected_output;
    bool integer_input = false;
  };
  const std::vector<Case> cases = {
      {R"([{"type": "Linear", "in_features": 4, "out_features": 3, "bias": false}])", {2, 4}, {2, 3}},
      {R"([{"type": "Conv2d", "in_channels": 2, "out_channels": 4, "kernel_size": [3, 1], "stride": [1, 2],
            "padding": [1, 0], "dilation": 1, "groups": 2, "bias": false}])",
       {1, 2, 6, 6},
       {1, 4, 6, 3}},
      {R"([{"type": "Conv2d", "in_channels": 2, "out_channels": 3, "kernel_size": 4, "padding": "same",
            "padding_mode": "reflect"}])",
       {1, 2, 6, 6},
       {1, 3, 6, 6}},
      {R"([{"type": "Conv2d", "in_channels": 2, "out_channels": 3, "kernel_size": 3, "padding": "valid",
            "dilation": [2, 1]}])",
       {1, 2, 7, 7},
       {1, 3, 3, 5}},
      {R"([{"type": "MaxPool2d", "kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1, "ceil_mode": true,
            "return_indices": false}])",
       {1, 2, 8, 8},
       {1, 2, 5, 5}},
      {R"([{"type": "AvgPool2d", "kernel_size": [2, 2], "stride": null, "padding": 1, "ceil_mode": false,
            "count_include_pad": false, "divisor_override": 3}])",
       {1, 2, 4, 4},
       {1, 2, 3, 3}},
      {R"([{"type": "AdaptiveMaxPool2d", "output_size": [2, null]}])", {1, 2, 5, 7}, {1, 2, 2, 7}},
      {R"([{"type": "AdaptiveAvgPool2d", "output_size": 3}])", {1, 2, 5, 5}, {1, 2, 3, 3}},
      {R"([{"type": "Dropout", "p": 0.2, "inplace": false}])", {3, 4}, {3, 4}},
      {R"([{"type": "Dropout2d", "p": 1}])", {2, 3, 4, 4}, {2, 3, 4, 4}},
      {R"([{"type": "Flatten", "start_dim": 0, "end_dim": -2}])", {2, 3, 4}, {6, 4}},
      {R"([{"type": "ReLU", "inplace": true}, {"type": "LeakyReLU", "negative_slope": 0.2}])", {3, 4}, {3, 4}},
      {R"([{"type": "GELU"}, {"type": "GELU", "approximate": "tanh"}])", {3, 4}, {3, 4}},
      {R"([{"type": "Tanh"}, {"type": "Sigmoid"}])", {3, 4}, {3, 4}},
      {R"([{"type": "BatchNorm1d", "num_features": 4, "eps": 0.001, "momentum": null, "affine": false,
            "track_running_stats": false}])",
       {3, 4},
       {3, 4}},
      {R"([{"type": "BatchNorm2d", "num_features": 2, "momentum": 0.01}])", {3, 2, 4, 4}, {3, 2, 4, 4}},
      {R"([{"type": "LayerNorm", "normalized_shape": [3, 4], "elementwise_affine": false}])", {2, 3, 4}, {2, 3, 4}},
      {R"([{"type": "LayerNorm", "normalized_shape": 4, "eps": 1e-6}])", {2, 4}, {2, 4}},
      {R"([{"type": "Embedding", "num_embeddings": 10, "embedding_dim": 3, "padding_idx": 0, "max_norm": 1.0,
            "norm_type": 2.0, "scale_grad_by_freq": true}])",
       {2, 5},
       {2, 5, 3},
       true},
      {R"([{"type": "Softmax", "dim": -1}, {"type": "LogSoftmax", "dim": 0}])", {3, 4}, {3, 4}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    auto net = build_sequential(c.spec);
    at::Tensor input = c.integer_input ? at::randint(0, 10, c.input, at::kLong) : at::randn(c.input);
    at::Tensor output;
    ASSERT_NO_THROW(output = net->forward(input));
    EXPECT_EQ(output.sizes(), c.expected_output);
  }
}

TEST(SequentialSpec, OmittedArgumentsTakePyTorchsDefaults) {
  auto net = build_sequential(R"([
    {"type": "Linear", "in_features": 2, "out_features": 2},
    {"type": "Conv2d", "in_channels": 1, "out_channels": 1, "kernel_size": 3},
    {"type": "MaxPool2d", "kernel_size": 3},
    {"type": "AvgPool2d", "kernel_size": [2, 3]},
    {"type": "Dropout"},
    {"type": "Dropout2d"},
    {"type": "Flatten"},
    {"type": "GELU"},
    {"type": "BatchNorm1d", "num_features": 3},
    {"type": "LayerNorm", "normalized_shape": 5},
    {"type": "Embedding", "num_embeddings": 4, "embedding_dim": 2},
    {"type": "LeakyReLU"},
    {"type": "ReLU"}])");

  EXPECT_TRUE(net[0]->as<torch::nn::Linear>()->options.bias());

  auto* conv = net[1]->as<torch::nn::Conv2d>();
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(shape_of(conv->options.stride()), (Shape{1, 1}));
  EXPECT_EQ(shape_of(conv->options.dilation()), (Shape{1, 1}));
  EXPECT_EQ(conv->options.groups(), 1);
  EXPECT_TRUE(conv->options.bias());
  // padding=0: a 3x3 kernel shrinks a 5x5 input to 3x3.
  EXPECT_EQ(conv->forward(at::randn({1, 1, 5, 5})).sizes(), (Shape{1, 1, 3, 3}));

  auto* max_pool = net[2]->as<torch::nn::MaxPool2d>();
  ASSERT_NE(max_pool, nullptr);
  EXPECT_EQ(shape_of(max_pool->options.stride()), (Shape{3, 3}));  // stride defaults to kernel_size
  EXPECT_EQ(shape_of(max_pool->options.padding()), (Shape{0, 0}));
  EXPECT_EQ(shape_of(max_pool->options.dilation()), (Shape{1, 1}));
  EXPECT_FALSE(max_pool->options.ceil_mode());

  auto* avg_pool = net[3]->as<torch::nn::AvgPool2d>();
  ASSERT_NE(avg_pool, nullptr);
  EXPECT_EQ(shape_of(avg_pool->options.stride()), (Shape{2, 3}));
  EXPECT_TRUE(avg_pool->options.count_include_pad());
  EXPECT_FALSE(avg_pool->options.ceil_mode());
  EXPECT_FALSE(avg_pool->options.divisor_override().has_value());

  EXPECT_EQ(net[4]->as<torch::nn::Dropout>()->options.p(), 0.5);
  EXPECT_FALSE(net[4]->as<torch::nn::Dropout>()->options.inplace());
  EXPECT_EQ(net[5]->as<torch::nn::Dropout2d>()->options.p(), 0.5);

  auto* flatten = net[6]->as<torch::nn::Flatten>();
  ASSERT_NE(flatten, nullptr);
  EXPECT_EQ(flatten->options.start_dim(), 1);
  EXPECT_EQ(flatten->options.end_dim(), -1);

  EXPECT_EQ(net[7]->as<torch::nn::GELU>()->options.approximate(), "none");

  auto* batch_norm = net[8]->as<torch::nn::BatchNorm1d>();
  ASSERT_NE(batch_norm, nullptr);
  EXPECT_EQ(batch_norm->options.eps(), 1e-5);
  ASSERT_TRUE(batch_norm->options.momentum().has_value());
  EXPECT_EQ(*batch_norm->options.momentum(), 0.1);
  EXPECT_TRUE(batch_norm->options.affine());
  EXPECT_TRUE(batch_norm->options.track_running_stats());

  auto* layer_norm = net[9]->as<torch::nn::LayerNorm>();
  ASSERT_NE(layer_norm, nullptr);
  EXPECT_EQ(layer_norm->options.normalized_shape(), (Shape{5}));
  EXPECT_EQ(layer_norm->options.eps(), 1e-5);
  EXPECT_TRUE(layer_norm->options.elementwise_affine());

  auto* embedding = net[10]->as<torch::nn::Embedding>();
  ASSERT_NE(embedding, nullptr);
  EXPECT_FALSE(embedding->options.padding_idx().has_value());
  EXPECT_FALSE(embedding->options.max_norm().has_value());
  EXPECT_EQ(embedding->options.norm_type(), 2.0);
  EXPECT_FALSE(embedding->options.scale_grad_by_freq());

  EXPECT_EQ(net[11]->as<torch::nn::LeakyReLU>()->options.negative_slope(), 0.01);
  EXPECT_FALSE(net[12]->as<torch::nn::ReLU>()->options.inplace());
}

TEST(SequentialSpec, NullAndNegativeValuesFollowPython) {
  auto net = build_sequential(R"([
    {"type": "MaxPool2d", "kernel_size": 2, "stride": null},
    {"type": "BatchNorm2d", "num_features": 2, "momentum": null},
    {"type": "Embedding", "num_embeddings": 6, "embedding_dim": 2, "padding_idx": -1}])");
  EXPECT_EQ(shape_of(net[0]->as<torch::nn::MaxPool2d>()->options.stride()), (Shape{2, 2}));
  EXPECT_FALSE(net[1]->as<torch::nn::BatchNorm2d>()->options.momentum().has_value());
  // Python stores padding_idx=-1 as num_embeddings - 1.
  auto padding_idx = net[2]->as<torch::nn::Embedding>()->options.padding_idx();
  ASSERT_TRUE(padding_idx.has_value());
  EXPECT_EQ(*padding_idx, 5);
}

TEST(SequentialSpec, MalformedSpecsAreRejected) {
  EXPECT_THAT(error_of("[{\"type\": \"ReLU\"},\n  {"), AllOf(HasSubstr("not valid JSON"), HasSubstr("line 2, column")));
  EXPECT_THAT(error_of(""), HasSubstr("not valid JSON"));
  EXPECT_THAT(error_of("42"), AllOf(HasSubstr("must be a JSON array of layers"), HasSubstr("got 42")));
  EXPECT_THAT(error_of(R"({"type": "ReLU"})"), HasSubstr("must be a JSON array of layers"));
  EXPECT_THAT(error_of(R"({"layers": "ReLU"})"), AllOf(HasSubstr("must be a JSON array"), HasSubstr("\"ReLU\"")));
  EXPECT_THAT(error_of(R"({"layers": [{"type": "ReLU"}], "name": "net"})"), HasSubstr("unknown key \"name\""));
  EXPECT_THAT(error_of("[]"), HasSubstr("no layers"));
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, 7])"), AllOf(HasSubstr("layer 1: must be an object"), HasSubstr("7")));
  EXPECT_THAT(error_of(R"([{"units": 3}])"), HasSubstr("layer 0: missing \"type\""));
  EXPECT_THAT(error_of(R"([{"type": 3}])"), HasSubstr("layer 0: \"type\" must be a string, got 3"));
  EXPECT_THAT(error_of(R"([{"type": "Conv3x"}])"), HasSubstr("layer 0: unknown layer type \"Conv3x\""));
}

TEST(SequentialSpec, BadArgumentsNameTheLayerTypeAndValue) {
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, {"type": "ReLU"}, {"type": "ReLU"},
                          {"type": "Conv2d", "in_channels": 1, "kernel_size": 3}])"),
              HasSubstr("layer 3 (Conv2d): missing required argument \"out_channels\""));
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, {"type": "ReLU"},
                          {"type": "Linear", "in_features": -4, "out_features": 2}])"),
              HasSubstr("layer 2 (Linear): argument \"in_features\" must be a positive integer, got -4"));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": "8", "out_features": 2}])"),
              HasSubstr("layer 0 (Linear): argument \"in_features\" must be a positive integer, got \"8\""));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 8, "out_features": 0}])"),
              HasSubstr("argument \"out_features\" must be a positive integer, got 0"));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 18446744073709551615, "out_features": 2}])"),
              HasSubstr("argument \"in_features\" is too large"));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 8, "out_features": 2, "bias": 1}])"),
              HasSubstr("argument \"bias\" must be true or false, got 1"));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "out_channels": 2, "kernel_size": 2.5}])"),
              HasSubstr("argument \"kernel_size\" must be a positive integer, got 2.5"));
  EXPECT_THAT(error_of(R"([{"type": "MaxPool2d", "kernel_size": [2, 2, 2]}])"),
              HasSubstr("layer 0 (MaxPool2d): argument \"kernel_size\" must be a positive integer or a list of 2"));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "out_channels": 2, "kernel_size": 3, "padding": -1}])"),
              HasSubstr("argument \"padding\" must be a non-negative integer, got -1"));
  EXPECT_THAT(error_of(R"([{"type": "Dropout", "p": 1.5}])"),
              HasSubstr("layer 0 (Dropout): argument \"p\" must be a probability in [0, 1], got 1.5"));
  EXPECT_THAT(error_of(R"([{"type": "Dropout2d", "p": -0.1}])"), HasSubstr("argument \"p\" must be a probability"));
  EXPECT_THAT(error_of(R"([{"type": "BatchNorm1d", "num_features": 3, "momentum": 2}])"),
              HasSubstr("argument \"momentum\" must be a probability in [0, 1], got 2"));
  EXPECT_THAT(error_of(R"([{"type": "BatchNorm2d", "num_features": 3, "eps": -1e-5}])"),
              HasSubstr("argument \"eps\" must be a non-negative number"));
  EXPECT_THAT(error_of(R"([{"type": "ReLU"}, {"type": "ReLU", "inplace_x": true}])"),
              HasSubstr("layer 1 (ReLU): unknown argument \"inplace_x\""));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 2, "out_feature": 2}])"),
              HasSubstr("missing required argument \"out_features\" (unknown argument \"out_feature\": did you mean "
                        "\"out_features\"?)"));
  EXPECT_THAT(
      error_of(R"([{"type": "Linear", "in_feature": 2, "out_features": 2}])"),
      HasSubstr("layer 0 (Linear): missing required argument \"in_features\" (unknown argument \"in_feature\""));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "out_features": 2}])"),  // a real key is not taken for a typo
              AllOf(HasSubstr("missing required argument \"in_features\""), Not(HasSubstr("did you mean"))));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 2, "out_features": 2, "bais": false}])"),
              HasSubstr("layer 0 (Linear): unknown argument \"bais\" (did you mean \"bias\"?)"));
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 2, "out_features": 2, "colour": 1}])"),
              AllOf(HasSubstr("unknown argument \"colour\""), Not(HasSubstr("did you mean"))));
  EXPECT_THAT(error_of(R"([{"type": "GELU", "approximate": "fast"}])"),
              HasSubstr("argument \"approximate\" must be one of \"none\", \"tanh\", got \"fast\""));
  EXPECT_THAT(error_of(R"([{"type": "LayerNorm", "normalized_shape": []}])"),
              HasSubstr("argument \"normalized_shape\" must be a positive integer or a non-empty list"));
  EXPECT_THAT(error_of(R"([{"type": "LayerNorm", "normalized_shape": [4, 0]}])"),
              HasSubstr("argument \"normalized_shape\" must be a positive integer, got 0"));
  EXPECT_THAT(error_of(R"([{"type": "Softmax"}])"), HasSubstr("layer 0 (Softmax): missing required argument \"dim\""));
}

TEST(SequentialSpec, ArgumentsLibTorchWouldAssertOnAreCaughtFirst) {
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 4, "out_channels": 6, "kernel_size": 1, "groups": 3}])"),
              HasSubstr("argument \"groups\" must divide in_channels (4) and out_channels (6), got 3"));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "out_channels": 1, "kernel_size": 3,
                          "padding": "same", "stride": 2}])"),
              HasSubstr("argument \"padding\" \"same\" needs stride 1"));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "out_channels": 1, "kernel_size": 3,
                          "padding": "full"}])"),
              HasSubstr("argument \"padding\" must be one of \"valid\", \"same\", got \"full\""));
  EXPECT_THAT(error_of(R"([{"type": "Conv2d", "in_channels": 1, "out_channels": 1, "kernel_size": 3,
                          "padding_mode": "mirror"}])"),
              HasSubstr("argument \"padding_mode\" must be one of"));
  EXPECT_THAT(error_of(R"([{"type": "MaxPool2d", "kernel_size": 3, "padding": 2}])"),
              HasSubstr("argument \"padding\" must be at most half of kernel_size [3, 3], got [2, 2]"));
  EXPECT_THAT(error_of(R"([{"type": "AvgPool2d", "kernel_size": 2, "divisor_override": 0}])"),
              HasSubstr("argument \"divisor_override\" must be a positive integer, got 0"));
  EXPECT_THAT(error_of(R"([{"type": "MaxPool2d", "kernel_size": 2, "return_indices": true}])"),
              HasSubstr("argument \"return_indices\" must be false"));
  EXPECT_THAT(error_of(R"([{"type": "AdaptiveMaxPool2d", "output_size": [0, 2]}])"),
              HasSubstr("argument \"output_size\" must be a positive integer, got 0"));
  EXPECT_THAT(error_of(R"([{"type": "Flatten", "start_dim": 3, "end_dim": 1}])"),
              HasSubstr("argument \"start_dim\" must not come after end_dim (1), got 3"));
  EXPECT_THAT(error_of(R"([{"type": "Embedding", "num_embeddings": 3, "embedding_dim": 2, "padding_idx": 5}])"),
              HasSubstr("argument \"padding_idx\" must be in [-num_embeddings, num_embeddings) = [-3, 3), got 5"));
  EXPECT_THAT(error_of(R"([{"type": "Embedding", "num_embeddings": 3, "embedding_dim": 2, "max_norm": 0}])"),
              HasSubstr("argument \"max_norm\" must be a positive number, got 0"));
}

TEST(SequentialSpec, LibTorchFailuresBecomeAccelErrors) {
  // Valid one by one, but 10^20 weights overflow LibTorch's size computation.
  EXPECT_THAT(error_of(R"([{"type": "Linear", "in_features": 10000000000, "out_features": 10000000000}])"),
              AllOf(HasSubstr("layer 0 (Linear): LibTorch rejected the arguments"), HasSubstr("overflow")));
  EXPECT_THAT(error_of(R"([{"type": "Dropout", "p": 1e400}])"), HasSubstr("not valid JSON"));
}

}  // namespace
