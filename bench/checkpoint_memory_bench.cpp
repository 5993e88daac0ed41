// Peak resident memory of sharded checkpoints against training's, per process:
// a workload (bench/workloads/*.json) trains 2 AdamW steps under the launcher's
// strategy, then
//   save DIR   save_state(DIR)
//   load DIR   load_state(DIR) (saved by any world size or strategy)
// and each process prints one line: the peak RSS of the training steps, of the
// save or load alone (VmHWM, reset between them through /proc/self/clear_refs),
// and their ratio. bench/checkpoint_memory_bench.sh runs the cases.
//   accel launch --nproc_per_node 2 checkpoint_memory_bench WORKLOAD save|load DIR
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "accel/accel.hpp"

namespace {

int64_t peak_kib() {  // VmHWM
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }  // VmHWM := VmRSS

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: checkpoint_memory_bench WORKLOAD save|load DIR\n");
    return 2;
  }
  const std::string mode = argv[2], dir = argv[3];
  std::ifstream in(argv[1]);
  const nlohmann::json workload = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
  accel::Accelerator accelerator;
  at::manual_seed(1);
  accel::Model model = accel::Model::from_json(workload.at("layers").dump());
  accel::Optimizer optimizer(model, accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW));
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  const int64_t features = workload.at("layers").at(0).at("in_features").get<int64_t>();
  reset_peak();
  for (int step = 0; step < 2; ++step) {
    at::Tensor x = at::randn({8, features});
    accelerator.backward(model.forward(x).pow(2).mean());
    optimizer.step();
    optimizer.zero_grad();
  }
  accelerator.wait_for_everyone();
  const int64_t training = peak_kib();
  reset_peak();
  if (mode == "save") {
    accelerator.save_state(dir);
  } else {
    accelerator.load_state(dir);
  }
  accelerator.wait_for_everyone();
  const int64_t checkpoint = peak_kib();
  std::printf("%s %s rank %d of %d: training peak %.1f MiB, %s peak %.1f MiB, ratio %.2f\n",
              accel::to_string(accelerator.sharding_strategy()), mode.c_str(), accelerator.process_index(),
              accelerator.num_processes(), training / 1024.0, mode.c_str(), checkpoint / 1024.0,
              static_cast<double>(checkpoint) / static_cast<double>(training));
  return 0;
}
