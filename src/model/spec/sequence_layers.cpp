#include "model/spec/sequence_layers.hpp"

#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/rnn.h>

#include <tuple>

#include "model/spec/attention.hpp"

namespace accel::detail {

namespace {

using torch::nn::AnyModule;

// nn.LSTM and nn.GRU return (output, hidden state); in a chain or graph the
// output sequence is what the next layer reads. Deriving keeps the parameter
// names (weight_ih_l0, ...) at the node itself, as in PyTorch.
class LSTMOutputImpl : public torch::nn::LSTMImpl {
 public:
  using LSTMImpl::LSTMImpl;
  at::Tensor forward(const at::Tensor& input) { return std::get<0>(LSTMImpl::forward(input)); }
  // This forward has no defaulted hidden-state argument for AnyModule to fill.
  bool _forward_has_default_args() override { return false; }
};
TORCH_MODULE(LSTMOutput);

class GRUOutputImpl : public torch::nn::GRUImpl {
 public:
  using GRUImpl::GRUImpl;
  at::Tensor forward(const at::Tensor& input) { return std::get<0>(GRUImpl::forward(input)); }
  bool _forward_has_default_args() override { return false; }
};
TORCH_MODULE(GRUOutput);

AnyModule conv1d(LayerArgs& args) {
  int64_t in_channels = args.required_int("in_channels", kPositiveInt);
  int64_t out_channels = args.required_int("out_channels", kPositiveInt);
  int64_t kernel = args.required_int("kernel_size", kPositiveInt);
  int64_t stride = args.int_or("stride", 1, kPositiveInt);
  int64_t groups = args.int_or("groups", 1, kPositiveInt);
  if (in_channels % groups != 0 || out_channels % groups != 0) {
    args.fail_argument("groups", "must divide in_channels (" + std::to_string(in_channels) + ") and out_channels (" +
                                     std::to_string(out_channels) + "), got " + std::to_string(groups));
  }
  std::string mode = args.choice_or("padding_mode", "zeros", {"zeros", "reflect", "replicate", "circular"});
  auto options = torch::nn::Conv1dOptions(in_channels, out_channels, kernel)
                     .stride(stride)
                     .dilation(args.int_or("dilation", 1, kPositiveInt))
                     .groups(groups)
                     .bias(args.bool_or("bias", true));
  if (mode == "reflect") options.padding_mode(torch::kReflect);
  if (mode == "replicate") options.padding_mode(torch::kReplicate);
  if (mode == "circular") options.padding_mode(torch::kCircular);
  if (args.is_string("padding")) {
    if (args.choice_or("padding", "valid", {"valid", "same"}) == "same") {
      if (stride != 1)
        args.fail_argument("padding", "\"same\" needs stride 1, as in PyTorch; got stride " + std::to_string(stride));
      options.padding(torch::kSame);
    } else {
      options.padding(torch::kValid);
    }
  } else {
    options.padding(args.int_or("padding", 0, kNonNegativeInt));
  }
  return AnyModule(torch::nn::Conv1d(options));
}

template <typename Options>
Options rnn_options(LayerArgs& args) {
  int64_t input_size = args.required_int("input_size", kPositiveInt);
  int64_t hidden_size = args.required_int("hidden_size", kPositiveInt);
  int64_t num_layers = args.int_or("num_layers", 1, kPositiveInt);
  double dropout = args.real_or("dropout", 0.0, kProbability);
  return Options(input_size, hidden_size)
      .num_layers(num_layers)
      .bias(args.bool_or("bias", true))
      .batch_first(args.bool_or("batch_first", false))
      .dropout(dropout)
      .bidirectional(args.bool_or("bidirectional", false));
}

AnyModule lstm(LayerArgs& args) {
  auto options = rnn_options<torch::nn::LSTMOptions>(args);
  int64_t proj_size = args.int_or("proj_size", 0, kNonNegativeInt);
  if (proj_size >= options.hidden_size()) {
    args.fail_argument("proj_size", "must be smaller than hidden_size (" + std::to_string(options.hidden_size()) +
                                        "), got " + std::to_string(proj_size));
  }
  return AnyModule(LSTMOutput(options.proj_size(proj_size)));
}

AnyModule gru(LayerArgs& args) { return AnyModule(GRUOutput(rnn_options<torch::nn::GRUOptions>(args))); }

AnyModule positional_embedding(LayerArgs& args) {
  int64_t num_positions = args.required_int("num_positions", kPositiveInt);
  int64_t embedding_dim = args.required_int("embedding_dim", kPositiveInt);
  bool batch_first = args.bool_or("batch_first", false);
  return AnyModule(PositionalEmbedding(num_positions, embedding_dim, batch_first, args.where()));
}

void require_divisible(LayerArgs& args, const char* width_key, int64_t width, const char* heads_key, int64_t heads) {
  if (width % heads != 0) {
    args.fail_argument(heads_key, "must divide " + std::string(width_key) + " (" + std::to_string(width) + "), got " +
                                      std::to_string(heads));
  }
}

AnyModule multihead_attention(LayerArgs& args) {
  AttentionOptions options;
  options.embed_dim = args.required_int("embed_dim", kPositiveInt);
  options.num_heads = args.required_int("num_heads", kPositiveInt);
  require_divisible(args, "embed_dim", options.embed_dim, "num_heads", options.num_heads);
  options.dropout = args.real_or("dropout", 0.0, kProbability);
  options.bias = args.bool_or("bias", true);
  options.batch_first = args.bool_or("batch_first", false);
  options.causal = args.bool_or("causal", false);
  // Only self-attention of one width is offered: key and value are the input.
  for (const char* key : {"add_bias_kv", "add_zero_attn"}) {
    if (args.bool_or(key, false)) args.fail_argument(key, "is not supported (must be false)");
  }
  for (const char* key : {"kdim", "vdim"}) {
    auto dim = args.optional_int(key, kPositiveInt);
    if (dim && *dim != options.embed_dim) {
      args.fail_argument(key, "must be null or embed_dim (" + std::to_string(options.embed_dim) +
                                  ") for self-attention, got " + std::to_string(*dim));
    }
  }
  return AnyModule(MultiheadAttention(options, args.where()));
}

TransformerLayerOptions transformer_layer_options(LayerArgs& args) {
  TransformerLayerOptions options;
  options.d_model = args.required_int("d_model", kPositiveInt);
  options.nhead = args.required_int("nhead", kPositiveInt);
  require_divisible(args, "d_model", options.d_model, "nhead", options.nhead);
  options.dim_feedforward = args.int_or("dim_feedforward", 2048, kPositiveInt);
  options.dropout = args.real_or("dropout", 0.1, kProbability);
  options.activation = args.choice_or("activation", "relu", {"relu", "gelu"});
  options.layer_norm_eps = args.real_or("layer_norm_eps", 1e-5, kNonNegativeReal);
  options.batch_first = args.bool_or("batch_first", false);
  options.norm_first = args.bool_or("norm_first", false);
  options.causal = args.bool_or("causal", false);
  return options;
}

AnyModule transformer_encoder_layer(LayerArgs& args) {
  return AnyModule(TransformerEncoderLayer(transformer_layer_options(args), args.where()));
}

AnyModule transformer_decoder_layer(LayerArgs& args) {
  return AnyModule(TransformerDecoderLayer(transformer_layer_options(args), args.where()));
}

}  // namespace

const std::map<std::string, LayerBuilder>& sequence_layer_builders() {
  static const std::map<std::string, LayerBuilder> builders = {
      {"Conv1d", conv1d},
      {"LSTM", lstm},
      {"GRU", gru},
      {"PositionalEmbedding", positional_embedding},
      {"MultiheadAttention", multihead_attention},
      {"TransformerEncoderLayer", transformer_encoder_layer},
      {"TransformerDecoderLayer", transformer_decoder_layer},
  };
  return builders;
}

}  // namespace accel::detail
