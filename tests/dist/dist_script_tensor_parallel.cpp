// Tensor parallelism on transformers' GPT-2, BERT and Llama (and its Mistral,
// Qwen2 and Gemma kin) exported to TorchScript (tests/hf/export_hf_models.py:
// 2 layers, width 64, vocabulary 256; GPT-2 and the Llama family 4 heads, BERT 2).
//
// `dist_script_tensor_parallel record DIR MODEL [bert|llama|qwen2]`: one process trains 50
// AdamW steps on a global batch of 8 random sequences of 16 tokens (BERT:
// classified into 4 labels) and records the losses and the final weights in DIR.
// `dist_script_tensor_parallel compare DIR MODEL [bert|llama|qwen2]`: the same under the mesh
// `accel launch --parallelism_config_*` set. prepare rewrites the graph
// (model/script_tensor_parallel.hpp): each rank holds its head of GPT-2's
// packed q, k and v (BERT's query, key and value) and of the attention's
// output projection, its columns of the first MLP layer and rows of the
// second; the data-parallel ranks take their rows of each batch (also under
// FULL_SHARD over dp_shard, the model one unit or one per GPT2Block). The losses
// and the parameters (gathered whole by get_state_dict) are the single
// process's to the tolerances below, each rank holds exactly its share of the
// parameters, save_model's file loads into the model as exported, and
// save_state's checkpoint loads back unchanged.
// `dist_script_tensor_parallel refuse MODEL`: prepare with tp_size 2 of a
// model whose graph already ran is Unsupported, naming why;
// `refuse_gqa MODEL` (tp 4): a Llama whose 2 key/value heads tp does not
// divide is refused (InvalidArgument).
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

constexpr int64_t kRows = 8, kLength = 16, kVocab = 256, kWidth = 64, kSteps = 50;

// Tolerances, from the arithmetic (float32, unit roundoff u = 6e-8). The split
// run reassociates sums: a row-parallel product adds tp partial sums, the input
// gradients of a split layer are summed over the ranks, the loss is the mean
// of the data-parallel ranks' means (equal token counts). Losses: a mean of
// n = 8 x 15 = 120 token losses of about ln 256 = 5.5 moves by at most
// n*u*5.5 = 4.0e-5 from reordering.
// Parameters: no rounding bound carries through 50 AdamW steps. AdamW divides
// each gradient element by its own running magnitude, so an element whose
// gradient is a sum that nearly cancels gets its rounding noise at the full
// size of an update: the drift is a fraction of lr, not lr times u. Measured
// over 50 steps, GPT-2 drifted 1.2e-6 to 6.3e-6 through ATen's attention
// softmax and 7.5e-6 to 1.5e-5 through libaccel::masked_softmax (another exp,
// another summation order); Llama (SwiGLU multiplies two split products,
// RMSNorm divides by a root mean square) 1.3e-5 at tp 2, against 1.3e-6 for
// DDP on the same model. What tells a wrong split from drift is AdamW itself:
// its update is about lr in every element a gradient reaches, so a head or
// feature in the wrong place moves parameters by whole steps of 1e-3 at the
// first step and 50 of them by the last. A tenth of one step separates the two.
constexpr double kLossTolerance = 4.0e-5;
constexpr double kParameterTolerance = 0.1 * 1e-3;

// The "bert" argument: the exported BERT instead of GPT-2; "llama": the exported
// Llama, Mistral, Gemma, OLMo, Granite, Cohere or StableLM (the same parameter
// names); "qwen2": Qwen2, a Llama whose q, k and v have biases.
bool bert = false;
bool llama = false;
bool qkv_bias = false;

// The parameters tensor parallelism splits, by name ending.
bool is_split(const std::string& name) {
  const std::vector<const char*> gpt2{"attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
                                      "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight"};
  const std::vector<const char*> bert_ends{"self.query.weight",
                                           "self.query.bias",
                                           "self.key.weight",
                                           "self.key.bias",
                                           "self.value.weight",
                                           "self.value.bias",
                                           "attention.output.dense.weight",
                                           "intermediate.dense.weight",
                                           "intermediate.dense.bias",
                                           "layer.0.output.dense.weight",
                                           "layer.1.output.dense.weight"};
  std::vector<const char*> llama_ends{"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                                      "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                                      "mlp.down_proj.weight"};
  if (qkv_bias)
    llama_ends.insert(llama_ends.end(), {"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"});
  for (const char* end : bert ? bert_ends : llama ? llama_ends : gpt2) {
    const std::string e = end;
    if (name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) return true;
  }
  return false;
}

at::Tensor batch() {
  at::manual_seed(11);
  return at::randint(kVocab, {kRows, kLength}, at::kLong);
}

accel::OptimizerOptions adamw() {
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 1e-3;
  return options;
}

std::vector<double> train(accel::Accelerator& accelerator, accel::Model& model, accel::Optimizer& optimizer,
                          int64_t data_rank, int64_t data_size) {
  const at::Tensor ids = batch().narrow(0, data_rank * kRows / data_size, kRows / data_size);
  std::vector<double> losses;
  for (int64_t step = 0; step < kSteps; ++step) {
    at::Tensor loss;
    const at::Tensor labels = bert ? ids.select(1, 0).remainder(4) : ids;
    for (const auto& [name, out] : model.forward(accel::Model::NamedTensors{
             {"input_ids", ids}, {"attention_mask", at::ones_like(ids)}, {"labels", labels}})) {
      if (name == "loss") loss = out;
    }
    accelerator.backward(loss);
    optimizer.step();
    optimizer.zero_grad();
    losses.push_back(accelerator.reduce(loss.detach(), accel::ReduceOp::Mean).item<double>());
  }
  return losses;
}

int record(const std::string& dir, const std::string& path) {
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_torchscript(path);
  accel::Optimizer optimizer(model, adamw());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  const std::vector<double> losses = train(accelerator, model, optimizer, 0, 1);
  std::ofstream out(dir + "/losses.txt");
  out.precision(17);
  for (double loss : losses) out << loss << "\n";
  check(out.good(), "cannot write " + dir + "/losses.txt");
  accelerator.save(accelerator.get_state_dict(model), dir + "/reference.safetensors");
  std::printf("recorded %lld steps: loss %.5f -> %.5f\n", static_cast<long long>(kSteps), losses.front(),
              losses.back());
  return 0;
}

int compare(const std::string& dir, const std::string& path) {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  const int64_t tp = std::atoll(std::getenv("PARALLELISM_CONFIG_TP_SIZE"));
  const int64_t dp = accelerator.num_processes() / tp;
  accel::Model model = accel::Model::from_torchscript(path);
  int64_t whole = 0, split = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    whole += p.numel();
    if (is_split(name)) split += p.numel();
  }
  accel::Optimizer optimizer(model, adamw());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  std::set<std::string> sliced;
  for (const auto& [name, p] : model.named_parameters()) {
    if (is_split(name)) sliced.insert(name);
  }
  // 10 (BERT), 7 (Llama), 10 (Qwen2) or 6 (GPT-2) a layer
  const size_t expected_sliced = bert ? 20 : llama ? (qkv_bias ? 20 : 14) : 12;
  check(sliced.size() == expected_sliced,
        "expected " + std::to_string(expected_sliced) + " split parameters, found " + std::to_string(sliced.size()));
  // Each rank holds the whole parameters and 1/tp of the split ones; under
  // FULL_SHARD over dp_shard (the model one unit) its chunk of that. Wrapped
  // per GPT2Block, each block is a unit of its own: less than the slices.
  const int64_t local = whole - split + split / tp;
  const char* shard_text = std::getenv("PARALLELISM_CONFIG_DP_SHARD_SIZE");
  const int64_t dp_shard = shard_text ? std::atoll(shard_text) : 1;
  const bool by_block = std::getenv("FSDP_TRANSFORMER_CLS_TO_WRAP") != nullptr;
  const int64_t held = accelerator.held_bytes(model, &optimizer).parameters;
  const int64_t expected = (local + dp_shard - 1) / dp_shard * 4;
  check(by_block ? held < local * 4 : held == expected,
        "parameters hold " + std::to_string(held) + " bytes, expected " + std::to_string(expected));

  const std::vector<double> losses = train(accelerator, model, optimizer, accelerator.process_index() / tp, dp);
  std::ifstream in(dir + "/losses.txt");
  std::vector<double> reference;
  for (double v; in >> v;) reference.push_back(v);
  check(reference.size() == losses.size(), "the reference has " + std::to_string(reference.size()) + " losses");
  double worst_loss = 0;
  for (size_t i = 0; i < losses.size(); ++i) worst_loss = std::max(worst_loss, std::abs(losses[i] - reference[i]));
  check(worst_loss <= kLossTolerance, "losses differ from the single process's by up to " + std::to_string(worst_loss));

  const accel::TensorDict gathered = accelerator.get_state_dict(model);
  std::map<std::string, at::Tensor> want;
  for (auto& [name, tensor] : accel::load_safetensors(dir + "/reference.safetensors")) want[name] = tensor;
  double worst_parameter = 0;
  std::string worst_name;
  for (const auto& [name, tensor] : gathered) {
    check(want.count(name) == 1 && want[name].sizes() == tensor.sizes(),
          name + " (shape " + c10::str(tensor.sizes()) + ") is not the reference's");
    at::Tensor difference = (tensor - want[name]).abs();
    // The key bias (GPT-2's c_attn.bias[E, 2E), BERT's key.bias) has a true
    // gradient of 0 (q.b_k is the same for every key of a query, which the
    // softmax cancels); its rounding noise is scaled by AdamW to steps of
    // about lr in any implementation.
    if (name.find("c_attn.bias") != std::string::npos) difference.narrow(0, kWidth, kWidth).zero_();
    if (name.find("self.key.bias") != std::string::npos) difference.zero_();
    if (difference.max().item<double>() > worst_parameter) {
      worst_parameter = difference.max().item<double>();
      worst_name = name;
    }
  }
  check(worst_parameter <= kParameterTolerance, "parameters differ from the single process's by up to " +
                                                    std::to_string(worst_parameter) + " (" + worst_name + ")");

  // save_model gathers the slices: the file loads into the model as exported.
  // Each test's own directory (ctest runs them at once): the mesh and the wrapping.
  const std::string saved = dir + "/saved_tp" + std::to_string(tp) + "_dp" + std::to_string(dp) +
                            (dp_shard > 1 ? "_full_shard" : "") + (by_block ? "_blocks" : "");
  accelerator.save_model(model, saved);
  if (accelerator.is_main_process()) {
    accel::Model fresh = accel::Model::from_torchscript(path);
    accelerator.load_checkpoint_in_model(fresh, saved + "/model.safetensors", /*strict=*/true);
    const accel::TensorDict loaded = accelerator.get_state_dict(fresh);  // never prepared: not collective
    std::map<std::string, at::Tensor> by_name(loaded.begin(), loaded.end());
    for (const auto& [name, tensor] : gathered) {
      check(by_name.count(name) == 1 && at::equal(by_name[name], tensor),
            "save_model's " + name + " is not the model's");
    }
    std::printf("tensor parallel %s: tp %lld x dp %lld, losses within %.3g, parameters within %.3g\n",
                bert    ? "BERT"
                : llama ? "Llama family"
                        : "GPT-2",
                static_cast<long long>(tp), static_cast<long long>(dp), worst_loss, worst_parameter);
  }
  // save_state writes the whole model and optimizer state (with
  // --fsdp_state_dict_type SHARDED_STATE_DICT as distributed checkpoints, each
  // rank its boxes of the whole tensors); load_state cuts them for this mesh
  // again: the model gathered back is the same, bit for bit.
  const std::string state = saved + "_state";
  accelerator.save_state(state);
  const char* state_dict_type = std::getenv("FSDP_STATE_DICT_TYPE");
  if (state_dict_type && std::string(state_dict_type) == "SHARDED_STATE_DICT" && accelerator.is_main_process()) {
    check(std::ifstream(state + "/pytorch_model_fsdp_0/.metadata").good() &&
              !std::ifstream(state + "/model.safetensors").good(),
          state + " is not a distributed checkpoint");
  }
  accelerator.load_state(state);
  const accel::TensorDict reloaded = accelerator.get_state_dict(model);
  for (size_t i = 0; i < gathered.size(); ++i) {
    check(at::equal(reloaded[i].second, gathered[i].second), "load_state changed " + gathered[i].first);
  }
  accelerator.wait_for_everyone();
  return 0;
}

// A Llama with grouped-query attention (2 key/value heads for 4 query heads)
// on tp 4: prepare refuses to split its 2 key/value heads 4 ways, naming
// them, and leaves it whole.
int refuse_grouped_query(const std::string& path) {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  accel::Model model = accel::Model::from_torchscript(path);
  const auto before = model.named_parameters();
  try {
    accelerator.prepare(model);
    check(false, "prepare split 2 key/value heads 4 ways");
  } catch (const accel::Error& e) {
    const std::string expected = "tp_size 4 does not divide the model's num_key_value_heads 2";
    check(e.code() == accel::ErrorCode::InvalidArgument && std::string(e.what()).find(expected) != std::string::npos,
          std::string("prepare failed with ") + e.what());
  }
  const auto after = model.named_parameters();
  for (size_t i = 0; i < before.size(); ++i) {
    check(after[i].second.sizes() == before[i].second.sizes(), "the refusal changed " + after[i].first);
  }
  if (accelerator.is_main_process()) std::printf("refused 2 key/value heads on tp 4\n");
  accelerator.wait_for_everyone();
  return 0;
}

int refuse(const std::string& path) {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  accel::Model model = accel::Model::from_torchscript(path);
  const at::Tensor ids = batch();
  model.forward(
      accel::Model::NamedTensors{{"input_ids", ids}, {"attention_mask", at::ones_like(ids)}, {"labels", ids}});
  try {
    accelerator.prepare(model);
    check(false, "prepare split a TorchScript model whose graph already ran");
  } catch (const accel::Error& e) {
    check(
        e.code() == accel::ErrorCode::Unsupported && std::string(e.what()).find("already ran one") != std::string::npos,
        std::string("prepare failed with ") + e.what());
  }
  if (accelerator.is_main_process()) std::printf("refused a model that already ran\n");
  // No rank leaves before all have refused: a rank still joining its groups
  // would see its peers' connections close.
  accelerator.wait_for_everyone();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    bert = dist_checks::has(argc, argv, "bert");
    qkv_bias = dist_checks::has(argc, argv, "qwen2");
    llama = dist_checks::has(argc, argv, "llama") || qkv_bias;
    if (mode == "record" && argc > 3) return record(argv[2], argv[3]);
    if (mode == "compare" && argc > 3) return compare(argv[2], argv[3]);
    if (mode == "refuse" && argc > 2) return refuse(argv[2]);
    if (mode == "refuse_gqa" && argc > 2) return refuse_grouped_query(argv[2]);
    std::fprintf(stderr,
                 "usage: dist_script_tensor_parallel record|compare DIR MODEL [bert|llama|qwen2] | refuse MODEL | "
                 "refuse_gqa MODEL\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_for_messages, e.what());
    return 1;
  }
}
