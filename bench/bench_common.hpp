// Shared by the C++ benchmark programs: workload table, argument parsing,
// random data made once with a fixed seed, and the one-line result record that
// bench/report.py reads. See ../shared/bench/workloads.md for the definitions.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

struct Workload {
  std::string name;
  int64_t batch;               // per process
  std::vector<int64_t> input;  // one sample's shape
  const char* json;            // libaccel's sequential spec
};

inline const Workload& workload(const std::string& name) {
  static const std::vector<Workload> table = {
      {"tiny",
       32,
       {784},
       R"([{"type":"Linear","in_features":784,"out_features":128},{"type":"ReLU"},
           {"type":"Linear","in_features":128,"out_features":10}])"},
      {"mlp",
       64,
       {784},
       R"([{"type":"Linear","in_features":784,"out_features":1024},{"type":"ReLU"},
           {"type":"Linear","in_features":1024,"out_features":1024},{"type":"ReLU"},
           {"type":"Linear","in_features":1024,"out_features":10}])"},
      {"cnn",
       32,
       {1, 28, 28},
       R"([{"type":"Conv2d","in_channels":1,"out_channels":512,"kernel_size":3},
           {"type":"MaxPool2d","kernel_size":2,"stride":2},
           {"type":"Conv2d","in_channels":512,"out_channels":256,"kernel_size":5},
           {"type":"MaxPool2d","kernel_size":2,"stride":2},
           {"type":"Dropout2d","p":0.1},
           {"type":"AdaptiveMaxPool2d","output_size":[1,1]},
           {"type":"Flatten"},
           {"type":"Linear","in_features":256,"out_features":128},{"type":"ReLU"},
           {"type":"Linear","in_features":128,"out_features":10}])"},
      {"sync",
       8,
       {4096},
       R"([{"type":"Linear","in_features":4096,"out_features":4096},{"type":"ReLU"},
           {"type":"Linear","in_features":4096,"out_features":4096},{"type":"ReLU"},
           {"type":"Linear","in_features":4096,"out_features":4096},{"type":"ReLU"},
           {"type":"Linear","in_features":4096,"out_features":4096},{"type":"ReLU"},
           {"type":"Linear","in_features":4096,"out_features":10}])"},
  };
  for (const auto& w : table)
    if (w.name == name) return w;
  throw std::invalid_argument("unknown workload '" + name + "' (tiny, mlp, cnn, sync)");
}

struct Args {
  std::string workload = "tiny";
  int64_t steps = 100;
  int64_t warmup = 5;
  int threads = 0;  // 0: leave LibTorch's default (OMP_NUM_THREADS)
  bool no_sync = false;
  std::string mixed_precision = "no";  // no | bf16 | fp16 (GPU runs)
  std::string trace_dir;               // set: profile trace_steps more steps into it (bench/crossing.py)
  int64_t trace_steps = 50;
};

inline Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--workload")
      a.workload = value();
    else if (k == "--steps")
      a.steps = std::stoll(value());
    else if (k == "--warmup")
      a.warmup = std::stoll(value());
    else if (k == "--threads")
      a.threads = std::stoi(value());
    else if (k == "--no-sync")
      a.no_sync = true;
    else if (k == "--mixed-precision")
      a.mixed_precision = value();
    else if (k == "--trace-dir")
      a.trace_dir = value();
    else if (k == "--trace-steps")
      a.trace_steps = std::stoll(value());
    else
      throw std::invalid_argument("unknown argument '" + k + "'");
  }
  if (a.threads > 0) at::set_num_threads(a.threads);
  return a;
}

// A few batches drawn once (fixed seed) and cycled, so no step pays for data.
struct Data {
  std::vector<at::Tensor> x, y;
  Data(const Workload& w, int rank, int batches = 4) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(1234 + rank);
    std::vector<int64_t> shape{w.batch};
    shape.insert(shape.end(), w.input.begin(), w.input.end());
    for (int b = 0; b < batches; ++b) {
      x.push_back(at::randn(shape, gen, at::kFloat));
      y.push_back(at::randint(0, 10, {w.batch}, gen, at::kLong));
    }
  }
};

inline double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;  // Linux: KiB
}

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Every rank prints one line; report.py keeps the slowest rank's rate and each
// rank's RSS.
inline void print_result(const char* contestant, const Args& a, int rank, int world, int64_t steps, double seconds,
                         const char* device = "cpu") {
  const Workload& w = workload(a.workload);
  double sps = steps / seconds;
  std::printf(
      "BENCH_RESULT {\"contestant\":\"%s\",\"workload\":\"%s\",\"rank\":%d,\"nproc\":%d,\"threads\":%d,"
      "\"steps\":%lld,\"seconds\":%.4f,\"steps_per_s\":%.3f,\"samples_per_s\":%.1f,\"peak_rss_mb\":%.1f,"
      "\"device\":\"%s\",\"precision\":\"%s\"}\n",
      contestant, a.workload.c_str(), rank, world, at::get_num_threads(), static_cast<long long>(steps), seconds, sps,
      sps * w.batch * world, peak_rss_mb(), device, a.mixed_precision.c_str());
  std::fflush(stdout);
}

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace bench
