// save_state with FSDP's SHARDED_STATE_DICT (FSDP_STATE_DICT_TYPE, Accelerate's
// fsdp_state_dict_type): the model and each optimizer as PyTorch distributed
// checkpoints in Accelerate's directories, pytorch_model_fsdp_0/ and
// optimizer_<i>/, which torch.distributed.checkpoint (and so Accelerate's FSDP
// load_state) reads at any world size, and libaccel's load_state too.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "accelerator/checkpoint_files.hpp"

namespace accel::detail {

// This process's items: every chunk of a parameter (and of its optimizer
// state) it holds, as boxes of the whole tensor; process 0 also writes
// what every process holds whole (buffers, replicated parameters, step, the
// parameter group). A model split for tensor parallelism writes its slices'
// boxes where the slices lie in the whole tensors (a tensor replicated over
// the tensor-parallel group from its first rank only; a slice every
// data-parallel rank holds from the first), so the checkpoint is the unsplit
// model's at any mesh. `data_parallel_rank`: this process's rank among those
// that see different batches (its rank without a mesh). Written into
// `partial` as <dir>/__<rank>_0.distcp.
// Returns {"digests": {file: [bytes, xxh3]}, "records": {dir: [...]}} for the
// gather. Needs one prepared model (Unsupported otherwise).
nlohmann::json write_dcp_items(const std::string& partial, const CheckpointTargets& targets, int rank,
                               int data_parallel_rank);

// Process 0: each directory's .metadata from every process's records (the
// JSON above, one per process), as (file name, bytes).
std::vector<std::pair<std::string, std::string>> dcp_metadata_files(const std::vector<std::string>& per_process);

}  // namespace accel::detail
