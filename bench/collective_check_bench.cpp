// What debug mode's shape check costs (2+ processes via `accel launch`): the
// median time of accelerator.reduce() and broadcast() with the check (debug
// mode, an extra allgather of shapes before each) and without it (the default),
// alternating blocks in the same run, for a scalar metric, 4 KiB and 1 MiB.
//   ratio = with check / without check (> 1: what the default saves)
//   build/bin/accel launch --nproc_per_node 2 --master_port 0 build/bin/collective_check_bench [--reps 200]
// Rank 0 prints one CHECK_RESULT line per op and size.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "accelerator/accelerator_state.hpp"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double time_us(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  int reps = 200;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
  }
  accel::Accelerator accelerator;
  bool& debug_mode = accelerator.state()->debug_mode;  // toggled in place: one process group, same run
  const bool main = accelerator.is_main_process();
  if (main) std::printf("# %d processes, %d reps per block, 4 alternating blocks\n", accelerator.num_processes(), reps);
  for (int64_t numel : {int64_t{1}, int64_t{1024}, int64_t{256 * 1024}}) {
    at::Tensor t = at::ones({numel});
    for (const char* op : {"reduce", "broadcast"}) {
      std::vector<double> with, without;
      for (int block = 0; block < 4; ++block) {
        debug_mode = block % 2 == 1;
        for (int r = 0; r < reps; ++r) {
          double us = time_us([&] {
            if (op[0] == 'r')
              accelerator.reduce(t, accel::ReduceOp::Mean);
            else
              accelerator.broadcast(t, 0);
          });
          (debug_mode ? with : without).push_back(us);
        }
        accelerator.wait_for_everyone();
      }
      if (main) {
        const double a = median(with), b = median(without);
        std::printf("CHECK_RESULT op=%s bytes=%lld with_check_us=%.1f without_us=%.1f ratio=%.2f\n", op,
                    static_cast<long long>(numel * 4), a, b, a / b);
      }
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "collective_check_bench: %s\n", e.what());
  return 1;
}
