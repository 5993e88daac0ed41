#include "model/sequential_spec.hpp"

#include <c10/util/Exception.h>
#include <malloc.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/pooling.h>

#include <map>
#include <new>

#include "accel/error.hpp"
#include "core/json.hpp"
#include "model/meta_tensors.hpp"
#include "model/layer_args.hpp"
#include "model/spec/sequence_layers.hpp"

namespace accel::detail {

namespace {

using torch::nn::AnyModule;

torch::ExpandingArray<2> expanding(const std::array<int64_t, 2>& pair) {
  return torch::ExpandingArray<2>(std::vector<int64_t>{pair[0], pair[1]});
}

std::string pair_text(const std::array<int64_t, 2>& pair) {
  return "[" + std::to_string(pair[0]) + ", " + std::to_string(pair[1]) + "]";
}

template <typename Optional>
Optional to_c10(const std::optional<typename Optional::value_type>& value) {
  return value ? Optional(*value) : Optional(c10::nullopt);
}

// LibTorch's pooling kernels reject a padding above half the kernel only when
// the forward runs; checking here names the layer instead.
void require_pool_padding_fits(LayerArgs& args, const std::array<int64_t, 2>& padding,
                               const std::array<int64_t, 2>& kernel) {
  if (padding[0] > kernel[0] / 2 || padding[1] > kernel[1] / 2) {
    args.fail_argument("padding",
                       "must be at most half of kernel_size " + pair_text(kernel) + ", got " + pair_text(padding));
  }
}

// Python's return_indices=True makes the layer return a tuple, which cannot be
// chained in a Sequential; only the default is accepted.
void reject_return_indices(LayerArgs& args) {
  if (args.bool_or("return_indices", false)) {
    args.fail_argument("return_indices", "must be false in a sequential model (the layer would return a tuple)");
  }
}

AnyModule linear(LayerArgs& args) {
  int64_t in_features = args.required_int("in_features", kPositiveInt);
  int64_t out_features = args.required_int("out_features", kPositiveInt);
  bool bias = args.bool_or("bias", true);
  return AnyModule(torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(bias)));
}

torch::nn::Conv2dOptions::padding_mode_t conv_padding_mode(const std::string& name) {
  static const std::map<std::string, torch::nn::Conv2dOptions::padding_mode_t> modes = {
      {"zeros", torch::kZeros},
      {"reflect", torch::kReflect},
      {"replicate", torch::kReplicate},
      {"circular", torch::kCircular}};
  return modes.at(name);
}

AnyModule conv2d(LayerArgs& args) {
  int64_t in_channels = args.required_int("in_channels", kPositiveInt);
  int64_t out_channels = args.required_int("out_channels", kPositiveInt);
  auto kernel = args.required_pair("kernel_size", kPositiveInt);
  auto stride = args.pair_or("stride", {1, 1}, kPositiveInt);
  auto dilation = args.pair_or("dilation", {1, 1}, kPositiveInt);
  int64_t groups = args.int_or("groups", 1, kPositiveInt);
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    args.fail_argument("groups", "must divide in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                                     std::to_string(out_channels) + "), got " + std::to_string(groups));
  }
  auto options = torch::nn::Conv2dOptions(in_channels, out_channels, expanding(kernel))
                     .stride(expanding(stride))
                     .dilation(expanding(dilation))
                     .groups(groups)
                     .bias(args.bool_or("bias", true))
                     .padding_mode(conv_padding_mode(
                         args.choice_or("padding_mode", "zeros", {"zeros", "reflect", "replicate", "circular"})));
  if (args.is_string("padding")) {
    if (args.choice_or("padding", "valid", {"valid", "same"}) == "same") {
      if (stride != std::array<int64_t, 2>{1, 1}) {
        args.fail_argument("padding", "\"same\" needs stride 1, as in PyTorch; got stride " + pair_text(stride));
      }
      options.padding(torch::kSame);
    } else {
      options.padding(torch::kValid);
    }
  } else {
    options.padding(expanding(args.pair_or("padding", {0, 0}, kNonNegativeInt)));
  }
  return AnyModule(torch::nn::Conv2d(options));
}

AnyModule max_pool2d(LayerArgs& args) {
  auto kernel = args.required_pair("kernel_size", kPositiveInt);
  auto stride = args.pair_or_null("stride", kernel, kPositiveInt);
  auto padding = args.pair_or("padding", {0, 0}, kNonNegativeInt);
  require_pool_padding_fits(args, padding, kernel);
  auto dilation = args.pair_or("dilation", {1, 1}, kPositiveInt);
  bool ceil_mode = args.bool_or("ceil_mode", false);
  reject_return_indices(args);
  return AnyModule(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(expanding(kernel))
                                            .stride(expanding(stride))
                                            .padding(expanding(padding))
                                            .dilation(expanding(dilation))
                                            .ceil_mode(ceil_mode)));
}

AnyModule avg_pool2d(LayerArgs& args) {
  auto kernel = args.required_pair("kernel_size", kPositiveInt);
  auto stride = args.pair_or_null("stride", kernel, kPositiveInt);
  auto padding = args.pair_or("padding", {0, 0}, kNonNegativeInt);
  require_pool_padding_fits(args, padding, kernel);
  bool ceil_mode = args.bool_or("ceil_mode", false);
  bool count_include_pad = args.bool_or("count_include_pad", true);
  auto divisor_override = args.optional_int("divisor_override", kPositiveInt);
  return AnyModule(torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(expanding(kernel))
                                            .stride(expanding(stride))
                                            .padding(expanding(padding))
                                            .ceil_mode(ceil_mode)
                                            .count_include_pad(count_include_pad)
                                            .divisor_override(to_c10<c10::optional<int64_t>>(divisor_override))));
}

// A null element keeps that input dimension, as Python's None.
torch::ExpandingArrayWithOptionalElem<2> adaptive_output_size(LayerArgs& args) {
  auto size = args.required_pair_of_optional("output_size", kPositiveInt);
  return torch::ExpandingArrayWithOptionalElem<2>(std::array<c10::optional<int64_t>, 2>{
      to_c10<c10::optional<int64_t>>(size[0]), to_c10<c10::optional<int64_t>>(size[1])});
}

AnyModule adaptive_max_pool2d(LayerArgs& args) {
  auto output_size = adaptive_output_size(args);
  reject_return_indices(args);
  // AdaptiveMaxPool2d::forward returns only the pooled tensor (the indices come
  // from forward_with_indices), so it chains like any other layer.
  return AnyModule(torch::nn::AdaptiveMaxPool2d(torch::nn::AdaptiveMaxPool2dOptions(output_size)));
}

AnyModule adaptive_avg_pool2d(LayerArgs& args) {
  return AnyModule(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions(adaptive_output_size(args))));
}

AnyModule dropout(LayerArgs& args) {
  double p = args.real_or("p", 0.5, kProbability);
  bool inplace = args.bool_or("inplace", false);
  return AnyModule(torch::nn::Dropout(torch::nn::DropoutOptions(p).inplace(inplace)));
}

AnyModule dropout2d(LayerArgs& args) {
  double p = args.real_or("p", 0.5, kProbability);
  bool inplace = args.bool_or("inplace", false);
  return AnyModule(torch::nn::Dropout2d(torch::nn::Dropout2dOptions(p).inplace(inplace)));
}

AnyModule flatten(LayerArgs& args) {
  int64_t start_dim = args.int_or("start_dim", 1, kAnyInt);
  int64_t end_dim = args.int_or("end_dim", -1, kAnyInt);
  // Whether a dim exists depends on the input's rank, known only in forward;
  // an order that no rank can satisfy is caught here.
  if ((start_dim >= 0) == (end_dim >= 0) && start_dim > end_dim) {
    args.fail_argument(
        "start_dim", "must not come after end_dim (" + std::to_string(end_dim) + "), got " + std::to_string(start_dim));
  }
  return AnyModule(torch::nn::Flatten(torch::nn::FlattenOptions().start_dim(start_dim).end_dim(end_dim)));
}

AnyModule relu(LayerArgs& args) {
  return AnyModule(torch::nn::ReLU(torch::nn::ReLUOptions(args.bool_or("inplace", false))));
}

AnyModule leaky_relu(LayerArgs& args) {
  double negative_slope = args.real_or("negative_slope", 0.01, kAnyReal);
  bool inplace = args.bool_or("inplace", false);
  return AnyModule(torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(negative_slope).inplace(inplace)));
}

AnyModule gelu(LayerArgs& args) {
  std::string approximate = args.choice_or("approximate", "none", {"none", "tanh"});
  return AnyModule(torch::nn::GELU(torch::nn::GELUOptions().approximate(approximate)));
}

AnyModule tanh_layer(LayerArgs&) { return AnyModule(torch::nn::Tanh()); }
AnyModule sigmoid_layer(LayerArgs&) { return AnyModule(torch::nn::Sigmoid()); }

torch::nn::BatchNormOptions batch_norm_options(LayerArgs& args) {
  int64_t num_features = args.required_int("num_features", kPositiveInt);
  double eps = args.real_or("eps", 1e-5, kNonNegativeReal);
  // Python's momentum=None selects a cumulative moving average.
  auto momentum = to_c10<c10::optional<double>>(args.real_or_null("momentum", 0.1, kProbability));
  bool affine = args.bool_or("affine", true);
  bool track_running_stats = args.bool_or("track_running_stats", true);
  return torch::nn::BatchNormOptions(num_features)
      .eps(eps)
      .momentum(momentum)
      .affine(affine)
      .track_running_stats(track_running_stats);
}

AnyModule batch_norm1d(LayerArgs& args) { return AnyModule(torch::nn::BatchNorm1d(batch_norm_options(args))); }
AnyModule batch_norm2d(LayerArgs& args) { return AnyModule(torch::nn::BatchNorm2d(batch_norm_options(args))); }

AnyModule layer_norm(LayerArgs& args) {
  auto normalized_shape = args.required_int_list("normalized_shape", kPositiveInt);
  double eps = args.real_or("eps", 1e-5, kNonNegativeReal);
  bool elementwise_affine = args.bool_or("elementwise_affine", true);
  return AnyModule(torch::nn::LayerNorm(
      torch::nn::LayerNormOptions(normalized_shape).eps(eps).elementwise_affine(elementwise_affine)));
}

AnyModule embedding(LayerArgs& args) {
  int64_t num_embeddings = args.required_int("num_embeddings", kPositiveInt);
  int64_t embedding_dim = args.required_int("embedding_dim", kPositiveInt);
  auto options = torch::nn::EmbeddingOptions(num_embeddings, embedding_dim);
  if (auto padding_idx = args.optional_int("padding_idx", kAnyInt)) {
    if (*padding_idx < -num_embeddings || *padding_idx >= num_embeddings) {
      args.fail_argument("padding_idx", "must be in [-num_embeddings, num_embeddings) = [" +
                                            std::to_string(-num_embeddings) + ", " + std::to_string(num_embeddings) +
                                            "), got " + std::to_string(*padding_idx));
    }
    // Stored non-negative, as PyTorch's module attribute is.
    options.padding_idx(*padding_idx < 0 ? *padding_idx + num_embeddings : *padding_idx);
  }
  options.max_norm(to_c10<c10::optional<double>>(args.optional_real("max_norm", kPositiveReal)));
  options.norm_type(args.real_or("norm_type", 2.0, kPositiveReal));
  options.scale_grad_by_freq(args.bool_or("scale_grad_by_freq", false));
  return AnyModule(torch::nn::Embedding(options));
}

// Python's dim=None picks a dim from the input's rank with a deprecation
// warning; a spec must name it.
AnyModule softmax(LayerArgs& args) {
  return AnyModule(torch::nn::Softmax(torch::nn::SoftmaxOptions(args.required_int("dim", kAnyInt))));
}

AnyModule log_softmax(LayerArgs& args) {
  return AnyModule(torch::nn::LogSoftmax(torch::nn::LogSoftmaxOptions(args.required_int("dim", kAnyInt))));
}

const std::map<std::string, LayerBuilder>& layer_builders() {
  static const std::map<std::string, LayerBuilder> builders = {
      {"Linear", linear},
      {"Conv2d", conv2d},
      {"MaxPool2d", max_pool2d},
      {"AvgPool2d", avg_pool2d},
      {"AdaptiveMaxPool2d", adaptive_max_pool2d},
      {"AdaptiveAvgPool2d", adaptive_avg_pool2d},
      {"Dropout", dropout},
      {"Dropout2d", dropout2d},
      {"Flatten", flatten},
      {"ReLU", relu},
      {"LeakyReLU", leaky_relu},
      {"GELU", gelu},
      {"Tanh", tanh_layer},
      {"Sigmoid", sigmoid_layer},
      {"BatchNorm1d", batch_norm1d},
      {"BatchNorm2d", batch_norm2d},
      {"LayerNorm", layer_norm},
      {"Embedding", embedding},
      {"Softmax", softmax},
      {"LogSoftmax", log_softmax},
  };
  return builders;
}

// The table's types, then those for sequences (attention, recurrent layers).
const LayerBuilder* find_builder(const std::string& type) {
  for (const auto* table : {&layer_builders(), &sequence_layer_builders()}) {
    auto it = table->find(type);
    if (it != table->end()) return &it->second;
  }
  return nullptr;
}

const nlohmann::json& layer_list(const nlohmann::json& spec) {
  const std::string expected =
      "model spec must be a JSON array of layers, an object {\"layers\": [...]} or a graph {\"inputs\": [...], "
      "\"nodes\": [...], \"outputs\": [...]}";
  const nlohmann::json* layers = &spec;
  if (spec.is_object()) {
    auto it = spec.find("layers");
    if (it == spec.end()) fail(ErrorCode::InvalidArgument, expected + ", got an object without \"layers\"");
    for (const auto& item : spec.items()) {
      if (item.key() != "layers") {
        fail(ErrorCode::InvalidArgument,
             "model spec: unknown key \"" + item.key() + "\" (only \"layers\" and \"init\" are allowed)");
      }
    }
    layers = &*it;
  }
  if (!layers->is_array()) fail(ErrorCode::InvalidArgument, expected + ", got " + describe_json(*layers));
  // LibTorch's Sequential refuses to run forward when empty, so an empty spec
  // could never train.
  require_arg(!layers->empty(), "model spec has no layers");
  return *layers;
}

}  // namespace

nlohmann::json parse_model_spec(const std::string& json_text) {
  // The parser's message carries the line and column.
  return parse_json(json_text, "model spec", ErrorCode::InvalidArgument);
}

AnyModule build_layer(const nlohmann::json& layer, const std::string& where) {
  if (!layer.is_object()) {
    fail(ErrorCode::InvalidArgument, where + ": must be an object with a \"type\", got " + describe_json(layer));
  }
  auto type_it = layer.find("type");
  if (type_it == layer.end()) fail(ErrorCode::InvalidArgument, where + ": missing \"type\"");
  if (!type_it->is_string()) {
    fail(ErrorCode::InvalidArgument, where + ": \"type\" must be a string, got " + describe_json(*type_it));
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  const LayerBuilder* builder = find_builder(type);
  if (builder == nullptr) fail(ErrorCode::InvalidArgument, where + ": unknown layer type \"" + type + "\"");

  LayerArgs args(layer, where + " (" + type + ")");
  const std::string context = args.where() + ": ";
  AnyModule module;
  // The builders validate every argument first; these handlers keep anything
  // LibTorch or the allocator still throws from escaping untranslated.
  try {
    module = (*builder)(args);
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    fail(ErrorCode::InvalidArgument, context + "LibTorch rejected the arguments: " + e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    fail(ErrorCode::InvalidArgument, context + "not enough memory for the layer's parameters");
  } catch (const std::exception& e) {
    fail(ErrorCode::InvalidArgument, context + e.what());
  }
  args.reject_unknown_keys();
  if (EmptyInitScope::active()) {
    move_to_meta(*module.ptr());
    // glibc keeps freed layer-sized buffers in its heap once its mmap threshold
    // has risen; handing them back keeps building at one layer of peak RSS.
    malloc_trim(0);
  }
  return module;
}

namespace {
thread_local int empty_init_depth = 0;
}

EmptyInitScope::EmptyInitScope() { ++empty_init_depth; }
EmptyInitScope::~EmptyInitScope() { --empty_init_depth; }
bool EmptyInitScope::active() { return empty_init_depth > 0; }

torch::nn::Sequential build_sequential(const std::string& json_text) {
  return build_sequential_from(parse_model_spec(json_text));
}

torch::nn::Sequential build_sequential_from(const nlohmann::json& spec) {
  const nlohmann::json& layers = layer_list(spec);
  torch::nn::Sequential sequential;
  // push_back without a name numbers submodules "0", "1", ... as Python's
  // nn.Sequential does, so state-dict keys match PyTorch's.
  for (size_t index = 0; index < layers.size(); ++index)
    sequential->push_back(build_layer(layers[index], "layer " + std::to_string(index)));
  return sequential;
}

std::vector<std::string> sequential_layer_types(const nlohmann::json& spec) {
  std::vector<std::string> types;
  for (const auto& layer : layer_list(spec)) types.push_back(layer.at("type").get<std::string>());
  return types;
}

}  // namespace accel::detail
