// Tensor parallelism (Accelerate's ParallelismConfig) across real processes.
//
// `dist_tensor_parallel record DIR [clip]`: one process trains the JSON GPT
// (two causal pre-norm blocks, 4 heads, the head tied to the embedding) for
// 50 AdamW steps on a global batch of 8 sequences and records the per-step
// losses (and clipped norms), a checkpoint after step 25 (save_state) and the
// final parameters in DIR.
// `dist_tensor_parallel compare DIR [clip] [resume] [from=MESH]`: the same under the mesh
// that `accel launch --parallelism_config_*` set: each tensor-parallel rank
// holds its heads and its slice of the feed-forward block, the data-parallel
// ranks take their share of each batch (the tensor-parallel ranks of one
// group the same share), and the losses, norms and parameters (gathered whole
// by get_state_dict) are the single process's to the tolerances derived
// below. With resume, the run starts from the single process's step-25
// checkpoint (whole files, cut for this mesh by load_state: the weights, the
// AdamW moments and the loaders' position) and must go on as it did; with
// from=MESH, from the step-25 checkpoint that run on MESH saved (every
// compare run without resume saves one: under a sharding strategy the
// moments are gathered from the shards and the slices). Each
// rank holds exactly its share of the parameters and gradients (held_bytes),
// save_model writes the whole model in the Hugging Face layout (read back
// into a model that was never split), and save_state writes DIR/state_<mesh>
// with the whole model and optimizer state, under any strategy; with
// --fsdp_state_dict_type SHARDED_STATE_DICT, distributed checkpoints of the
// whole tensors written from each rank's slices and shards.
// With `dropout` (record and compare) the layers drop 0.1: each rank of a
// group applies its block of the whole layer's mask, so a mesh with one
// data-parallel rank draws the single process's masks and must match it too.
// `dist_tensor_parallel reload DIR MESH`: one process loads DIR/state_MESH,
// written by a split run, and holds the single process's final parameters.
// `dist_tensor_parallel refuse KIND`: prepare refuses a bad plan (KIND
// nomatch: an entry matching no module; unpaired: linear1 colwise without
// linear2; heads: tp_size not dividing the heads, with 3 processes) with
// InvalidArgument naming it, before anything changes; sp_length: under
// sequence parallelism the forward refuses a sequence tp 2 cannot cut.
// `sp` (compare): the plan adds sequence parallelism (kSequencePlan), which
// must train as the single process does too; `postnorm` (record, compare):
// post-norm blocks.
#include <ATen/ATen.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::has;
using dist_checks::rank_for_messages;

constexpr int64_t kVocab = 64, kLength = 16, kWidth = 32, kHeads = 4, kFeedForward = 64;
constexpr int64_t kGlobalBatch = 8, kSteps = 50;

// The layers' dropout probability (attention weights, feed-forward, residual
// branches): 0.1 with the "dropout" argument, else 0.
std::string layer_dropout = "0.0";

// Pre-norm blocks (GPT's), or post-norm with the "postnorm" argument.
bool norm_first = true;

// With the "sp" argument (compare), the built-in plan plus sequence
// parallelism: the blocks' norms and ln_f on sequence blocks.
bool sequence_parallel = false;

// dropout: the layers' dropout probability.
std::string block(const std::string& name, const std::string& dropout) {
  return R"({"name": ")" + name + R"(", "type": "TransformerEncoderLayer", "d_model": 32, "nhead": 4,
    "dim_feedforward": 64, "dropout": )" +
         dropout + R"(, "activation": "gelu", "batch_first": true,
    "norm_first": )" +
         (norm_first ? "true" : "false") + R"(, "causal": true})";
}

// tp_plan: an object's text to add under "tp_plan", or empty for the built-in plan.
std::string gpt_spec(const std::string& tp_plan = "", const std::string& dropout = layer_dropout) {
  return R"({"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [
    {"name": "wte", "type": "Embedding", "num_embeddings": 64, "embedding_dim": 32},
    {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 16, "embedding_dim": 32, "batch_first": true},
    )" + block("h0", dropout) +
         ", " + block("h1", dropout) + R"(,
    {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 32},
    {"name": "logits", "type": "Linear", "in_features": 32, "out_features": 64, "bias": true, "weight": "wte.weight"},
    {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["loss"])" +
         (tp_plan.empty() ? "" : ", \"tp_plan\": " + tp_plan) + "}";
}

// The built-in plan's entries plus the vocabulary: wte split by rows, the
// tied head by columns, its logits left split for the vocabulary-parallel
// cross-entropy (never gathered).
const char* kVocabPlan = R"({"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise", "*.linear1": "colwise",
  "*.linear2": "rowwise", "wte": "rowwise", "logits": "colwise"})";

// The built-in plan's entries with sequence parallelism (Megatron-LM's): each
// block takes and returns this rank's block of the sequence, its norms,
// residual adds and dropouts on blocks, and so does ln_f.
const char* kSequencePlan = R"({"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise", "*.linear1": "colwise",
  "*.linear2": "rowwise", "*.norm1": "sequence_parallel", "*.norm2": "sequence_parallel", "ln_f": "sequence_parallel"})";

// Parameters per block: split by tp (attention's in_proj rows and out_proj
// columns, linear1's rows and bias, linear2's columns) and whole (out_proj's
// and linear2's biases, both layer norms).
constexpr int64_t kSplitPerBlock =
    3 * kWidth * kWidth + 3 * kWidth + kWidth * kWidth + kFeedForward * kWidth + kFeedForward + kWidth * kFeedForward;
constexpr int64_t kWholePerBlock = kWidth + kWidth + 4 * kWidth;
// Outside the blocks, all whole: wte (tied head), the head's bias, wpe, ln_f.
constexpr int64_t kWholeOutside = kVocab * kWidth + kVocab + kLength * kWidth + 2 * kWidth;

std::shared_ptr<accel::TensorDataset> dataset() {
  at::manual_seed(1234);
  at::Tensor ids = at::randint(0, kVocab, {kGlobalBatch * kSteps, kLength}, at::kLong);
  return std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{ids, ids.clone()});
}

struct Run {
  std::vector<double> losses, norms;
};

// The loop over a prepared loader; `after_step(n)` runs after the n-th step
// (1-based) of this run.
Run train(accel::Accelerator& accelerator, accel::Model& model, accel::Optimizer& optimizer, accel::DataLoader& loader,
          bool clip, const std::function<void(int64_t)>& after_step = {}) {
  Run run;
  std::vector<double> micro;  // under gradient accumulation: this step's micro-batch losses
  while (auto batch = loader.next()) {
    bool synced = false;
    double loss_value = 0;
    {
      auto scope = accelerator.accumulate(model);
      auto outputs = model.forward(accel::Model::NamedTensors{{"input_ids", (*batch)[0]}, {"labels", (*batch)[1]}});
      at::Tensor loss = outputs.at(0).second;
      accelerator.backward(loss);
      synced = accelerator.sync_gradients();
      if (clip && synced) run.norms.push_back(accelerator.clip_grad_norm(model, 0.5));
      optimizer.step();
      optimizer.zero_grad();
      // The mean over the data-parallel slices (equal token counts) is the whole batch's loss.
      loss_value = accelerator.reduce(loss.detach(), accel::ReduceOp::Mean).item<double>();
    }
    micro.push_back(loss_value);
    if (!synced) continue;
    double sum = 0;
    for (double m : micro) sum += m;
    run.losses.push_back(sum / static_cast<double>(micro.size()));  // equal micro-batches: the step's loss
    micro.clear();
    if (after_step) after_step(static_cast<int64_t>(run.losses.size()));
  }
  return run;
}

std::unique_ptr<accel::DataLoader> prepared_loader(accel::Accelerator& accelerator, int64_t batch_size) {
  accel::DataLoaderOptions options;
  options.batch_size = batch_size;
  auto loader = std::make_unique<accel::DataLoader>(dataset(), options);
  accelerator.prepare(*loader);
  return loader;
}

constexpr int64_t kResumeStep = 25;

accel::OptimizerOptions adamw() {
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 1e-3;
  return options;
}

void write_numbers(const std::string& path, const std::vector<double>& values) {
  std::ofstream out(path);
  out.precision(17);
  for (double v : values) out << v << "\n";
  check(out.good(), "cannot write " + path);
}

std::vector<double> read_numbers(const std::string& path) {
  std::ifstream in(path);
  check(in.good(), "cannot read " + path);
  std::vector<double> values;
  for (double v; in >> v;) values.push_back(v);
  return values;
}

// Tolerances. The split run computes the reference's arithmetic
// reassociated: a row-parallel product adds tp partial sums of width/tp or
// ff/tp terms, the input gradients of a split layer are summed over the tp
// ranks, the loss is the mean of dp slice means. In float32 (unit roundoff
// u = 6e-8) a sum of n terms moves by at most n*u of the sum of magnitudes.
// Losses: the mean of n = 8 x 15 = 120 token losses of about 4.2 moves by up
// to n*u*4.2 = 3.0e-5 from reordering alone (typically sqrt(n)*u*4.2 =
// 2.8e-6); kLossTolerance is that bound (the parameters' share, below, is two
// orders smaller). Parameters: a gradient of n <= 64 terms per product moves
// by a relative d <= n*u = 3.8e-6, and AdamW turns that into lr*d (1e-3 x
// 3.8e-6) per step, 2e-7 over 50 steps: kTolerance holds it with a margin of
// 50. Clipped norms (about 1) move by the gradients' d.
constexpr double kLossTolerance = 3.0e-5;
constexpr double kTolerance = 1e-5;

void compare_numbers(const std::vector<double>& got, const std::vector<double>& want, const std::string& what,
                     double tolerance) {
  check(got.size() == want.size(),
        what + ": " + std::to_string(got.size()) + " values, the reference has " + std::to_string(want.size()));
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  check(worst <= tolerance, what + " differ from the single process's by up to " + std::to_string(worst));
  if (rank_for_messages == 0)
    std::printf("%s: worst difference %.3g over %zu steps\n", what.c_str(), worst, got.size());
}

int record(const std::string& dir, bool clip) {
  accel::Accelerator accelerator;
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(gpt_spec());
  accel::Optimizer optimizer(model, adamw());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  auto loader = prepared_loader(accelerator, kGlobalBatch);
  Run run = train(accelerator, model, optimizer, *loader, clip, [&](int64_t step) {
    if (step == kResumeStep) accelerator.save_state(dir + "/state_reference_step25");
  });
  check(static_cast<int64_t>(run.losses.size()) == kSteps, "trained " + std::to_string(run.losses.size()) + " steps");
  write_numbers(dir + "/losses.txt", run.losses);
  write_numbers(dir + "/norms.txt", run.norms);
  accelerator.save(accelerator.get_state_dict(model), dir + "/reference.safetensors");
  std::printf("recorded %lld steps: loss %.5f -> %.5f\n", static_cast<long long>(kSteps), run.losses.front(),
              run.losses.back());
  return 0;
}

// The parameters against the single process's final ones.
void compare_parameters(const accel::TensorDict& whole, const std::string& dir) {
  std::map<std::string, at::Tensor> reference;
  for (auto& [name, tensor] : accel::load_safetensors(dir + "/reference.safetensors")) reference[name] = tensor;
  check(whole.size() == reference.size(), "get_state_dict has " + std::to_string(whole.size()) + " tensors");
  double worst_parameter = 0;
  for (const auto& [name, tensor] : whole) {
    check(reference.count(name) == 1, "get_state_dict names " + name + ", which the reference lacks");
    const at::Tensor& want = reference[name];
    check(tensor.sizes() == want.sizes(), name + " has shape " + c10::str(tensor.sizes()));
    at::Tensor difference_of = (tensor - want).abs();
    // The key bias (rows [E, 2E) of in_proj_bias) has a gradient of exactly 0
    // in exact arithmetic (it adds q.b_k to every score of a query, which the
    // softmax cancels); in floating point it is rounding noise, which AdamW
    // scales up to steps of about lr in any implementation. Not compared.
    if (name.find("in_proj_bias") != std::string::npos) difference_of.narrow(0, kWidth, kWidth).zero_();
    worst_parameter = std::max(worst_parameter, difference_of.max().item<double>());
  }
  check(worst_parameter <= kTolerance,
        "parameters differ from the single process's by up to " + std::to_string(worst_parameter));
}

int reload(const std::string& dir, const std::string& mesh) {
  accel::Accelerator accelerator;
  at::manual_seed(8);  // other initial weights: the load must replace them all
  accel::Model model = accel::Model::from_json(gpt_spec());
  accel::Optimizer optimizer(model, adamw());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  auto loader = prepared_loader(accelerator, kGlobalBatch);
  accelerator.load_state(dir + "/state_" + mesh);
  compare_parameters(accelerator.get_state_dict(model), dir);
  std::printf("reloaded the %s checkpoint on one process\n", mesh.c_str());
  return 0;
}

// A mesh size from `accel launch --parallelism_config_*` (1 when not set).
int64_t mesh_size(const char* variable) {
  const char* text = std::getenv(variable);
  return text ? std::atoll(text) : 1;
}

int compare(const std::string& dir, bool clip, bool resume, bool vocab, const std::string& from) {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  const int64_t tp = mesh_size("PARALLELISM_CONFIG_TP_SIZE"), cp = mesh_size("PARALLELISM_CONFIG_CP_SIZE");
  const int64_t dp = accelerator.num_processes() / tp / cp;
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(gpt_spec(vocab ? kVocabPlan : sequence_parallel ? kSequencePlan : ""));
  accel::Optimizer optimizer(model, adamw());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);

  // Each rank holds its share of the split parameters and all of the whole
  // ones; under FULL_SHARD over dp_shard, its chunk of that (every unit's
  // element count is even here, so the chunks need no padding). ZeRO-2 keeps
  // the parameters whole (its flat buffer padded to a multiple of dp_shard)
  // and shards the gradients and the optimizer state.
  // A sharding strategy shards over dp_shard x cp (Accelerate's dp_shard_cp).
  const bool sharded = accelerator.sharding_strategy() != accel::ShardingStrategy::NoShard;
  const int64_t dp_shard = sharded ? mesh_size("PARALLELISM_CONFIG_DP_SHARD_SIZE") * cp : 1;
  const bool full_shard = accelerator.sharding_strategy() == accel::ShardingStrategy::FullShard;
  // With the vocabulary split too, wte (the tied head) and the head's bias are tp's as well.
  const int64_t vocabulary_part = vocab ? (kVocab * kWidth + kVocab) - (kVocab * kWidth + kVocab) / tp : 0;
  const int64_t local = (2 * kSplitPerBlock / tp + 2 * kWholePerBlock + kWholeOutside - vocabulary_part) * 4;
  const int64_t held = full_shard ? local / dp_shard : local;
  accel::HeldBytes before = accelerator.held_bytes(model, &optimizer);
  check(before.parameters >= held && before.parameters < held + 4 * dp_shard,
        "parameters hold " + std::to_string(before.parameters) + " bytes, expected " + std::to_string(held));

  // Under gradient accumulation each optimizer step takes that many micro-batches of the global batch.
  auto loader = prepared_loader(accelerator, kGlobalBatch / dp / accelerator.gradient_accumulation_steps());
  // The single process's checkpoint after step 25, cut for this mesh.
  if (resume) accelerator.load_state(dir + "/state_" + from + "_step25");
  // FSDP's SHARDED_STATE_DICT (--fsdp_state_dict_type): save_state writes distributed checkpoints.
  const char* state_dict_type = std::getenv("FSDP_STATE_DICT_TYPE");
  const bool dcp = state_dict_type && std::strcmp(state_dict_type, "SHARDED_STATE_DICT") == 0;
  // Each test's own directories (ctest may run them at once): the mesh and the strategy.
  const std::string mesh_name =
      "tp" + std::to_string(tp) + (cp > 1 ? "_cp" + std::to_string(cp) : "") + "_dp" + std::to_string(dp) +
      (dp_shard > 1 ? std::string("_") + accel::to_string(accelerator.sharding_strategy()) : "") +
      (accelerator.gradient_accumulation_steps() > 1 ? "_accumulated" : "") + (vocab ? "_vocab" : "") +
      (sequence_parallel ? "_sp" : "") + (norm_first ? "" : "_postnorm") + (dcp ? "_dcp" : "") +
      (resume ? "_resumed" : "");
  // A distributed checkpoint holds the model and optimizer in PyTorch's folders, not in files of libaccel's form.
  auto check_layout = [&](const std::string& saved) {
    if (!accelerator.is_main_process()) return;
    for (const char* file : {"/pytorch_model_fsdp_0/.metadata", "/optimizer_0/.metadata"}) {
      check(std::ifstream(saved + file).good() == dcp, saved + (dcp ? " lacks " : " holds ") + (file + 1));
    }
    if (dcp) check(!std::ifstream(saved + "/model.safetensors").good(), saved + " holds model.safetensors");
  };
  Run run = train(accelerator, model, optimizer, *loader, clip, [&](int64_t step) {
    if (resume || step != kResumeStep) return;
    accelerator.save_state(dir + "/state_" + mesh_name + "_step25");
    check_layout(dir + "/state_" + mesh_name + "_step25");
  });
  const int64_t first = resume ? kResumeStep : 0;
  check(static_cast<int64_t>(run.losses.size()) == kSteps - first,
        "trained " + std::to_string(run.losses.size()) + " steps, expected " + std::to_string(kSteps - first));
  accel::HeldBytes after = accelerator.held_bytes(model, &optimizer);
  const int64_t gradients = dp_shard > 1 ? local / dp_shard : local;  // ZeRO-2 and FULL_SHARD: a chunk
  check(after.gradients == 0 || (after.gradients >= gradients && after.gradients < gradients + 4 * dp_shard),
        "gradients hold " + std::to_string(after.gradients) + " bytes, expected " + std::to_string(gradients));

  // accel estimate-memory --tp_size: its row for this mesh and strategy is
  // what the ranks hold, byte for byte (the spec split as prepare split it).
  {
    const std::string spec_path = dir + "/estimate_spec_" + std::to_string(::getpid()) + ".json";
    std::ofstream(spec_path) << gpt_spec(vocab ? kVocabPlan : "");
    // FULL_SHARD with dp_replicate > 1 is HSDP: estimate-memory's HYBRID_SHARD
    // row, its "machines" the replicas.
    const int64_t dp_replicate = mesh_size("PARALLELISM_CONFIG_DP_REPLICATE_SIZE");
    const bool hsdp = dp_shard > 1 && dp_replicate > 1;
    accel::MemoryEstimateOptions options;
    options.world_size = accelerator.num_processes();
    options.tp_size = static_cast<int>(tp);
    options.num_machines = hsdp ? static_cast<int>(dp_replicate) : 1;
    const std::vector<accel::MemoryEstimate> rows = accel::estimate_memory(spec_path, options);
    std::remove(spec_path.c_str());
    const accel::ShardingStrategy strategy =
        hsdp ? accel::ShardingStrategy::HybridShard : accelerator.sharding_strategy();
    const accel::MemoryEstimate* row = nullptr;
    for (const auto& e : rows) {
      if (e.tp_size == tp && e.strategy == strategy) row = &e;
    }
    check(row != nullptr, std::string("estimate_memory has no tp_size row for ") + accel::to_string(strategy));
    check(row->bytes.parameters == before.parameters && row->bytes.optimizer_state == after.optimizer_state &&
              (after.gradients == 0 || row->bytes.gradients == after.gradients),
          "estimate_memory says parameters/gradients/optimizer " + std::to_string(row->bytes.parameters) + "/" +
              std::to_string(row->bytes.gradients) + "/" + std::to_string(row->bytes.optimizer_state) +
              " bytes; held: " + std::to_string(before.parameters) + "/" + std::to_string(after.gradients) + "/" +
              std::to_string(after.optimizer_state));
  }

  auto from_first = [first](std::vector<double> values) {
    values.erase(values.begin(), values.begin() + std::min<int64_t>(first, static_cast<int64_t>(values.size())));
    return values;
  };
  if (accelerator.mixed_precision() == accel::MixedPrecision::Bf16) {
    // bf16 autocast: the split run rounds each row-parallel partial product to
    // bf16 before the sum, one more rounding (2^-8 relative) per split output
    // than the single process; two per block, two blocks: 4 * 2^-8 = 1.6% of
    // the logits at most, and a mean of cross-entropies moves by at most the
    // largest logit's change, which bounds the first step's loss to 2%. Later
    // steps follow different bf16 roundings; training must still progress.
    const std::vector<double> reference = read_numbers(dir + "/losses.txt");
    const double first_gap = std::abs(run.losses.front() - reference.front()) / reference.front();
    check(first_gap <= 0.02, "bf16: the first loss " + std::to_string(run.losses.front()) + " is " +
                                 std::to_string(100 * first_gap) + "% from the single process's");
    check(
        run.losses.back() < 0.6 * run.losses.front(),
        "bf16: the loss went from " + std::to_string(run.losses.front()) + " to " + std::to_string(run.losses.back()));
    if (accelerator.is_main_process()) {
      std::printf("bf16 tensor parallel: first loss %.4f (single process %.4f), last %.4f (%.4f)\n", run.losses.front(),
                  reference.front(), run.losses.back(), reference.back());
    }
    return 0;
  }
  compare_numbers(run.losses, from_first(read_numbers(dir + "/losses.txt")), "losses", kLossTolerance);
  if (clip) compare_numbers(run.norms, from_first(read_numbers(dir + "/norms.txt")), "clipped norms", kTolerance);
  const accel::TensorDict whole = accelerator.get_state_dict(model);
  compare_parameters(whole, dir);

  // save_model: every rank gathers, the main process writes the whole model.
  const std::string saved = dir + "/saved_" + mesh_name;
  accelerator.save_model(model, saved, "20KB");
  if (accelerator.is_main_process()) {
    at::manual_seed(99);
    accel::Model fresh = accel::Model::from_json(gpt_spec());
    accelerator.load_checkpoint_in_model(fresh, saved + "/model.safetensors.index.json", /*strict=*/true);
    const accel::TensorDict loaded = accelerator.get_state_dict(fresh);  // never prepared: not collective
    for (size_t i = 0; i < whole.size(); ++i) {
      check(at::equal(loaded[i].second, whole[i].second), "save_model's " + whole[i].first + " is not the model's");
    }
  }

  // save_state: the whole model and optimizer state as an unsplit run writes
  // them, under any strategy (reload reads them on one process).
  accelerator.save_state(dir + "/state_" + mesh_name);
  check_layout(dir + "/state_" + mesh_name);

  // load_checkpoint_in_model into the split (and sharded) model: the single
  // process's whole weights, each rank keeping its slices; gathered back, bit for bit.
  accelerator.load_checkpoint_in_model(model, dir + "/reference.safetensors", /*strict=*/true);
  std::map<std::string, at::Tensor> reference;
  for (auto& [name, tensor] : accel::load_safetensors(dir + "/reference.safetensors")) reference[name] = tensor;
  for (const auto& [name, tensor] : accelerator.get_state_dict(model)) {
    check(at::equal(tensor, reference[name]),
          "load_checkpoint_in_model did not load " + name + " into the split model");
  }
  accelerator.wait_for_everyone();
  if (accelerator.is_main_process())
    std::printf("tensor parallel: tp %lld x cp %lld x dp %lld matches\n", static_cast<long long>(tp),
                static_cast<long long>(cp), static_cast<long long>(dp));
  return 0;
}

// A sequence the tp group cannot cut into equal blocks: the forward is
// refused at the first sequence-parallel layer, naming it and the shape.
int refuse_sequence_length() {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(gpt_spec(kSequencePlan));
  accelerator.prepare(model);
  const at::Tensor ids = at::randint(0, kVocab, {2, kLength - 1}, at::kLong);
  try {
    model.forward(accel::Model::NamedTensors{{"input_ids", ids}, {"labels", ids}});
    check(false, "the forward took a sequence of 15 under tp 2 with sequence parallelism");
  } catch (const accel::Error& e) {
    const std::string message = e.what(), expected = "with L a multiple of 2, got [2, 15, 32]";
    check(e.code() == accel::ErrorCode::InvalidArgument && message.find("node \"h0\"") != std::string::npos &&
              message.find(expected) != std::string::npos,
          "the forward failed with \"" + message + "\", expected InvalidArgument at h0 with \"" + expected + "\"");
  }
  // The full length still trains after the refusal.
  const at::Tensor whole = at::randint(0, kVocab, {2, kLength}, at::kLong);
  const at::Tensor loss = model.forward(accel::Model::NamedTensors{{"input_ids", whole}, {"labels", whole}})[0].second;
  accelerator.backward(loss);
  if (accelerator.is_main_process()) std::printf("refused a sequence of 15 under tp 2, as expected\n");
  accelerator.wait_for_everyone();
  return 0;
}

int refuse(const std::string& kind) {
  if (kind == "sp_length") return refuse_sequence_length();
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  std::string plan, expected;
  if (kind == "nomatch") {
    plan = R"({"h*.self_attn": "colwise"})";
    expected = "tp_plan entry \"h*.self_attn\" matches no module";
  } else if (kind == "unpaired") {
    plan = R"({"h0.linear1": "colwise"})";
    expected = "needs \"h0.linear2\" to be rowwise";
  } else if (kind == "tied") {
    plan = R"({"wte": "rowwise"})";
    expected = "\"logits.weight\" is tied to \"wte.weight\"";
  } else {
    expected = "tp_size 3 does not divide";  // the heads (4) and dim_feedforward (64)
  }
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(gpt_spec(plan));
  const auto before = model.named_parameters();
  try {
    accelerator.prepare(model);
    check(false, "prepare accepted the " + kind + " plan");
  } catch (const accel::Error& e) {
    const std::string message = e.what();
    check(e.code() == accel::ErrorCode::InvalidArgument && message.find(expected) != std::string::npos,
          "prepare failed with \"" + message + "\", expected InvalidArgument with \"" + expected + "\"");
  }
  const auto after = model.named_parameters();
  for (size_t i = 0; i < before.size(); ++i) {
    check(after[i].second.sizes() == before[i].second.sizes(), "a refused plan changed " + after[i].first);
  }
  if (accelerator.is_main_process()) std::printf("refused %s as expected\n", kind.c_str());
  // No rank leaves before all have refused: a rank still joining its groups
  // would see its peers' connections close.
  accelerator.wait_for_everyone();
  return 0;
}

// compare's from=MESH: whose step-25 checkpoint a resumed run loads.
std::string resumed_from(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    if (std::strncmp(argv[i], "from=", 5) == 0) return argv[i] + 5;
  }
  return "reference";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (has(argc, argv, "dropout")) layer_dropout = "0.1";
    if (has(argc, argv, "postnorm")) norm_first = false;
    sequence_parallel = has(argc, argv, "sp");
    if ((mode == "record" || mode == "compare") && argc > 2) {
      const bool clip = has(argc, argv, "clip");
      return mode == "record" ? record(argv[2], clip)
                              : compare(argv[2], clip, has(argc, argv, "resume"), has(argc, argv, "vocab"),
                                        resumed_from(argc, argv));
    }
    if (mode == "reload" && argc > 3) return reload(argv[2], argv[3]);
    if (mode == "refuse" && argc > 2) return refuse(argv[2]);
    std::fprintf(stderr,
                 "usage: dist_tensor_parallel record|compare DIR [clip] [resume] [from=MESH] | reload DIR MESH | "
                 "refuse KIND\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_for_messages, e.what());
    return 1;
  }
}
