// random_states_{rank}.pkl: the dict Accelerate 0.22's save_state pickles per
// process, written as plain data (torch::pickle_save) that torch.load reads:
//   "step"                   micro-steps into the accumulation window
//   "random_state"           Python's random.getstate() after random.seed(s)
//   "numpy_random_seed"      numpy's legacy get_state() after np.random.seed(s)
//   "torch_manual_seed"      the CPU generator's state (uint8 tensor)
//   "torch_cuda_manual_seed" one state per CUDA device (empty without CUDA)
//   "libaccel_dataloaders"   [[epoch, batches_consumed], ...] per prepared loader
// libaccel has no Python generators: s is the CPU generator's seed
// (set_seed's), so a Python run resuming starts them as set_seed would.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "accel/data.hpp"

namespace accel::detail {

// ("cpu", state) and ("cuda_<i>", state) per CUDA device.
std::vector<std::pair<std::string, at::Tensor>> generator_states();

struct RandomStates {
  int64_t step = 0;
  bool has_step = false;  // Accelerate 0.22 saves no step
  at::Tensor cpu;
  std::vector<std::pair<at::Generator, at::Tensor>> cuda;  // filled by the reader; the writer reads the live ones
  std::vector<DataLoader::Position> positions;             // empty when the file has none (Accelerate's)
};

// The current generators' states, step and positions as pickle bytes.
std::string pickle_random_states(int64_t step, const std::vector<DataLoader::Position>& positions);

// Reads and checks a random-states pickle against the live generators (same
// dtype and size; CUDA devices this machine lacks are skipped) and `loaders`
// prepared loaders. "step", "torch_cuda_manual_seed" and "libaccel_dataloaders"
// may be absent (Accelerate's files); the Python generator states are not
// used (NumPy's is read as inert data, see read_torch_save). Throws IO naming
// label and the key.
RandomStates read_random_states(const std::string& bytes, size_t loaders, const std::string& label);

// Refuses (IO, naming where) a state of the right dtype and size that
// live.set_state would still refuse, by setting it on a copy of live.
void validate_generator_state(at::Generator live, const at::Tensor& state, const std::string& where);

// MT19937's 624 words after Python's random.seed(seed) (init_by_array over
// the seed's 32-bit words) and after numpy's np.random.seed(seed) (init_genrand).
std::array<uint32_t, 624> python_mt_state(uint64_t seed);
std::array<uint32_t, 624> numpy_mt_state(uint32_t seed);

}  // namespace accel::detail
