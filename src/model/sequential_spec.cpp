#include "model/sequential_spec.hpp"

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>

#include <functional>
#include <map>

#include "accel/error.hpp"
#include "model/layer_args.hpp"

namespace accel::detail {

namespace {

using Builder = std::function<void(LayerArgs&, torch::nn::Sequential&)>;

torch::ExpandingArray<2> pair(std::array<int64_t, 2> v) { return torch::ExpandingArray<2>({v[0], v[1]}); }
torch::ExpandingArrayWithOptionalElem<2> optional_pair(std::array<int64_t, 2> v) {
  return torch::ExpandingArrayWithOptionalElem<2>({v[0], v[1]});
}

void add_conv2d(LayerArgs& a, torch::nn::Sequential& seq) {
  auto options = torch::nn::Conv2dOptions(a.required_int("in_channels"), a.required_int("out_channels"),
                                          pair(a.required_pair("kernel_size")))
                     .stride(pair(a.pair_or("stride", {1, 1})))
                     .dilation(pair(a.pair_or("dilation", {1, 1})))
                     .groups(a.int_or("groups", 1))
                     .bias(a.bool_or("bias", true));
  if (a.has("padding") && a.raw("padding").is_string()) {
    std::string mode = a.string_or("padding", "valid", {"valid", "same"});
    if (mode == "same") options.padding(torch::kSame);
    else options.padding(torch::kValid);
  } else {
    options.padding(pair(a.pair_or("padding", {0, 0}, 0)));
  }
  seq->push_back(torch::nn::Conv2d(options));
}

void add_batchnorm(LayerArgs& a, torch::nn::Sequential& seq, bool two_d) {
  auto options = torch::nn::BatchNormOptions(a.required_int("num_features"))
                     .eps(a.double_or("eps", 1e-5, 0.0, 1.0))
                     .momentum(a.double_or("momentum", 0.1, 0.0, 1.0))
                     .affine(a.bool_or("affine", true))
                     .track_running_stats(a.bool_or("track_running_stats", true));
  if (two_d) seq->push_back(torch::nn::BatchNorm2d(options));
  else seq->push_back(torch::nn::BatchNorm1d(options));
}

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"Linear",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::Linear(torch::nn::LinearOptions(a.required_int("in_features"),
                                                                   a.required_int("out_features"))
                                              .bias(a.bool_or("bias", true))));
       }},
      {"Conv2d", add_conv2d},
      {"MaxPool2d",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         auto kernel = a.required_pair("kernel_size");
         seq->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(pair(kernel))
                                                 .stride(pair(a.pair_or("stride", kernel)))
                                                 .padding(pair(a.pair_or("padding", {0, 0}, 0)))
                                                 .dilation(pair(a.pair_or("dilation", {1, 1})))
                                                 .ceil_mode(a.bool_or("ceil_mode", false))));
       }},
      {"AvgPool2d",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         auto kernel = a.required_pair("kernel_size");
         seq->push_back(torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(pair(kernel))
                                                 .stride(pair(a.pair_or("stride", kernel)))
                                                 .padding(pair(a.pair_or("padding", {0, 0}, 0)))
                                                 .ceil_mode(a.bool_or("ceil_mode", false))
                                                 .count_include_pad(a.bool_or("count_include_pad", true))));
       }},
      {"AdaptiveMaxPool2d",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::AdaptiveMaxPool2d(
             torch::nn::AdaptiveMaxPool2dOptions(optional_pair(a.required_pair("output_size")))));
       }},
      {"AdaptiveAvgPool2d",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::AdaptiveAvgPool2d(
             torch::nn::AdaptiveAvgPool2dOptions(optional_pair(a.required_pair("output_size")))));
       }},
      {"Dropout",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::Dropout(torch::nn::DropoutOptions(a.double_or("p", 0.5, 0.0, 1.0))));
       }},
      {"Dropout2d",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::Dropout2d(torch::nn::Dropout2dOptions(a.double_or("p", 0.5, 0.0, 1.0))));
       }},
      {"Flatten",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::Flatten(torch::nn::FlattenOptions()
                                               .start_dim(a.int_or("start_dim", 1, -64))
                                               .end_dim(a.int_or("end_dim", -1, -64))));
       }},
      {"ReLU", [](LayerArgs&, torch::nn::Sequential& seq) { seq->push_back(torch::nn::ReLU()); }},
      {"GELU",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::GELU(
             torch::nn::GELUOptions().approximate(a.string_or("approximate", "none", {"none", "tanh"}))));
       }},
      {"Tanh", [](LayerArgs&, torch::nn::Sequential& seq) { seq->push_back(torch::nn::Tanh()); }},
      {"Sigmoid", [](LayerArgs&, torch::nn::Sequential& seq) { seq->push_back(torch::nn::Sigmoid()); }},
      {"BatchNorm1d", [](LayerArgs& a, torch::nn::Sequential& seq) { add_batchnorm(a, seq, false); }},
      {"BatchNorm2d", [](LayerArgs& a, torch::nn::Sequential& seq) { add_batchnorm(a, seq, true); }},
      {"LayerNorm",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions(a.required_int_list("normalized_shape"))
                                                 .eps(a.double_or("eps", 1e-5, 0.0, 1.0))
                                                 .elementwise_affine(a.bool_or("elementwise_affine", true))));
       }},
      {"Embedding",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         int64_t count = a.required_int("num_embeddings");
         auto options = torch::nn::EmbeddingOptions(count, a.required_int("embedding_dim"));
         if (auto padding = a.optional_int("padding_idx", -count)) {
           if (*padding >= count) a.fail_argument("padding_idx", "must be < num_embeddings, got " + std::to_string(*padding));
           options.padding_idx(*padding);
         }
         seq->push_back(torch::nn::Embedding(options));
       }},
      {"LogSoftmax",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::LogSoftmax(torch::nn::LogSoftmaxOptions(a.int_or("dim", 1, -64))));
       }},
      {"Softmax",
       [](LayerArgs& a, torch::nn::Sequential& seq) {
         seq->push_back(torch::nn::Softmax(torch::nn::SoftmaxOptions(a.int_or("dim", 1, -64))));
       }},
  };
  return table;
}

nlohmann::json parse(const std::string& json_text) {
  try {
    return nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorCode::InvalidArgument, std::string("model spec is not valid JSON: ") + e.what());
  }
}

}  // namespace

torch::nn::Sequential build_sequential(const std::string& json_text) {
  nlohmann::json spec = parse(json_text);
  if (spec.is_object() && spec.contains("layers")) spec = spec["layers"];
  require_arg(spec.is_array(), "model spec must be a JSON array of layers or {\"layers\": [...]}, got " +
                                   spec.dump().substr(0, 80));
  require_arg(!spec.empty(), "model spec has no layers");
  torch::nn::Sequential sequential;
  for (size_t i = 0; i < spec.size(); ++i) {
    const auto& layer = spec[i];
    require_arg(layer.is_object() && layer.contains("type") && layer["type"].is_string(),
                "layer " + std::to_string(i) + ": must be an object with a string \"type\", got " +
                    layer.dump().substr(0, 80));
    std::string type = layer["type"];
    auto builder = builders().find(type);
    require_arg(builder != builders().end(), "layer " + std::to_string(i) + ": unknown layer type \"" + type + "\"");
    LayerArgs args(layer, i, type);
    try {
      builder->second(args, sequential);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      std::string message = e.what();
      fail(ErrorCode::InvalidArgument, "layer " + std::to_string(i) + " (" + type + "): " +
                                           message.substr(0, message.find('\n')));
    }
    args.reject_unknown_keys();
  }
  return sequential;
}

}  // namespace accel::detail
