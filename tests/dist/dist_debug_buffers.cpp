// Two behaviours counted with real processes, through the process group's
// collective counter (not timing):
//   count [debug]: reduce and broadcast issue one collective out of debug mode
//     and add the shape check (two more) in it (`accel launch --debug`);
//     gather always exchanges shapes (dim-0 sizes may differ).
//   buffers [off]: a prepared model with BatchNorm whose running statistics
//     diverge (each rank sees other data) starts every training forward from
//     rank 0's buffers (DDP's broadcast_buffers), unless turned off; an eval
//     forward communicates nothing.
#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "accel/accel.hpp"
#include "accelerator/accelerator_state.hpp"
#include "dist_checks.hpp"

namespace {

using dist_checks::check;
using dist_checks::rank_for_messages;

// Collectives issued by f on this process.
template <class F>
uint64_t collectives_of(accel::Accelerator& accelerator, F&& f) {
  const auto& group = accelerator.state()->process_group;
  const uint64_t before = group->collectives_issued();
  f();
  return group->collectives_issued() - before;
}

void count_collectives(accel::Accelerator& accelerator, bool debug) {
  check(accelerator.debug_mode() == debug, "debug_mode() is " + std::to_string(accelerator.debug_mode()));
  const uint64_t check_cost = debug ? 2 : 0;  // tensor counts, then shapes
  at::Tensor t = at::ones({4, 3});
  uint64_t n = collectives_of(accelerator, [&] { accelerator.reduce(t, accel::ReduceOp::Sum); });
  check(n == 1 + check_cost, "reduce issued " + std::to_string(n) + " collectives");
  n = collectives_of(accelerator, [&] { accelerator.broadcast(t, 0); });
  check(n == 1 + check_cost, "broadcast issued " + std::to_string(n) + " collectives");
  // A list of one dtype travels in one allreduce.
  n = collectives_of(accelerator, [&] { accelerator.reduce({t, t * 2, at::zeros({7})}, accel::ReduceOp::Mean); });
  check(n == 1 + check_cost, "reduce of 3 tensors issued " + std::to_string(n) + " collectives");
  n = collectives_of(accelerator, [&] { accelerator.gather(t); });
  check(n == 2 + (debug ? 1 : 0), "gather issued " + std::to_string(n) + " collectives");
  at::Tensor sum = accelerator.reduce(t, accel::ReduceOp::Sum);
  check(at::equal(sum, t * accelerator.num_processes()), "reduce sum is wrong");
}

at::Tensor running_mean(const accel::Model& model) {
  for (const auto& [name, buffer] : model.named_buffers()) {
    if (name.size() >= 12 && name.compare(name.size() - 12, 12, "running_mean") == 0) return buffer;
  }
  check(false, "the model has no running_mean buffer");
  return {};
}

void broadcast_buffers(bool on) {
  accel::AcceleratorOptions options;
  options.timeout = std::chrono::seconds(30);
  options.broadcast_buffers = on;
  accel::Accelerator accelerator(options);
  const int rank = accelerator.process_index(), world = accelerator.num_processes();
  accel::Model model = accel::Model::from_json(R"([
    {"type": "Linear", "in_features": 3, "out_features": 4},
    {"type": "BatchNorm1d", "num_features": 4}])");
  accelerator.prepare(model);

  at::manual_seed(1 + static_cast<uint64_t>(rank));  // each rank its own data: the statistics diverge
  model.forward(at::randn({8, 3}) * (rank + 1));
  at::manual_seed(42);  // then the same batch everywhere
  at::Tensor same = at::randn({8, 3});
  uint64_t n = collectives_of(accelerator, [&] { model.forward(same); });
  // One broadcast per buffer dtype: float statistics and the int64 batch counter.
  check(n == (on ? 2u : 0u), "a training forward issued " + std::to_string(n) + " collectives");

  at::Tensor all = accelerator.gather(running_mean(model).reshape({1, -1})).cpu();
  check(all.size(0) == world, "gathered " + std::to_string(all.size(0)) + " rows");
  for (int r = 1; r < world; ++r) {
    const bool equal = at::allclose(all[r], all[0], 1e-6, 1e-7);
    check(equal == on, "rank " + std::to_string(r) + "'s running_mean " + (equal ? "equals" : "differs from") +
                           " rank 0's with broadcast_buffers " + (on ? "on" : "off"));
  }

  model.train(false);
  n = collectives_of(accelerator, [&] { model.forward(same); });
  check(n == 0, "an eval forward issued " + std::to_string(n) + " collectives");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string variant = argc > 2 ? argv[2] : "";
  try {
    if (mode == "count") {
      accel::AcceleratorOptions options;
      options.timeout = std::chrono::seconds(30);
      accel::Accelerator accelerator(options);
      rank_for_messages = accelerator.process_index();
      check(accelerator.num_processes() >= 2, "needs at least 2 processes");
      count_collectives(accelerator, variant == "debug");
    } else if (mode == "buffers") {
      broadcast_buffers(variant != "off");
    } else {
      std::fprintf(stderr, "usage: dist_debug_buffers count [debug] | buffers [off]\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_for_messages, e.what());
    return 1;
  }
  std::printf("%s %s ok\n", mode.c_str(), variant.c_str());
  return 0;
}
