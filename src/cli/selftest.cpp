// accel-selftest: what `accel test` launches and `accel env` asks. The accel
// command itself has no LibTorch (it must build in seconds); this companion
// does, and sits next to it (build/bin, or ../libexec/accel once installed).
//   accel-selftest --env   LibTorch, CUDA and device facts, one "key: value" a line
//   accel-selftest         the distributed sanity check, run under accel launch
//   accel-selftest --estimate-memory PATH WORLD_SIZE OPTIMIZER MIN_NUM_PARAMS NUM_MACHINES TP_SIZE [--cpu_offload]
//                          what `accel estimate-memory` prints
//   accel-selftest --merge-weights CHECKPOINT_DIR OUTPUT_DIR [--unsafe_serialization]
//                          what `accel merge-weights` does
//   accel-selftest --rendezvous KEY=VALUE...
//                          an elastic agent's rendezvous on the c10d store (rendezvous_helper.cpp)
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "accel/merge_weights.hpp"
#include "accel/accel.hpp"
#include "state/c10d_adapter.hpp"

int serve_rendezvous(int argc, char** argv);  // rendezvous_helper.cpp

namespace {

int print_env() {
  std::printf("libaccel: %s\n", ACCEL_SELFTEST_VERSION);
  std::printf("LibTorch: %d.%d.%d\n", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
  bool cuda = torch::cuda::is_available();
  std::printf("Gloo (CPU collectives): yes\n");
  std::printf("NCCL (GPU collectives): %s\n", ACCEL_SELFTEST_CUDA_BUILD && cuda ? "yes" : "no");
  std::printf("CUDA available: %s\n", cuda ? "yes" : "no");
  std::printf("CUDA devices: %zu\n", cuda ? torch::cuda::device_count() : size_t{0});
  std::printf("CPU threads (at::get_num_threads): %d\n", at::get_num_threads());
  // Who can reach the rendezvous store matters for a bug report and for security.
  if (accel::detail::c10d_adapter::kStoreListensOnMasterAddrOnly) {
    std::printf("Rendezvous store listens on: MASTER_ADDR only\n");
  } else {
    std::printf(
        "Rendezvous store listens on: every interface, whatever MASTER_ADDR is (LibTorch %d.%d cannot bind "
        "it to one address; see docs/launch.md)\n",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
  }
  return 0;
}

#define EXPECT(condition, ...)                                         \
  do {                                                                 \
    if (!(condition)) {                                                \
      std::fprintf(stderr, "rank %d: FAILED: %s: ", rank, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                               \
      std::fprintf(stderr, "\n");                                      \
      return 1;                                                        \
    }                                                                  \
  } while (0)

int sanity() {
  accel::Accelerator accelerator;
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  const bool main = accelerator.is_main_process();
  if (main) {
    // What the launcher's ACCELERATE_* variables made of the accelerator.
    std::printf("accel test: %d process(es), device %s, mixed precision %s, gradient accumulation steps %lld\n", world,
                accelerator.device().str().c_str(), accel::to_string(accelerator.mixed_precision()),
                static_cast<long long>(accelerator.gradient_accumulation_steps()));
  }

  // Collectives: every rank's contribution arrives.
  at::Tensor mine = at::full({2}, static_cast<double>(rank + 1), at::kFloat).to(accelerator.device());
  at::Tensor sum = accelerator.reduce(mine, accel::ReduceOp::Sum).cpu();
  float expected = world * (world + 1) / 2.0f;
  EXPECT(sum[0].item<float>() == expected, "reduce sum gave %f, expected %f", sum[0].item<float>(), expected);
  at::Tensor gathered = accelerator.gather(mine).cpu();
  EXPECT(gathered.size(0) == 2 * world, "gather gave %lld rows", static_cast<long long>(gathered.size(0)));
  at::Tensor from_main = accelerator.broadcast(at::full({1}, rank == 0 ? 42.0 : -1.0).to(accelerator.device()));
  EXPECT(from_main.item<double>() == 42.0, "broadcast gave %f", from_main.item<double>());
  if (main) std::printf("accel test: collectives ok\n");

  // A few training steps: the loss falls and the replicas stay identical.
  at::manual_seed(0);
  at::Tensor x = at::randn({37, 4}), w_true = at::tensor({1.0f, -2.0f, 0.5f, 3.0f});
  at::Tensor y = at::matmul(x, w_true).unsqueeze(1);
  accel::Model model = accel::Model::from_json(R"([{"type": "Linear", "in_features": 4, "out_features": 1}])");
  accel::OptimizerOptions sgd = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  sgd.lr = 0.05;
  accel::Optimizer optimizer(model, sgd);
  accel::DataLoaderOptions loader_options;
  loader_options.batch_size = 4;
  accel::DataLoader loader(std::make_shared<accel::TensorDataset>(std::vector<at::Tensor>{x, y}), loader_options);
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.prepare(loader);
  double first_loss = -1, last_loss = -1;
  for (int epoch = 0; epoch < 5; ++epoch) {
    while (auto batch = loader.next()) {
      optimizer.zero_grad();
      at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, model.forward((*batch)[0]), (*batch)[1]);
      accelerator.backward(loss);
      optimizer.step();
      last_loss = accelerator.reduce(loss.detach().reshape({1}), accel::ReduceOp::Mean).item<double>();
      if (first_loss < 0) first_loss = last_loss;
    }
  }
  EXPECT(std::isfinite(last_loss) && last_loss < first_loss, "loss went from %f to %f", first_loss, last_loss);
  at::Tensor params = accelerator.get_state_dict(model).begin()->second.reshape({-1}).to(accelerator.device());
  at::Tensor all = accelerator.gather(params.unsqueeze(0)).cpu();
  EXPECT(at::equal(all, all[0].unsqueeze(0).expand_as(all)), "the replicas' parameters differ");
  if (main) std::printf("accel test: training ok (loss %.4f -> %.4f, replicas identical)\n", first_loss, last_loss);

  // gather_for_metrics: each of the 37 samples once, the filler dropped.
  int64_t seen = 0;
  while (auto batch = loader.next())
    seen += accelerator.gather_for_metrics((*batch)[1].to(accelerator.device())).size(0);
  EXPECT(seen == 37, "gather_for_metrics saw %lld samples, expected 37", static_cast<long long>(seen));
  if (main) std::printf("accel test: gather_for_metrics ok\n");
  accelerator.wait_for_everyone();
  return 0;
}

}  // namespace

// One line per strategy: bytes per process for parameters, gradients,
// optimizer state, their sum, and the ratio to NO_SHARD's sum (without tensor
// parallelism); the tensor-parallel rows under a heading of their mesh.
int estimate(const std::string& path, const accel::MemoryEstimateOptions& options) {
  const auto estimates = accel::estimate_memory(path, options);
  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  const accel::HeldBytes& base = estimates.front().bytes;
  const double replicated = static_cast<double>(base.parameters + base.gradients + base.optimizer_state);
  const int world = options.world_size, machines = options.num_machines;
  const char* optimizer = options.optimizer == accel::OptimizerKind::Sgd ? "sgd" : "adamw";
  const std::string on_machines = machines > 1 ? " on " + std::to_string(machines) + " machines" : "";
  std::printf("%s, %d processes%s, %s%s: bytes per process held between steps (MiB)\n", path.c_str(), world,
              on_machines.c_str(), optimizer, options.cpu_offload ? ", CPU offload" : "");
  std::printf("%-16s %12s %12s %12s %12s %8s %16s%s\n", "strategy", "parameters", "gradients", "optimizer", "total",
              "ratio", "+ gathered unit", options.cpu_offload ? "      on device        on host" : "");
  int tp_heading = 1;
  for (const auto& e : estimates) {
    if (e.tp_size != tp_heading) {
      tp_heading = e.tp_size;
      std::printf("tensor parallel: tp_size %d, the strategy over %d data-parallel processes\n", e.tp_size,
                  world / e.tp_size);
    }
    const int64_t sum = e.bytes.parameters + e.bytes.gradients + e.bytes.optimizer_state;
    std::printf("%-16s %12.2f %12.2f %12.2f %12.2f %8.3f %16.2f", accel::to_string(e.strategy), mib(e.bytes.parameters),
                mib(e.bytes.gradients), mib(e.bytes.optimizer_state), mib(sum), sum / replicated,
                mib(e.gathered_unit_bytes));
    // On the device between steps: what is not offloaded (FULL_SHARD: plus a unit while it runs).
    if (options.cpu_offload) std::printf(" %14.2f %14.2f", mib(sum - e.offloaded_bytes), mib(e.offloaded_bytes));
    std::printf("\n");
  }
  return 0;
}

// Errors are shown under the command the user typed (`accel estimate-memory`),
// not this internal program's name; the library's messages already start with
// the command's name ("estimate-memory: ..."), so it is not said twice.
static void report(const char* mode, const std::string& message) {
  std::string command = mode == nullptr ? "" : std::string(mode).substr(2);  // "--merge-weights" -> "merge-weights"
  std::string text = message;
  if (!command.empty() && text.rfind(command + ": ", 0) == 0) text = text.substr(command.size() + 2);
  std::fprintf(stderr, "%s: %s\n", command.empty() ? "accel-selftest" : ("accel " + command).c_str(), text.c_str());
}

int main(int argc, char** argv) {
  const char* mode = nullptr;
  if (argc > 1 && (std::strcmp(argv[1], "--estimate-memory") == 0 || std::strcmp(argv[1], "--merge-weights") == 0))
    mode = argv[1];
  if (argc > 1 && std::strcmp(argv[1], "--rendezvous") == 0) return serve_rendezvous(argc, argv);
  try {
    if (argc > 1 && std::strcmp(argv[1], "--env") == 0) return print_env();
    if ((argc == 8 || (argc == 9 && std::strcmp(argv[8], "--cpu_offload") == 0)) &&
        std::strcmp(argv[1], "--estimate-memory") == 0) {
      accel::MemoryEstimateOptions options;
      options.world_size = std::atoi(argv[3]);
      options.optimizer = std::strcmp(argv[4], "sgd") == 0 ? accel::OptimizerKind::Sgd : accel::OptimizerKind::AdamW;
      options.min_num_params = std::atoll(argv[5]);
      options.num_machines = std::atoi(argv[6]);
      options.tp_size = std::atoi(argv[7]);
      options.cpu_offload = argc == 9;
      return estimate(argv[2], options);
    }
    if ((argc == 4 || (argc == 5 && std::strcmp(argv[4], "--unsafe_serialization") == 0)) &&
        std::strcmp(argv[1], "--merge-weights") == 0) {
      const accel::MergedWeights merged = accel::merge_sharded_weights(argv[2], argv[3], argc == 4);
      std::printf("merged the shards of %d processes: %lld tensors, %lld bytes, written to %s\n", merged.world_size,
                  static_cast<long long>(merged.tensors), static_cast<long long>(merged.bytes),
                  merged.output_file.c_str());
      return 0;
    }
    return sanity();
  } catch (const std::exception& error) {
    report(mode, error.what());
    return 1;
  }
}
