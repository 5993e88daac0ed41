// Accelerate's rng_types and synchronize_rng_states: which random generators
// every process takes from process 0, and the taking.
#pragma once

#include <string>
#include <vector>

namespace accel::detail {

struct RuntimeContext;

struct RngTypes {
  bool torch = false;      // LibTorch's CPU generator
  bool cuda = false;       // this process's CUDA generator (nothing on a CPU run)
  bool generator = false;  // a shuffle without a seed takes process 0's draw
};

// Accelerate's names: "torch", "cuda", "generator". Throws Unsupported naming a
// device type Accelerate knows that libaccel does not drive (xla, npu, mlu,
// musa, sdaa, xpu, hpu), InvalidArgument naming anything else.
RngTypes parse_rng_types(const std::vector<std::string>& names);

// Copies process 0's state of the CPU and (on a CUDA run) CUDA generators
// into every process, as `types` says. Collective when the run has several
// processes; does nothing alone.
void synchronize_rng_states(RuntimeContext& state, const RngTypes& types);

}  // namespace accel::detail
