// One mesh of the tensor- and context-parallel benchmarks
// (bench/tensor_parallel_bench.sh, bench/context_parallel_bench.sh): a JSON
// GPT (width 256, 8 heads, feed-forward 1024, 4 blocks, 256 byte ids,
// sequences of 128) trained with AdamW on a global batch of 16 sequences
// under whatever mesh `accel launch --parallelism_config_*` set. Prints, from
// each rank, the bytes it holds for parameters, gradients and optimizer state
// (held_bytes) beside what the mesh implies, and its peak RSS; from rank 0
// the global tokens per second over the timed steps.
//   accel launch ... tensor_parallel_bench [steps] [warmup] [sp] [length=L] [batch=B]
// length=L, batch=B: sequences of L tokens (and L positions), B a step.
#include <ATen/ATen.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "accel/accel.hpp"

namespace {

constexpr int64_t kWidth = 256, kHeads = 8, kFeedForward = 1024, kBlocks = 4, kVocab = 256;
int64_t kLength = 128, kGlobalBatch = 16;  // length=, batch=

// `sp` (argv[3]): the blocks' norms and ln_f sequence parallel as well.
std::string spec(bool sequence_parallel) {
  std::string nodes = R"({"name": "wte", "type": "Embedding", "num_embeddings": 256, "embedding_dim": 256},
    {"name": "wpe", "type": "PositionalEmbedding", "num_positions": )" +
                      std::to_string(kLength) + R"(, "embedding_dim": 256, "batch_first": true})";
  for (int64_t b = 0; b < kBlocks; ++b) {
    nodes += R"(, {"name": "h)" + std::to_string(b) +
             R"(", "type": "TransformerEncoderLayer", "d_model": 256, "nhead": 8, "dim_feedforward": 1024,
      "dropout": 0.0, "activation": "gelu", "batch_first": true, "norm_first": true, "causal": true})";
  }
  return R"({"inputs": ["input_ids", {"name": "labels", "optional": true}], "nodes": [)" + nodes +
         R"(, {"name": "ln_f", "type": "LayerNorm", "normalized_shape": 256},
    {"name": "logits", "type": "Linear", "in_features": 256, "out_features": 256, "bias": false, "weight": "wte.weight"},
    {"name": "loss", "type": "CausalLMLoss", "input": ["logits", "labels"]}], "outputs": ["loss"])" +
         (sequence_parallel ? R"(, "tp_plan": {"*.self_attn": "colwise", "*.self_attn.out_proj": "rowwise",
    "*.linear1": "colwise", "*.linear2": "rowwise", "*.norm1": "sequence_parallel", "*.norm2": "sequence_parallel",
    "ln_f": "sequence_parallel"}})"
                            : "}");
}

double peak_rss_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 10, warmup = argc > 2 ? std::atoi(argv[2]) : 2;
  bool sequence_parallel = false;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "sp") sequence_parallel = true;
    if (arg.rfind("length=", 0) == 0) kLength = std::atoll(arg.c_str() + 7);
    if (arg.rfind("batch=", 0) == 0) kGlobalBatch = std::atoll(arg.c_str() + 6);
  }
  accel::Accelerator accelerator;
  const accel::ParallelismConfig mesh = accelerator.parallelism_config();
  const int64_t dp = mesh.dp_replicate_size * mesh.dp_shard_size;
  at::manual_seed(3);
  accel::Model model = accel::Model::from_json(spec(sequence_parallel));
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 1e-4;
  accel::Optimizer optimizer(model, options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);

  // Theory: per block, attention's in_proj (3E x E + 3E) and out_proj's
  // weight (E x E), linear1 (F x E + F) and linear2's weight (E x F) split
  // over tp; out_proj's and linear2's biases and two layer norms whole;
  // outside the blocks wte (tied head), wpe and ln_f whole. Sharding divides
  // what a rank holds by dp_shard.
  const int64_t split =
      3 * kWidth * kWidth + 3 * kWidth + kWidth * kWidth + kFeedForward * kWidth + kFeedForward + kWidth * kFeedForward;
  const int64_t whole_per_block = 2 * kWidth + 4 * kWidth;
  const int64_t whole = kVocab * kWidth + kLength * kWidth + 2 * kWidth;
  const int64_t theory = (kBlocks * (split / mesh.tp_size + whole_per_block) + whole) * 4 / mesh.dp_shard_size;

  const int64_t batch = kGlobalBatch / dp;
  // The same batch within a tp and a cp group.
  at::manual_seed(100 + accelerator.process_index() / (mesh.tp_size * mesh.cp_size));
  at::Tensor ids = at::randint(0, kVocab, {batch, kLength}, at::kLong);
  std::chrono::steady_clock::time_point start;
  for (int s = 0; s < warmup + steps; ++s) {
    if (s == warmup) {
      accelerator.wait_for_everyone();
      start = std::chrono::steady_clock::now();
    }
    auto out = model.forward(accel::Model::NamedTensors{{"input_ids", ids}, {"labels", ids}});
    accelerator.backward(out.at(0).second);
    optimizer.step();
    optimizer.zero_grad();
  }
  accelerator.wait_for_everyone();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const accel::HeldBytes held = accelerator.held_bytes(model, &optimizer);
  std::printf(
      "held: parameters %.3f MiB (theory %.3f, %+.1f%%), gradients %.3f MiB, optimizer state %.3f MiB; "
      "peak RSS %.1f MiB\n",
      held.parameters / 1048576.0, theory / 1048576.0, 100.0 * (held.parameters - theory) / theory,
      held.gradients / 1048576.0, held.optimizer_state / 1048576.0, peak_rss_mib());
  if (accelerator.is_main_process()) {
    std::printf(
        "mesh dp_replicate %lld x dp_shard %lld x cp %lld x tp %lld%s: %.0f tokens/s (%d steps of %lld tokens)\n",
        static_cast<long long>(mesh.dp_replicate_size), static_cast<long long>(mesh.dp_shard_size),
        static_cast<long long>(mesh.cp_size), static_cast<long long>(mesh.tp_size),
        sequence_parallel ? " (sequence parallel)" : "", steps * kGlobalBatch * kLength / seconds, steps,
        static_cast<long long>(kGlobalBatch * kLength));
  }
  return 0;
}
