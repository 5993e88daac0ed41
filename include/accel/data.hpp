// libaccel C++ API: datasets and the dataloader.
//
// A Dataset yields samples made of one or more tensors ("fields", e.g. input
// and target). A DataLoader batches them; once prepared by an Accelerator it
// yields only this process's shard, on the accelerator's device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace accel {

using Batch = std::vector<at::Tensor>;

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // The samples at indices, collated: one tensor per field with the batch on dim 0.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const = 0;
};

// Fields are tensors with equal size on dim 0; sample i is field[i] of each.
class TensorDataset : public Dataset {
 public:
  explicit TensorDataset(std::vector<at::Tensor> fields);
  int64_t size() const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  const std::vector<at::Tensor>& fields() const { return fields_; }

 private:
  std::vector<at::Tensor> fields_;
};

// An IDX image file and label file (MNIST layout, gzip or raw) as a TensorDataset:
// images float32 [N, 1, rows, cols] = (pixel / 255 - mean) / std, labels int64 [N].
// Throws IO naming the file and byte offset of what is wrong.
std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                                                double mean = 0.0, double std = 1.0);

struct DataLoaderOptions {
  int64_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;  // identical on every process: all agree on the permutation
  bool drop_last = false;
};

// What the batch a prepared loader just yielded means for gradient sync and
// metrics (Accelerate's GradientState); shared with the Accelerator.
struct GradientState {
  // True on the micro-step that completes an accumulation window (and on a
  // dataloader's last batch): gradients are synchronised, and the prepared
  // optimizer and scheduler step. Always true without accumulation.
  bool sync_gradients = true;
  int64_t num_steps = 1;            // gradient_accumulation_steps
  int64_t step = 0;                 // micro-steps into the current window
  bool sync_with_dataloader = true; // the dataloader's last batch always syncs
  bool end_of_dataloader = false;  // the batch just yielded is the epoch's last
  // Real samples in the gathered last round when it was completed with filler
  // from the start of the epoch (gather_for_metrics keeps only these); else 0.
  int64_t remainder = 0;
};

// Where a prepared loader takes its shard from.
struct ShardPlacement {
  int num_processes = 1;
  int process_index = 0;
  std::optional<c10::Device> device;  // batches are moved here
  std::shared_ptr<GradientState> gradient_state;
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset> dataset, const DataLoaderOptions& options);

  // The next batch of the current epoch, or nullopt at its end; the call after
  // the end starts the next epoch (epoch number + 1, reshuffled with seed + epoch).
  std::optional<Batch> next();
  // Batches this process yields per epoch.
  int64_t num_batches() const;
  // Sets the epoch of the next pass and restarts iteration.
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const { return epoch_; }

  // Used by Accelerator::prepare.
  // Where iteration stands, for checkpoints: the epoch being (or next to be)
  // iterated and how many of its batches this process has already taken.
  struct Position {
    uint64_t epoch = 0;
    int64_t batches_consumed = 0;
  };
  Position position() const;
  // The next next() continues from `position`: same epoch (hence the same
  // shuffle), skipping the consumed batches without reading their samples.
  void resume_from(const Position& position);

  void shard(const ShardPlacement& placement);
  bool is_prepared() const { return prepared_; }
  const DataLoaderOptions& options() const { return options_; }
  const std::shared_ptr<Dataset>& dataset() const { return dataset_; }

 private:
  struct EpochPlan {
    std::vector<std::vector<int64_t>> batches;
    int64_t last_round_real_samples = 0;
  };
  EpochPlan plan_epoch() const;

  std::shared_ptr<Dataset> dataset_;
  DataLoaderOptions options_;
  ShardPlacement placement_;
  bool prepared_ = false;
  uint64_t epoch_ = 0;
  bool in_epoch_ = false;
  EpochPlan plan_;
  size_t cursor_ = 0;
  int64_t resume_skip_ = 0;  // batches to skip when the next epoch starts
};

}  // namespace accel
