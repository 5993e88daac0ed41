// accel merge-weights (Accelerate's `accelerate merge-weights`): a FULL_SHARD
// save_state's per-process parameter shards merged into one full
// model.safetensors, without the model or LibTorch's help.
#pragma once

#include <cstdint>
#include <string>

namespace accel {

struct MergedWeights {
  int world_size = 0;       // processes that wrote the shards
  int64_t tensors = 0;      // tensors written (parameters and buffers)
  int64_t bytes = 0;        // their data bytes
  std::string output_file;  // output_dir/model.safetensors (or pytorch_model.bin)
};

// Reads checkpoint_dir/model_rank{r}.safetensors for every rank r the files
// name (save_state under FULL_SHARD writes them with their unit layout),
// rebuilds every parameter under its own name, adds the buffers, and writes
// output_dir/model.safetensors (created; the directory too). Everything is read
// and checked before the output is written. Throws IO naming the file: a
// missing rank file, a file that is not a sharded model checkpoint (no
// "accel_fsdp_units" metadata: written before the layout was recorded, or not
// by FULL_SHARD), shards of different world sizes or layouts, a flat shard
// shorter than its layout. Not collective (run it once, on any machine).
// safe_serialization false (Accelerate's --unsafe_serialization) writes
// output_dir/pytorch_model.bin in torch.save's format instead.
//
// checkpoint_dir may also be a PyTorch distributed checkpoint (FSDP's
// SHARDED_STATE_DICT, which Accelerate and save_state with
// FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT write as pytorch_model_fsdp_0/), or
// the checkpoint directory holding one: its "model." tensors are written under
// their own names, as Accelerate's merge-weights does (world_size: the number
// of .distcp files read).
MergedWeights merge_sharded_weights(const std::string& checkpoint_dir, const std::string& output_dir,
                                    bool safe_serialization = true);

}  // namespace accel
