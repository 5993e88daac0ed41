// Contestant (a): libaccel through its C++ API. With --no-sync neither model nor
// optimizer is prepared, so 2 processes train independently: the no-communication upper bound.
// On a machine with a GPU it trains there, as any libaccel program does (bench/gpu.sh).
//   build/bin/accel launch --nproc_per_node 2 --master_port 0 build/bin/accel_bench --workload mlp --steps 60
#include <torch/cuda.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "accel/accel.hpp"
#include "accel/profiler.hpp"
#include "bench_common.hpp"

int main(int argc, char** argv) try {
  bench::Args args = bench::parse_args(argc, argv);
  const bench::Workload& w = bench::workload(args.workload);
  // The variable `accel launch --mixed_precision` sets, read by the accelerator.
  setenv("ACCELERATE_MIXED_PRECISION", args.mixed_precision.c_str(), 1);
  accel::Accelerator acc;
  accel::Model model = accel::Model::from_json(w.json);
  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 1e-3;
  options.weight_decay = 0.01;
  accel::Optimizer optimizer(model, options);
  if (!args.no_sync) {  // an unprepared optimizer may not be prepared either
    acc.prepare(model);
    acc.prepare(optimizer);
  }
  bench::Data data(w, acc.process_index());
  // Inputs live where training runs, as a prepared loader puts them (an
  // unprepared --no-sync model stays on the host).
  bool cuda = !args.no_sync && acc.device().is_cuda();
  for (size_t b = 0; cuda && b < data.x.size(); ++b) {
    data.x[b] = data.x[b].to(acc.device());
    data.y[b] = data.y[b].to(acc.device());
  }
  auto settle = [&] {  // CUDA runs asynchronously: time only finished work
    if (cuda) torch::cuda::synchronize();
    acc.wait_for_everyone();
  };

  auto step = [&](int64_t i) {
    size_t b = static_cast<size_t>(i) % data.x.size();
    optimizer.zero_grad();
    at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, model.forward(data.x[b]), data.y[b]);
    acc.backward(loss);
    optimizer.step();
  };
  for (int64_t i = 0; i < args.warmup; ++i) step(i);
  settle();
  auto start = bench::Clock::now();
  for (int64_t i = 0; i < args.steps; ++i) step(i);
  settle();
  double seconds = bench::since(start);
  bench::print_result(args.no_sync ? "accel_cpp_nosync" : "accel_cpp", args, acc.process_index(), acc.num_processes(),
                      args.steps, seconds, cuda ? "cuda" : "cpu");
  if (!args.trace_dir.empty()) {  // after the timed steps: the profiler slows what it records
    accel::ProfileScope profile(acc, args.trace_dir);
    for (int64_t i = 0; i < args.trace_steps; ++i) step(i);
    profile.finish();
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "accel_bench: %s\n", e.what());
  return 1;
}
