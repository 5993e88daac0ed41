// libaccel C++ API: the Accelerator, the object a training loop talks to.
//
// One Accelerator per process. It reads the launcher's environment (RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT), joins the
// rendezvous and owns the process group. Models, optimizers and dataloaders are
// prepared with it; prepared objects keep its state alive.
//
// Collective functions (every process must call them, in the same order) say so.
// A collective that does not finish within timeout() throws accel::Error with
// ErrorCode::Timeout naming the operation, its sequence number and, where known,
// the ranks that did not arrive.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "accel/error.hpp"

namespace accel {

class Model;
class Optimizer;
class DataLoader;
namespace detail {
class AcceleratorState;
}

enum class DistributedType { No = 0, MultiCpu = 1, MultiGpu = 2 };
enum class MixedPrecision { No = 0, Bf16 = 1, Fp16 = 2, Fp8 = 3 };
enum class ReduceOp { Sum = 0, Mean = 1 };

// Parses "no", "bf16", "fp16", "fp8" (Accelerate's spellings); throws InvalidArgument naming the value.
MixedPrecision parse_mixed_precision(const std::string& text);
const char* to_string(MixedPrecision precision);
const char* to_string(DistributedType type);

struct AcceleratorOptions {
  bool cpu = false;  // use the CPU even where a GPU is present
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // Unset: ACCELERATE_MIXED_PRECISION from the environment, else MixedPrecision::No.
  std::optional<MixedPrecision> mixed_precision;
  double bucket_cap_mb = 25.0;  // gradient-sync bucket cap
};

class Accelerator {
 public:
  // Collective when WORLD_SIZE > 1: joins the rendezvous and creates the process group.
  explicit Accelerator(const AcceleratorOptions& options = {});
  ~Accelerator();
  Accelerator(const Accelerator&) = delete;
  Accelerator& operator=(const Accelerator&) = delete;

  int process_index() const;
  int local_process_index() const;
  int num_processes() const;
  bool is_main_process() const;
  bool is_local_main_process() const;
  DistributedType distributed_type() const;
  MixedPrecision mixed_precision() const;
  c10::Device device() const;
  std::chrono::milliseconds timeout() const;  // the value the backend really uses

  // Moves the model to the device, broadcasts process 0's parameters and buffers
  // and wires overlapped, bucketed gradient averaging. Collective.
  void prepare(Model& model);
  void prepare(Optimizer& optimizer);
  // Shards the loader across processes and places its batches on the device.
  void prepare(DataLoader& loader);

  // loss.backward(); on return every prepared model's gradients are averaged
  // across processes. Collective.
  void backward(const at::Tensor& loss);

  // Concatenation along dim 0 over all processes (dim-0 sizes may differ). Collective.
  at::Tensor gather(const at::Tensor& tensor);
  // gather(), minus the filler samples that completed the last round of a
  // prepared dataloader (on its last batch), so metrics count every sample once.
  // Collective.
  at::Tensor gather_for_metrics(const at::Tensor& tensor);
  // Element-wise sum or mean over all processes. Collective.
  at::Tensor reduce(const at::Tensor& tensor, ReduceOp op);
  // Blocks until every process arrives. Collective.
  void wait_for_everyone();
  // Prints on the main process only.
  void print(const std::string& message) const;
  // Seeds LibTorch's CPU and CUDA generators.
  void set_seed(uint64_t seed);

  const std::shared_ptr<detail::AcceleratorState>& state() const { return state_; }

 private:
  std::shared_ptr<detail::AcceleratorState> state_;
};

}  // namespace accel
