// Checkpoints across strategies and world sizes (tests/dist/run_reshard_matrix.sh).
//
// `dist_reshard save STRATEGY DIR`: 3 AdamW steps of a three-layer MLP in
// float64, save_state(DIR/state), then 5 more steps whose losses rank 0 writes
// to DIR/losses.
// `dist_reshard load STRATEGY SRC OUT`: load_state(SRC/state) under STRATEGY at
// this world size, save_state(OUT) at once (check_reshard.py compares its
// unsharded contents with SRC/state's, bitwise), then the same 5 steps, whose
// losses must be SRC/losses.
//
// A prepared, shuffled data loader over the sample ids 0..59 (batches of 2)
// rides along: each step takes one batch. The ids the saving run took before
// its save (DIR/seen) and those the loading run takes from the load to the end
// of the epoch, gathered with gather_for_metrics, must be 0..59 exactly once:
// at another world size the new processes deal the epoch's batches from where
// the old ones stopped (DataLoader::Position::sampler_offset), and the last
// round's padding is dropped.
//
// `dist_reshard load-accelerate STRATEGY SRC`: load_state(SRC/state), the
// distributed checkpoint PyTorch FSDP wrote in Accelerate's layout
// (fsdp_dcp.py, 2 processes), then the same 5 steps, whose losses must be
// SRC/losses (PyTorch's AdamW against libaccel's: the same formula, so within
// the bound above).
//
// A last argument `two-models` adds a second model (a two-layer head on the
// same inputs) with its own AdamW, both prepared: each is cut again with its
// own layout, each optimizer with its model's (the loss is the two losses' sum).
//
// STRATEGY: none, zero1, zero2, full, hybrid (HYBRID_SHARD over two "nodes" of
// half the processes each when their number is even: LOCAL_WORLD_SIZE and
// LOCAL_RANK rewritten before the accelerator reads them), hybrid1 (HYBRID_SHARD
// on one node: the same strategy and world as hybrid, another layout).
//
// Every step's global batch is the same 12 samples at any world size, each
// process taking 12 / world of them (1, 2, 3 and 4 divide 12), so the run is
// the same computation on any number of processes but for the order of the
// gradient sums. In float64 (u = 1.1e-16) that order moves a loss by a few u
// per step; AdamW amplifies a difference by at most ~1800x in 12 updates in
// the float32 runs measured (dist_full_shard.cpp), so 5 updates stay far
// below 1e-11 (dist_sharding.cpp derives the same bound), while a state cut
// wrongly (another parameter's exp_avg, a lost chunk) moves the first loss
// after the load by 1e-4 or more.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

std::string exact(double value) {  // round-trips: 17 significant digits
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// 56 + 72 + 27 = 155 elements in three units: chunks of 78, 52 and 39 in the
// flat layout, and every unit's chunk boundaries in the middle of a weight.
const char* kSpec = R"([{"type": "Linear", "in_features": 6, "out_features": 8}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 8, "out_features": 8}, {"type": "Tanh"},
                        {"type": "Linear", "in_features": 8, "out_features": 3}])";
// 35 + 15 elements in two units.
const char* kSecondSpec = R"([{"type": "Linear", "in_features": 6, "out_features": 5}, {"type": "Tanh"},
                              {"type": "Linear", "in_features": 5, "out_features": 3}])";
constexpr int64_t kGlobalBatch = 12, kStepsBeforeSave = 3, kStepsAfter = 5;
constexpr double kLossTolerance = 1e-11;
constexpr int64_t kSamples = 60;

std::shared_ptr<accel::Dataset> sample_ids() {
  return std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{at::arange(kSamples, at::kLong)});
}

accel::DataLoaderOptions loader_options() {
  accel::DataLoaderOptions o;
  o.batch_size = 2;
  o.shuffle = true;
  o.seed = 3;
  return o;
}

// The ids of the loader's next batch on every process (padding dropped), or none at the epoch's end.
std::vector<int64_t> next_ids(accel::Accelerator& accelerator, accel::DataLoader& loader) {
  std::optional<accel::Batch> batch = loader.next();
  if (!batch) return {};
  at::Tensor ids = accelerator.gather_for_metrics((*batch)[0]).contiguous();
  return std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
}

accel::ShardingStrategy strategy_named(const std::string& name) {
  if (name == "none") return accel::ShardingStrategy::NoShard;
  if (name == "zero1") return accel::ShardingStrategy::ShardOptimizer;
  if (name == "zero2") return accel::ShardingStrategy::ShardGradOp;
  if (name == "full") return accel::ShardingStrategy::FullShard;
  check(name == "hybrid" || name == "hybrid1",
        "strategy " + name + " is one of none, zero1, zero2, full, hybrid, hybrid1");
  return accel::ShardingStrategy::HybridShard;
}

// The models and their optimizers (one, or two with `two-models`).
struct Trained {
  std::vector<accel::Model*> models;
  std::vector<accel::Optimizer*> optimizers;
};

// One step on this process's share of step `step`'s global batch; the global
// mean loss (every process's share is the same size), summed over the models.
double train_step(accel::Accelerator& accelerator, const Trained& trained, int64_t step) {
  at::manual_seed(1000 + step);
  at::Tensor x = at::randn({kGlobalBatch, 6}).to(at::kDouble), y = at::randint(0, 3, {kGlobalBatch}, at::kLong);
  const int64_t share = kGlobalBatch / accelerator.num_processes(), first = share * accelerator.process_index();
  at::Tensor loss;
  for (accel::Model* model : trained.models) {
    at::Tensor part = accel::compute_loss(accel::LossKind::CrossEntropy, model->forward(x.narrow(0, first, share)),
                                          y.narrow(0, first, share));
    loss = loss.defined() ? loss + part : part;
  }
  accelerator.backward(loss);
  for (accel::Optimizer* optimizer : trained.optimizers) {
    optimizer->step();
    optimizer->zero_grad();
  }
  return accelerator.gather(loss.detach().reshape({1})).mean().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  check(argc >= 4, "usage: dist_reshard save STRATEGY DIR [two-models] | load STRATEGY SRC OUT [two-models]");
  const std::string mode = argv[1], strategy = argv[2], dir = argv[3];
  const bool two_models = std::string(argv[argc - 1]) == "two-models";
  const int world = std::atoi(std::getenv("WORLD_SIZE")), rank = std::atoi(std::getenv("RANK"));
  if (strategy == "hybrid" && world % 2 == 0) {  // two nodes; torchrun numbers a node's ranks consecutively
    setenv("LOCAL_WORLD_SIZE", std::to_string(world / 2).c_str(), 1);
    setenv("LOCAL_RANK", std::to_string(rank % (world / 2)).c_str(), 1);
  }
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(60);
  options.sharding_strategy = strategy_named(strategy);
  accel::Accelerator accelerator(options);
  rank_for_messages = accelerator.process_index();
  at::manual_seed(6);
  accel::Model model = accel::Model::from_json(kSpec), second = accel::Model::from_json(kSecondSpec);
  {  // float32 draws widened exactly, before prepare
    at::NoGradGuard no_grad;
    for (accel::Model* m : {&model, &second}) {
      for (auto& p : m->parameters()) p.set_data(p.to(at::kDouble));
    }
  }
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accel::Optimizer second_optimizer(second, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accel::DataLoader loader(sample_ids(), loader_options());
  Trained trained{{&model}, {&optimizer}};
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  if (two_models) {
    accelerator.prepare(second);
    accelerator.prepare(second_optimizer);
    trained = Trained{{&model, &second}, {&optimizer, &second_optimizer}};
  }
  accelerator.prepare(loader);
  check(accelerator.sharding_strategy() == options.sharding_strategy, "the strategy is " + strategy);

  if (mode == "save") {
    std::vector<int64_t> seen;
    for (int64_t step = 0; step < kStepsBeforeSave; ++step) {
      train_step(accelerator, trained, step);
      for (int64_t id : next_ids(accelerator, loader)) seen.push_back(id);
    }
    accelerator.save_state(dir + "/state");
    if (accelerator.is_main_process()) {
      std::ofstream out(dir + "/seen");
      for (int64_t id : seen) out << id << "\n";
    }
    std::vector<double> losses;
    for (int64_t step = kStepsBeforeSave; step < kStepsBeforeSave + kStepsAfter; ++step) {
      losses.push_back(train_step(accelerator, trained, step));
    }
    if (accelerator.is_main_process()) {
      std::ofstream out(dir + "/losses");
      for (double loss : losses) out << exact(loss) << "\n";
      check(out.good(), "wrote " + dir + "/losses");
    }
    std::printf("rank %d of %d: %s saved\n", rank, world, strategy.c_str());
    return 0;
  }
  const bool from_accelerate = mode == "load-accelerate";
  check(from_accelerate || (mode == "load" && argc >= 5), "usage: dist_reshard load STRATEGY SRC OUT [two-models]");
  accelerator.load_state(dir + "/state");
  if (!from_accelerate) accelerator.save_state(argv[4]);
  std::ifstream saved(dir + "/losses");
  std::vector<int64_t> taken_after_load;
  for (int64_t step = kStepsBeforeSave; step < kStepsBeforeSave + kStepsAfter; ++step) {
    double expected = 0;
    check(static_cast<bool>(saved >> expected), "read " + dir + "/losses");
    const double loss = train_step(accelerator, trained, step);
    // The loader's batches of these steps count towards the epoch below.
    for (int64_t id : next_ids(accelerator, loader)) taken_after_load.push_back(id);
    check(std::fabs(loss - expected) <= kLossTolerance,
          "step " + std::to_string(step) + ": loss " + exact(loss) + ", the saving run's " + exact(expected));
  }
  if (from_accelerate) {
    std::printf(
        "rank %d of %d: the distributed checkpoint loaded under %s, %lld steps continue the saving run's losses\n",
        rank, world, strategy.c_str(), static_cast<long long>(kStepsAfter));
    return 0;
  }
  // The rest of the epoch: with the ids taken before the save, every sample once.
  std::vector<int64_t> count(kSamples, 0);
  std::ifstream before(dir + "/seen");
  for (int64_t id; before >> id;) ++count.at(static_cast<size_t>(id));
  for (int64_t id : taken_after_load) ++count.at(static_cast<size_t>(id));
  for (std::vector<int64_t> ids = next_ids(accelerator, loader); !ids.empty(); ids = next_ids(accelerator, loader)) {
    for (int64_t id : ids) ++count.at(static_cast<size_t>(id));
  }
  for (int64_t id = 0; id < kSamples; ++id) {
    check(count[static_cast<size_t>(id)] == 1, "sample " + std::to_string(id) + " was taken " +
                                                   std::to_string(count[static_cast<size_t>(id)]) +
                                                   " times in the epoch");
  }
  std::printf(
      "rank %d of %d: loaded under %s, %lld steps continue the saving run's losses, every sample of the epoch once\n",
      rank, world, strategy.c_str(), static_cast<long long>(kStepsAfter));
  return 0;
}
