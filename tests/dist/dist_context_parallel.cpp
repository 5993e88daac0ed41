// Context parallelism (ParallelismConfig cp_size) across real processes,
// beside dist_tensor_parallel's training runs (which prove the meshes train as
// one process does, but would also pass if every rank ran the whole sequence).
//
// `dist_context_parallel blocks`, under `accel launch --parallelism_config_cp_size N`
// (with tp as well, if given): each rank of the context-parallel group is given
// ids that are the reference's in its own block of the sequence only, other
// ids everywhere else, so a rank that read any position outside its block
// would compute something else (a block is chunks r and 2 N - 1 - r of 2 N,
// docs/parallelism.md). The sequence (15 tokens) is no multiple of 4 or 8, so
// the last chunk is padded; the second of two sequences is padded
// by its attention_mask; one transformer layer is causal, the other not. The
// logits (gathered whole), the loss (the whole sequence's mean) and, after
// backward (the loss plus a term of the logits, so the gathered output's
// gradient is checked as well), every parameter's gradient (averaged over the
// group) must be one unprepared process's on the reference ids.
// `dist_context_parallel two_forwards` (under FULL_SHARD with activation
// checkpointing, whose backward runs each layer's forward again): two
// forwards of different lengths (15 and 9 tokens) before one backward of
// both losses; each recomputed layer must cut as its own forward did. After an
// SGD step the parameters (gathered whole) are one process's.
// `dist_context_parallel refuse [TORCHSCRIPT]`: prepare refuses a chain model,
// a TorchScript model (the file given) and a layer that is not batch_first
// with Unsupported, and a forward with a mask of the wrong length is
// InvalidArgument naming it; the model still trains after. Under tp 2 x cp 2,
// a plan with sequence_parallel entries is refused as well, before the model
// is split (its parameters keep their shapes).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

constexpr int64_t kVocab = 64, kLength = 15, kBatch = 2;

std::string layer(const std::string& name, const std::string& input, bool causal, bool batch_first = true) {
  return R"({"name": ")" + name + R"(", "type": "TransformerEncoderLayer", "input": [")" + input +
         R"(", "attention_mask"], "d_model": 32, "nhead": 4, "dim_feedforward": 64, "dropout": 0.0,
    "activation": "gelu", "batch_first": )" +
         (batch_first ? "true" : "false") + R"(, "norm_first": true, "causal": )" + (causal ? "true" : "false") + "}";
}

std::string spec(bool batch_first = true) {
  return R"({"inputs": ["input_ids", {"name": "attention_mask", "optional": true},
    {"name": "labels", "optional": true}], "nodes": [
    {"name": "wte", "type": "Embedding", "num_embeddings": 64, "embedding_dim": 32},
    {"name": "wpe", "type": "PositionalEmbedding", "num_positions": 16, "embedding_dim": 32, "batch_first": true},
    )" + layer("h0", "wpe", true) +
         ", " + layer("h1", "h0", false, batch_first) + R"(,
    {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 32},
    {"name": "logits", "type": "Linear", "in_features": 32, "out_features": 64, "bias": false, "weight": "wte.weight"},
    {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["logits", "loss"]})";
}

struct Inputs {
  at::Tensor ids, mask, labels;
};

Inputs reference_inputs() {
  at::manual_seed(11);
  Inputs in;
  in.ids = at::randint(0, kVocab, {kBatch, kLength}, at::kLong);
  in.mask = at::ones({kBatch, kLength}, at::kLong);
  in.mask[1].narrow(0, kLength - 4, 4).zero_();  // the second sequence is 11 tokens, padded
  in.labels = in.ids.masked_fill(in.mask == 0, -100);
  return in;
}

accel::Model::NamedTensors named(const Inputs& in, const at::Tensor& ids) {
  return {{"input_ids", ids}, {"attention_mask", in.mask}, {"labels", in.labels}};
}

// The loss plus a term of every logit: backward then passes through the gathered logits too.
at::Tensor objective(const accel::Model::NamedTensors& outputs) {
  return outputs.at(1).second + 0.01 * outputs.at(0).second.square().mean();
}

// Tolerances. The split forward computes each output with the reference's
// products and sums over the same non-zero terms (a hidden key's weight is
// exactly 0 in both), but the BLAS kernels see other matrix shapes and may
// reassociate a sum: each logit is a chain of at most 12 products and sums
// of at most 64 terms, so it moves by at most 12 * 64 * u = 4.6e-5 (u = 6e-8)
// of the magnitudes it is made of; 1e-4 of the largest reference value holds
// that. The gradients add, besides, the 2 x 15 tokens' contributions in
// another order (30 more terms): the same 1e-4 of the tensor's largest
// gradient still holds it.
constexpr double kRelative = 1e-4;

void expect_close(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  check(got.sizes() == want.sizes(),
        what + " has shape " + c10::str(got.sizes()) + ", the reference " + c10::str(want.sizes()));
  const double scale = std::max(want.abs().max().item<double>(), 1e-6);
  const double worst = (got - want).abs().max().item<double>();
  check(worst <= kRelative * scale, what + " differs from one process's by " + std::to_string(worst) +
                                        " (largest value " + std::to_string(scale) + ")");
}

int blocks() {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  const accel::ParallelismConfig mesh = accelerator.parallelism_config();
  check(mesh.cp_size > 1, "run under accel launch --parallelism_config_cp_size N (N > 1)");
  const Inputs in = reference_inputs();

  at::manual_seed(7);
  accel::Model reference = accel::Model::from_json(spec());
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(spec());
  const auto want = reference.forward(named(in, in.ids));
  objective(want).backward();

  accelerator.prepare(model);
  // This rank's block of the padded sequence, chunks r and 2 cp - 1 - r of
  // 2 cp: the reference's ids there, others elsewhere.
  const int64_t cp_rank = (accelerator.process_index() / mesh.tp_size) % mesh.cp_size;
  const accel::ParallelismRanks ranks = accelerator.parallelism_ranks();
  check(ranks.cp_rank == cp_rank && ranks.tp_rank == accelerator.process_index() % mesh.tp_size &&
            ranks.dp_replicate_rank == accelerator.process_index() / (mesh.tp_size * mesh.cp_size * mesh.dp_shard_size),
        "parallelism_ranks() is not the process index read row-major with tp innermost");
  const int64_t chunk = (kLength + 2 * mesh.cp_size - 1) / (2 * mesh.cp_size);
  at::Tensor ids = (in.ids + 1 + cp_rank) % kVocab;
  for (const int64_t start : {cp_rank * chunk, (2 * mesh.cp_size - 1 - cp_rank) * chunk}) {
    const int64_t mine = std::max<int64_t>(0, std::min(chunk, kLength - start));
    if (mine > 0) ids.narrow(1, start, mine).copy_(in.ids.narrow(1, start, mine));
  }
  const auto got = model.forward(named(in, ids));
  expect_close(got.at(0).second, want.at(0).second.detach(), "the logits");
  expect_close(got.at(1).second, want.at(1).second.detach(), "the loss");
  accelerator.backward(objective(got));
  const auto want_parameters = reference.named_parameters();
  const auto got_parameters = model.named_parameters();
  check(want_parameters.size() == got_parameters.size(), "the prepared model has other parameters");
  for (size_t i = 0; i < got_parameters.size(); ++i) {
    check(got_parameters[i].second.grad().defined(), got_parameters[i].first + " has no gradient");
    if (mesh.tp_size > 1) continue;  // split parameters: dist_tensor_parallel checks their training
    expect_close(got_parameters[i].second.grad(), want_parameters[i].second.grad(),
                 "the gradient of " + got_parameters[i].first);
  }
  accelerator.wait_for_everyone();
  if (accelerator.is_main_process()) {
    std::printf("context parallel: cp %lld (tp %lld): every rank read its block only; logits %.6f, loss %.6f\n",
                static_cast<long long>(mesh.cp_size), static_cast<long long>(mesh.tp_size),
                got.at(0).second.abs().sum().item<double>(), got.at(1).second.item<double>());
  }
  return 0;
}

int two_forwards() {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  check(accelerator.parallelism_config().cp_size > 1, "run under --parallelism_config_cp_size N (N > 1)");
  const Inputs in = reference_inputs();
  const at::Tensor short_ids = in.ids.narrow(1, 0, 9).flip(0).contiguous();
  auto sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.lr = 0.1;
  at::manual_seed(7);
  accel::Model reference = accel::Model::from_json(spec());
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(spec());
  accel::Optimizer reference_step(reference, sgd), optimizer(model, sgd);
  auto losses = [](accel::Model& m, const Inputs& in, const at::Tensor& short_ids) {
    const auto first = m.forward(accel::Model::NamedTensors{{"input_ids", in.ids}, {"labels", in.labels}});
    const auto second = m.forward(accel::Model::NamedTensors{{"input_ids", short_ids}, {"labels", short_ids}});
    return first.at(1).second + second.at(1).second;
  };
  const at::Tensor want = losses(reference, in, short_ids);
  want.backward();
  reference_step.step();
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  const at::Tensor got = losses(model, in, short_ids);
  expect_close(got.detach(), want.detach(), "the two losses");
  accelerator.backward(got);
  optimizer.step();
  const accel::TensorDict whole = accelerator.get_state_dict(model);
  const auto expected = reference.named_parameters();
  for (size_t i = 0; i < expected.size(); ++i) {
    expect_close(whole[i].second, expected[i].second.detach(), "after the step, " + whole[i].first);
  }
  if (accelerator.is_main_process()) std::printf("context parallel: two forwards, one backward: as one process\n");
  return 0;
}

void expect_refused(const std::function<void()>& call, accel::ErrorCode code, const std::string& expected) {
  try {
    call();
    check(false, "accepted; expected an error with \"" + expected + "\"");
  } catch (const accel::Error& e) {
    const std::string message = e.what();
    check(e.code() == code && message.find(expected) != std::string::npos,
          "failed with \"" + message + "\", expected \"" + expected + "\"");
  }
}

int refuse(const char* torchscript) {
  accel::Accelerator accelerator;
  rank_for_messages = accelerator.process_index();
  if (accelerator.parallelism_config().tp_size > 1) {
    // The tp_plan's sequence_parallel beside cp: refused before tp splits anything.
    std::string with_plan = spec();
    with_plan.insert(with_plan.size() - 1, R"(, "tp_plan": {"*.self_attn": "colwise", "*.self_attn.out_proj":
      "rowwise", "*.linear1": "colwise", "*.linear2": "rowwise", "*.norm1": "sequence_parallel"})");
    accel::Model model = accel::Model::from_json(with_plan);
    const auto before = model.named_parameters();
    expect_refused([&] { accelerator.prepare(model); }, accel::ErrorCode::Unsupported,
                   "context parallelism with the tp_plan's sequence_parallel (*.norm1) is not built");
    const auto after = model.named_parameters();
    for (size_t i = 0; i < after.size(); ++i)
      check(after[i].second.sizes() == before[i].second.sizes(), "the refused prepare split " + after[i].first);
    accelerator.wait_for_everyone();
    if (accelerator.is_main_process()) std::printf("context parallel: refused sequence_parallel beside it\n");
    return 0;
  }
  accel::Model chain = accel::Model::from_json(R"([{"type": "Linear", "in_features": 4, "out_features": 2}])");
  expect_refused([&] { accelerator.prepare(chain); }, accel::ErrorCode::Unsupported,
                 "context parallelism cuts the sequence of JSON graph models");
  if (torchscript != nullptr) {
    accel::Model traced = accel::Model::from_torchscript(torchscript);
    expect_refused([&] { accelerator.prepare(traced); }, accel::ErrorCode::Unsupported,
                   "a TorchScript or C++ module cannot be cut");
  }
  accel::Model not_batch_first = accel::Model::from_json(spec(/*batch_first=*/false));
  expect_refused([&] { accelerator.prepare(not_batch_first); }, accel::ErrorCode::Unsupported,
                 "node \"h1\" (TransformerEncoderLayer): context parallelism (cp_size 2) cuts the sequence");
  at::manual_seed(7);
  accel::Model model = accel::Model::from_json(spec());
  accelerator.prepare(model);
  const Inputs in = reference_inputs();
  accel::Model::NamedTensors short_mask{{"input_ids", in.ids}, {"attention_mask", in.mask.narrow(1, 0, 8)}};
  expect_refused([&] { model.forward(short_mask); }, accel::ErrorCode::InvalidArgument,
                 "the attention_mask must have shape [2, 15]");
  accelerator.backward(model.forward(named(in, in.ids)).at(1).second);
  accelerator.wait_for_everyone();
  if (accelerator.is_main_process()) std::printf("context parallel: refused as expected\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "blocks") return blocks();
    if (mode == "refuse") return refuse(argc > 2 ? argv[2] : nullptr);
    if (mode == "two_forwards") return two_forwards();
    std::fprintf(stderr, "usage: dist_context_parallel blocks | two_forwards | refuse [TORCHSCRIPT]\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_for_messages, e.what());
    return 1;
  }
}
