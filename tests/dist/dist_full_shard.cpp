// FULL_SHARD (ZeRO-3) across real processes.
//
// `dist_full_shard train sgd|adamw [accum] [clip] [wrap N] record DIR`: 100
// optimizer steps of the mlp workload (bench/workloads/mlp.json) under
// NO_SHARD, recorded in DIR (per-step losses and clipped norms, final model).
// `... compare DIR`: the same under FULL_SHARD gives NO_SHARD's losses, norms
// and parameters to 1e-5, and between steps each process holds only its chunk
// of every unit's parameters, gradients and optimizer state
// (Accelerator::held_bytes). accum: 2 micro-steps per step; clip:
// clip_grad_norm every step; wrap N: fsdp_min_num_params N (units by size);
// lr X: another learning rate (SGD's default 0.05, AdamW's 1e-3); gpt: the
// transformer workload (a JSON graph GPT with a tied head) instead of mlp;
// hybrid: HYBRID_SHARD instead (sharded within each node, replicated across
// nodes), with two_nodes: this machine's processes taken as two nodes of half
// each (LOCAL_WORLD_SIZE and LOCAL_RANK rewritten before the accelerator
// reads them; tests/cli/run_multinode_netns.sh runs it on two real ones);
// script DIR: the GPT-2 that tests/hf/export_hf_models.py exported to DIR
// (TorchScript, named inputs, loss and logits out), wrapped whole (NO_WRAP)
// or, with classes NAME, by submodule class (TRANSFORMER_BASED_WRAP; with gpt
// the JSON GPT's layers of type NAME); with
// refused: prepare must refuse NAME (matching nothing) with InvalidArgument;
// module: the mlp as a C++ module (Model::from_module), wrapped whole;
// zero 1|2: ZeRO-1 (SHARD_OPTIMIZER) or ZeRO-2 (SHARD_GRAD_OP) instead;
// no_prefetch / forward_prefetch: backward prefetch off / forward prefetch on;
// offload: cpu_offload on (master chunks, gradient chunks and optimizer state
// in host memory; on a CPU the same copies, so the same values);
// f64: both runs in float64 (parameters, inputs, gradients, optimizer state),
// from the same float32 initial values and data, compared to the tolerances
// derived in f64_tolerance() below.
// (A one-process large-batch reference drifts from NO_SHARD itself by up to
// 5e-3 in 100 steps at 3 processes, so NO_SHARD is what is compared.)
//
// `dist_full_shard resume DIR [offload]`: save_state writes each process's parameter and
// optimizer shards, resume is bitwise; save_model writes the full model,
// which loads back into a sharded model (scattered).
// `dist_full_shard load DIR`: a sharded checkpoint saved by 2 processes loads
// at this world size, its shards cut again (bitwise the model at the save), and
// so does its full model.safetensors (scattered).
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::has;
using dist_checks::rank_for_messages;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The mlp workload: 784-1024-1024-10, 1,863,690 parameters in 3 units.
std::string mlp_spec() { return read_file(ACCEL_SOURCE_DIR "/bench/workloads/mlp.json"); }
// The same layers with dropout inside the first two units, so a unit run
// again by activation checkpointing must draw the forward's masks again.
std::string mlp_with_dropout_spec() {
  std::string spec = mlp_spec();
  const std::string relu = "{\"type\": \"ReLU\"}";
  const std::string with_dropout = relu + ", {\"type\": \"Dropout\", \"p\": 0.3}";
  for (size_t at = spec.find(relu); at != std::string::npos; at = spec.find(relu, at + with_dropout.size())) {
    spec.replace(at, relu.size(), with_dropout);
  }
  return spec;
}
const std::vector<int64_t> kUnitNumel = {784 * 1024 + 1024, 1024 * 1024 + 1024, 1024 * 10 + 10};

// The transformer workload (gpt): a JSON graph GPT, two causal pre-norm blocks
// as nodes, the head tied to the token embedding, the shifted LM loss.
// FULL_SHARD's units: wte (with the tied head), wpe, h0, h1, ln_f.
constexpr int64_t kGptVocab = 64, kGptLength = 16, kGptWidth = 32;
std::string gpt_spec() {
  const std::string w = std::to_string(kGptWidth);
  std::string block = R"("type": "TransformerEncoderLayer", "d_model": )" + w +
                      R"(, "nhead": 4, "dim_feedforward": 64, "dropout": 0.0, "activation": "gelu",
                      "batch_first": true, "norm_first": true, "causal": true)";
  return R"({"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [
    {"name": "wte", "type": "Embedding", "num_embeddings": )" +
         std::to_string(kGptVocab) + R"(, "embedding_dim": )" + w + R"(},
    {"name": "wpe", "type": "PositionalEmbedding", "num_positions": )" +
         std::to_string(kGptLength) + R"(, "embedding_dim": )" + w + R"(, "batch_first": true},
    {"name": "h0", )" +
         block + R"(}, {"name": "h1", )" + block + R"(},
    {"name": "ln_f", "type": "LayerNorm", "normalized_shape": )" +
         w + R"(},
    {"name": "logits", "type": "Linear", "in_features": )" +
         w + R"(, "out_features": )" + std::to_string(kGptVocab) +
         R"(, "bias": true, "weight": "wte.weight"},
    {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["loss"]})";
}
// Trainable elements per unit: wte (+ the head's bias), wpe, h0, h1, ln_f.
int64_t gpt_block_numel() {
  const int64_t w = kGptWidth;
  return 3 * w * w + 3 * w + w * w + w + 64 * w + 64 + w * 64 + w + 4 * w;
}
std::vector<int64_t> gpt_unit_numel() {
  return {kGptVocab * kGptWidth + kGptVocab, kGptLength * kGptWidth, gpt_block_numel(), gpt_block_numel(),
          2 * kGptWidth};
}
// Wrapped by class TransformerEncoderLayer: each block, and the layers between
// (wte and wpe, ln_f) as units of their own.
std::vector<int64_t> gpt_class_unit_numel() {
  return {kGptVocab * kGptWidth + kGptVocab + kGptLength * kGptWidth, gpt_block_numel(), gpt_block_numel(),
          2 * kGptWidth};
}

accel::AcceleratorOptions full_shard_options() {
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(60);
  options.sharding_strategy = accel::ShardingStrategy::FullShard;
  return options;
}

int64_t chunks(int world, const std::vector<int64_t>& units) {
  int64_t total = 0;
  for (int64_t n : units) total += (n + world - 1) / world;
  return total;
}

const char* arg_after(int argc, char** argv, const char* word) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], word) == 0) return argv[i + 1];
  }
  return nullptr;
}

// The exported GPT-2's units: with wrap classes, one per block
// (transformer.h.N) and the root with the rest; else the whole model.
constexpr int64_t kScriptVocab = 256;
std::vector<int64_t> script_unit_numel(const accel::Model& model, bool by_block) {
  std::map<std::string, int64_t> units;
  for (const auto& [name, p] : model.named_parameters()) {
    std::string unit = "(model)";
    const std::string blocks = "transformer.h.";
    if (by_block && name.rfind(blocks, 0) == 0) unit = name.substr(0, name.find('.', blocks.size()));
    units[unit] += p.numel();
  }
  std::vector<int64_t> out;
  for (const auto& [name, n] : units) out.push_back(n);
  return out;
}

// How far a sharded run may drift from NO_SHARD's in 100 steps. Both runs
// compute the same sums, but the sharded one reduces gradients in another
// order (a reduce-scatter, HYBRID_SHARD's (a + b) + (c + d), against Gloo's
// ring allreduce), so they differ by rounding: one unit roundoff u per
// reduction at first, amplified by training (AdamW's m / sqrt(v) turns
// relative differences of near-zero gradients into full steps). Which
// elements round which way depends on the CPU's kernels (AVX2, AVX-512, AMX
// blocking), so the amplification is a property of the run, not of the code.
struct Tolerance {
  double loss, norm, parameter;  // absolute, relative (to max(1, norm)), absolute
};
// float32 (u = 6.0e-8): at 2 processes the sums are a + b == b + a and the
// runs are bitwise equal; the float32 runs at 3 and 4 processes that stay
// float32 (SGD, tests/dist/CMakeLists.txt) measured at most 9.5e-7 in the loss
// and 7.7e-8 in the parameters on an AMD EPYC (AVX-512, no AMX): 10x or more.
// Those that measured less (AdamW at 3: 4.9e-6; clipping with accumulation at
// 3: 1.8e-4; the JSON GPT: 1.9e-6; HYBRID AdamW: 4.8e-7 here and 2.5e-5 on an
// Intel Xeon with AMX, ~420 u; HYBRID SGD: 2.8e-5 with LibTorch 2.15 there)
// run in float64. NO_SHARD's norm is
// LibTorch's clip_grad_norm_ (float32 norms of float32 norms, 1e-5 relative
// from exact on this 1.9M-parameter model) against the shards' sum of squares
// in double: hence 1e-4 (relative), and the clipping runs use learning rates
// at which a 1e-5 difference in the clip factor does not grow over 100 steps
// (at SGD 0.05 with momentum it grows to 4e-4 in the loss).
constexpr Tolerance kFloat32Tolerance{1e-5, 1e-4, 1e-5};
// float64 (u = 1.1e-16): every float64 run measured at most 3.6e-15 in the
// loss and 5.2e-15 in the parameters (norms 2e-14 relative); even the worst float32
// amplification seen anywhere (AdamW at lr 1e-3: 1.05e-4 in the parameters,
// ~1800 u) gives 2e-13 in float64. 1e-9 is 5000x above that, and 1e4 or more
// below what a real difference leaves (a missing division, another
// accumulation, bf16 rounding: 1e-5 and up in one step), so it holds on any
// CPU and still catches those.
constexpr Tolerance kFloat64Tolerance{1e-9, 1e-9, 1e-9};

int train(int argc, char** argv) {
  const bool adam = std::strcmp(argv[2], "adamw") == 0, clip = has(argc, argv, "clip"),
             accum = has(argc, argv, "accum");
  const char* wrap = arg_after(argc, argv, "wrap");
  // FULL_SHARD with activation checkpointing / a spec with dropout (both runs).
  const bool checkpointing = has(argc, argv, "checkpointing"), dropout = has(argc, argv, "dropout");
  const char* record = arg_after(argc, argv, "record");  // NO_SHARD: writes the run to compare with
  const char* compare = arg_after(argc, argv, "compare");
  const int64_t min_num_params = wrap ? std::atoll(wrap) : 0;
  const int64_t kMicro = accum ? 2 : 1, kBatch = 8, kUpdates = 100;
  const bool hybrid = has(argc, argv, "hybrid"), gpt = has(argc, argv, "gpt");
  const bool f64 = has(argc, argv, "f64");
  const at::ScalarType dtype = f64 ? at::kDouble : at::kFloat;
  const char* script = arg_after(argc, argv, "script");
  const char* classes = arg_after(argc, argv, "classes");
  if (has(argc, argv, "two_nodes")) {  // torchrun numbers a node's ranks consecutively
    const int world_size = std::atoi(std::getenv("WORLD_SIZE")), global_rank = std::atoi(std::getenv("RANK"));
    check(world_size % 2 == 0, "two_nodes needs an even number of processes");
    setenv("LOCAL_WORLD_SIZE", std::to_string(world_size / 2).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(global_rank % (world_size / 2)).c_str(), 1);
  }
  const char* zero = arg_after(argc, argv, "zero");  // 1 or 2: ZeRO-1/ZeRO-2 instead of FULL_SHARD
  const accel::ShardingStrategy sharded = zero ? (std::strcmp(zero, "1") == 0 ? accel::ShardingStrategy::ShardOptimizer
                                                                              : accel::ShardingStrategy::ShardGradOp)
                                          : hybrid ? accel::ShardingStrategy::HybridShard
                                                   : accel::ShardingStrategy::FullShard;
  accel::AcceleratorOptions options = full_shard_options();
  options.sharding_strategy = record ? accel::ShardingStrategy::NoShard : sharded;
  options.gradient_accumulation_steps = kMicro;
  if (min_num_params > 0) options.fsdp_min_num_params = min_num_params;
  if (checkpointing && !record) options.fsdp_activation_checkpointing = true;
  if (classes) options.fsdp_transformer_layer_cls_to_wrap = std::vector<std::string>{classes};
  // Prefetch (backward on by default): off, or forward too.
  if (has(argc, argv, "no_prefetch")) options.fsdp_backward_prefetch = false;
  if (has(argc, argv, "forward_prefetch")) options.fsdp_forward_prefetch = true;
  const bool offload = has(argc, argv, "offload") && !record;
  if (offload) options.cpu_offload = true;
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  rank_for_messages = rank;
  check(accelerator.cpu_offload() == offload, std::string("cpu_offload is ") + (offload ? "on" : "off"));
  check(record || accelerator.sharding_strategy() == sharded,
        std::string("the strategy is ") + accel::to_string(sharded));
  // The processes one parameter is sharded over: the node's under HYBRID_SHARD.
  const int shard_size = hybrid ? std::atoi(std::getenv("LOCAL_WORLD_SIZE")) : world;

  const int64_t per_update = kBatch * kMicro * world;
  at::manual_seed(5);  // the same data everywhere
  at::Tensor x = at::randn({kUpdates * per_update, 784}).to(dtype),
             y = at::randint(0, 10, {kUpdates * per_update}, at::kLong);
  at::Tensor ids = at::randint(0, script ? kScriptVocab : kGptVocab, {kUpdates * per_update, kGptLength}, at::kLong);
  const std::string spec = gpt ? gpt_spec() : dropout ? mlp_with_dropout_spec() : mlp_spec();
  at::manual_seed(6);
  const bool module = has(argc, argv, "module");
  auto load = [&] {
    if (script) return accel::Model::from_torchscript(std::string(script) + "/model.pt");
    if (!module) return accel::Model::from_json(spec);
    // The mlp's layers as a C++ module: one unit, the whole model.
    torch::nn::Sequential mlp(torch::nn::Linear(784, 1024), torch::nn::ReLU(), torch::nn::Linear(1024, 1024),
                              torch::nn::ReLU(), torch::nn::Linear(1024, 10));
    return accel::Model::from_module(mlp.ptr(), [mlp](const at::Tensor& x) mutable { return mlp->forward(x); });
  };
  // f64: the float32 initial values, widened (exactly) before prepare, so
  // both runs start where the float32 runs start.
  auto widen = [&](accel::Model& m) {
    if (!f64) return;
    at::NoGradGuard no_grad;
    for (auto& p : m.parameters()) p.set_data(p.to(at::kDouble));
    for (auto& [name, b] : m.named_buffers()) {
      if (b.is_floating_point()) b.set_data(b.to(at::kDouble));
    }
  };
  accel::Model model = load();
  widen(model);
  const std::vector<int64_t> script_units =
      script ? script_unit_numel(model, classes != nullptr) : std::vector<int64_t>{};
  auto hyper = accel::OptimizerOptions::defaults(adam ? accel::OptimizerKind::AdamW : accel::OptimizerKind::Sgd);
  hyper.lr = adam ? 1e-3 : 0.05;
  if (const char* lr = arg_after(argc, argv, "lr")) hyper.lr = std::atof(lr);
  if (!adam) hyper.momentum = 0.9;
  accel::Optimizer optimizer(model, hyper);
  if (has(argc, argv, "refused")) {  // a wrap class that matches nothing
    try {
      accelerator.prepare(model);
    } catch (const accel::Error& error) {
      const std::string message = error.what();
      const char* known = script ? "GPT2Block" : "TransformerEncoderLayer";  // what the model has
      check(
          error.code() == accel::ErrorCode::InvalidArgument && message.find(classes) != std::string::npos &&
              message.find(known) != std::string::npos,
          std::string("prepare refuses wrap class ") + classes + " naming it and the model's classes, got: " + message);
      check(model.parameters().front().numel() > 0, "the refused prepare left the parameters whole");
      std::printf("rank %d: refused as expected: %s\n", rank, message.c_str());
      return 0;
    }
    check(false, std::string("prepare accepted wrap class ") + classes);
  }
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  for (auto& p : model.parameters()) {
    check(record || zero || p.numel() == 0, "outside forward a FULL_SHARD parameter is empty");
  }

  std::vector<double> losses, norms;  // per optimizer step: the mean loss of every process, the clipped norm
  for (int64_t u = 0; u < kUpdates; ++u) {
    double norm = 0;
    at::Tensor micro_losses = at::zeros({1, kMicro}, at::TensorOptions().dtype(dtype));
    for (int64_t m = 0; m < kMicro; ++m) {
      auto scope = accelerator.accumulate(model);
      const int64_t start = u * per_update + (m * world + rank) * kBatch;
      at::Tensor loss;
      if (script) {
        at::Tensor batch = ids.narrow(0, start, kBatch);
        for (const auto& [name, out] : model.forward(accel::Model::NamedTensors{
                 {"input_ids", batch}, {"attention_mask", at::ones_like(batch)}, {"labels", batch}})) {
          if (name == "loss") loss = out;
        }
      } else if (gpt) {
        at::Tensor batch = ids.narrow(0, start, kBatch);
        loss = model.forward(accel::Model::NamedTensors{{"input_ids", batch}, {"labels", batch}})[0].second;
      } else {
        loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(x.narrow(0, start, kBatch)),
                                   y.narrow(0, start, kBatch));
      }
      micro_losses[0][m] = loss.detach();
      accelerator.backward(loss);
      if (clip) norm = accelerator.clip_grad_norm(model, 0.5);
      optimizer.step();
      optimizer.zero_grad();
    }
    losses.push_back(accelerator.gather_for_metrics(micro_losses).mean().item<double>());
    norms.push_back(norm);
  }
  const accel::HeldBytes held = accelerator.held_bytes(model, &optimizer);
  // accel estimate-memory's figure for this strategy is within 10% of what is held.
  for (const accel::MemoryEstimate& e :
       gpt || zero
           ? std::vector<accel::MemoryEstimate>{}  // estimate-memory sizes sequential specs' units only
           : accel::estimate_memory(
                 script ? std::string(script) + "/model.pt" : std::string(ACCEL_SOURCE_DIR "/bench/workloads/mlp.json"),
                 world, adam ? accel::OptimizerKind::AdamW : accel::OptimizerKind::Sgd, min_num_params, offload)) {
    if (e.strategy != accelerator.sharding_strategy()) continue;
    // The estimate sizes the spec's float32 tensors; f64 holds twice the bytes.
    const double estimated =
        (f64 ? 2.0 : 1.0) * static_cast<double>(e.bytes.parameters + e.bytes.gradients + e.bytes.optimizer_state);
    const double measured = static_cast<double>(held.parameters + held.gradients + held.optimizer_state);
    check(std::abs(estimated - measured) <= 0.1 * measured,
          "estimate_memory says " + std::to_string(estimated) + " bytes, " + std::to_string(measured) + " are held");
  }
  if (record) {
    accelerator.save_model(model, record);
    if (accelerator.is_main_process()) {
      std::ofstream out(std::string(record) + "/run.txt");
      for (size_t i = 0; i < losses.size(); ++i) out << std::setprecision(17) << losses[i] << " " << norms[i] << "\n";
    }
    accelerator.wait_for_everyone();
    std::printf("rank %d: NO_SHARD %s recorded; held %lld + %lld + %lld bytes\n", rank, argv[2],
                static_cast<long long>(held.parameters), static_cast<long long>(held.gradients),
                static_cast<long long>(held.optimizer_state));
    return 0;
  }
  check(compare != nullptr, "train needs `record DIR` or `compare DIR`");
  std::istringstream run(read_file(std::string(compare) + "/run.txt"));
  double worst_loss = 0, worst_norm = 0;
  for (size_t i = 0; i < losses.size(); ++i) {
    double loss = 0, norm = 0;
    check(static_cast<bool>(run >> loss >> norm), "run.txt has step " + std::to_string(i));
    worst_loss = std::max(worst_loss, std::abs(losses[i] - loss));
    worst_norm = std::max(worst_norm, std::abs(norms[i] - norm) / std::max(1.0, norm));
  }
  at::manual_seed(7);
  accel::Model replicated = load();
  widen(replicated);  // f64: NO_SHARD's float64 values read back unrounded
  accelerator.load_checkpoint_in_model(replicated, std::string(compare) + "/model.safetensors", true);
  std::map<std::string, at::Tensor> got;
  for (auto& [name, tensor] : accelerator.get_state_dict(model)) got[name] = tensor;
  double worst = 0;
  std::string worst_name;
  for (const auto& [name, tensor] : replicated.named_parameters()) {
    check(got.count(name) && got[name].sizes() == tensor.sizes(), "get_state_dict gathers " + name + " whole");
    const double error = (got[name] - tensor).abs().max().item<double>();
    if (error > worst) worst = error, worst_name = name;
  }
  // Printed before the checks, so a log shows the margin of a passing run too.
  std::printf(
      "rank %d: %s %s %s vs NO_SHARD over %lld steps: worst loss error %g, norm error %g, parameter error %g (%s)\n",
      rank, accel::to_string(sharded), argv[2], f64 ? "float64" : "float32", static_cast<long long>(kUpdates),
      worst_loss, worst_norm, worst, worst_name.c_str());
  const Tolerance tol = f64 ? kFloat64Tolerance : kFloat32Tolerance;
  check(worst_loss < tol.loss,
        "losses equal NO_SHARD's to " + std::to_string(tol.loss) + " (worst " + std::to_string(worst_loss) + ")");
  check(worst_norm < tol.norm, "clip_grad_norm equals NO_SHARD's to " + std::to_string(tol.norm) + " (worst " +
                                   std::to_string(worst_norm) + ")");
  check(worst < tol.parameter, "parameters equal NO_SHARD's to " + std::to_string(tol.parameter) + " (worst " +
                                   std::to_string(worst) + ", " + worst_name + ")");

  if (zero) {  // one flat chunk of parameters' optimizer state (and ZeRO-2's gradients): tests/dist/dist_sharding.cpp
    std::printf(
        "rank %d: %s %s equals NO_SHARD over %lld steps: worst loss error %g, norm error %g, parameter "
        "error %g\n",
        rank, accel::to_string(sharded), argv[2], static_cast<long long>(kUpdates), worst_loss, worst_norm, worst);
    return 0;
  }
  // Held between steps: this process's chunks only, of the training dtype.
  const std::vector<int64_t> units = script   ? script_units
                                     : module ? std::vector<int64_t>{kUnitNumel[0] + kUnitNumel[1] + kUnitNumel[2]}
                                     : gpt    ? (classes ? gpt_class_unit_numel() : gpt_unit_numel())
                                     : min_num_params > 0
                                         ? std::vector<int64_t>{kUnitNumel[0] + kUnitNumel[1], kUnitNumel[2]}
                                         : kUnitNumel;
  const int64_t mine = (f64 ? 8 : 4) * chunks(shard_size, units);
  check(held.parameters == mine,
        "parameters held: " + std::to_string(held.parameters) + " bytes, expected " + std::to_string(mine));
  check(held.gradients == mine,
        "gradients held: " + std::to_string(held.gradients) + ", expected " + std::to_string(mine));
  check(held.optimizer_state == (adam ? 2 : 1) * mine, "optimizer state held: " + std::to_string(held.optimizer_state) +
                                                           ", expected " + std::to_string((adam ? 2 : 1) * mine));
  std::printf(
      "rank %d: %s %s equals NO_SHARD over %lld steps: worst loss error %g, norm error %g, parameter "
      "error %g; held %lld + %lld + %lld bytes\n",
      rank, accel::to_string(sharded), argv[2], static_cast<long long>(kUpdates), worst_loss, worst_norm, worst,
      static_cast<long long>(held.parameters), static_cast<long long>(held.gradients),
      static_cast<long long>(held.optimizer_state));
  return 0;
}

// A small model keeps the checkpoint test quick: 3 units of 56, 27 and 4 elements.
const char* kSmall = R"([{"type": "Linear", "in_features": 6, "out_features": 8}, {"type": "Tanh"},
                         {"type": "Linear", "in_features": 8, "out_features": 3}, {"type": "ReLU"},
                         {"type": "Linear", "in_features": 3, "out_features": 1}])";

void train_step(accel::Accelerator& accelerator, accel::Model& model, accel::Optimizer& optimizer, int64_t step) {
  at::manual_seed(100 + step * accelerator.num_processes() + accelerator.process_index());
  at::Tensor x = at::randn({4, 6}), y = at::randn({4, 1});
  accelerator.backward(accel::compute_loss(accel::LossKind::Mse, model.forward(x), y));
  optimizer.step();
  optimizer.zero_grad();
}

std::vector<at::Tensor> values(const accel::TensorDict& dict) {
  std::vector<at::Tensor> out;
  for (auto& [name, t] : dict) out.push_back(t.clone());
  return out;
}

int checkpoints(const std::string& mode, const std::string& dir, bool offload) {
  accel::AcceleratorOptions options = full_shard_options();
  options.cpu_offload = offload;
  accel::Accelerator accelerator(options);
  rank_for_messages = accelerator.process_index();
  at::manual_seed(6);
  accel::Model model = accel::Model::from_json(kSmall);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  if (mode == "load") {
    // Saved by 2 processes: every unit's shards are cut again for this world.
    accelerator.load_state(dir + "/state");
    accel::Model at_save = accel::Model::from_json(kSmall);  // not prepared: the file's tensors as they are
    accelerator.load_checkpoint_in_model(at_save, dir + "/full_at_save/model.safetensors", true);
    const std::vector<at::Tensor> resharded = values(accelerator.get_state_dict(model));
    const auto saved = at_save.named_parameters();
    check(resharded.size() == saved.size(), "get_state_dict has every parameter after load_state");
    for (size_t i = 0; i < resharded.size(); ++i) {
      check(at::equal(resharded[i], saved[i].second), saved[i].first + " is bitwise the 2-process run's at its save");
    }
    std::printf("rank %d: the shards of 2 processes load cut again for %d\n", accelerator.process_index(),
                accelerator.num_processes());
    // The full form loads at any world size: model.safetensors saved by 2
    // processes is scattered over these, each keeping its own slices.
    accel::Model reference = accel::Model::from_json(kSmall);  // not prepared: the file's tensors as they are
    accelerator.load_checkpoint_in_model(reference, dir + "/full/model.safetensors", true);
    accelerator.load_checkpoint_in_model(model, dir + "/full/model.safetensors", true);
    const std::vector<at::Tensor> loaded = values(accelerator.get_state_dict(model));
    const auto want = reference.named_parameters();
    check(loaded.size() == want.size(), "get_state_dict has every parameter");
    for (size_t i = 0; i < loaded.size(); ++i) {
      check(at::equal(loaded[i], want[i].second), want[i].first + " loads from the 2-process model.safetensors");
    }
    train_step(accelerator, model, optimizer, 0);  // and trains on, sharded over these processes
    std::printf("rank %d: a full checkpoint of 2 processes loads into FULL_SHARD over %d\n",
                accelerator.process_index(), accelerator.num_processes());
    return 0;
  }
  for (int64_t step = 0; step < 3; ++step) train_step(accelerator, model, optimizer, step);
  accelerator.save_state(dir + "/state");
  accelerator.save_model(model,
                         dir + "/full_at_save");  // what accel merge-weights must rebuild (check_merge_weights.py)
  const std::string rank = std::to_string(accelerator.process_index());
  for (const std::string name : {"model_rank" + rank + ".safetensors", "optimizer_rank" + rank + ".bin"}) {
    check(std::ifstream(dir + "/state/" + name).good(), name + " was written");
  }
  check(!std::ifstream(dir + "/state/model.safetensors").good(), "no full model.safetensors is written by save_state");
  for (int64_t step = 3; step < 6; ++step) train_step(accelerator, model, optimizer, step);
  const std::vector<at::Tensor> uninterrupted = values(accelerator.get_state_dict(model));
  accelerator.save_model(model, dir + "/full");
  accelerator.load_state(dir + "/state");
  for (int64_t step = 3; step < 6; ++step) train_step(accelerator, model, optimizer, step);
  const std::vector<at::Tensor> resumed = values(accelerator.get_state_dict(model));
  for (size_t i = 0; i < resumed.size(); ++i) {
    check(at::equal(resumed[i], uninterrupted[i]), "parameter " + std::to_string(i) + " resumes bitwise");
  }
  // The full checkpoint loads into a fresh sharded model, each process keeping its slices.
  at::manual_seed(7);
  accel::Model fresh = accel::Model::from_json(kSmall);
  accelerator.prepare(fresh);
  accelerator.load_checkpoint_in_model(fresh, dir + "/full/model.safetensors", true);
  const std::vector<at::Tensor> loaded = values(accelerator.get_state_dict(fresh));
  for (size_t i = 0; i < loaded.size(); ++i) {
    check(at::equal(loaded[i], uninterrupted[i]), "tensor " + std::to_string(i) + " of model.safetensors loads");
  }
  // Streamed unit by unit into shards of at most 200 bytes (Hugging Face's index):
  // the same values, each tensor once, loading through the index.
  accelerator.save_model(fresh, dir + "/sharded", "200B");
  at::manual_seed(8);
  accel::Model again = accel::Model::from_json(kSmall);
  accelerator.prepare(again);
  accelerator.load_checkpoint_in_model(again, dir + "/sharded/model.safetensors.index.json", true);
  const std::vector<at::Tensor> from_shards = values(accelerator.get_state_dict(again));
  for (size_t i = 0; i < from_shards.size(); ++i) {
    check(at::equal(from_shards[i], uninterrupted[i]), "tensor " + std::to_string(i) + " of the 200-byte shards loads");
  }
  accelerator.wait_for_everyone();
  std::printf("rank %d: FULL_SHARD resume bitwise ok, full checkpoint scattered ok (%zu tensors)\n",
              accelerator.process_index(), loaded.size());
  return 0;
}

}  // namespace

// `dist_full_shard memory SPEC STRATEGY`: two AdamW steps of SPEC (a sequential
// spec whose first layer is a Linear) under STRATEGY (none, zero1, zero2,
// full), then the bytes held per process, and their ratio to the replicated
// figure estimate_memory gives (the docs/benchmarks.md memory table).
int memory(const std::string& spec_path, const std::string& name) {
  accel::AcceleratorOptions options = full_shard_options();
  options.sharding_strategy = name == "none"    ? accel::ShardingStrategy::NoShard
                              : name == "zero1" ? accel::ShardingStrategy::ShardOptimizer
                              : name == "zero2" ? accel::ShardingStrategy::ShardGradOp
                                                : accel::ShardingStrategy::FullShard;
  accel::Accelerator accelerator(options);
  rank_for_messages = accelerator.process_index();
  accel::Model model = accel::Model::from_json(read_file(spec_path));
  const int64_t in_features = model.parameters().front().size(1);
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  for (int step = 0; step < 2; ++step) {
    at::Tensor out = model.forward(at::randn({4, in_features}));
    accelerator.backward(out.pow(2).mean());
    optimizer.step();
  }
  const accel::HeldBytes held = accelerator.held_bytes(model, &optimizer);
  const auto estimates = accel::estimate_memory(spec_path, accelerator.num_processes(), accel::OptimizerKind::AdamW);
  const accel::HeldBytes& base = estimates.front().bytes;
  const double replicated = static_cast<double>(base.parameters + base.gradients + base.optimizer_state);
  const int64_t sum = held.parameters + held.gradients + held.optimizer_state;
  for (const auto& e : estimates) {
    if (e.strategy != options.sharding_strategy) continue;
    const int64_t want = e.bytes.parameters + e.bytes.gradients + e.bytes.optimizer_state;
    check(std::abs(static_cast<double>(want - sum)) <= 0.1 * static_cast<double>(sum),
          "estimate " + std::to_string(want) + " within 10% of held " + std::to_string(sum));
  }
  if (accelerator.is_main_process()) {
    std::printf("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.3f |\n", accel::to_string(*options.sharding_strategy),
                accelerator.num_processes(), held.parameters / 1048576.0, held.gradients / 1048576.0,
                held.optimizer_state / 1048576.0, sum / 1048576.0, sum / replicated);
  }
  return 0;
}

int main(int argc, char** argv) {
  check(argc >= 3,
        "usage: dist_full_shard train sgd|adamw [accum] [clip] [wrap N] | resume DIR | load DIR | memory SPEC S");
  if (std::strcmp(argv[1], "train") == 0) return train(argc, argv);
  if (std::strcmp(argv[1], "memory") == 0 && argc == 4) return memory(argv[2], argv[3]);
  return checkpoints(argv[1], argv[2], argc > 3 && std::strcmp(argv[3], "offload") == 0);
}
