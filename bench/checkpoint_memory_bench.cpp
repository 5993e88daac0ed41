// Peak resident memory of sharded checkpoints against training's, per process,
// on a workload (bench/workloads/*.json) under the launcher's strategy:
//   save DIR   trains 2 AdamW steps, then save_state(DIR)
//   load DIR   resumes: load_state(DIR) (saved by any world size or strategy)
//              right after prepare, then the same 2 steps
//   save_model DIR  trains 2 AdamW steps, then save_model(DIR) (the full
//              model.safetensors; under FULL_SHARD streamed one unit at a time)
//   train -    the 2 steps alone
// Each process prints one line: the peak RSS of the training steps and of the
// save or load alone (VmHWM, reset between them through /proc/self/clear_refs),
// what it held before the save or load, and the ratio of the save or load's
// peak to the training peak: to REFERENCE_MIB when given (bench/
// checkpoint_memory_bench.sh passes the peak of a `train` run at the same
// world size: the steps after a load may find memory the load left to the
// allocator's cache), else to the steps' own peak.
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

int64_t status_kib(const char* field) {  // "VmHWM:", "VmRSS:"
  std::ifstream status("/proc/self/status");
  std::string line;
  const size_t n = std::char_traits<char>::length(field);
  while (std::getline(status, line)) {
    if (line.compare(0, n, field) == 0) return std::atoll(line.c_str() + n);
  }
  return -1;
}

int64_t peak_kib() { return status_kib("VmHWM:"); }

void reset_peak() { std::ofstream("/proc/self/clear_refs") << "5"; }  // VmHWM := VmRSS

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: checkpoint_memory_bench WORKLOAD save|load|save_model|train DIR [REFERENCE_MIB]\n");
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
  auto train = [&] {  // two AdamW steps; returns their peak
    reset_peak();
    for (int step = 0; step < 2; ++step) {
      at::Tensor x = at::randn({8, features});
      accelerator.backward(model.forward(x).pow(2).mean());
      optimizer.step();
      optimizer.zero_grad();
    }
    accelerator.wait_for_everyone();
    return peak_kib();
  };
  int64_t training = 0, checkpoint = 0, before = 0;
  if (mode == "train") {
    training = train();
  } else if (mode == "save" || mode == "save_model") {  // a run saving its state, or its model
    training = train();
    reset_peak();
    before = status_kib("VmRSS:");
    if (mode == "save") {
      accelerator.save_state(dir);
    } else {
      accelerator.save_model(model, dir);
    }
    accelerator.wait_for_everyone();
    checkpoint = peak_kib();
  } else {  // a run resuming: load in a fresh process, then the same steps
    reset_peak();
    before = status_kib("VmRSS:");
    accelerator.load_state(dir);
    accelerator.wait_for_everyone();
    checkpoint = peak_kib();
    training = train();
  }
  if (mode == "train") {
    std::printf("%s train rank %d of %d: training peak %.1f MiB\n", accel::to_string(accelerator.sharding_strategy()),
                accelerator.process_index(), accelerator.num_processes(), training / 1024.0);
    return 0;
  }
  const double reference = argc == 5 ? std::atof(argv[4]) * 1024.0 : static_cast<double>(training);
  std::printf(
      "%s %s rank %d of %d: training peak %.1f MiB, resident before %s %.1f MiB, %s peak %.1f MiB, ratio %.2f to "
      "%.1f MiB\n",
      accel::to_string(accelerator.sharding_strategy()), mode.c_str(), accelerator.process_index(),
      accelerator.num_processes(), training / 1024.0, mode.c_str(), before / 1024.0, mode.c_str(), checkpoint / 1024.0,
      static_cast<double>(checkpoint) / reference, reference / 1024.0);
  return 0;
}
