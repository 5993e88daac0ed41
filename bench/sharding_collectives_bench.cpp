// What the composed sharding collectives cost on this backend (2+ processes
// via `accel launch`): the median time of
//   reduce_scatter  the library's on Gloo: a ring of send/recv (_composed: world_size `reduce` ops)
//   allreduce_slice the alternative: one allreduce of the whole buffer, keep a slice
//   allreduce       today's NO_SHARD gradient sync of the same buffer (the peer)
//   all_gather      the library's all-gather into one buffer: a send/recv ring (_composed: Gloo's allgather)
// alternating in blocks within one run, for 1 MiB, 16 MiB and 64 MiB of float32.
//   build/bin/accel launch --nproc_per_node 2 --master_port 0 build/bin/sharding_collectives_bench [--reps 20]
// Rank 0 prints one SHARD_RESULT line per op and size, with the ratio to allreduce.
#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
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
double time_ms(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) try {
  int reps = 20;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--reps" && i + 1 < argc) reps = std::stoi(argv[++i]);
  }
  accel::Accelerator accelerator;
  auto& group = *accelerator.state()->process_group;
  const int world = group.world_size();
  for (int64_t mib : {1, 16, 64}) {
    const int64_t numel = (mib << 20) / 4 / world * world;
    at::Tensor buffer = at::ones({numel});
    std::map<std::string, std::vector<double>> times;
    for (int r = 0; r < reps; ++r) {
      group.barrier("bench sync");
      times["reduce_scatter"].push_back(time_ms([&] {
        at::Tensor scratch = buffer.clone();
        group.reduce_scatter(scratch, "bench reduce_scatter");
      }));
      group.set_ring_collectives(false);
      group.barrier("bench sync");
      times["reduce_scatter_composed"].push_back(time_ms([&] {
        at::Tensor scratch = buffer.clone();
        group.reduce_scatter(scratch, "bench reduce_scatter (composed)");
      }));
      group.barrier("bench sync");
      times["all_gather_composed"].push_back(time_ms([&] {
        at::Tensor chunk = buffer.narrow(0, group.rank() * (numel / world), numel / world);
        at::Tensor output = at::empty({numel});
        group.all_gather_into(output, chunk, "bench all_gather (composed)");
      }));
      group.set_ring_collectives(true);
      group.barrier("bench sync");
      times["allreduce_slice"].push_back(time_ms([&] {
        at::Tensor scratch = buffer.clone();
        group.allreduce(scratch, "bench allreduce_slice");
        scratch.narrow(0, group.rank() * (numel / world), numel / world).clone();
      }));
      group.barrier("bench sync");
      times["allreduce"].push_back(time_ms([&] {
        at::Tensor scratch = buffer.clone();
        group.allreduce(scratch, "bench allreduce");
      }));
      group.barrier("bench sync");
      times["all_gather"].push_back(time_ms([&] {
        at::Tensor chunk = buffer.narrow(0, group.rank() * (numel / world), numel / world);
        at::Tensor output = at::empty({numel});
        group.all_gather_into(output, chunk, "bench all_gather");
      }));
    }
    if (accelerator.is_main_process()) {
      const double peer = median(times["allreduce"]);
      for (auto& [op, t] : times) {
        std::printf("SHARD_RESULT op=%s mib=%lld world=%d median_ms=%.2f ratio_to_allreduce=%.2f\n", op.c_str(),
                    static_cast<long long>(mib), world, median(t), median(t) / peer);
      }
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sharding_collectives_bench: %s\n", e.what());
  return 1;
}
