// Gradient-sync microbenchmark (2+ processes via `accel launch`): for flat
// float32 buffers of 1, 16, 64 and 256 MiB, the raw allreduce through the
// library's c10d process group next to libaccel's gradient sync of a model with
// exactly as many parameter bytes (bias-free Linear layers):
//   sync time   = backward with sync - the slowest rank's backward without (no_sync), medians
//   % of raw    = raw allreduce time / sync time
//   hidden      = (backward alone + raw allreduce - backward with sync) / raw allreduce,
//                 the share of communication that overlapped backward.
//   avg ms      = one pass multiplying the buffer by a scalar: what averaging the
//                 summed gradients costs on top of the allreduce
//   % raw+avg   = (raw allreduce + averaging pass) / sync time
//   build/bin/accel launch --nproc_per_node 2 --master_port 0 build/bin/sync_bench [--reps 5] [--sizes 1,16,64,256]
//       [--gradient-copies] [--bucket-cap-mb 25] [--comm-hook fp16]
// Rank 0 prints; with SYNC_BENCH_ALL_RANKS set in the environment every rank does.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "bench_common.hpp"
#include "accelerator/accelerator_state.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// k bias-free Linear(d, d) layers: k * d * d floats.
std::string spec(int64_t d, int k) {
  std::ostringstream s;
  s << "[";
  for (int i = 0; i < k; ++i)
    s << (i ? ",{\"type\":\"ReLU\"}," : "") << "{\"type\":\"Linear\",\"in_features\":" << d << ",\"out_features\":" << d
      << ",\"bias\":false}";
  s << "]";
  return s.str();
}

struct Shape {
  int64_t d;
  int k;
};
Shape shape_for(int mib) {
  switch (mib) {
    case 1: return {512, 1};
    case 4: return {1024, 1};
    case 16: return {2048, 1};
    case 64: return {4096, 1};
    case 256: return {4096, 4};
    default: throw std::invalid_argument("size " + std::to_string(mib) + " MiB: use 1, 4, 16, 64 or 256");
  }
}

}  // namespace

int main(int argc, char** argv) try {
  int reps = 5, threads = 1;
  std::vector<int> sizes{1, 16, 64, 256};
  accel::AcceleratorOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--reps" && i + 1 < argc)
      reps = std::stoi(argv[++i]);
    else if (k == "--threads" && i + 1 < argc)
      threads = std::stoi(argv[++i]);
    else if (k == "--gradient-copies")
      options.gradient_as_bucket_view = false;
    else if (k == "--bucket-cap-mb" && i + 1 < argc)
      options.bucket_cap_mb = std::stod(argv[++i]);
    else if (k == "--comm-hook" && i + 1 < argc && std::string(argv[i + 1]) == "fp16") {
      options.comm_hook = accel::CommHook::Fp16;
      ++i;
    } else if (k == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream list(argv[++i]);
      for (std::string item; std::getline(list, item, ',');) sizes.push_back(std::stoi(item));
    } else
      throw std::invalid_argument("unknown argument '" + k + "'");
  }
  at::set_num_threads(threads);
  accel::Accelerator acc(options);
  auto& pg = acc.state()->process_group;
  if (!pg) throw std::runtime_error("run with 2 processes: accel launch --nproc_per_node 2 ...");
  const bool main = acc.is_main_process();
  if (main)
    std::printf("%-8s %10s %10s %10s %10s %10s %8s %8s %8s %9s\n", "MiB", "raw ms", "raw GB/s", "bwd ms", "bwd+sync",
                "sync GB/s", "% raw", "hidden", "avg ms", "% raw+avg");

  for (int mib : sizes) {
    const double bytes = mib * 1048576.0;
    at::Tensor flat = at::ones({static_cast<int64_t>(bytes / 4)}, at::kFloat);
    Shape s = shape_for(mib);
    accel::Model model = accel::Model::from_json(spec(s.d, s.k));
    acc.prepare(model);
    at::Tensor x = at::randn({8, s.d});
    at::Tensor target = at::zeros({8, s.d});
    auto raw_allreduce = [&] {
      acc.wait_for_everyone();
      auto t = bench::Clock::now();
      pg->allreduce(flat, "bench_allreduce");
      return bench::since(t);
    };
    auto backward = [&](bool sync) {
      for (auto& p : model.parameters())
        if (p.grad().defined()) p.mutable_grad().zero_();
      if (!sync) acc.no_sync_begin(model);
      at::Tensor loss = accel::compute_loss(accel::LossKind::Mse, model.forward(x), target);
      acc.wait_for_everyone();
      auto t = bench::Clock::now();
      acc.backward(loss);
      double seconds = bench::since(t);
      if (!sync) acc.no_sync_end(model);
      return seconds;
    };
    // The one pass over the gradients that averaging takes (a multiply by
    // 1/world_size): part of any gradient sync, absent from a raw allreduce.
    auto averaging_pass = [&] {
      auto t = bench::Clock::now();
      flat.mul_(1.0);
      return bench::since(t);
    };
    // A synced backward ends after the slowest rank's backward, while the raw
    // allreduce starts from a barrier: the baseline is the slowest rank's
    // unsynced backward of the same round, so that ranks' uneven speed on a
    // shared machine is not counted as sync time.
    auto slowest_rank = [&](double seconds) {
      at::Tensor times = at::zeros({acc.num_processes()}, at::kDouble);
      times[acc.process_index()] = seconds;
      pg->allreduce(times, "bench_times");
      return times.max().item<double>();
    };
    // Round 0 warms Gloo's buffers and builds the buckets. The four
    // measurements alternate within each round, so drift over the run (other
    // load, frequency) reaches all of them alike.
    std::vector<double> raw, with, without, average;
    for (int r = 0; r < reps + 1; ++r) {
      double t_raw = raw_allreduce(), t_with = backward(true), t_without = backward(false), t_avg = averaging_pass();
      t_without = slowest_rank(t_without);
      if (r == 0) continue;
      raw.push_back(t_raw);
      with.push_back(t_with);
      without.push_back(t_without);
      average.push_back(t_avg);
    }
    double t_raw = median(raw), t_with = median(with), t_without = median(without), t_avg = median(average);
    double t_sync = std::max(t_with - t_without, 1e-9);
    double hidden = std::clamp((t_without + t_raw - t_with) / t_raw, 0.0, 1.0);
    if (main || std::getenv("SYNC_BENCH_ALL_RANKS")) {
      std::printf("%-8d %10.2f %10.3f %10.2f %10.2f %10.3f %7.0f%% %7.0f%% %8.2f %8.0f%%\n", mib, t_raw * 1e3,
                  bytes / t_raw / 1e9, t_without * 1e3, t_with * 1e3, bytes / t_sync / 1e9, 100.0 * t_raw / t_sync,
                  100.0 * hidden, t_avg * 1e3, 100.0 * (t_raw + t_avg) / t_sync);
      std::printf(
          "SYNC_RESULT {\"mib\":%d,\"nproc\":%d,\"threads\":%d,\"raw_ms\":%.3f,\"raw_gbps\":%.4f,\"backward_ms\":%.3f,"
          "\"backward_sync_ms\":%.3f,\"sync_gbps\":%.4f,\"pct_of_raw\":%.1f,\"hidden_pct\":%.1f,\"average_ms\":%.3f,"
          "\"pct_of_raw_plus_average\":%.1f}\n",
          mib, acc.num_processes(), at::get_num_threads(), t_raw * 1e3, bytes / t_raw / 1e9, t_without * 1e3,
          t_with * 1e3, bytes / t_sync / 1e9, 100.0 * t_raw / t_sync, 100.0 * hidden, t_avg * 1e3,
          100.0 * (t_raw + t_avg) / t_sync);
      std::fflush(stdout);
    }
  }
  acc.wait_for_everyone();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sync_bench: %s\n", e.what());
  return 1;
}
